"""Activity API and heartbeat throttling, without a control plane."""

from __future__ import annotations

import asyncio
import datetime
import time

import pytest

from spindle import activity
from spindle._activity.context import ActivityContext, ActivityInfo, CompleteAsyncError
from spindle._activity.definition import ActivityDefinition
from spindle._activity.execution import bind_arguments, execute
from spindle.api import messages_pb2 as pb
from spindle.converter import DataConverter
from spindle.exceptions import ApplicationError, WorkflowContextError
from spindle.worker._heartbeat import Heartbeater, throttle_interval

conv = DataConverter.default
NOW = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)


def make_info(**kw: object) -> ActivityInfo:
    base: dict[str, object] = dict(
        activity_id="1", activity_type="a", attempt=1, workflow_id="w", workflow_run_id="r", workflow_type="W",
        namespace="default", task_queue="q", task_token=b"t", heartbeat_details=(), scheduled_time=NOW,
        current_attempt_scheduled_time=NOW, started_time=NOW, start_to_close_timeout=None,
        schedule_to_close_timeout=None, heartbeat_timeout=None, deadline=None)
    base.update(kw)
    return ActivityInfo(**base)  # type: ignore[arg-type]


@activity.defn
async def hello(name: str) -> str:
    return f"hello {name} attempt {activity.info().attempt}"


@activity.defn(name="custom-name")
def sync_act(x: int, y: int = 2) -> int:
    activity.heartbeat("tick")
    return x * y


def test_defn_names_and_kinds() -> None:
    assert ActivityDefinition.must_from_callable(hello).name == "hello"
    assert ActivityDefinition.must_from_callable(hello).is_async
    d = ActivityDefinition.must_from_callable(sync_act)
    assert d.name == "custom-name" and not d.is_async
    with pytest.raises(TypeError, match="activity.defn"):
        ActivityDefinition.must_from_callable(print)

    class Acts:
        @activity.defn
        async def method(self, v: int) -> int:
            return v

    bound = Acts().method
    assert ActivityDefinition.must_from_callable(bound).name == "method"
    assert bind_arguments(bound, "method", 1) == (int,)


def test_calls_outside_an_activity_fail_clearly() -> None:
    assert not activity.in_activity()
    with pytest.raises(WorkflowContextError):
        activity.info()
    with pytest.raises(WorkflowContextError):
        activity.heartbeat(1)


async def test_execute_async_and_sync_with_context() -> None:
    beats: list[tuple[object, ...]] = []
    ctx = ActivityContext(make_info(attempt=3), lambda d: beats.append(tuple(d)))
    assert await execute(hello, ["bob"], ctx, is_async=True) == "hello bob attempt 3"
    assert await execute(sync_act, [4], ctx, is_async=False) == 8
    assert beats == [("tick",)]
    assert not activity.in_activity()


async def test_cancel_async_activity_and_sync_flag() -> None:
    started = asyncio.Event()

    @activity.defn
    async def waits() -> None:
        started.set()
        await asyncio.sleep(60)

    ctx = ActivityContext(make_info(), lambda d: None)
    task = asyncio.create_task(execute(waits, [], ctx, is_async=True))
    await started.wait()
    ctx.request_cancel("cancel_requested")
    with pytest.raises(asyncio.CancelledError):
        await task

    @activity.defn
    def polls() -> str:
        while not activity.is_cancelled():
            time.sleep(0.005)
        return "saw cancel"

    ctx2 = ActivityContext(make_info(), lambda d: None)
    t2 = asyncio.create_task(execute(polls, [], ctx2, is_async=False))
    await asyncio.sleep(0.02)
    ctx2.request_cancel("worker_shutdown")
    assert await t2 == "saw cancel"


async def test_raise_complete_async() -> None:
    @activity.defn
    async def later() -> None:
        activity.raise_complete_async()

    with pytest.raises(CompleteAsyncError):
        await execute(later, [], ActivityContext(make_info(), lambda d: None), is_async=True)


def test_argument_mismatch_names_the_parameter() -> None:
    with pytest.raises(ApplicationError, match="missing argument 'x'") as e:
        bind_arguments(sync_act, "custom-name", 0)
    assert e.value.non_retryable
    with pytest.raises(ApplicationError, match="takes 2 argument"):
        bind_arguments(sync_act, "custom-name", 3)


def test_throttle_interval() -> None:
    assert throttle_interval(None) == 30.0
    assert throttle_interval(datetime.timedelta(seconds=10)) == pytest.approx(8.0)
    assert throttle_interval(datetime.timedelta(minutes=5)) == 30.0


async def test_heartbeats_are_throttled_and_last_details_flushed() -> None:
    sent: list[object] = []

    async def send(p: pb.Payloads) -> None:
        sent.append(conv.from_payloads(p)[0])

    hb = Heartbeater(asyncio.get_running_loop(), 0.05, send)
    for i in range(100):
        hb.record(conv.to_payloads([i]))
        await asyncio.sleep(0)
    await asyncio.sleep(0.01)
    assert sent == [0]  # first one immediately, the rest wait for the window
    await asyncio.sleep(0.08)
    assert sent == [0, 99]  # the latest details, once
    await asyncio.sleep(0.08)
    assert sent == [0, 99]
    hb.record(conv.to_payloads(["late"]))  # window passed: immediate
    await asyncio.sleep(0.01)
    assert sent == [0, 99, "late"]
    hb.record(conv.to_payloads(["dropped-after-close"]))
    hb.close()
    await asyncio.sleep(0.08)
    assert sent == [0, 99, "late"]
    assert conv.from_payloads(hb.latest_details) == ["dropped-after-close"]


async def test_heartbeat_from_a_thread() -> None:
    sent: list[object] = []

    async def send(p: pb.Payloads) -> None:
        sent.append(conv.from_payloads(p)[0])

    hb = Heartbeater(asyncio.get_running_loop(), 10, send)
    await asyncio.to_thread(hb.record, conv.to_payloads(["from-thread"]))
    await asyncio.sleep(0.01)
    assert sent == ["from-thread"]
    hb.close()
