"""A timer committed while its shard's timer loop is reloading the preload window must not be lost."""

from __future__ import annotations

import asyncio

from typing import Any

import pytest

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.controlplane import embedded
from spindle.controlplane.clock import VirtualClock
from spindle.controlplane.config import ServerConfig

pytestmark = pytest.mark.timeout(30)


def timer_cmd(timer_id: str, ms: int) -> pb.Command:
    return pb.Command(command_type=pb.COMMAND_TYPE_START_TIMER, start_timer_command_attributes=pb.StartTimerCommandAttributes(
        timer_id=timer_id, start_to_fire_timeout_ms=ms))


async def start_with_timer(stub: Any, wid: str, ms: int) -> None:
    await stub.StartWorkflowExecution(svc.StartWorkflowExecutionRequest(
        namespace="default", workflow_id=wid, workflow_type="T", task_queue="q", request_id=wid))
    task = await stub.PollWorkflowTaskQueue(svc.PollWorkflowTaskQueueRequest(namespace="default", task_queue="q"),
                                            timeout=5)
    assert task.workflow_execution.workflow_id == wid
    await stub.RespondWorkflowTaskCompleted(svc.RespondWorkflowTaskCompletedRequest(
        task_token=task.task_token, namespace="default", commands=[timer_cmd("t", ms)]))


async def fired(stub: Any, wid: str) -> bool:
    resp = await stub.GetWorkflowExecutionHistory(svc.GetWorkflowExecutionHistoryRequest(
        namespace="default", execution=pb.WorkflowExecution(workflow_id=wid)))
    return any(e.event_type == pb.EVENT_TYPE_TIMER_FIRED for e in resp.history.events)


async def test_timer_committed_during_a_window_reload_fires() -> None:
    clock = VirtualClock()
    t0 = clock.now_ms()
    cp = await embedded.start(":memory:", clock=clock, config=ServerConfig(num_shards=1, timer_preload_window=30.0))
    try:
        store = cp.control_plane.store
        engine = cp.control_plane.engine
        stub = cp.stub
        # a timer at t0+40 s: beyond the first window (t0+30 s), so it stays in the store for now
        await start_with_timer(stub, "late", 40_000)

        # hold the next window load between its read and its use
        original = store.load_timer_tasks
        read_done, release = asyncio.Event(), asyncio.Event()

        async def slow_load(*args: Any, **kw: Any) -> Any:
            rows = await original(*args, **kw)
            if not release.is_set():
                read_done.set()
                await release.wait()
            return rows

        store.load_timer_tasks = slow_load  # type: ignore[method-assign]
        clock.set(t0 + 15_000)  # half the window has passed: the loop reloads up to t0+45 s
        engine.wake_timers()
        await asyncio.wait_for(read_done.wait(), 5)
        # committed now, due at t0+35 s: after the old window, before the one being loaded
        await start_with_timer(stub, "racer", 20_000)
        release.set()
        store.load_timer_tasks = original  # type: ignore[method-assign]

        for target, wid in ((t0 + 36_000, "racer"), (t0 + 41_000, "late")):
            clock.set(target)
            engine.wake_timers()
            for _ in range(100):
                if await fired(stub, wid):
                    break
                await asyncio.sleep(0.02)
            assert await fired(stub, wid), f"timer of {wid!r} did not fire"
    finally:
        await cp.stop()
