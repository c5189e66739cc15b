"""An in-process environment used from another event loop fails at once instead of hanging.

Temporal's samples keep a session-scoped ``env`` fixture; with pytest-asyncio >= 0.24 such a
fixture runs on a session loop while each test runs on its own loop. Temporal's test server
is another process, so that works there; Spindle's control plane runs on the loop it was
started on, and called from another loop its timers never fired: the test hung until its
timeout (a 60 s activity retry backoff was never skipped).
"""

from __future__ import annotations

import asyncio

import pytest

from spindle.controlplane.embedded import WrongEventLoopError
from spindle.testing import WorkflowEnvironment


def test_a_call_from_another_loop_raises_a_clear_error() -> None:
    home = asyncio.new_event_loop()
    env = home.run_until_complete(WorkflowEnvironment.start_time_skipping())
    try:
        async def from_another_loop() -> None:
            await env.client.start_workflow("Anything", id="w", task_queue="q")

        with pytest.raises(WrongEventLoopError, match="StartWorkflowExecution: this in-process control plane runs "
                                                      "on another event loop"):
            asyncio.run(from_another_loop())

        async def at_home() -> int:
            return await env.client.count_workflows()

        assert home.run_until_complete(at_home()) == 0  # nothing was started, and its own loop still works
    finally:
        home.run_until_complete(env.shutdown())
        home.close()
