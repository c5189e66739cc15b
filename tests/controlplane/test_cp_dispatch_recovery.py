"""Tasks handed towards workers must not get lost on the way.

A stale dispatch must not hide a workflow task that only its timeout timer still remembers:
after a crash, a run's current workflow task may have been started (in memory) by the
process that died: the store holds its Scheduled event and its durable timeout timer,
nothing else. When that timer fires on the new owner, the task is offered again unless
it is already waiting in a queue (``dispatched``). A transfer row of an *older* task
(its acknowledgement lost with the crash) is re-dispatched by the recovery too; it must
not mark the current task as dispatched, or nobody ever offers it again.

A poller that goes away after taking a task from its queue but before the task is
started (its call cancelled while the start waits for the workflow's lock) must leave the
task to the next poller.
"""

from __future__ import annotations

import asyncio

from typing import Any

import pytest

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.controlplane import embedded
from spindle.controlplane.clock import VirtualClock
from spindle.controlplane.config import ServerConfig
from spindle.controlplane.history.ops import workflow_task
from spindle.controlplane.matching import KIND_WORKFLOW, TaskRef

pytestmark = pytest.mark.timeout(30)

NS = "default"


async def poll(stub: Any, timeout: float = 5.0) -> svc.PollWorkflowTaskQueueResponse:
    return await stub.PollWorkflowTaskQueue(svc.PollWorkflowTaskQueueRequest(namespace=NS, task_queue="q", identity="t"),
                                            timeout=timeout)


async def test_stale_dispatch_does_not_hide_a_lost_workflow_task() -> None:
    clock = VirtualClock()
    cp = await embedded.start(":memory:", clock=clock, config=ServerConfig(num_shards=1, default_workflow_task_timeout=5.0))
    try:
        engine, stub = cp.control_plane.engine, cp.stub
        started = await stub.StartWorkflowExecution(svc.StartWorkflowExecutionRequest(
            namespace=NS, workflow_id="w", workflow_type="T", task_queue="q", request_id="w"))
        first = await poll(stub)
        await stub.RespondWorkflowTaskCompleted(svc.RespondWorkflowTaskCompletedRequest(
            task_token=first.task_token, namespace=NS, identity="t"))
        await stub.SignalWorkflowExecution(svc.SignalWorkflowExecutionRequest(
            namespace=NS, workflow_execution=pb.WorkflowExecution(workflow_id="w"), signal_name="s", identity="t"))
        second = await poll(stub)  # started, and its worker is never heard of again
        lost_id = second.history.events[-1].workflow_task_started_event_attributes.scheduled_event_id
        assert lost_id > first.history.events[-1].workflow_task_started_event_attributes.scheduled_event_id

        ns_id = cp.control_plane.namespaces.get(NS).id
        key = (ns_id, "w", started.run_id)
        # what a new owner knows after the crash: the history (task scheduled, not started) ...
        engine.cache.evict(engine.cache.get(key))
        async with engine.cache.locked(ns_id, "w"):
            st = await engine.cache.load(*key)
        assert st is not None and st.workflow_task is not None and not st.workflow_task.started
        # ... and the recovered transfer row of the first, long finished task
        stale = TaskRef(KIND_WORKFLOW, ns_id, "w", started.run_id, 2, 1, None)
        workflow_task.dispatch(engine.context, stale, "q")
        assert not st.workflow_task.dispatched, "a stale ref marked the current task as waiting in a queue"

        clock.advance(6.0)  # the lost task's timeout timer fires: the task is offered again
        engine.wake_timers()
        again = await poll(stub)
        assert again.task_token, "the lost workflow task was never offered again"
        assert again.history.events[-1].workflow_task_started_event_attributes.scheduled_event_id == lost_id
    finally:
        await cp.stop()


async def test_a_task_taken_by_a_poller_that_goes_away_goes_to_the_next_poller() -> None:
    cp = await embedded.start(":memory:", config=ServerConfig(num_shards=1))
    try:
        engine, stub = cp.control_plane.engine, cp.stub
        ns_id = cp.control_plane.namespaces.get(NS).id
        await stub.StartWorkflowExecution(svc.StartWorkflowExecutionRequest(
            namespace=NS, workflow_id="w", workflow_type="T", task_queue="q", request_id="w"))
        await asyncio.sleep(0.05)  # the first workflow task waits in the queue
        async with engine.cache.locked(ns_id, "w"):  # the start of the task will wait here
            gone = asyncio.ensure_future(poll(stub))
            await asyncio.sleep(0.1)
            assert engine.matching.total_backlog() == 0, "the poller did not take the task"
            gone.cancel()
            with pytest.raises(asyncio.CancelledError):
                await gone
        task = await poll(stub, timeout=2.0)
        assert task.task_token, "the task went away with the poller"
        assert task.workflow_execution.workflow_id == "w"

        # the same for an activity task
        await stub.RespondWorkflowTaskCompleted(svc.RespondWorkflowTaskCompletedRequest(
            task_token=task.task_token, namespace=NS, identity="t", commands=[pb.Command(
                command_type=pb.COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK,
                schedule_activity_task_command_attributes=pb.ScheduleActivityTaskCommandAttributes(
                    activity_id="a", activity_type="A", task_queue="q", start_to_close_timeout_ms=60_000))]))
        await asyncio.sleep(0.05)

        def poll_activity(timeout: float) -> Any:
            return stub.PollActivityTaskQueue(svc.PollActivityTaskQueueRequest(namespace=NS, task_queue="q",
                                                                               identity="t"), timeout=timeout)

        async with engine.cache.locked(ns_id, "w"):
            gone = asyncio.ensure_future(poll_activity(5.0))
            await asyncio.sleep(0.1)
            gone.cancel()
            with pytest.raises(asyncio.CancelledError):
                await gone
        act = await poll_activity(2.0)
        assert act.task_token and act.activity_id == "a", "the activity task went away with the poller"
    finally:
        await cp.stop()


async def test_a_workflow_task_started_before_a_restart_is_offered_again_at_once(tmp_path: Any) -> None:
    """Its worker's answer can never be accepted after the restart: waiting out the task timeout helps nobody."""
    path = str(tmp_path / "restart.db")
    cfg = ServerConfig(num_shards=1, default_workflow_task_timeout=20.0)  # inside the 30 s timer window
    cp = await embedded.start(path, config=cfg)
    try:
        await cp.stub.StartWorkflowExecution(svc.StartWorkflowExecutionRequest(
            namespace=NS, workflow_id="w", workflow_type="T", task_queue="q", request_id="w"))
        lost = await poll(cp.stub)  # started; then the server goes down
        assert lost.task_token
        await asyncio.sleep(0.2)  # the start's timeout timer is written in the background
    finally:
        await cp.stop()
    cp = await embedded.start(path, config=cfg)
    try:
        with pytest.raises(Exception) as stale:  # the old start is gone for good ...
            await cp.stub.RespondWorkflowTaskCompleted(svc.RespondWorkflowTaskCompletedRequest(
                task_token=lost.task_token, namespace=NS, identity="t"))
        assert "not found" in str(stale.value)
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        again = await poll(cp.stub, timeout=10.0)  # ... so the task comes back now, not in 20 s
        assert again.task_token, "the task was not offered again within 10 s"
        assert loop.time() - t0 < 5.0
        assert again.history.events[-1].workflow_task_started_event_attributes.scheduled_event_id == 2
        await cp.stub.RespondWorkflowTaskCompleted(svc.RespondWorkflowTaskCompletedRequest(
            task_token=again.task_token, namespace=NS, identity="t", commands=[pb.Command(
                command_type=pb.COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION,
                complete_workflow_execution_command_attributes=pb.CompleteWorkflowExecutionCommandAttributes())]))
        resp = await cp.stub.GetWorkflowExecutionHistory(svc.GetWorkflowExecutionHistoryRequest(
            namespace=NS, execution=pb.WorkflowExecution(workflow_id="w")))
        types = [e.event_type for e in resp.history.events]
        assert types[-1] == pb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED
        assert [e.event_id for e in resp.history.events] == list(range(1, len(types) + 1))
    finally:
        await cp.stop()
