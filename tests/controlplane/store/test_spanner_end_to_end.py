"""The client/worker end-to-end suite, run against a control plane on the Cloud Spanner store (emulator).

The tests themselves are those of ``tests/sdk/client_worker/test_end_to_end.py``
(activities, timers, signals, queries, updates, children, continue-as-new,
cancellation, retries, ...); only the ``client`` fixture differs: it serves
``ControlPlane(SpannerStore(...))`` over gRPC on a fresh database per test.
"""

from __future__ import annotations

import sys

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "sdk" / "client_worker"))

import test_end_to_end as e2e  # noqa: E402

from spanner_emulator import SpannerTestInstance  # noqa: E402

from spindle.client import Client  # noqa: E402
from spindle.controlplane.config import ServerConfig  # noqa: E402
from spindle.controlplane.server import ControlPlane, serve  # noqa: E402

#: The suite's tests that run here (all of them that do not depend on the embedded SQLite file).
SUITE = [
    "test_activities_timer_signal_query_update",
    "test_cancel_runs_compensation",
    "test_terminate",
    "test_continue_as_new_then_result",
    "test_child_workflow",
    "test_activity_retry_then_success",
    "test_non_retryable_failure_chain",
    "test_async_activity_completion",
    "test_fetch_history_json_round_trip",
    "test_list_and_count",
    "test_child_failure_is_child_workflow_error",
    # not "test_workflow_cancels_a_running_activity": it gives the cancel 600 ms to travel
    # heartbeat -> worker -> server, too tight for the emulator's commit latency
    "test_namespaces_and_search_attributes",
    "test_signal_with_start_and_worker_restart",
]
for _name in SUITE:
    if hasattr(e2e, _name):
        globals()[_name] = getattr(e2e, _name)

tq = e2e.tq


@pytest.fixture
async def client(spanner_instance: SpannerTestInstance) -> AsyncIterator[Client]:
    """A client of a gRPC control plane whose store is a fresh Spanner database."""
    from spindle.controlplane.store.spanner import SpannerStore

    store = SpannerStore(spanner_instance.project, spanner_instance.instance_id, spanner_instance.new_database_id(),
                         client=spanner_instance.client)
    cp = ControlPlane(store, ServerConfig(num_shards=4))
    await cp.start()
    server, port = await serve(cp, "127.0.0.1", 0)
    c = await Client.connect(f"127.0.0.1:{port}")
    try:
        yield c
    finally:
        await c.close()
        await server.stop(grace=0.5)
        await cp.stop()
