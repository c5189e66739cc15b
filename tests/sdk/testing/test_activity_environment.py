"""ActivityEnvironment: run activities without a worker."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time

import pytest

from spindle import activity
from spindle.exceptions import WorkflowContextError
from spindle.testing import ActivityEnvironment, default_info


@activity.defn
async def count_up(n: int) -> int:
    for i in range(n):
        activity.heartbeat(i, f"step-{i}")
    return n


@activity.defn
def sync_count(n: int) -> str:
    for i in range(n):
        activity.heartbeat(i)
    return threading.current_thread().name


@activity.defn(name="describe_me")
async def describe() -> dict[str, object]:
    info = activity.info()
    return {"type": info.activity_type, "attempt": info.attempt, "wf": info.workflow_id,
            "details": list(info.heartbeat_details)}


@activity.defn
async def wait_forever() -> str:
    try:
        await asyncio.sleep(3600)
    except asyncio.CancelledError:
        assert activity.is_cancelled()
        raise
    return "not cancelled"


@activity.defn
def poll_until_cancelled() -> str:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if activity.is_cancelled():
            return "saw cancel"
        time.sleep(0.01)
    return "timed out"


async def test_heartbeats_are_recorded_and_reported() -> None:
    seen: list[tuple[object, ...]] = []
    env = ActivityEnvironment(on_heartbeat=lambda *d: seen.append(d))
    assert await env.run(count_up, 3) == 3
    assert env.heartbeats == [(0, "step-0"), (1, "step-1"), (2, "step-2")]
    assert seen == env.heartbeats


async def test_sync_activity_runs_in_a_thread_and_heartbeats() -> None:
    env = ActivityEnvironment()
    thread = await env.run(sync_count, 2)
    assert thread != threading.main_thread().name
    assert env.heartbeats == [(0,), (1,)]


async def test_info_defaults_and_overrides() -> None:
    env = ActivityEnvironment()
    got = await env.run(describe)
    assert got == {"type": "describe_me", "attempt": 1, "wf": "test-workflow", "details": []}
    got = await env.run(describe, attempt=3, heartbeat_details=("resume-at", 7))
    assert got["attempt"] == 3 and got["details"] == ["resume-at", 7]
    env.info = dataclasses.replace(default_info("describe_me"), workflow_id="order-9")
    assert (await env.run(describe))["wf"] == "order-9"


async def test_cancel_delivers_cancelled_error_to_async_activities() -> None:
    env = ActivityEnvironment()
    task = asyncio.create_task(env.run(wait_forever))
    await asyncio.sleep(0.05)
    assert not task.done()
    env.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert env.cancelled


async def test_cancel_sets_the_flag_for_sync_activities() -> None:
    env = ActivityEnvironment()
    task = asyncio.create_task(env.run(poll_until_cancelled))
    await asyncio.sleep(0.05)
    env.cancel()
    assert await asyncio.wait_for(task, 5) == "saw cancel"


async def test_cancel_before_run_starts_cancelled() -> None:
    env = ActivityEnvironment()
    env.cancel()
    assert await env.run(poll_until_cancelled) == "saw cancel"


def test_activity_api_outside_an_activity_still_fails() -> None:
    with pytest.raises(WorkflowContextError):
        activity.info()
