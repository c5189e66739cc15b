"""pytest fixtures for Spindle workflows (entry point ``pytest11: spindle``).

* ``spindle_env``: a fresh time-skipping :class:`~spindle.testing.WorkflowEnvironment`
  per test (in-memory, virtual clock), shut down after the test.
* ``spindle_client``: ``spindle_env.client``.

Both are async fixtures; they need pytest-asyncio (``asyncio_mode = "auto"``, or mark
the test ``@pytest.mark.asyncio``). Each test gets its own environment, so tests can
run in parallel (``pytest -n auto``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from spindle.client import Client
from spindle.testing._environment import WorkflowEnvironment

__all__ = ["spindle_env", "spindle_client"]

try:
    from pytest_asyncio import fixture as _async_fixture
except ImportError:  # pragma: no cover - the plugin must not break pytest without pytest-asyncio
    _async_fixture = pytest.fixture  # type: ignore[assignment]


@_async_fixture
async def spindle_env() -> AsyncIterator[WorkflowEnvironment]:
    """A time-skipping environment for one test."""
    env = await WorkflowEnvironment.start_time_skipping()
    try:
        yield env
    finally:
        await env.shutdown()


@_async_fixture
async def spindle_client(spindle_env: WorkflowEnvironment) -> Client:
    """The client of the test's time-skipping environment."""
    return spindle_env.client
