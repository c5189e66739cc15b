"""Replay, non-determinism detection, side effects and versioning."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from _runtime_history import History, kinds, result_of

from spindle import workflow
from spindle._workflow.instance import WorkflowInstance
from spindle._workflow.replay import replay
from spindle.api import messages_pb2 as pb
from spindle.exceptions import NonDeterminismError

T = timedelta(seconds=10)


def new(defn: object) -> WorkflowInstance:
    return WorkflowInstance(defn, workflow_id="wf-1", run_id="run-1", task_queue="q")


def run_to_end(defn: object, *args: Any, feed: Callable[[History, int], None] | None = None) -> History:
    """Run ``defn`` live, completing every scheduled activity with its type name, until it closes."""
    h = History(getattr(defn, "__name__", "wf"), *args)
    inst = new(defn)
    for step in range(50):
        cmds = inst.activate(h.next_task())
        h.complete(cmds)
        if cmds and kinds(cmds)[-1].endswith("WORKFLOW_EXECUTION"):
            return h
        for c in cmds:
            if c.command_type == pb.COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK:
                a = c.schedule_activity_task_command_attributes
                h.activity_completed(a.activity_id, a.activity_type)
            if c.command_type == pb.COMMAND_TYPE_START_TIMER:
                h.timer_fired(c.start_timer_command_attributes.timer_id)
        if feed:
            feed(h, step)
    raise AssertionError("workflow did not finish")


@workflow.defn(name="Pipeline")
async def pipeline_v1() -> str:
    a = await workflow.execute_activity("extract", start_to_close_timeout=T)
    await workflow.sleep(5)
    b = await workflow.execute_activity("load", start_to_close_timeout=T)
    return a + b


@workflow.defn(name="Pipeline")
async def pipeline_reordered() -> str:
    b = await workflow.execute_activity("load", start_to_close_timeout=T)
    await workflow.sleep(5)
    a = await workflow.execute_activity("extract", start_to_close_timeout=T)
    return a + b


@workflow.defn(name="Pipeline")
async def pipeline_shorter() -> str:
    a = await workflow.execute_activity("extract", start_to_close_timeout=T)
    await workflow.sleep(5)
    return a


@workflow.defn(name="Pipeline")
async def pipeline_longer() -> str:
    a = await workflow.execute_activity("extract", start_to_close_timeout=T)
    await workflow.sleep(5)
    b = await workflow.execute_activity("load", start_to_close_timeout=T)
    c = await workflow.execute_activity("report", start_to_close_timeout=T)
    return a + b + c


def test_full_history_replays() -> None:
    h = run_to_end(pipeline_v1)
    assert h.events[-1].event_type == pb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED
    replay(pipeline_v1, h.events, workflow_id="wf-1", run_id="run-1")


def test_replay_through_a_fresh_instance_gives_the_live_commands() -> None:
    h = run_to_end(pipeline_v1)
    # Cut before the last task's outcome: a fresh worker gets the whole history at once.
    cut = max(i for i, e in enumerate(h.events) if e.event_type == pb.EVENT_TYPE_WORKFLOW_TASK_STARTED) + 1
    inst = new(pipeline_v1)
    cmds = inst.activate(h.events[:cut])
    assert result_of(cmds) == "extractload"
    assert not inst.is_replaying


def test_reordered_activities_fail_with_event_id_and_both_types() -> None:
    h = run_to_end(pipeline_v1)
    with pytest.raises(NonDeterminismError) as ei:
        replay(pipeline_reordered, h.events)
    msg = str(ei.value)
    assert ei.value.event_id == 5
    assert "history event 5" in msg
    assert "ActivityTaskScheduled(activity_type='extract', activity_id='1')" in msg
    assert "ScheduleActivityTask(activity_type='load', activity_id='1')" in msg


def test_a_different_command_at_the_same_point_is_reported() -> None:
    h = run_to_end(pipeline_v1)
    with pytest.raises(NonDeterminismError, match=r"history event 16 is ActivityTaskScheduled\(activity_type='load', "
                                                  r"activity_id='2'\) but the workflow code produced "
                                                  r"CompleteWorkflowExecution"):
        replay(pipeline_shorter, h.events)


def test_fewer_commands_than_recorded_is_reported_as_no_command() -> None:
    @workflow.defn(name="Pipeline")
    async def stalls() -> None:
        await workflow.execute_activity("extract", start_to_close_timeout=T)
        await workflow.sleep(5)
        await workflow.wait_condition(lambda: False)

    h = run_to_end(pipeline_v1)
    with pytest.raises(NonDeterminismError, match=r"history event 16 is ActivityTaskScheduled\(activity_type='load'.*"
                                                  r"produced no command"):
        replay(stalls, h.events)


def test_extra_commands_beyond_the_history_are_reported() -> None:
    h = run_to_end(pipeline_v1)
    with pytest.raises(NonDeterminismError, match=r"produced ScheduleActivityTask\(activity_type='report'"):
        replay(pipeline_longer, h.events)


def test_extra_commands_at_the_end_of_a_running_history_are_reported() -> None:
    h = History("Pipeline")
    inst = new(pipeline_v1)
    h.complete(inst.activate(h.next_task()))  # history: started, task, extract scheduled
    replay(pipeline_v1, h.events)

    @workflow.defn(name="Pipeline")
    async def two_at_once() -> None:
        workflow.start_activity("extract", start_to_close_timeout=T)
        await workflow.execute_activity("more", start_to_close_timeout=T)

    with pytest.raises(NonDeterminismError, match="at the end of the history"):
        replay(two_at_once, h.events)


def test_failed_workflow_tasks_are_skipped_on_replay() -> None:
    h = History("Pipeline")
    inst = new(pipeline_v1)
    inst.activate(h.next_task())
    h.fail_task()  # the commands of that attempt never happened
    h.next_task()
    cmds = new(pipeline_v1).activate(h.events)  # a fresh worker replays the whole history
    assert kinds(cmds) == ["SCHEDULE_ACTIVITY_TASK"]
    assert cmds[0].schedule_activity_task_command_attributes.activity_id == "1"


@workflow.defn
async def effects() -> list[Any]:
    calls: list[int] = []

    def pick() -> int:
        calls.append(1)
        return 42

    v = workflow.side_effect(pick)
    await workflow.sleep(1)
    return [v, len(calls), str(workflow.uuid4()), workflow.random().randint(0, 10**6)]


def test_side_effect_records_once_and_replays_recorded_value() -> None:
    h = History("effects")
    inst = new(effects)
    cmds = inst.activate(h.next_task())
    assert kinds(cmds) == ["RECORD_MARKER", "START_TIMER"]
    assert cmds[0].record_marker_command_attributes.marker_name == "SideEffect"
    h.complete(cmds)
    h.timer_fired("1")
    live = result_of(cmds := inst.activate(h.next_task()))
    h.complete(cmds)
    assert live[:2] == [42, 1]
    # Replaying returns the recorded value without calling pick() again.
    fresh = new(effects)
    cut = [i for i, e in enumerate(h.events) if e.event_type == pb.EVENT_TYPE_WORKFLOW_TASK_STARTED][-1] + 1
    assert result_of(fresh.activate(h.events[:cut])) == [42, 0, live[2], live[3]]
    replay(effects, h.events, run_id="run-1")

    # Doctor the marker: replay returns the recorded value, not fn()'s.
    marker = next(e for e in h.events if e.event_type == pb.EVENT_TYPE_MARKER_RECORDED)
    marker.marker_recorded_event_attributes.details["data"].payloads[0].data = b"7"
    assert result_of(new(effects).activate(h.events[:cut]))[:2] == [7, 0]


@workflow.defn(name="Versioned")
async def versioned_old() -> str:
    return await workflow.execute_activity("old_step", start_to_close_timeout=T)


@workflow.defn(name="Versioned")
async def versioned_new() -> str:
    v = workflow.get_version("new-step", workflow.DEFAULT_VERSION, 2)
    step = "new_step" if v == 2 else "old_step"
    return await workflow.execute_activity(step, start_to_close_timeout=T) + f"@v{v}"


@workflow.defn(name="Versioned")
async def versioned_patched() -> str:
    step = "new_step" if workflow.patched("new-step") else "old_step"
    return await workflow.execute_activity(step, start_to_close_timeout=T)


@workflow.defn(name="Versioned")
async def versioned_drop_old() -> str:
    workflow.get_version("new-step", 2, 2)
    return await workflow.execute_activity("new_step", start_to_close_timeout=T)


def test_new_run_records_max_version() -> None:
    h = History("Versioned")
    cmds = new(versioned_new).activate(h.next_task())
    assert kinds(cmds) == ["RECORD_MARKER", "SCHEDULE_ACTIVITY_TASK"]
    m = cmds[0].record_marker_command_attributes
    assert m.marker_name == "Version"
    assert cmds[1].schedule_activity_task_command_attributes.activity_type == "new_step"
    h = run_to_end(versioned_new)
    replay(versioned_new, h.events)
    replay(versioned_patched, h.events)  # patched() reads the same marker


def test_old_history_without_marker_replays_as_default_version() -> None:
    h = run_to_end(versioned_old)
    replay(versioned_new, h.events)
    replay(versioned_patched, h.events)
    cut = [i for i, e in enumerate(h.events) if e.event_type == pb.EVENT_TYPE_WORKFLOW_TASK_STARTED][-1] + 1
    assert result_of(new(versioned_new).activate(h.events[:cut])) == "old_step@v1"


def test_version_below_min_supported_names_the_change_id() -> None:
    h = run_to_end(versioned_old)
    with pytest.raises(NonDeterminismError, match=r"change id 'new-step' has default .*version 1.*\[2, 2\]"):
        replay(versioned_drop_old, h.events)


def test_removing_get_version_later_is_allowed() -> None:
    h = run_to_end(versioned_new)

    @workflow.defn(name="Versioned")
    async def cleaned() -> str:
        return await workflow.execute_activity("new_step", start_to_close_timeout=T) + "@v2"

    replay(cleaned, h.events)


def test_deprecate_patch_accepts_histories_with_the_marker() -> None:
    h = run_to_end(versioned_patched)

    @workflow.defn(name="Versioned")
    async def deprecated() -> str:
        workflow.deprecate_patch("new-step")
        return await workflow.execute_activity("new_step", start_to_close_timeout=T)

    replay(deprecated, h.events)
    assert kinds(new(deprecated).activate(History("Versioned").next_task())) == ["RECORD_MARKER",
                                                                                  "SCHEDULE_ACTIVITY_TASK"]


def test_continue_as_new_closes_the_run_with_args() -> None:
    @workflow.defn
    async def looper(n: int) -> None:
        await workflow.sleep(1)
        try:
            workflow.continue_as_new(n + 1, task_queue="other")
        except Exception:  # must not be swallowed by a broad except
            pass

    h = History("looper", 1)
    inst = new(looper)
    h.complete(inst.activate(h.next_task()))
    h.timer_fired("1")
    cmds = inst.activate(h.next_task())
    assert kinds(cmds) == ["CONTINUE_AS_NEW_WORKFLOW_EXECUTION"]
    a = cmds[0].continue_as_new_workflow_execution_command_attributes
    assert (a.task_queue, a.workflow_type) == ("other", "")
    assert a.input.payloads[0].data == b"2"
    h.complete(cmds)
    replay(looper, h.events)
