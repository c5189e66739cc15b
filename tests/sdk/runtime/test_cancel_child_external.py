"""Workflow cancellation with compensation, child workflows, external signals and cancels."""

from __future__ import annotations

import asyncio

from datetime import timedelta

import pytest

from _runtime_history import History, decode, failure_of, kinds, result_of

from spindle import workflow
from spindle._workflow.instance import WorkflowInstance
from spindle._workflow.replay import replay
from spindle.api import messages_pb2 as pb
from spindle.exceptions import ApplicationError, ChildWorkflowError

T = timedelta(seconds=10)


def new(defn: object) -> WorkflowInstance:
    return WorkflowInstance(defn, workflow_id="parent", run_id="run-1", task_queue="q")


@workflow.defn(name="Saga")
class Saga:
    @workflow.run
    async def run(self) -> str:
        await workflow.execute_activity("reserve", start_to_close_timeout=T)
        try:
            await workflow.execute_activity("charge", start_to_close_timeout=T)
        except asyncio.CancelledError:
            await workflow.execute_activity("release", start_to_close_timeout=T)
            raise
        return "done"


def test_cancellation_raises_cancelled_error_and_compensation_runs() -> None:
    h = History("Saga")
    inst = new(Saga)
    h.complete(inst.activate(h.next_task()))
    h.activity_completed("1")
    cmds = inst.activate(h.next_task())
    assert kinds(cmds) == ["SCHEDULE_ACTIVITY_TASK"]
    h.complete(cmds)
    h.cancel_requested()
    cmds = inst.activate(h.next_task())
    assert kinds(cmds) == ["REQUEST_CANCEL_ACTIVITY_TASK", "SCHEDULE_ACTIVITY_TASK"]
    assert cmds[1].schedule_activity_task_command_attributes.activity_type == "release"
    h.complete(cmds)
    h.activity_completed("3")
    cmds = inst.activate(h.next_task())
    assert kinds(cmds) == ["CANCEL_WORKFLOW_EXECUTION"]
    h.complete(cmds)
    replay(Saga, h.events)


def test_cancellation_before_the_first_step_cancels_the_run() -> None:
    h = History("Saga")
    h.cancel_requested()
    assert kinds(new(Saga).activate(h.next_task())) == ["CANCEL_WORKFLOW_EXECUTION"]


def test_cancellation_of_a_sleep_cancels_its_timer() -> None:
    @workflow.defn
    async def napper() -> None:
        await workflow.sleep(3600)

    h = History("napper")
    inst = new(napper)
    h.complete(inst.activate(h.next_task()))
    h.cancel_requested()
    cmds = inst.activate(h.next_task())
    assert kinds(cmds) == ["CANCEL_TIMER", "CANCEL_WORKFLOW_EXECUTION"]


@workflow.defn
async def child(n: int) -> int:
    return n * 2


@workflow.defn
async def parent() -> list[object]:
    r = await workflow.execute_child_workflow(child, 21, id="kid-1", task_queue="kids",
                                              execution_timeout=timedelta(minutes=5))
    h = await workflow.start_child_workflow("child", 1)
    await h.signal("poke", "hey")
    try:
        await h
    except ChildWorkflowError as e:
        return [r, h.id, h.run_id, type(e.cause).__name__, str(e.cause)]
    return [r]


def test_child_workflows_start_complete_fail_and_signal() -> None:
    h = History("parent")
    inst = new(parent)
    cmds = inst.activate(h.next_task())
    assert kinds(cmds) == ["START_CHILD_WORKFLOW_EXECUTION"]
    s = cmds[0].start_child_workflow_execution_command_attributes
    assert (s.workflow_type, s.workflow_id, s.task_queue, s.execution_timeout_ms, decode(s.input)) == (
        "child", "kid-1", "kids", 300_000, [21])
    h.complete(cmds)
    h.child_started("kid-1", "kid-run")
    assert inst.activate(h.next_task()) == []
    h.complete([])
    h.child_completed("kid-1", 42)
    cmds = inst.activate(h.next_task())
    assert kinds(cmds) == ["START_CHILD_WORKFLOW_EXECUTION"]
    auto_id = cmds[0].start_child_workflow_execution_command_attributes.workflow_id
    assert auto_id == "parent/run-1/child-2"
    h.complete(cmds)
    h.child_started(auto_id, "r2")
    cmds = inst.activate(h.next_task())
    assert kinds(cmds) == ["SIGNAL_EXTERNAL_WORKFLOW_EXECUTION"]
    x = cmds[0].signal_external_workflow_execution_command_attributes
    assert (x.execution.workflow_id, x.execution.run_id, x.signal_name, x.child_workflow_only) == (
        auto_id, "r2", "poke", True)
    h.complete(cmds)
    h.external_signaled(auto_id)
    h.child_failed(auto_id, ApplicationError("kid broke"))
    assert result_of(inst.activate(h.next_task())) == [42, auto_id, "r2", "ApplicationError", "kid broke"]


def test_child_start_failure_raises_child_workflow_error() -> None:
    @workflow.defn
    async def dup() -> str:
        try:
            await workflow.start_child_workflow(child, 1, id="taken")
        except ChildWorkflowError as e:
            return f"{e.workflow_id}:{e.cause.type}"  # type: ignore[union-attr]
        return "?"

    h = History("dup")
    inst = new(dup)
    h.complete(inst.activate(h.next_task()))
    iid = h.events[-1].event_id
    h.add(pb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_FAILED,
          start_child_workflow_execution_failed_event_attributes=pb.StartChildWorkflowExecutionFailedEventAttributes(
              workflow_id="taken", cause="WORKFLOW_ALREADY_EXISTS", initiated_event_id=iid))
    assert result_of(inst.activate(h.next_task())) == "taken:WORKFLOW_ALREADY_EXISTS"


@workflow.defn
async def notifier(target: str) -> str:
    handle = workflow.get_external_workflow_handle(target)
    await handle.signal("ping", 1, 2)
    try:
        await workflow.get_external_workflow_handle("ghost", run_id="r").signal("ping")
    except ApplicationError as e:
        await handle.cancel()
        return e.type or ""
    return "?"


def test_external_signal_and_cancel() -> None:
    h = History("notifier", "other")
    inst = new(notifier)
    cmds = inst.activate(h.next_task())
    x = cmds[0].signal_external_workflow_execution_command_attributes
    assert (kinds(cmds), x.execution.workflow_id, x.signal_name, decode(x.input), x.child_workflow_only) == (
        ["SIGNAL_EXTERNAL_WORKFLOW_EXECUTION"], "other", "ping", [1, 2], False)
    h.complete(cmds)
    h.external_signaled("other")
    cmds = inst.activate(h.next_task())
    assert cmds[0].signal_external_workflow_execution_command_attributes.execution.run_id == "r"
    h.complete(cmds)
    h.external_signal_failed("ghost", "EXTERNAL_WORKFLOW_EXECUTION_NOT_FOUND")
    cmds = inst.activate(h.next_task())
    assert kinds(cmds) == ["REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION"]
    assert cmds[0].request_cancel_external_workflow_execution_command_attributes.workflow_id == "other"
    h.complete(cmds)
    iid = h.events[-1].event_id
    h.add(pb.EVENT_TYPE_EXTERNAL_WORKFLOW_EXECUTION_CANCEL_REQUESTED,
          external_workflow_execution_cancel_requested_event_attributes=(
              pb.ExternalWorkflowExecutionCancelRequestedEventAttributes(initiated_event_id=iid)))
    cmds = inst.activate(h.next_task())
    assert result_of(cmds) == "EXTERNAL_WORKFLOW_EXECUTION_NOT_FOUND"
    h.complete(cmds)
    replay(notifier, h.events, workflow_id="parent", run_id="run-1")


def test_eviction_cancels_coroutines_without_commands() -> None:
    cleaned: list[str] = []

    @workflow.defn
    async def long_runner() -> None:
        try:
            await workflow.execute_activity("forever", start_to_close_timeout=T)
        finally:
            cleaned.append("finally ran")

    h = History("long_runner")
    inst = new(long_runner)
    inst.activate(h.next_task())
    inst.close()
    assert cleaned == ["finally ran"]
    with pytest.raises(RuntimeError, match="closed"):
        inst.activate(h.next_task())


def test_upsert_search_attributes_and_info() -> None:
    @workflow.defn
    async def tagged() -> dict[str, object]:
        workflow.upsert_search_attributes({"CustomerId": "c-1"})
        i = workflow.info()
        return {"wid": i.workflow_id, "rid": i.run_id, "type": i.workflow_type, "tq": i.task_queue,
                "sa": dict(i.search_attributes), "len": i.get_current_history_length(), "can": i.is_continue_as_new_suggested(), "replaying": i.is_replaying,
                "start": i.start_time.isoformat(), "in": workflow.in_workflow()}

    h = History("tagged")
    cmds = new(tagged).activate(h.next_task())
    assert kinds(cmds) == ["UPSERT_WORKFLOW_SEARCH_ATTRIBUTES", "COMPLETE_WORKFLOW_EXECUTION"]
    fields = cmds[0].upsert_workflow_search_attributes_command_attributes.search_attributes.indexed_fields
    assert decode(pb.Payloads(payloads=[fields["CustomerId"]])) == ["c-1"]
    assert result_of(cmds) == {"wid": "parent", "rid": "run-1", "type": "tagged", "tq": "q", "sa": {"CustomerId": "c-1"},
                               "len": 3, "can": False, "replaying": False, "start": "2023-11-14T22:13:20+00:00", "in": True}


def test_failure_of_run_arguments_names_the_parameter() -> None:
    f = failure_of(new(child).activate(History("child", "not-a-number").next_task()))
    assert "parameter 'n'" in f.message and f.application_failure_info.non_retryable
    f = failure_of(new(child).activate(History("child", 1, 2).next_task()))
    assert "takes 1 argument(s) (n) but 2 were given" in f.message
    f = failure_of(new(child).activate(History("child").next_task()))
    assert "missing argument for parameter 'n'" in f.message
