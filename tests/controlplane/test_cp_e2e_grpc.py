"""End to end through gRPC: `spindle server start-dev` in a subprocess, a Client and a Worker in this process.

Every test leaves its executions in the server's store; the last test of the module lists every
execution and asserts that, together, their histories contain every event type of the wire API.
"""

from __future__ import annotations

import asyncio
import uuid

from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from functools import partial
from typing import Any

import grpc
import pytest

from _cp_server import ALL_EVENT_TYPES, DevServer, assert_gapless, raw_history, type_names
from waiting import eventually as _eventually
from waiting import until

from spindle import activity, workflow
from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.client import Client, WorkflowExecutionStatus
from spindle.common import RetryPolicy
from spindle.exceptions import (
    ActivityError,
    ApplicationError,
    ChildWorkflowError,
    TerminatedError,
    WorkflowAlreadyStartedError,
    WorkflowFailureError,
    WorkflowNotFoundError,
)
from spindle.worker import Worker

pytestmark = pytest.mark.timeout(120)

T10 = timedelta(seconds=10)
FAST_RETRY = RetryPolicy(initial_interval=timedelta(milliseconds=50), backoff_coefficient=1.0, maximum_attempts=5)


# ---------------------------------------------------------------------- activities

ATTEMPTS: dict[str, list[int]] = {}


@activity.defn
async def add_one(x: int) -> int:
    return x + 1


@activity.defn
async def fails_then_succeeds(key: str) -> int:
    attempt = activity.info().attempt
    ATTEMPTS.setdefault(key, []).append(attempt)
    if attempt < 3:
        raise RuntimeError(f"attempt {attempt} failed")
    return attempt


@activity.defn
async def declines() -> None:
    raise ApplicationError("card declined", type="Declined", non_retryable=True)


@activity.defn
async def slow_first_attempt(seconds: float) -> int:
    """Attempt 1 takes ``seconds`` (no heartbeat); later attempts return at once."""
    attempt = activity.info().attempt
    if attempt == 1:
        await asyncio.sleep(seconds)
    return attempt


@activity.defn
async def never_finishes() -> None:
    await asyncio.sleep(30)


@activity.defn
async def heartbeats_until_cancelled() -> str:
    while True:
        activity.heartbeat("tick")
        await asyncio.sleep(0.05)


# ---------------------------------------------------------------------- workflows


@workflow.defn
class Pipeline:
    """3 activities, a timer and a signal."""

    def __init__(self) -> None:
        self.bonus: int | None = None

    @workflow.run
    async def run(self, x: int) -> int:
        for _ in range(3):
            x = await workflow.execute_activity(add_one, x, start_to_close_timeout=T10)
        await workflow.sleep(0.2)
        await workflow.wait_condition(lambda: self.bonus is not None)
        assert self.bonus is not None
        return x + self.bonus

    @workflow.signal
    def give(self, bonus: int) -> None:
        self.bonus = bonus


@workflow.defn
class RetryThenSucceed:
    @workflow.run
    async def run(self, key: str) -> int:
        return await workflow.execute_activity(fails_then_succeeds, key, start_to_close_timeout=T10,
                                               retry_policy=FAST_RETRY)


@workflow.defn
class NonRetryable:
    @workflow.run
    async def run(self) -> None:
        await workflow.execute_activity(declines, start_to_close_timeout=T10, retry_policy=FAST_RETRY)


@workflow.defn
class ActivityTimeouts:
    """Start-to-close and heartbeat timeouts that are retried, then a final schedule-to-close timeout."""

    @workflow.run
    async def run(self) -> list[str]:
        out: list[str] = []
        a = await workflow.execute_activity(slow_first_attempt, 3.0, start_to_close_timeout=timedelta(milliseconds=400),
                                            retry_policy=FAST_RETRY)
        out.append(f"stc:{a}")
        b = await workflow.execute_activity(slow_first_attempt, 3.0, start_to_close_timeout=T10,
                                            heartbeat_timeout=timedelta(milliseconds=400), retry_policy=FAST_RETRY)
        out.append(f"hb:{b}")
        try:
            await workflow.execute_activity(never_finishes, start_to_close_timeout=timedelta(milliseconds=300),
                                            schedule_to_close_timeout=timedelta(milliseconds=1200),
                                            retry_policy=FAST_RETRY)
        except ActivityError as e:
            out.append(f"stc-final:{type(e.cause).__name__}")
        return out


@workflow.defn
class CancelsThings:
    """Cancels a running activity (heartbeating), an unstarted one, and a timer."""

    @workflow.run
    async def run(self, nobody_queue: str) -> list[str]:
        out = []
        h = workflow.start_activity(heartbeats_until_cancelled, start_to_close_timeout=T10,
                                    heartbeat_timeout=timedelta(milliseconds=500))
        await workflow.sleep(0.3)
        h.cancel()
        try:
            await h
        except ActivityError as e:
            out.append(type(e.cause).__name__)
        # an activity nobody polls: cancelled before it starts (server writes Canceled at once)
        h2 = workflow.start_activity(never_finishes, start_to_close_timeout=T10, task_queue=nobody_queue)
        await workflow.sleep(0.05)
        h2.cancel()
        try:
            await h2
        except ActivityError as e:
            out.append(type(e.cause).__name__)
        # a timer cancelled by wait_for's winner
        try:
            await asyncio.wait_for(workflow.sleep(30), timeout=0.1)
        except TimeoutError:
            out.append("timeout")
        # give the heartbeating activity time to report its cancellation
        await workflow.sleep(1.0)
        return out


@workflow.defn
class WaitsForCancel:
    @workflow.run
    async def run(self) -> str:
        try:
            await workflow.wait_condition(lambda: False)
        except asyncio.CancelledError:
            raise
        return "unreachable"


@workflow.defn
class MarkersAndSearch:
    @workflow.run
    async def run(self) -> list[Any]:
        v = workflow.get_version("feature-x", workflow.DEFAULT_VERSION, 2)
        r = workflow.side_effect(lambda: 42)
        workflow.upsert_search_attributes({"CustomerId": "cust-7"})
        return [v, r]


@workflow.defn
class Child:
    @workflow.run
    async def run(self, mode: str) -> str:
        if mode == "fail":
            raise ApplicationError("child says no", type="ChildNo", non_retryable=True)
        if mode == "wait":
            await workflow.wait_condition(lambda: False)
        return f"child:{mode}"


@workflow.defn
class Parent:
    @workflow.run
    async def run(self, busy_id: str) -> list[str]:
        wid = workflow.info().workflow_id
        out = [await workflow.execute_child_workflow(Child.run, "ok", id=f"{wid}-ok")]
        try:
            await workflow.execute_child_workflow(Child.run, "fail", id=f"{wid}-fail")
        except ChildWorkflowError as e:
            out.append(f"failed:{type(e.cause).__name__}")
        try:
            await workflow.execute_child_workflow(Child.run, "wait", id=f"{wid}-timeout",
                                                  run_timeout=timedelta(milliseconds=500))
        except ChildWorkflowError as e:
            out.append(f"timeout:{type(e.cause).__name__}")
        for kind in ("terminated", "cancelled"):
            h = await workflow.start_child_workflow(Child.run, "wait", id=f"{wid}-{kind}")
            try:
                await h
            except ChildWorkflowError as e:
                out.append(f"{kind}:{type(e.cause).__name__}")
        try:  # the id is busy: the start fails
            await workflow.execute_child_workflow(Child.run, "ok", id=busy_id)
        except ChildWorkflowError:
            out.append("start-failed")
        # this child is still running when the parent closes: TERMINATE policy ends it
        await workflow.start_child_workflow(Child.run, "wait", id=f"{wid}-orphan")
        return out


@workflow.defn
class Notifier:
    """Signals and cancels other executions: one that exists, one that does not."""

    @workflow.run
    async def run(self, target: str) -> list[str]:
        out = []
        await workflow.get_external_workflow_handle(target).signal(Pipeline.give, 5)
        out.append("signalled")
        try:
            await workflow.get_external_workflow_handle("no-such-" + target).signal("give", 1)
        except ApplicationError as e:
            out.append(e.type or "")
        await workflow.get_external_workflow_handle(target + "-w").cancel()
        out.append("cancel-requested")
        try:
            await workflow.get_external_workflow_handle("no-such-" + target).cancel()
        except ApplicationError as e:
            out.append(e.type or "")
        return out


@workflow.defn
class Counter:
    @workflow.run
    async def run(self, n: int) -> int:
        if n < 2:
            workflow.continue_as_new(n + 1)
        return n


@workflow.defn
class Updatable:
    def __init__(self) -> None:
        self.value = 0
        self.done = False

    @workflow.run
    async def run(self) -> int:
        await workflow.wait_condition(lambda: self.done)
        return self.value

    @workflow.update
    async def add(self, n: int) -> int:
        self.value += n
        return self.value

    @workflow.signal
    def finish(self) -> None:
        self.done = True


BUGGY_ONCE = {"armed": True}


@workflow.defn
class BuggyOnce:
    @workflow.run
    async def run(self) -> str:
        if BUGGY_ONCE["armed"]:
            BUGGY_ONCE["armed"] = False
            raise KeyError("a bug, fixed by the next attempt")
        return "fixed"


WORKFLOWS = [Pipeline, RetryThenSucceed, NonRetryable, ActivityTimeouts, CancelsThings, WaitsForCancel, MarkersAndSearch,
             Child, Parent, Notifier, Counter, Updatable, BuggyOnce]
ACTIVITIES = [add_one, fails_then_succeeds, declines, slow_first_attempt, never_finishes, heartbeats_until_cancelled]


# ---------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    db = tmp_path_factory.mktemp("e2e") / "spindle.db"
    s = DevServer(db).start()
    yield s
    s.stop()


@pytest.fixture
async def client(server: DevServer) -> AsyncIterator[Client]:
    c = await Client.connect(server.address)
    try:
        yield c
    finally:
        await c.close()


@pytest.fixture
def tq() -> str:
    return "tq-" + uuid.uuid4().hex[:8]


def uid(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def worker(client: Client, tq: str) -> Worker:
    return Worker(client, task_queue=tq, workflows=WORKFLOWS, activities=ACTIVITIES,
                  graceful_shutdown_timeout=timedelta(milliseconds=200))


async def history(client: Client, wid: str, run_id: str = "") -> list[pb.HistoryEvent]:
    events = await raw_history(client.stub, wid, run_id)
    assert_gapless(events)
    return events


#: Retries a check that asserts (or finds no workflow yet) for up to 10 s.
eventually = partial(_eventually, timeout=10.0, retry_on=(AssertionError, WorkflowNotFoundError))


# ---------------------------------------------------------------------- tests


async def test_pipeline_three_activities_timer_signal(client: Client, tq: str) -> None:
    async with worker(client, tq):
        h = await client.start_workflow(Pipeline.run, 1, id=uid("pipeline"), task_queue=tq)

        async def timer_fired() -> None:
            assert "EVENT_TYPE_TIMER_FIRED" in type_names(await history(client, h.id))

        await eventually(timer_fired)
        await h.signal(Pipeline.give, 100)
        assert await asyncio.wait_for(h.result(), 15) == 104
    events = await history(client, h.id)
    names = type_names(events)
    assert names[0] == "EVENT_TYPE_WORKFLOW_EXECUTION_STARTED"
    assert names[1] == "EVENT_TYPE_WORKFLOW_TASK_SCHEDULED"
    assert names[-1] == "EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED"
    assert names.count("EVENT_TYPE_ACTIVITY_TASK_SCHEDULED") == 3
    assert names.count("EVENT_TYPE_ACTIVITY_TASK_STARTED") == 3
    assert names.count("EVENT_TYPE_ACTIVITY_TASK_COMPLETED") == 3
    assert names.count("EVENT_TYPE_TIMER_STARTED") == 1 and names.count("EVENT_TYPE_TIMER_FIRED") == 1
    assert names.count("EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED") == 1
    # every workflow task is Scheduled -> Started -> Completed
    for i, e in enumerate(events):
        if e.event_type == pb.EVENT_TYPE_WORKFLOW_TASK_STARTED:
            assert events[i - 1].event_type == pb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED
            assert events[i + 1].event_type == pb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED
    # an activity's outcome points at its Scheduled and Started events
    for e in events:
        if e.event_type == pb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            a = e.activity_task_completed_event_attributes
            assert events[a.scheduled_event_id - 1].event_type == pb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
            assert events[a.started_event_id - 1].event_type == pb.EVENT_TYPE_ACTIVITY_TASK_STARTED
    desc = await h.describe()
    assert desc.status is WorkflowExecutionStatus.COMPLETED
    assert desc.history_length == len(events)


async def test_activity_retry_then_success_and_non_retryable(client: Client, tq: str) -> None:
    key = uid("k")
    async with worker(client, tq):
        h = await client.start_workflow(RetryThenSucceed.run, key, id=uid("retry"), task_queue=tq)
        assert await asyncio.wait_for(h.result(), 15) == 3
        h2 = await client.start_workflow(NonRetryable.run, id=uid("nonretry"), task_queue=tq)
        with pytest.raises(WorkflowFailureError):
            await asyncio.wait_for(h2.result(), 15)
    assert ATTEMPTS[key] == [1, 2, 3]
    events = await history(client, h.id)
    # retried attempts write nothing (as in Temporal); the last one's Started carries the count
    assert not [e for e in events if e.event_type == pb.EVENT_TYPE_ACTIVITY_TASK_FAILED]
    [started] = [e.activity_task_started_event_attributes for e in events
                 if e.event_type == pb.EVENT_TYPE_ACTIVITY_TASK_STARTED]
    assert started.attempt == 3 and started.last_failure.message == "attempt 2 failed"
    # retried attempts do not wake the workflow: one task to schedule, one to complete
    assert type_names(events).count("EVENT_TYPE_WORKFLOW_TASK_COMPLETED") == 2
    events2 = await history(client, h2.id)
    [f] = [e.activity_task_failed_event_attributes for e in events2 if e.event_type == pb.EVENT_TYPE_ACTIVITY_TASK_FAILED]
    assert f.retry_state == pb.RETRY_STATE_NON_RETRYABLE_FAILURE and f.attempt == 1
    assert events2[-1].event_type == pb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED


async def test_activity_timeouts_with_retries(client: Client, tq: str) -> None:
    async with worker(client, tq):
        h = await client.start_workflow(ActivityTimeouts.run, id=uid("timeouts"), task_queue=tq)
        assert await asyncio.wait_for(h.result(), 20) == ["stc:2", "hb:2", "stc-final:TimeoutError"]
    events = await history(client, h.id)
    started = [e.activity_task_started_event_attributes for e in events
               if e.event_type == pb.EVENT_TYPE_ACTIVITY_TASK_STARTED]
    # retried timeouts write nothing: the second attempts' Started events carry what ended the first
    timeouts = [a.last_failure.timeout_failure_info.timeout_type for a in started[:2]]
    assert [a.attempt for a in started[:2]] == [2, 2]
    assert timeouts == [pb.TIMEOUT_TYPE_START_TO_CLOSE, pb.TIMEOUT_TYPE_HEARTBEAT]
    # the third activity: start-to-close timeouts retried until schedule-to-close ends it, one final event
    [final] = [e.activity_task_timed_out_event_attributes for e in events
               if e.event_type == pb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT]
    assert final.retry_state == pb.RETRY_STATE_TIMEOUT and final.attempt >= 2


async def test_cancel_activity_and_timer(client: Client, tq: str) -> None:
    async with worker(client, tq):
        h = await client.start_workflow(CancelsThings.run, "nobody-" + tq, id=uid("cancels"), task_queue=tq)
        assert await asyncio.wait_for(h.result(), 15) == ["CancelledError", "CancelledError", "timeout"]
    names = type_names(await history(client, h.id))
    assert names.count("EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED") == 2
    assert names.count("EVENT_TYPE_ACTIVITY_TASK_CANCELED") == 2
    assert "EVENT_TYPE_TIMER_CANCELED" in names


async def test_workflow_cancel_request_and_terminate(client: Client, tq: str) -> None:
    async with worker(client, tq):
        h = await client.start_workflow(WaitsForCancel.run, id=uid("cancelme"), task_queue=tq)
        await h.cancel()
        with pytest.raises(WorkflowFailureError):
            await asyncio.wait_for(h.result(), 10)
        assert (await h.describe()).status is WorkflowExecutionStatus.CANCELED
        h2 = await client.start_workflow(WaitsForCancel.run, id=uid("terminate"), task_queue=tq)
        await h2.terminate("enough")
        with pytest.raises(WorkflowFailureError) as ei:
            await asyncio.wait_for(h2.result(), 10)
        assert isinstance(ei.value.cause, TerminatedError)
    names = type_names(await history(client, h.id))
    assert "EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED" in names
    assert names[-1] == "EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED"
    ev2 = await history(client, h2.id)
    assert ev2[-1].event_type == pb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED
    assert ev2[-1].workflow_execution_terminated_event_attributes.reason == "enough"


async def test_markers_and_search_attributes(client: Client, tq: str) -> None:
    try:
        await client.add_search_attributes({"CustomerId": "Keyword"})
    except Exception:  # noqa: BLE001 - already registered by an earlier run on this server
        pass
    async with worker(client, tq):
        h = await client.start_workflow(MarkersAndSearch.run, id=uid("markers"), task_queue=tq)
        assert await asyncio.wait_for(h.result(), 10) == [2, 42]
    names = type_names(await history(client, h.id))
    assert names.count("EVENT_TYPE_MARKER_RECORDED") == 2
    assert "EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES" in names

    async def listed() -> None:
        ids = [w.id async for w in client.list_workflows("CustomerId = 'cust-7'")]
        assert h.id in ids

    await eventually(listed)


async def test_child_workflows(client: Client, tq: str) -> None:
    async with worker(client, tq):
        busy = await client.start_workflow(Child.run, "wait", id=uid("busy"), task_queue=tq)
        pid = uid("parent")
        h = await client.start_workflow(Parent.run, busy.id, id=pid, task_queue=tq)

        async def running(child: str) -> None:
            d = await client.get_workflow_handle(child).describe()
            assert d.status is WorkflowExecutionStatus.RUNNING

        await eventually(lambda: running(f"{pid}-terminated"))
        await client.get_workflow_handle(f"{pid}-terminated").terminate("by test")
        await eventually(lambda: running(f"{pid}-cancelled"))
        await client.get_workflow_handle(f"{pid}-cancelled").cancel()
        result = await asyncio.wait_for(h.result(), 20)
        assert result == ["child:ok", "failed:ApplicationError", "timeout:TimeoutError", "terminated:TerminatedError",
                          "cancelled:CancelledError", "start-failed"]

        async def orphan_terminated() -> None:
            d = await client.get_workflow_handle(f"{pid}-orphan").describe()
            assert d.status is WorkflowExecutionStatus.TERMINATED

        await eventually(orphan_terminated)
        await busy.terminate("cleanup")
    names = type_names(await history(client, pid))
    for t in ("START_CHILD_WORKFLOW_EXECUTION_INITIATED", "START_CHILD_WORKFLOW_EXECUTION_FAILED",
              "CHILD_WORKFLOW_EXECUTION_STARTED", "CHILD_WORKFLOW_EXECUTION_COMPLETED", "CHILD_WORKFLOW_EXECUTION_FAILED",
              "CHILD_WORKFLOW_EXECUTION_TIMED_OUT", "CHILD_WORKFLOW_EXECUTION_TERMINATED",
              "CHILD_WORKFLOW_EXECUTION_CANCELED"):
        assert "EVENT_TYPE_" + t in names, t
    orphan = await history(client, f"{pid}-orphan")
    assert "parent close policy" in orphan[-1].workflow_execution_terminated_event_attributes.reason


async def test_signal_and_cancel_external(client: Client, tq: str) -> None:
    async with worker(client, tq):
        target = uid("target")
        t = await client.start_workflow(Pipeline.run, 0, id=target, task_queue=tq)
        w = await client.start_workflow(WaitsForCancel.run, id=target + "-w", task_queue=tq)
        n = await client.start_workflow(Notifier.run, target, id=uid("notifier"), task_queue=tq)
        assert await asyncio.wait_for(n.result(), 15) == [
            "signalled", "EXTERNAL_WORKFLOW_EXECUTION_NOT_FOUND", "cancel-requested", "EXTERNAL_WORKFLOW_EXECUTION_NOT_FOUND"]
        assert await asyncio.wait_for(t.result(), 15) == 3 + 5
        with pytest.raises(WorkflowFailureError):
            await asyncio.wait_for(w.result(), 10)
    names = type_names(await history(client, n.id))
    for x in ("SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED", "SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_FAILED",
              "EXTERNAL_WORKFLOW_EXECUTION_SIGNALED", "REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED",
              "REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_FAILED", "EXTERNAL_WORKFLOW_EXECUTION_CANCEL_REQUESTED"):
        assert "EVENT_TYPE_" + x in names, x
    sig = [e for e in await history(client, target) if e.event_type == pb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED]
    assert sig[0].workflow_execution_signaled_event_attributes.external_workflow_execution.workflow_id == n.id


async def test_continue_as_new(client: Client, tq: str) -> None:
    async with worker(client, tq):
        h = await client.start_workflow(Counter.run, 0, id=uid("counter"), task_queue=tq)
        assert await asyncio.wait_for(h.result(), 10) == 2
    first = await history(client, h.id, h.run_id)
    assert first[-1].event_type == pb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW
    nxt = first[-1].workflow_execution_continued_as_new_event_attributes.new_execution_run_id
    second = await history(client, h.id, nxt)
    a = second[0].workflow_execution_started_event_attributes
    assert a.continued_execution_run_id == h.run_id and a.first_execution_run_id == h.run_id


async def test_updates(client: Client, tq: str) -> None:
    async with worker(client, tq):
        h = await client.start_workflow(Updatable.run, id=uid("upd"), task_queue=tq)
        assert await h.update(Updatable.add, 2) == 2
        assert await h.update(Updatable.add, 3) == 5
        await h.signal(Updatable.finish)
        assert await asyncio.wait_for(h.result(), 10) == 5
    names = type_names(await history(client, h.id))
    assert names.count("EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED") == 2
    assert names.count("EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED") == 2


async def test_workflow_task_failed_then_retried(client: Client, tq: str) -> None:
    BUGGY_ONCE["armed"] = True
    async with worker(client, tq):
        h = await client.start_workflow(BuggyOnce.run, id=uid("buggy"), task_queue=tq)
        assert await asyncio.wait_for(h.result(), 10) == "fixed"
    events = await history(client, h.id)
    [failed] = [e for e in events if e.event_type == pb.EVENT_TYPE_WORKFLOW_TASK_FAILED]
    assert failed.workflow_task_failed_event_attributes.cause == pb.WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_WORKER_UNHANDLED_FAILURE
    nxt = events[failed.event_id]  # the event after it
    assert nxt.event_type == pb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED
    assert nxt.workflow_task_scheduled_event_attributes.attempt == 2


async def test_workflow_task_timed_out_then_retried(client: Client, tq: str) -> None:
    """A worker takes the task and vanishes: after the 1 s task timeout another worker gets it."""
    h = await client.start_workflow(Counter.run, 5, id=uid("wt-timeout"), task_queue=tq,
                                    task_timeout=timedelta(seconds=1))
    task = await client.stub.PollWorkflowTaskQueue(svc.PollWorkflowTaskQueueRequest(
        namespace="default", task_queue=tq, identity="vanishing-worker"), timeout=10)
    assert task.task_token and task.workflow_execution.workflow_id == h.id
    async with worker(client, tq):
        assert await asyncio.wait_for(h.result(), 10) == 5
    events = await history(client, h.id)
    [to] = [e for e in events if e.event_type == pb.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT]
    assert to.workflow_task_timed_out_event_attributes.timeout_type == pb.TIMEOUT_TYPE_START_TO_CLOSE
    assert events[to.event_id - 2].workflow_task_started_event_attributes.identity == "vanishing-worker"
    # the vanished worker's late completion is refused and changes nothing
    with pytest.raises(grpc.aio.AioRpcError) as ei:
        await client.stub.RespondWorkflowTaskCompleted(svc.RespondWorkflowTaskCompletedRequest(
            task_token=task.task_token, namespace="default"))
    assert ei.value.code() == grpc.StatusCode.NOT_FOUND
    assert len(await history(client, h.id)) == len(events)


async def test_workflow_run_timeout(client: Client, tq: str) -> None:
    async with worker(client, tq):
        h = await client.start_workflow(WaitsForCancel.run, id=uid("runtimeout"), task_queue=tq,
                                        run_timeout=timedelta(milliseconds=800))
        with pytest.raises(WorkflowFailureError) as ei:
            await asyncio.wait_for(h.result(), 10)
        assert isinstance(ei.value.cause, TimeoutError)
    events = await history(client, h.id)
    assert events[-1].event_type == pb.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT
    assert (await h.describe()).status is WorkflowExecutionStatus.TIMED_OUT


async def test_already_started_error_carries_the_running_run_id_over_grpc(client: Client, tq: str) -> None:
    wid = uid("dup")
    first = await client.start_workflow(WaitsForCancel.run, id=wid, task_queue=tq)
    with pytest.raises(WorkflowAlreadyStartedError) as ei:
        await client.start_workflow(WaitsForCancel.run, id=wid, task_queue=tq)
    assert (ei.value.run_id, ei.value.workflow_id, ei.value.workflow_type) == (first.result_run_id, wid, "WaitsForCancel")
    # the raw status: the details travel in the trailing metadata, whatever the client
    with pytest.raises(grpc.aio.AioRpcError) as raw:
        await client.stub.StartWorkflowExecution(svc.StartWorkflowExecutionRequest(
            namespace="default", workflow_id=wid, workflow_type="WaitsForCancel", task_queue=tq, request_id="other"))
    assert raw.value.code() == grpc.StatusCode.ALREADY_EXISTS
    [(_, value)] = [kv for kv in raw.value.trailing_metadata() if kv[0] == "spindle-workflow-already-started-bin"]
    details = pb.WorkflowExecutionAlreadyStartedFailure.FromString(value)
    assert details.run_id == first.result_run_id and details.start_request_id
    await first.terminate("done")


async def test_start_dev_default_namespace_has_temporals_dev_search_attributes(client: Client) -> None:
    ns = await client.describe_namespace("default")
    assert {"CustomKeywordField": "Keyword", "CustomStringField": "Text", "CustomTextField": "Text",
            "CustomIntField": "Int", "CustomDoubleField": "Double", "CustomBoolField": "Bool",
            "CustomDatetimeField": "Datetime", "CustomKeywordListField": "KeywordList"}.items() \
        <= dict(ns.search_attributes).items()


async def test_a_versioning_override_is_an_event_in_the_history(client: Client) -> None:
    """WorkflowExecutionOptionsUpdated: an override set on a run nobody has picked up yet (its task waits)."""
    wid = f"override-{uuid.uuid4().hex[:6]}"
    await client.stub.StartWorkflowExecution(svc.StartWorkflowExecutionRequest(
        namespace="default", workflow_id=wid, workflow_type="Idle", task_queue="nobody-polls", request_id=wid))
    req = svc.UpdateWorkflowExecutionOptionsRequest(namespace="default", workflow_execution=pb.WorkflowExecution(
        workflow_id=wid), identity="ops")
    req.update_mask.paths.append("versioning_override")
    req.workflow_execution_options.versioning_override.auto_upgrade = True
    resp = await client.stub.UpdateWorkflowExecutionOptions(req)
    assert resp.workflow_execution_options.versioning_override.auto_upgrade
    await client.stub.TerminateWorkflowExecution(svc.TerminateWorkflowExecutionRequest(
        namespace="default", workflow_execution=pb.WorkflowExecution(workflow_id=wid), reason="done"))
    events = await history(client, wid, "")
    assert pb.EVENT_TYPE_WORKFLOW_EXECUTION_OPTIONS_UPDATED in [e.event_type for e in events]

    async def listed() -> bool:  # the next test reads every run through visibility, written behind the history
        r = await client.stub.ListWorkflowExecutions(svc.ListWorkflowExecutionsRequest(
            namespace="default", query=f"WorkflowId = '{wid}' AND ExecutionStatus = 'Terminated'"))
        return len(r.executions) == 1

    await until(listed, "the terminated run in visibility", timeout=10)


async def test_every_event_type_was_seen(client: Client) -> None:
    """Runs last: the union of every history on this server covers the whole EventType enum."""
    seen: set[int] = set()
    count = 0
    token = b""
    while True:
        resp = await client.stub.ListWorkflowExecutions(svc.ListWorkflowExecutionsRequest(
            namespace="default", page_size=200, next_page_token=token))
        for info in resp.executions:
            events = await history(client, info.execution.workflow_id, info.execution.run_id)
            seen.update(e.event_type for e in events)
            count += 1
        token = resp.next_page_token
        if not token:
            break
    assert count > 20
    missing = sorted(pb.EventType.Name(t) for t in ALL_EVENT_TYPES - seen)
    assert seen == set(ALL_EVENT_TYPES), f"never seen: {missing}"
