"""ActivityEnvironment: run activities without a worker."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import threading
import time

import pytest

from spindle import activity
from spindle.exceptions import CancelledError, WorkflowContextError
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


def test_sync_activity_returns_its_value_and_heartbeats() -> None:
    # as temporalio's ActivityEnvironment: a plain def runs in the calling thread, run() returns its value
    env = ActivityEnvironment()
    thread = env.run(sync_count, 2)
    assert thread == threading.current_thread().name
    assert env.heartbeats == [(0,), (1,)]


async def test_sync_activity_returns_its_value_inside_a_running_loop() -> None:
    env = ActivityEnvironment()
    assert env.run(sync_count, 1) == threading.current_thread().name
    assert await asyncio.to_thread(env.run, sync_count, 1) != threading.current_thread().name


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
    task = asyncio.create_task(asyncio.to_thread(env.run, poll_until_cancelled))
    await asyncio.sleep(0.05)
    env.cancel()
    assert await asyncio.wait_for(task, 5) == "saw cancel"


async def test_cancel_before_run_starts_cancelled() -> None:
    env = ActivityEnvironment()
    env.cancel()
    assert env.run(poll_until_cancelled) == "saw cancel"


@activity.defn
def heartbeat_until_cancelled() -> int:
    beats = 0
    try:
        while beats < 500:
            activity.heartbeat(beats)
            beats += 1
            time.sleep(0.01)
    except CancelledError:
        return -beats
    return beats


@activity.defn(no_thread_cancel_exception=True)
def heartbeat_and_poll() -> str:
    for i in range(500):
        activity.heartbeat(i)
        if activity.is_cancelled():
            return f"saw cancel after {i} heartbeats"
        time.sleep(0.01)
    return "timed out"


@activity.defn
def shielded_step() -> list[str]:
    steps: list[str] = []
    try:
        with activity.shield_thread_cancel_exception():
            activity.heartbeat("in shield")  # cancelled already: held back
            steps.append("finished the shielded step")
        steps.append("not reached")
    except CancelledError:
        steps.append("cancelled at the end of the shield")
    return steps


def test_next_heartbeat_of_a_cancelled_sync_activity_raises() -> None:
    env = ActivityEnvironment()
    timer = threading.Timer(0.1, env.cancel)
    timer.start()
    try:
        beats = env.run(heartbeat_until_cancelled)
    finally:
        timer.cancel()
    assert beats < 0, "the activity ran to the end: heartbeat() never raised the cancellation"
    assert -beats < 400


def test_no_thread_cancel_exception_only_sets_the_flag() -> None:
    env = ActivityEnvironment()
    env.cancel()
    assert env.run(heartbeat_and_poll) == "saw cancel after 0 heartbeats"


def test_shield_holds_the_cancellation_until_the_block_ends() -> None:
    env = ActivityEnvironment()
    env.cancel()
    assert env.run(shielded_step) == ["finished the shielded step", "cancelled at the end of the shield"]


def test_activity_logger_carries_the_attempt(caplog: pytest.LogCaptureFixture) -> None:
    @activity.defn
    def logs() -> None:
        activity.logger.info("working on %s", "it")

    caplog.set_level(logging.INFO, logger="spindle.activity")
    ActivityEnvironment().run(logs, attempt=4)
    [rec] = [r for r in caplog.records if r.name == "spindle.activity"]
    assert rec.getMessage().startswith("working on it (")
    assert rec.attempt == 4 and rec.activity_type == "logs"  # type: ignore[attr-defined]


def test_activity_api_outside_an_activity_still_fails() -> None:
    with pytest.raises(WorkflowContextError):
        activity.info()
