"""Activities and timers: exact commands, results, failures, cancellation, asyncio primitives."""

from __future__ import annotations

import asyncio
import dataclasses

from datetime import timedelta

import pytest

from _runtime_history import History, decode, failure_of, kinds, result_of

from spindle import workflow
from spindle._workflow.instance import WorkflowInstance
from spindle.api import messages_pb2 as pb
from spindle.common._retry_policy import RetryPolicy
from spindle.exceptions import ActivityError, ApplicationError, CancelledError

T = timedelta(seconds=30)


@dataclasses.dataclass
class Order:
    id: str
    amount: int


async def charge(order: Order) -> str:  # an activity by reference (name "charge")
    raise NotImplementedError


@workflow.defn
class Sequential:
    @workflow.run
    async def run(self, order: Order) -> str:
        a = await workflow.execute_activity(charge, order, start_to_close_timeout=T,
                                            retry_policy=RetryPolicy(maximum_attempts=3))
        b = await workflow.execute_activity("ship", a, schedule_to_close_timeout=T)
        return f"{a}+{b}"


def new(defn: object, run_id: str = "run-1") -> WorkflowInstance:
    return WorkflowInstance(defn, workflow_id="wf-1", run_id=run_id, task_queue="q")


def test_activities_in_sequence_have_sequential_ids_and_typed_args() -> None:
    h = History("Sequential", Order("o1", 5))
    inst = new(Sequential)
    cmds = inst.activate(h.next_task())
    assert kinds(cmds) == ["SCHEDULE_ACTIVITY_TASK"]
    a = cmds[0].schedule_activity_task_command_attributes
    assert (a.activity_type, a.activity_id, a.start_to_close_timeout_ms) == ("charge", "1", 30_000)
    assert a.retry_policy.maximum_attempts == 3
    assert decode(a.input) == [{"id": "o1", "amount": 5}]
    h.complete(cmds)
    h.activity_completed("1", "ch-1")
    cmds = inst.activate(h.next_task())
    a = cmds[0].schedule_activity_task_command_attributes
    assert (kinds(cmds), a.activity_type, a.activity_id, decode(a.input)) == (
        ["SCHEDULE_ACTIVITY_TASK"], "ship", "2", ["ch-1"])
    h.complete(cmds)
    h.activity_completed("2", "sh-2")
    cmds = inst.activate(h.next_task())
    assert result_of(cmds) == "ch-1+sh-2"


def test_activity_options_are_validated() -> None:
    @workflow.defn
    async def no_timeout() -> None:
        await workflow.execute_activity("x")

    inst = new(no_timeout)
    with pytest.raises(ValueError, match="start_to_close_timeout or schedule_to_close_timeout"):
        inst.activate(History("no_timeout").next_task())


@workflow.defn
async def fan_out(n: int) -> list[int]:
    handles = [workflow.start_activity("square", i, start_to_close_timeout=T) for i in range(n)]
    return list(await asyncio.gather(*handles))


def test_gather_schedules_all_in_one_task_and_keeps_order() -> None:
    h = History("fan_out", 3)
    inst = new(fan_out)
    cmds = inst.activate(h.next_task())
    assert [c.schedule_activity_task_command_attributes.activity_id for c in cmds] == ["1", "2", "3"]
    h.complete(cmds)
    h.activity_completed("3", 4)
    h.activity_completed("1", 0)
    assert inst.activate(h.next_task()) == []
    h.activity_completed("2", 1)
    assert result_of(inst.activate(h.next_task())) == [0, 1, 4]


def test_final_activity_failure_raises_activity_error_with_cause_and_retries_are_ignored() -> None:
    @workflow.defn
    async def fails() -> str:
        try:
            await workflow.execute_activity("pay", start_to_close_timeout=T)
        except ActivityError as e:
            assert isinstance(e.cause, ApplicationError)
            return f"{e.activity_type}:{e.activity_id}:{e.cause.message}:{e.cause.type}:{e.retry_state}"
        return "no error"

    h = History("fails")
    inst = new(fails)
    h.complete(inst.activate(h.next_task()))
    h.activity_failed("1", ApplicationError("boom", type="Card"), retry_state=pb.RETRY_STATE_IN_PROGRESS)
    assert inst.activate(h.next_task()) == []  # a retry is scheduled: not woken
    h.activity_failed("1", ApplicationError("declined", type="Card"))
    assert result_of(inst.activate(h.next_task())) == "pay:1:declined:Card:NON_RETRYABLE_FAILURE"


def test_application_error_escaping_run_fails_the_workflow() -> None:
    @workflow.defn
    async def boom() -> None:
        await workflow.execute_activity("pay", start_to_close_timeout=T)

    h = History("boom")
    inst = new(boom)
    h.complete(inst.activate(h.next_task()))
    h.activity_failed("1", ApplicationError("declined"))
    f = failure_of(inst.activate(h.next_task()))
    assert f.HasField("activity_failure_info") and f.cause.message == "declined"


def test_other_exceptions_fail_the_task_not_the_workflow() -> None:
    @workflow.defn
    async def buggy() -> None:
        raise KeyError("bug")

    with pytest.raises(KeyError, match="bug"):
        new(buggy).activate(History("buggy").next_task())


def test_cancelling_an_activity_handle_resolves_at_once_and_requests_cancel() -> None:
    @workflow.defn
    async def cancels() -> str:
        h = workflow.start_activity("slow", start_to_close_timeout=T)
        await workflow.sleep(1)
        h.cancel()
        try:
            await h
        except ActivityError as e:
            return type(e.cause).__name__
        return "completed"

    h = History("cancels")
    inst = new(cancels)
    cmds = inst.activate(h.next_task())
    assert kinds(cmds) == ["SCHEDULE_ACTIVITY_TASK", "START_TIMER"]
    h.complete(cmds)
    h.timer_fired("1")
    cmds = inst.activate(h.next_task())
    assert kinds(cmds) == ["REQUEST_CANCEL_ACTIVITY_TASK", "COMPLETE_WORKFLOW_EXECUTION"]
    assert cmds[0].request_cancel_activity_task_command_attributes.scheduled_event_id == 5
    assert result_of(cmds) == "CancelledError"


def test_cancelling_before_the_schedule_is_sent_drops_the_command() -> None:
    @workflow.defn
    async def drop() -> str:
        h = workflow.start_activity("slow", start_to_close_timeout=T)
        h.cancel()
        try:
            await h
        except ActivityError as e:
            assert isinstance(e.cause, CancelledError)
            return "cancelled"
        return "?"

    assert kinds(cmds := new(drop).activate(History("drop").next_task())) == ["COMPLETE_WORKFLOW_EXECUTION"]
    assert result_of(cmds) == "cancelled"


@workflow.defn
async def cancels_with(kind: str) -> str:
    h = workflow.start_activity("slow", start_to_close_timeout=T,
                                cancellation_type=workflow.ActivityCancellationType[kind])
    await workflow.sleep(1)
    h.cancel()
    h.cancel()  # a second request changes nothing
    try:
        return f"result {await h}"
    except ActivityError as e:
        return type(e.cause).__name__


def _cancel_activity(kind: str) -> tuple[History, WorkflowInstance, list[pb.Command]]:
    h = History("cancels_with", kind)
    inst = new(cancels_with)
    h.complete(inst.activate(h.next_task()))
    h.timer_fired("1")
    return h, inst, inst.activate(h.next_task())


def test_wait_cancellation_completed_resolves_when_the_activity_reports_it() -> None:
    h, inst, cmds = _cancel_activity("WAIT_CANCELLATION_COMPLETED")
    assert kinds(cmds) == ["REQUEST_CANCEL_ACTIVITY_TASK"]  # the handle is still pending
    h.complete(cmds)
    h.add(pb.EVENT_TYPE_ACTIVITY_TASK_CANCELED, activity_task_canceled_event_attributes=(
        pb.ActivityTaskCanceledEventAttributes(scheduled_event_id=5)))
    cmds = inst.activate(h.next_task())
    assert result_of(cmds) == "CancelledError"
    # an activity that finished anyway resolves the handle with its result
    h, inst, cmds = _cancel_activity("WAIT_CANCELLATION_COMPLETED")
    h.complete(cmds)
    h.activity_completed("1", "done anyway")
    assert result_of(inst.activate(h.next_task())) == "result done anyway"


def test_abandon_resolves_at_once_and_sends_nothing() -> None:
    h, inst, cmds = _cancel_activity("ABANDON")
    assert kinds(cmds) == ["COMPLETE_WORKFLOW_EXECUTION"] and result_of(cmds) == "CancelledError"
    h2, _, cmds = _cancel_activity("TRY_CANCEL")
    assert kinds(cmds) == ["REQUEST_CANCEL_ACTIVITY_TASK", "COMPLETE_WORKFLOW_EXECUTION"]


def test_cancellation_type_must_be_the_enum() -> None:
    @workflow.defn
    async def bad() -> str:
        try:
            workflow.start_activity("a", start_to_close_timeout=T, cancellation_type=1)  # type: ignore[arg-type]
        except TypeError as e:
            return str(e)
        return "accepted"

    assert result_of(new(bad).activate(History("bad").next_task())) == (
        "start_activity: cancellation_type must be a workflow.ActivityCancellationType, got 1")


@workflow.defn
async def sleeper() -> list[str]:
    t0 = workflow.now()
    await workflow.sleep(timedelta(minutes=1))
    await asyncio.sleep(2.5)
    t1 = workflow.now()
    return [t0.isoformat(), t1.isoformat(), str(asyncio.get_running_loop().time() - t0.timestamp())]


def test_workflow_sleep_and_asyncio_sleep_are_durable_timers_and_time_is_workflow_time() -> None:
    h = History("sleeper")
    inst = new(sleeper)
    cmds = inst.activate(h.next_task())
    assert kinds(cmds) == ["START_TIMER"]
    assert (cmds[0].start_timer_command_attributes.timer_id, cmds[0].start_timer_command_attributes.start_to_fire_timeout_ms) == ("1", 60_000)
    h.complete(cmds)
    h.advance(60)
    h.timer_fired("1")
    cmds = inst.activate(h.next_task())
    assert [(c.start_timer_command_attributes.timer_id, c.start_timer_command_attributes.start_to_fire_timeout_ms) for c in cmds] == [("2", 2500)]
    h.complete(cmds)
    h.advance(2.5)
    h.timer_fired("2")
    t0, t1, elapsed = result_of(inst.activate(h.next_task()))
    assert t0 == "2023-11-14T22:13:20+00:00"
    assert t1 == "2023-11-14T22:14:22.500000+00:00"
    assert float(elapsed) == pytest.approx(62.5)


@workflow.defn
async def with_timeout() -> str:
    try:
        return await asyncio.wait_for(workflow.execute_activity("slow", start_to_close_timeout=T), timeout=5)
    except TimeoutError:
        return "timed out"


def test_wait_for_timeout_cancels_the_activity_and_raises_builtin_timeout() -> None:
    h = History("with_timeout")
    inst = new(with_timeout)
    cmds = inst.activate(h.next_task())
    # As in plain asyncio, wait_for arms its timeout before the wrapped coroutine runs.
    assert kinds(cmds) == ["START_TIMER", "SCHEDULE_ACTIVITY_TASK"]
    assert cmds[0].start_timer_command_attributes.start_to_fire_timeout_ms == 5000
    h.complete(cmds)
    h.timer_fired("1")
    cmds = inst.activate(h.next_task())
    assert kinds(cmds) == ["REQUEST_CANCEL_ACTIVITY_TASK", "COMPLETE_WORKFLOW_EXECUTION"]
    assert result_of(cmds) == "timed out"


def test_wait_for_result_first_cancels_the_timer() -> None:
    h = History("with_timeout")
    inst = new(with_timeout)
    h.complete(inst.activate(h.next_task()))
    h.activity_completed("1", "fast")
    cmds = inst.activate(h.next_task())
    assert kinds(cmds) == ["CANCEL_TIMER", "COMPLETE_WORKFLOW_EXECUTION"]
    assert cmds[0].cancel_timer_command_attributes.timer_id == "1"
    assert result_of(cmds) == "fast"


def test_asyncio_wait_first_completed_and_task_cancellation() -> None:
    @workflow.defn
    async def race() -> str:
        a = asyncio.ensure_future(workflow.execute_activity("a", start_to_close_timeout=T))
        b = asyncio.get_running_loop().create_task(workflow.execute_activity("b", start_to_close_timeout=T))
        done, pending = await asyncio.wait({a, b}, return_when=asyncio.FIRST_COMPLETED)
        for p in pending:
            p.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        return done.pop().result() + f":{len(pending)}:{all(p.cancelled() for p in pending)}"

    h = History("race")
    inst = new(race)
    cmds = inst.activate(h.next_task())
    assert kinds(cmds) == ["SCHEDULE_ACTIVITY_TASK", "SCHEDULE_ACTIVITY_TASK"]
    h.complete(cmds)
    h.activity_completed("2", "B")
    cmds = inst.activate(h.next_task())
    assert kinds(cmds) == ["REQUEST_CANCEL_ACTIVITY_TASK", "COMPLETE_WORKFLOW_EXECUTION"]
    assert result_of(cmds) == "B:1:True"


def test_io_and_threads_are_refused_on_the_workflow_loop() -> None:
    @workflow.defn
    async def io() -> list[str]:
        loop = asyncio.get_running_loop()
        out = []
        for call in (lambda: loop.run_in_executor(None, print),
                     lambda: loop.call_soon_threadsafe(print),
                     lambda: loop.create_connection(asyncio.Protocol, "h", 1),
                     lambda: loop.subprocess_exec(asyncio.SubprocessProtocol, "ls")):
            try:
                r = call()
                if asyncio.iscoroutine(r):
                    r.close()
                    raise NotImplementedError("coroutine")
            except NotImplementedError as e:
                out.append(type(e).__name__ + ("" if "activity" in str(e) else " (no hint)"))
        return out

    cmds = new(io).activate(History("io").next_task())
    assert result_of(cmds) == ["UnsupportedInWorkflowError"] * 4
