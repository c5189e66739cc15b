"""Worker plumbing against a fake stub: sticky cache, history fetch, failures, eager activities, queries."""

from __future__ import annotations

import asyncio
import time

from typing import Any

from _cw_fakes import FakeClient, FakeStub, RecordingInstance

from spindle import activity
from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.converter import DataConverter
from spindle.worker._activity_worker import ActivityWorker
from spindle.worker._workflow_worker import WorkflowWorker

conv = DataConverter.default
Q = "q"
T = pb.EventType


def ev(event_id: int, etype: int, **attrs: Any) -> pb.HistoryEvent:
    e = pb.HistoryEvent(event_id=event_id, event_type=etype, event_time_ms=1000 * event_id)  # type: ignore[arg-type]
    if etype == pb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
        e.workflow_execution_started_event_attributes.workflow_type = "W"
        e.workflow_execution_started_event_attributes.task_queue = Q
    return e


def first_task_events() -> list[pb.HistoryEvent]:
    return [ev(1, pb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED), ev(2, pb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED),
            ev(3, pb.EVENT_TYPE_WORKFLOW_TASK_STARTED)]


def second_task_events() -> list[pb.HistoryEvent]:
    return [ev(4, pb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED), ev(5, pb.EVENT_TYPE_TIMER_STARTED),
            ev(6, pb.EVENT_TYPE_TIMER_FIRED), ev(7, pb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED),
            ev(8, pb.EVENT_TYPE_WORKFLOW_TASK_STARTED)]


def wft(run_id: str, events: list[pb.HistoryEvent], *, previous: int = 0, wf_type: str = "W",
        query: pb.WorkflowQuery | None = None) -> svc.PollWorkflowTaskQueueResponse:
    t = svc.PollWorkflowTaskQueueResponse(
        task_token=f"tok-{run_id}-{events[-1].event_id if events else 0}".encode(),
        workflow_execution=pb.WorkflowExecution(workflow_id="wf-" + run_id, run_id=run_id),
        workflow_type=wf_type, previous_started_event_id=previous,
        started_event_id=events[-1].event_id if events else 0, history=pb.History(events=events),
        namespace="default", task_queue=Q)
    if query is not None:
        t.query.CopyFrom(query)
    return t


def timer_command() -> pb.Command:
    c = pb.Command(command_type=pb.COMMAND_TYPE_START_TIMER)
    c.start_timer_command_attributes.timer_id = "1"
    return c


def make_worker(client: FakeClient, *, max_cached: int = 10, acts: ActivityWorker | None = None) -> WorkflowWorker:
    return WorkflowWorker(client, Q, {"W": object()}, max_concurrent=4, max_cached=max_cached,
                          sticky_schedule_to_start_ms=5000, activity_worker=acts, identity="me",
                          instance_factory=RecordingInstance, pollers=1)


async def test_sticky_cache_resumes_with_only_new_events(fake_client: FakeClient, fake_stub: FakeStub) -> None:
    RecordingInstance.script = staticmethod(lambda inst, events: [timer_command()])  # type: ignore[assignment]
    w = make_worker(fake_client)
    w.start()
    try:
        fake_stub.wf_queues[Q].put_nowait(wft("r1", first_task_events()))
        [done] = await fake_stub.wait_for("RespondWorkflowTaskCompleted")
        assert done.sticky_attributes.worker_task_queue == w.sticky_queue
        assert w.sticky_queue.startswith("q/sticky/")
        assert done.return_new_workflow_task
        assert w.cached_run_ids == ["r1"]
        fake_stub.wf_queues[w.sticky_queue].put_nowait(wft("r1", second_task_events(), previous=3))
        await fake_stub.wait_for("RespondWorkflowTaskCompleted", 2)
        [inst] = RecordingInstance.created
        assert inst.activations == [[1, 2, 3], [4, 5, 6, 7, 8]]
        assert not fake_stub.of("GetWorkflowExecutionHistory")
    finally:
        await w.stop_polling()
        await w.drain(1)
    assert inst.closed


async def test_sticky_task_without_cache_fetches_full_history(fake_client: FakeClient, fake_stub: FakeStub) -> None:
    w = make_worker(fake_client)
    # persisted history lacks the WorkflowTaskStarted (written with the outcome)
    fake_stub.histories["r2"] = first_task_events() + second_task_events()[:-1]
    w.start()
    try:
        fake_stub.wf_queues[w.sticky_queue].put_nowait(wft("r2", second_task_events(), previous=3))
        await fake_stub.wait_for("RespondWorkflowTaskCompleted")
        [inst] = RecordingInstance.created
        assert inst.activations == [[1, 2, 3, 4, 5, 6, 7, 8]]
        assert inst.task_queue == Q
    finally:
        await w.stop_polling()
        await w.drain(1)


async def test_stale_cache_entry_is_replaced(fake_client: FakeClient, fake_stub: FakeStub) -> None:
    w = make_worker(fake_client)
    w.start()
    try:
        fake_stub.wf_queues[Q].put_nowait(wft("r3", first_task_events()))
        await fake_stub.wait_for("RespondWorkflowTaskCompleted")
        # the server says the previous completed task started at 8, which this worker never saw
        events = first_task_events() + second_task_events() + [
            ev(9, pb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED), ev(10, pb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED),
            ev(11, pb.EVENT_TYPE_WORKFLOW_TASK_STARTED)]
        fake_stub.wf_queues[Q].put_nowait(wft("r3", events, previous=8))
        await fake_stub.wait_for("RespondWorkflowTaskCompleted", 2)
        first, second = RecordingInstance.created
        assert first.closed
        assert second.activations == [list(range(1, 12))]
    finally:
        await w.stop_polling()
        await w.drain(1)


async def test_unregistered_type_fails_task_and_worker_keeps_running(fake_client: FakeClient,
                                                                      fake_stub: FakeStub) -> None:
    w = make_worker(fake_client)
    w.start()
    try:
        fake_stub.wf_queues[Q].put_nowait(wft("r4", first_task_events(), wf_type="Nope"))
        [failed] = await fake_stub.wait_for("RespondWorkflowTaskFailed")
        assert failed.cause == pb.WORKFLOW_TASK_FAILED_CAUSE_UNREGISTERED_WORKFLOW_TYPE
        assert "'Nope'" in failed.failure.message and "W" in failed.failure.message
        fake_stub.wf_queues[Q].put_nowait(wft("r5", first_task_events()))
        await fake_stub.wait_for("RespondWorkflowTaskCompleted")
    finally:
        await w.stop_polling()
        await w.drain(1)


async def test_nondeterminism_and_bugs_fail_the_task_and_evict(fake_client: FakeClient, fake_stub: FakeStub) -> None:
    from spindle.exceptions import NonDeterminismError

    def script(inst: RecordingInstance, events: list[pb.HistoryEvent]) -> list[pb.Command]:
        if inst.run_id == "nd":
            raise NonDeterminismError("event 5: expected TimerStarted", event_id=5)
        raise ZeroDivisionError("bug")

    RecordingInstance.script = staticmethod(script)  # type: ignore[assignment]
    w = make_worker(fake_client)
    w.start()
    try:
        fake_stub.wf_queues[Q].put_nowait(wft("nd", first_task_events()))
        fake_stub.wf_queues[Q].put_nowait(wft("bug", first_task_events()))
        fails = await fake_stub.wait_for("RespondWorkflowTaskFailed", 2)
        causes = sorted(f.cause for f in fails)
        assert causes == sorted([pb.WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR,
                                 pb.WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_WORKER_UNHANDLED_FAILURE])
        assert w.cached_run_ids == []
        assert all(i.closed for i in RecordingInstance.created)
    finally:
        await w.stop_polling()
        await w.drain(1)


async def test_lru_eviction_with_one_slot(fake_client: FakeClient, fake_stub: FakeStub) -> None:
    RecordingInstance.script = staticmethod(lambda inst, events: [timer_command()])  # type: ignore[assignment]
    w = make_worker(fake_client, max_cached=1)
    w.start()
    try:
        fake_stub.wf_queues[Q].put_nowait(wft("a", first_task_events()))
        await fake_stub.wait_for("RespondWorkflowTaskCompleted")
        fake_stub.wf_queues[Q].put_nowait(wft("b", first_task_events()))
        await fake_stub.wait_for("RespondWorkflowTaskCompleted", 2)
        assert w.cached_run_ids == ["b"]
        assert RecordingInstance.created[0].closed
    finally:
        await w.stop_polling()
        await w.drain(1)


async def test_returned_task_is_processed_without_polling(fake_client: FakeClient, fake_stub: FakeStub) -> None:
    RecordingInstance.script = staticmethod(lambda inst, events: [timer_command()])  # type: ignore[assignment]
    fake_stub.wft_completed_responses.append(
        svc.RespondWorkflowTaskCompletedResponse(workflow_task=wft("r6", second_task_events(), previous=3)))
    w = make_worker(fake_client)
    w.start()
    try:
        fake_stub.wf_queues[Q].put_nowait(wft("r6", first_task_events()))
        await fake_stub.wait_for("RespondWorkflowTaskCompleted", 2)
        assert RecordingInstance.created[0].activations == [[1, 2, 3], [4, 5, 6, 7, 8]]
    finally:
        await w.stop_polling()
        await w.drain(1)


async def test_queries_cached_and_fresh(fake_client: FakeClient, fake_stub: FakeStub) -> None:
    w = make_worker(fake_client)
    w.start()
    try:
        fake_stub.wf_queues[Q].put_nowait(wft("r7", first_task_events()))
        await fake_stub.wait_for("RespondWorkflowTaskCompleted")
        fake_stub.wf_queues[Q].put_nowait(wft("r7", [], query=pb.WorkflowQuery(query_type="status")))
        fake_stub.wf_queues[Q].put_nowait(wft("r7", [], query=pb.WorkflowQuery(query_type="nope")))
        answers = await fake_stub.wait_for("RespondQueryTaskCompleted", 2)
        assert conv.from_payloads(answers[0].query_result) == ["activations=1"]
        assert "nope" in answers[1].error_message
        # not cached: replayed from the stored history up to the last completed task
        fake_stub.histories["r8"] = first_task_events() + [ev(4, pb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED)]
        fake_stub.wf_queues[Q].put_nowait(wft("r8", [], query=pb.WorkflowQuery(query_type="status")))
        answers = await fake_stub.wait_for("RespondQueryTaskCompleted", 3)
        assert conv.from_payloads(answers[2].query_result) == ["activations=1"]
    finally:
        await w.stop_polling()
        await w.drain(1)


# ---------------------------------------------------------------------- activities


@activity.defn
async def echo(x: str) -> str:
    return x + "!"


@activity.defn
async def forever() -> None:
    while True:
        activity.heartbeat("alive")
        await asyncio.sleep(0.01)


@activity.defn
def sync_forever() -> str:
    while not activity.is_cancelled():
        time.sleep(0.01)
    return "stopped"


def att(activity_type: str, *args: Any, token: bytes = b"a1", heartbeat_ms: int = 0) -> svc.PollActivityTaskQueueResponse:
    return svc.PollActivityTaskQueueResponse(
        task_token=token, activity_type=activity_type, activity_id="1", input=conv.to_payloads(args), attempt=1,
        workflow_execution=pb.WorkflowExecution(workflow_id="w", run_id="r"), workflow_type="W",
        workflow_namespace="default", scheduled_time_ms=1, started_time_ms=2, heartbeat_timeout_ms=heartbeat_ms)


def make_acts(client: FakeClient, wf: WorkflowWorker | None = None, **kw: Any) -> ActivityWorker:
    return ActivityWorker(client, Q, [echo, forever, sync_forever], max_concurrent=4, executor=None,
                          sticky_queue=wf.sticky_queue if wf else "", on_workflow_task=wf.submit if wf else None,
                          pollers=1, identity="me", **kw)


async def test_eager_activity_and_returned_workflow_task(fake_client: FakeClient, fake_stub: FakeStub) -> None:
    def script(inst: RecordingInstance, events: list[pb.Command]) -> list[pb.Command]:
        if len(inst.activations) > 1:
            return [pb.Command(command_type=pb.COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION)]
        c = pb.Command(command_type=pb.COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK)
        c.schedule_activity_task_command_attributes.activity_type = "echo"
        other = pb.Command(command_type=pb.COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK)
        other.schedule_activity_task_command_attributes.activity_type = "not_here"
        return [c, other]

    RecordingInstance.script = staticmethod(script)  # type: ignore[assignment]
    fake_stub.wft_completed_responses.append(
        svc.RespondWorkflowTaskCompletedResponse(activity_tasks=[att("echo", "hi")]))
    fake_stub.activity_completed_responses.append(
        svc.RespondActivityTaskCompletedResponse(workflow_task=wft("e1", second_task_events(), previous=3)))
    wf = make_worker(fake_client)
    acts = make_acts(fake_client, wf)
    wf._activities = acts
    wf.start()
    try:
        fake_stub.wf_queues[Q].put_nowait(wft("e1", first_task_events()))
        completions = await fake_stub.wait_for("RespondWorkflowTaskCompleted", 2)
        cmds = completions[0].commands
        assert cmds[0].schedule_activity_task_command_attributes.request_eager_execution
        assert not cmds[1].schedule_activity_task_command_attributes.request_eager_execution
        [done] = fake_stub.of("RespondActivityTaskCompleted")
        assert conv.from_payloads(done.result) == ["hi!"]
        assert done.sticky_task_queue == wf.sticky_queue
        assert not completions[1].return_new_workflow_task  # closing task
        assert acts.slots.free == 4
    finally:
        await wf.stop_polling()
        await wf.drain(1)


async def test_unknown_activity_and_bad_arguments_fail_non_retryably(fake_client: FakeClient,
                                                                     fake_stub: FakeStub) -> None:
    acts = make_acts(fake_client)
    acts.start()
    try:
        fake_stub.act_queues[Q].put_nowait(att("missing", token=b"t1"))
        fake_stub.act_queues[Q].put_nowait(att("echo", token=b"t2"))
        fails = await fake_stub.wait_for("RespondActivityTaskFailed", 2)
        by_token = {f.task_token: f.failure for f in fails}
        assert by_token[b"t1"].application_failure_info.non_retryable
        assert "'missing'" in by_token[b"t1"].message and "echo" in by_token[b"t1"].message
        assert by_token[b"t2"].application_failure_info.non_retryable
        assert "'x'" in by_token[b"t2"].message
    finally:
        await acts.stop_polling()
        await acts.drain(1)


async def test_heartbeat_cancel_request_cancels_the_activity(fake_client: FakeClient, fake_stub: FakeStub) -> None:
    fake_stub.heartbeat_response = lambda: svc.RecordActivityTaskHeartbeatResponse(cancel_requested=True)
    acts = make_acts(fake_client)
    acts.start()
    try:
        fake_stub.act_queues[Q].put_nowait(att("forever", heartbeat_ms=1000))
        [canceled] = await fake_stub.wait_for("RespondActivityTaskCanceled")
        assert conv.from_payloads(canceled.details) == ["alive"]
    finally:
        await acts.stop_polling()
        await acts.drain(1)


async def test_graceful_shutdown_cancels_after_grace(fake_client: FakeClient, fake_stub: FakeStub) -> None:
    acts = make_acts(fake_client)
    acts.start()
    fake_stub.act_queues[Q].put_nowait(att("forever", token=b"async"))
    fake_stub.act_queues[Q].put_nowait(att("sync_forever", token=b"sync"))
    await fake_stub.wait_for("RecordActivityTaskHeartbeat")
    await asyncio.sleep(0.05)
    await acts.stop_polling()
    await acts.drain(0.1)
    fails = {f.task_token: f for f in fake_stub.of("RespondActivityTaskFailed")}
    assert fails[b"async"].failure.application_failure_info.type == "WorkerShutdown"
    # the sync activity saw is_cancelled() and returned normally
    [done] = fake_stub.of("RespondActivityTaskCompleted")
    assert conv.from_payloads(done.result) == ["stopped"]


async def test_runtime_stale_signal_replays_from_full_history(fake_client: FakeClient, fake_stub: FakeStub) -> None:
    from spindle._workflow.instance import StaleWorkflowInstanceError

    def script(inst: RecordingInstance, events: list[pb.HistoryEvent]) -> list[pb.Command]:
        if inst is RecordingInstance.created[0] and len(inst.activations) == 2:
            raise StaleWorkflowInstanceError("previous task failed on the server")
        return [timer_command()]

    RecordingInstance.script = staticmethod(script)  # type: ignore[assignment]
    fake_stub.histories["s1"] = first_task_events() + second_task_events()[:-1]
    w = make_worker(fake_client)
    w.start()
    try:
        fake_stub.wf_queues[Q].put_nowait(wft("s1", first_task_events()))
        await fake_stub.wait_for("RespondWorkflowTaskCompleted")
        fake_stub.wf_queues[w.sticky_queue].put_nowait(wft("s1", second_task_events(), previous=3))
        await fake_stub.wait_for("RespondWorkflowTaskCompleted", 2)
        first, second = RecordingInstance.created
        assert first.closed
        assert second.activations == [list(range(1, 9))]
        assert not fake_stub.of("RespondWorkflowTaskFailed")
    finally:
        await w.stop_polling()
        await w.drain(1)
