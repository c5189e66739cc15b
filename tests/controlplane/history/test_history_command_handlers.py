"""The command handlers of a completed workflow task (``history/ops/commands``), one by one, without a server.

For each command type: what a bad command is refused with (the exact message the worker
gets back as the task's BAD_COMMAND failure), and what a good one writes (its events, the
tasks and timers of the same transaction, the pending state the run records). The
dispatch (``validate``/``apply``) is checked first: the table covers the wire's command
types, and the checks every command goes through (type, attributes, closing last, field
rules, search attributes, the task's size).
"""

from __future__ import annotations

import asyncio

from typing import Any

import pytest

from _history_world import IDENTITY, NS, NS_ID, OTHER, T0, Run, cmd, keyword, make_context, names

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.controlplane._field_rules import MAX_DURATION_MS
from spindle.controlplane.history._mutable_state import MutableState
from spindle.controlplane.history._tasks import (
    T_ACTIVITY_TASK,
    T_CANCEL_EXTERNAL,
    T_CLOSE,
    T_SIGNAL_EXTERNAL,
    T_START_CHILD,
    T_VISIBILITY,
    TM_ACTIVITY_TIMEOUT,
    TM_RETENTION,
    TM_USER_TIMER,
)
from spindle.controlplane.history.ops import commands, update
from spindle.controlplane.history.ops.commands.handler import Validation

SCHEDULE, CANCEL_ACTIVITY = pb.COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK, pb.COMMAND_TYPE_REQUEST_CANCEL_ACTIVITY_TASK
START_TIMER, CANCEL_TIMER = pb.COMMAND_TYPE_START_TIMER, pb.COMMAND_TYPE_CANCEL_TIMER
CHILD = pb.COMMAND_TYPE_START_CHILD_WORKFLOW_EXECUTION
SIGNAL_EXT = pb.COMMAND_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION
CANCEL_EXT = pb.COMMAND_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION
MARKER, UPSERT = pb.COMMAND_TYPE_RECORD_MARKER, pb.COMMAND_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES
ACCEPT, REJECT, COMPLETE_UPDATE = pb.COMMAND_TYPE_ACCEPT_UPDATE, pb.COMMAND_TYPE_REJECT_UPDATE, pb.COMMAND_TYPE_COMPLETE_UPDATE
COMPLETE, FAIL = pb.COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION, pb.COMMAND_TYPE_FAIL_WORKFLOW_EXECUTION
CANCEL, CONTINUE = pb.COMMAND_TYPE_CANCEL_WORKFLOW_EXECUTION, pb.COMMAND_TYPE_CONTINUE_AS_NEW_WORKFLOW_EXECUTION


def activity(activity_id: str = "a1", **kw: Any) -> pb.Command:
    kw.setdefault("activity_type", "Act")
    kw.setdefault("start_to_close_timeout_ms", 5_000)
    return cmd(SCHEDULE, activity_id=activity_id, **kw)


def timer(timer_id: str = "t1", ms: int = 1_000) -> pb.Command:
    return cmd(START_TIMER, timer_id=timer_id, start_to_fire_timeout_ms=ms)


def child(**kw: Any) -> pb.Command:
    kw.setdefault("workflow_id", "kid")
    kw.setdefault("workflow_type", "Kid")
    return cmd(CHILD, **kw)


def running(**config: Any) -> Run:
    """A run whose first workflow task was taken by a poller."""
    run = Run(make_context(**config))
    run.start_task()
    return run


def problem(run: Run, *cmds: pb.Command) -> str | None:
    return commands.validate(run.ctx, run.st, list(cmds))


def applied(run: Run, *cmds: pb.Command) -> Any:
    """Complete the task with ``cmds`` (checked valid); the txn, whose first two events are WorkflowTaskStarted/Completed."""
    error, txn = run.complete_task(*cmds)
    assert error is None, error
    assert names(txn.events[:2]) == ["WORKFLOW_TASK_STARTED", "WORKFLOW_TASK_COMPLETED"]
    return txn


def wtc_of(txn: Any) -> int:
    return txn.events[1].event_id


# ---------------------------------------------------------------------------- the table and the dispatch
def test_every_command_type_of_the_wire_has_one_handler_naming_its_own_attributes_field() -> None:
    oneof = {f.name for f in pb.Command.DESCRIPTOR.oneofs_by_name["attributes"].fields}
    # the Nexus commands are on the wire for the SDK; the server refuses them (BAD_COMMAND) until Nexus dispatch is
    # built (docs/NEXUS.md): take them out of this set in the change that builds them
    not_built = {pb.COMMAND_TYPE_SCHEDULE_NEXUS_OPERATION, pb.COMMAND_TYPE_REQUEST_CANCEL_NEXUS_OPERATION}
    assert not_built.isdisjoint(commands.HANDLERS)
    assert set(commands.HANDLERS) == set(pb.CommandType.values()) - {pb.COMMAND_TYPE_UNSPECIFIED} - not_built
    for t, h in commands.HANDLERS.items():
        assert h.command_type == t and h.name == pb.CommandType.Name(t)
        assert h.attr in oneof
    assert len({h.attr for h in commands.HANDLERS.values()}) == len(commands.HANDLERS)
    assert commands.CLOSE_COMMANDS == {COMPLETE, FAIL, CANCEL, CONTINUE}
    assert {t for t, h in commands.HANDLERS.items() if h.search_attributes_namespace} == {UPSERT, CHILD, CONTINUE}


def test_an_unknown_command_type_is_refused_by_its_index() -> None:
    run = running()
    assert problem(run, pb.Command()) == "commands[0]: unknown command type COMMAND_TYPE_UNSPECIFIED"
    assert problem(run, timer(), pb.Command(command_type=99)) == "commands[1]: unknown command type 99"


def test_a_command_needs_the_attributes_of_its_type() -> None:
    run = running()
    assert problem(run, pb.Command(command_type=START_TIMER)) == \
        "commands[0]: COMMAND_TYPE_START_TIMER needs start_timer_command_attributes (got none)"
    wrong = cmd(MARKER, marker_name="m")
    wrong.command_type = START_TIMER
    assert problem(run, wrong) == \
        "commands[0]: COMMAND_TYPE_START_TIMER needs start_timer_command_attributes (got record_marker_command_attributes)"


@pytest.mark.parametrize("closing", [COMPLETE, FAIL, CANCEL, CONTINUE])
def test_a_closing_command_must_be_the_last_of_its_task(closing: int) -> None:
    run = running()
    assert problem(run, cmd(closing), timer()) == \
        f"commands[0]: {pb.CommandType.Name(closing)} must be the last command of the task"
    assert problem(run, timer(), cmd(closing)) is None


def test_the_first_problem_is_reported_and_a_refused_task_writes_none_of_its_commands() -> None:
    run = running()
    error, txn = run.complete_task(timer("ok"), timer(""), cmd(MARKER))
    assert error == "commands[1].timer_id: required"
    assert names(txn.events) == ["WORKFLOW_TASK_STARTED", "WORKFLOW_TASK_FAILED", "WORKFLOW_TASK_SCHEDULED"]
    failed = txn.events[1].workflow_task_failed_event_attributes
    assert failed.cause == pb.WORKFLOW_TASK_FAILED_CAUSE_BAD_COMMAND and failed.failure.message == error
    assert run.st.timers == {}


def test_a_task_whose_commands_are_over_four_payload_limits_is_refused() -> None:
    run = running(max_payload_bytes=100)
    big = cmd(MARKER, marker_name="m", details={"d": pb.Payloads(payloads=[pb.Payload(data=b"x" * 380)])})
    size = big.record_marker_command_attributes.ByteSize() + timer().start_timer_command_attributes.ByteSize()
    assert big.record_marker_command_attributes.ByteSize() <= 400 < size
    assert problem(run, big, timer()) == f"commands: {size} bytes in one task is over the limit"
    assert problem(run, big) is None  # one alone fits


def test_the_field_rules_come_after_the_handlers_own_check() -> None:
    run = running()
    assert problem(run, timer("a\x01")) == ("commands[0].timer_id: control character U+0001 at position 1 "
                                            "(ids and names must not contain control characters)")
    assert problem(run, timer("t", MAX_DURATION_MS + 1)) == \
        f"commands[0].start_to_fire_timeout_ms: {MAX_DURATION_MS + 1} ms is over the limit of {MAX_DURATION_MS} ms (100 years)"
    assert problem(run, timer("", MAX_DURATION_MS + 1)) == "commands[0].timer_id: required"  # the handler's, first
    assert problem(run, activity(retry_policy=pb.RetryPolicy(backoff_coefficient=0.5))) == \
        "commands[0].retry_policy.backoff_coefficient: must be 0 (the default) or between 1 and 1000, got 0.5"


def sa(**values: pb.Payload) -> pb.SearchAttributes:
    return pb.SearchAttributes(indexed_fields=values)


def test_search_attributes_must_be_registered_in_the_namespace_they_land_in() -> None:
    run = running()
    registered = "CustomInt, CustomKeyword, ScheduledById, ScheduledStartTime"
    assert problem(run, cmd(UPSERT, search_attributes=sa(OtherKw=keyword("x")))) == (
        f"commands[0].search_attributes: search attribute 'OtherKw' is not registered in namespace 'default' "
        f"(registered: {registered})")
    assert problem(run, cmd(UPSERT, search_attributes=sa(CustomInt=keyword("x")))) == \
        "commands[0].search_attributes.CustomInt: 'x' is not a valid Int value"
    assert problem(run, cmd(CONTINUE, search_attributes=sa(OtherKw=keyword("x")))) is not None
    # a child's are checked against its own namespace
    assert problem(run, child(namespace=OTHER, search_attributes=sa(OtherKw=keyword("x")))) is None
    assert problem(run, child(search_attributes=sa(OtherKw=keyword("x")))) is not None
    assert problem(run, child(namespace=NS, search_attributes=sa(CustomKeyword=keyword("x")))) is None


def test_a_single_valued_attribute_given_as_a_list_of_one_is_stored_as_the_value() -> None:
    run = running()
    c = cmd(UPSERT, search_attributes=sa(CustomKeyword=pb.Payload(data=b'["a"]')))
    assert problem(run, c) is None
    assert c.upsert_workflow_search_attributes_command_attributes.search_attributes.indexed_fields["CustomKeyword"].data \
        == b'"a"'


# ---------------------------------------------------------------------------- activities
@pytest.mark.parametrize(("command", "error"), [
    (activity(activity_type=""), "commands[0].activity_type: required"),
    (activity(""), "commands[0].activity_id: required"),
    (activity("x" * 21), "commands[0]: activity_id, activity_type and task_queue are limited to 20 characters"),
    (activity(task_queue="q" * 21), "commands[0]: activity_id, activity_type and task_queue are limited to 20 characters"),
    (activity(heartbeat_timeout_ms=-1), "commands[0].heartbeat_timeout_ms: must not be negative"),
    (activity(schedule_to_start_timeout_ms=-1), "commands[0].schedule_to_start_timeout_ms: must not be negative"),
    (activity(start_to_close_timeout_ms=0),
     "commands[0]: activity 'Act' needs start_to_close_timeout or schedule_to_close_timeout "
     "(an activity without a timeout could wait forever)"),
])
def test_schedule_activity_refused(command: pb.Command, error: str) -> None:
    assert problem(running(max_id_length=20), command) == error


def test_an_activity_id_is_unique_among_pending_activities_and_the_tasks_own() -> None:
    run = running()
    assert problem(run, activity("a1"), activity("a1")) == \
        "commands[1].activity_id: 'a1' is already used by a pending activity"
    applied(run, activity("a1"))
    run.start_task()
    assert problem(run, activity("a1")) == "commands[0].activity_id: 'a1' is already used by a pending activity"


def test_schedule_activity_writes_the_event_records_it_pending_and_queues_its_task_and_timeouts() -> None:
    run = running()
    txn = applied(run, activity("a1", schedule_to_close_timeout_ms=60_000, schedule_to_start_timeout_ms=10_000,
                                start_to_close_timeout_ms=0, input=pb.Payloads(payloads=[pb.Payload(data=b"i")])))
    (e,) = txn.events[2:]
    a = e.activity_task_scheduled_event_attributes
    assert names([e]) == ["ACTIVITY_TASK_SCHEDULED"]
    assert (a.activity_id, a.activity_type, a.task_queue, a.workflow_task_completed_event_id) == ("a1", "Act", "q", wtc_of(txn))
    assert a.start_to_close_timeout_ms == 60_000  # none given: its schedule-to-close
    assert a.retry_policy == pb.RetryPolicy(initial_interval_ms=1000, backoff_coefficient=2.0, maximum_interval_ms=100_000)
    info = run.st.activities[e.event_id]
    assert (info.activity_id, info.input.payloads[0].data, info.started) == ("a1", b"i", False)
    assert run.st.activity_ids == {"a1": e.event_id}
    (task,) = [t for t in txn.transfer if t.kind == T_ACTIVITY_TASK]
    assert (task.event_id, task.attempt, task.extra) == (e.event_id, 1, {"q": "q"})
    timers = {t.sub: t for t in txn.timers if t.kind == TM_ACTIVITY_TIMEOUT}
    assert {k: (t.fire_time_ms, t.event_id) for k, t in timers.items()} == {
        "SCHEDULE_TO_CLOSE": (T0 + 60_000, e.event_id), "SCHEDULE_TO_START": (T0 + 10_000, e.event_id)}
    assert info.timers == timers
    assert not txn.wake  # the workflow asked for it: nothing new for it to see


def test_an_eager_activity_on_the_workflows_queue_is_started_in_the_same_write() -> None:
    run = running()
    txn = applied(run, activity("eager", request_eager_execution=True, schedule_to_start_timeout_ms=10_000),
                  activity("elsewhere", request_eager_execution=True, task_queue="other-q"))
    eager, elsewhere = (e.event_id for e in txn.events[2:])
    assert txn.eager_activities == [eager]
    assert [t.event_id for t in txn.transfer if t.kind == T_ACTIVITY_TASK] == [elsewhere]
    assert "SCHEDULE_TO_START" not in run.st.activities[eager].timers  # it starts now
    assert "SCHEDULE_TO_START" not in run.st.activities[elsewhere].timers  # none asked for


def scheduled(run: Run, activity_id: str = "a1") -> int:
    txn = applied(run, activity(activity_id, schedule_to_close_timeout_ms=60_000))
    for t in txn.timers:
        t.task_id = 7  # as the commit assigns
    run.start_task()
    return txn.events[2].event_id


def test_request_cancel_of_an_activity_that_is_not_pending_is_refused() -> None:
    run = running()
    sid = scheduled(run)
    assert problem(run, cmd(CANCEL_ACTIVITY, scheduled_event_id=sid + 1)) == \
        f"commands[0].scheduled_event_id: no pending activity scheduled by event {sid + 1}"


def test_request_cancel_of_an_activity_not_running_cancels_it_at_once() -> None:
    run = running()
    sid = scheduled(run)
    timer_row = run.st.activities[sid].timers["SCHEDULE_TO_CLOSE"]
    txn = applied(run, cmd(CANCEL_ACTIVITY, scheduled_event_id=sid))
    req, done = txn.events[2:]
    assert names([req, done]) == ["ACTIVITY_TASK_CANCEL_REQUESTED", "ACTIVITY_TASK_CANCELED"]
    assert req.activity_task_cancel_requested_event_attributes.workflow_task_completed_event_id == wtc_of(txn)
    d = done.activity_task_canceled_event_attributes
    assert (d.scheduled_event_id, d.latest_cancel_requested_event_id) == (sid, req.event_id)
    assert sid not in run.st.activities and run.st.activity_ids == {}
    assert (timer_row.fire_time_ms, 7) in txn.timer_delete
    assert not txn.wake  # the workflow's own request: it knows


@pytest.mark.parametrize("where", ["started", "closed"])
def test_request_cancel_of_a_running_activity_or_one_whose_outcome_is_buffered_only_records_the_request(where: str) -> None:
    run = running()
    sid = scheduled(run)
    setattr(run.st.activities[sid], where, True)
    txn = applied(run, cmd(CANCEL_ACTIVITY, scheduled_event_id=sid))
    assert names(txn.events[2:]) == ["ACTIVITY_TASK_CANCEL_REQUESTED"]
    info = run.st.activities[sid]
    assert info.cancel_requested and info.cancel_requested_event_id == txn.events[2].event_id
    assert txn.timer_delete == []


# ---------------------------------------------------------------------------- timers
@pytest.mark.parametrize(("commands_", "error"), [
    ([timer("")], "commands[0].timer_id: required"),
    ([timer("t1", 0)], "commands[0].start_to_fire_timeout_ms: must be positive, got 0"),
    ([timer("t1", -5)], "commands[0].start_to_fire_timeout_ms: must be positive, got -5"),
    ([timer("t1"), timer("t1")], "commands[1].timer_id: 't1' is already used by a pending timer"),
    ([cmd(CANCEL_TIMER, timer_id="nope")], "commands[0].timer_id: no pending timer 'nope'"),
    ([timer("t1"), cmd(CANCEL_TIMER, timer_id="t1"), cmd(CANCEL_TIMER, timer_id="t1")],
     "commands[2].timer_id: timer 't1' is already cancelled by commands[1]"),
    ([timer("t1"), cmd(CANCEL_TIMER, timer_id="t1"), timer("t1"), cmd(CANCEL_TIMER, timer_id="t1"),
      cmd(CANCEL_TIMER, timer_id="t1")], "commands[4].timer_id: timer 't1' is already cancelled by commands[3]"),
])
def test_timer_commands_refused(commands_: list[pb.Command], error: str) -> None:
    assert problem(running(), *commands_) == error


def test_a_timer_started_and_cancelled_in_one_task_and_an_id_reused_after_its_cancel_are_fine() -> None:
    run = running()
    applied(run, timer("t1"))
    run.start_task()
    assert problem(run, timer("t1")) == "commands[0].timer_id: 't1' is already used by a pending timer"
    assert problem(run, cmd(CANCEL_TIMER, timer_id="t1"), timer("t1")) is None
    assert problem(run, timer("t2"), cmd(CANCEL_TIMER, timer_id="t2")) is None


def test_start_timer_writes_the_event_records_it_pending_and_arms_its_timer() -> None:
    run = running()
    txn = applied(run, timer("t1", 1_500))
    (e,) = txn.events[2:]
    a = e.timer_started_event_attributes
    assert (a.timer_id, a.start_to_fire_timeout_ms, a.workflow_task_completed_event_id) == ("t1", 1_500, wtc_of(txn))
    info = run.st.timers["t1"]
    assert (info.started_event_id, info.fire_time_ms) == (e.event_id, T0 + 1_500)
    (t,) = [t for t in txn.timers if t.kind == TM_USER_TIMER]
    assert (t.fire_time_ms, t.event_id, t.extra) == (T0 + 1_500, e.event_id, {"id": "t1"})
    assert info.task is t


def test_cancel_timer_writes_the_event_deletes_its_timer_row_and_forgets_it() -> None:
    run = running()
    started = applied(run, timer("t1"))
    started.timers[-1].task_id = 42  # as the commit assigns
    run.start_task()
    txn = applied(run, cmd(CANCEL_TIMER, timer_id="t1"))
    (e,) = txn.events[2:]
    a = e.timer_canceled_event_attributes
    assert (a.timer_id, a.started_event_id, a.workflow_task_completed_event_id, a.identity) == \
        ("t1", started.events[2].event_id, wtc_of(txn), IDENTITY)
    assert txn.timer_delete == [(T0 + 1_000, 42)] and run.st.timers == {}


def test_cancel_timer_of_a_timer_not_yet_written_deletes_no_row() -> None:
    run = running()
    applied(run, timer("t1"))  # task_id 0: its commit never happened here
    run.start_task()
    txn = applied(run, cmd(CANCEL_TIMER, timer_id="t1"))
    assert txn.timer_delete == [] and run.st.timers == {}


# ---------------------------------------------------------------------------- children
@pytest.mark.parametrize(("command", "error"), [
    (child(workflow_id=""), "commands[0]: workflow_id and workflow_type are required"),
    (child(workflow_type=""), "commands[0]: workflow_id and workflow_type are required"),
    (child(workflow_id="w" * 21), "commands[0].workflow_id: longer than 20 characters"),
    (child(workflow_type="w" * 21), "commands[0].workflow_type: longer than 20 characters"),
    (child(task_queue="w" * 21), "commands[0].task_queue: longer than 20 characters"),
    (child(run_timeout_ms=-1), "commands[0].run_timeout_ms: must not be negative"),
    (child(workflow_id_reuse_policy=77), "commands[0].workflow_id_reuse_policy: unknown value 77"),
    (child(namespace="missing"), "commands[0].namespace: namespace 'missing' not found"),
])
def test_start_child_refused(command: pb.Command, error: str) -> None:
    assert problem(running(max_id_length=20), command) == error


def test_start_child_writes_the_initiated_event_with_the_parents_defaults_and_queues_the_start() -> None:
    run = running()
    txn = applied(run, child(input=pb.Payloads(payloads=[pb.Payload(data=b"i")])),
                  child(workflow_id="kid2", namespace=OTHER, task_queue="kq",
                        parent_close_policy=pb.PARENT_CLOSE_POLICY_ABANDON))
    first, second = txn.events[2:]
    a = first.start_child_workflow_execution_initiated_event_attributes
    assert (a.namespace, a.workflow_id, a.task_queue, a.parent_close_policy, a.workflow_task_completed_event_id) == \
        (NS, "kid", "q", pb.PARENT_CLOSE_POLICY_TERMINATE, wtc_of(txn))
    b = second.start_child_workflow_execution_initiated_event_attributes
    assert (b.namespace, b.task_queue, b.parent_close_policy) == (OTHER, "kq", pb.PARENT_CLOSE_POLICY_ABANDON)
    kids = run.st.children
    assert sorted(kids) == [first.event_id, second.event_id]
    assert (kids[first.event_id].workflow_id, kids[first.event_id].run_id) == ("kid", "")
    assert [(t.kind, t.event_id) for t in txn.transfer if t.kind == T_START_CHILD] == \
        [(T_START_CHILD, first.event_id), (T_START_CHILD, second.event_id)]


# ---------------------------------------------------------------------------- other workflows
@pytest.mark.parametrize(("command", "error"), [
    (cmd(SIGNAL_EXT, signal_name="s"), "commands[0]: execution.workflow_id and signal_name are required"),
    (cmd(SIGNAL_EXT, execution=pb.WorkflowExecution(workflow_id="w")),
     "commands[0]: execution.workflow_id and signal_name are required"),
    (cmd(SIGNAL_EXT, execution=pb.WorkflowExecution(workflow_id="w"), signal_name="s" * 21),
     "commands[0]: execution.workflow_id and signal_name are limited to 20 characters"),
    (cmd(CANCEL_EXT), "commands[0].workflow_id: required"),
    (cmd(CANCEL_EXT, workflow_id="w" * 21), "commands[0].workflow_id: longer than 20 characters"),
])
def test_signal_or_cancel_another_workflow_refused(command: pb.Command, error: str) -> None:
    assert problem(running(max_id_length=20), command) == error


def test_signal_and_cancel_another_workflow_write_initiated_events_and_queue_their_tasks() -> None:
    run = running()
    target = pb.WorkflowExecution(workflow_id="other-wf", run_id="r9")
    txn = applied(run, cmd(SIGNAL_EXT, execution=target, signal_name="sig", child_workflow_only=True),
                  cmd(CANCEL_EXT, namespace=OTHER, workflow_id="other-wf", reason="why"))
    sig, cancel = txn.events[2:]
    s = sig.signal_external_workflow_execution_initiated_event_attributes
    assert (s.namespace, s.workflow_execution, s.signal_name, s.child_workflow_only, s.workflow_task_completed_event_id) == \
        (NS, target, "sig", True, wtc_of(txn))
    c = cancel.request_cancel_external_workflow_execution_initiated_event_attributes
    assert (c.namespace, c.workflow_execution.workflow_id, c.workflow_execution.run_id, c.reason) == \
        (OTHER, "other-wf", "", "why")
    assert list(run.st.signals_external) == [sig.event_id] and list(run.st.cancels_external) == [cancel.event_id]
    assert [(t.kind, t.event_id) for t in txn.transfer if t.kind in (T_SIGNAL_EXTERNAL, T_CANCEL_EXTERNAL)] == \
        [(T_SIGNAL_EXTERNAL, sig.event_id), (T_CANCEL_EXTERNAL, cancel.event_id)]


# ---------------------------------------------------------------------------- markers, search attributes
def test_record_marker() -> None:
    run = running()
    assert problem(run, cmd(MARKER)) == "commands[0].marker_name: required"
    details = {"k": pb.Payloads(payloads=[pb.Payload(data=b"v")])}
    txn = applied(run, cmd(MARKER, marker_name="version", details=details, failure=pb.Failure(message="f")))
    (e,) = txn.events[2:]
    m = e.marker_recorded_event_attributes
    assert (m.marker_name, dict(m.details), m.failure.message, m.workflow_task_completed_event_id) == \
        ("version", details, "f", wtc_of(txn))


def test_upsert_search_attributes_writes_the_event_updates_the_run_and_rewrites_its_visibility_record() -> None:
    run = Run(make_context(), search_attributes=sa(CustomKeyword=keyword("old"), CustomInt=pb.Payload(data=b"1")))
    run.start_task()
    txn = applied(run, cmd(UPSERT, search_attributes=sa(CustomKeyword=keyword("new"))))
    (e,) = txn.events[2:]
    assert dict(e.upsert_workflow_search_attributes_event_attributes.search_attributes.indexed_fields) == \
        {"CustomKeyword": keyword("new")}
    assert run.st.search_attributes == {"CustomKeyword": keyword("new"), "CustomInt": pb.Payload(data=b"1")}
    (vis,) = [t for t in txn.transfer if t.kind == T_VISIBILITY]
    assert '"CustomKeyword": "new"' in vis.extra["row"]["search_attributes"]


# ---------------------------------------------------------------------------- updates
async def test_update_commands_refused() -> None:
    run = running()
    run.add_update("u1")
    assert problem(run, cmd(ACCEPT, update_id="nope")) == "commands[0].update_id: no pending update 'nope'"
    assert problem(run, cmd(REJECT, update_id="nope")) == "commands[0].update_id: no pending update 'nope'"
    assert problem(run, cmd(COMPLETE_UPDATE, update_id="u1")) == "commands[0].update_id: update 'u1' was not accepted"
    assert problem(run, cmd(COMPLETE_UPDATE, update_id="nope")) == "commands[0].update_id: update 'nope' was not accepted"
    assert problem(run, cmd(ACCEPT, update_id="u1"), cmd(COMPLETE_UPDATE, update_id="u1")) is None


async def test_accept_records_the_request_and_complete_answers_the_caller_after_the_commit() -> None:
    run = running()
    pu = run.add_update("u1")
    txn = applied(run, cmd(ACCEPT, update_id="u1"))
    (acc,) = txn.events[2:]
    a = acc.workflow_execution_update_accepted_event_attributes
    assert (a.update_id, a.name, a.identity, a.input.payloads[0].data, a.workflow_task_completed_event_id) == \
        ("u1", "upd", "client", b"in", wtc_of(txn))
    assert run.st.accepted_updates == {"u1"} and "u1" in run.st.pending_updates
    run.start_task()
    for again in (ACCEPT, REJECT):  # an update is answered once
        assert problem(run, cmd(again, update_id="u1")) == \
            "commands[0].update_id: update 'u1' was already accepted (by an earlier workflow task)"
    result = pb.Payloads(payloads=[pb.Payload(data=b"out")])
    txn = applied(run, cmd(COMPLETE_UPDATE, update_id="u1", success=result))
    (done,) = txn.events[2:]
    c = done.workflow_execution_update_completed_event_attributes
    assert (c.update_id, c.accepted_event_id, c.success, c.HasField("failure")) == ("u1", acc.event_id, result, False)
    assert "u1" in run.st.completed_updates and "u1" not in run.st.pending_updates
    assert not pu.future.done()  # only once committed
    for fn in txn.after_commit:
        fn()
    assert pu.future.result().success == result and pu.future.result().run_id == run.st.run_id
    run.start_task()
    for again in (ACCEPT, REJECT, COMPLETE_UPDATE):
        assert problem(run, cmd(again, update_id="u1")) == \
            "commands[0].update_id: update 'u1' was already completed (by an earlier workflow task)"


async def test_complete_update_with_a_failure() -> None:
    run = running()
    pu = run.add_update("u1")
    txn = applied(run, cmd(ACCEPT, update_id="u1"), cmd(COMPLETE_UPDATE, update_id="u1", failure=pb.Failure(message="no")))
    c = txn.events[3].workflow_execution_update_completed_event_attributes
    assert c.failure.message == "no" and not c.HasField("success") and c.accepted_event_id == txn.events[2].event_id
    for fn in txn.after_commit:
        fn()
    assert pu.future.result().failure.message == "no"


async def test_reject_writes_no_event_and_answers_the_caller_with_the_failure_after_the_commit() -> None:
    run = running()
    pu = run.add_update("u1")
    txn = applied(run, cmd(REJECT, update_id="u1", failure=pb.Failure(message="invalid")))
    assert txn.events[2:] == []
    assert run.st.pending_updates == {} and run.st.accepted_updates == set()
    assert not pu.future.done()
    for fn in txn.after_commit:
        fn()
    assert pu.future.result().failure.message == "invalid"


# ---------------------------------------------------------------------------- what earlier commands did
def act(run: Run, sid: int, word: str) -> pb.Command:
    """One command on update ``u1`` or on the activity scheduled by ``sid``, by a short name."""
    if word == "accept":
        return cmd(ACCEPT, update_id="u1")
    if word == "reject":
        return cmd(REJECT, update_id="u1", failure=pb.Failure(message="no"))
    if word == "complete":
        return cmd(COMPLETE_UPDATE, update_id="u1", success=pb.Payloads())
    if word == "marker":
        return cmd(MARKER, marker_name="m")
    assert word == "cancel-activity"
    return cmd(CANCEL_ACTIVITY, scheduled_event_id=sid)


@pytest.mark.parametrize(("sequence", "error"), [
    ("reject accept", "commands[1].update_id: update 'u1' is already rejected by commands[0]"),
    ("reject reject", "commands[1].update_id: update 'u1' is already rejected by commands[0]"),
    ("reject complete", "commands[1].update_id: update 'u1' is already rejected by commands[0]"),
    ("accept accept", "commands[1].update_id: update 'u1' is already accepted by commands[0]"),
    ("accept marker reject", "commands[2].update_id: update 'u1' is already accepted by commands[0]"),
    ("accept complete accept", "commands[2].update_id: update 'u1' is already completed by commands[1]"),
    ("accept complete reject", "commands[2].update_id: update 'u1' is already completed by commands[1]"),
    ("accept complete complete", "commands[2].update_id: update 'u1' is already completed by commands[1]"),
    ("cancel-activity cancel-activity",
     "commands[1].scheduled_event_id: the cancel of the activity scheduled by event {sid} is already requested by "
     "commands[0]"),
    ("marker cancel-activity accept cancel-activity",
     "commands[3].scheduled_event_id: the cancel of the activity scheduled by event {sid} is already requested by "
     "commands[1]"),
])
@pytest.mark.parametrize("started", [False, True], ids=["activity-scheduled", "activity-started"])
async def test_validate_tracks_what_earlier_commands_did(sequence: str, error: str, started: bool) -> None:
    """A second command on what an earlier one settled is refused by name, and the task writes none of them."""
    run = running()
    pu = run.add_update("u1")
    sid = scheduled(run)
    run.st.activities[sid].started = started  # cancelled at once, or only asked to stop: refused either way
    events = len(run.st.events)
    cmds = [act(run, sid, w) for w in sequence.split()]
    assert problem(run, *cmds) == error.format(sid=sid)
    got, txn = run.complete_task(*cmds)
    assert got == error.format(sid=sid)
    assert names(txn.events) == ["WORKFLOW_TASK_STARTED", "WORKFLOW_TASK_FAILED", "WORKFLOW_TASK_SCHEDULED"]
    assert txn.events[1].workflow_task_failed_event_attributes.cause == pb.WORKFLOW_TASK_FAILED_CAUSE_BAD_COMMAND
    assert len(run.st.events) == events + 3
    for fn in txn.after_commit:
        fn()
    assert not pu.future.done()  # not answered: the update still waits for the workflow
    assert run.st.pending_updates == {"u1": pu} and run.st.accepted_updates == set() and sid in run.st.activities
    assert not run.st.activities[sid].cancel_requested


@pytest.mark.parametrize("sequence", ["accept complete", "accept marker complete", "reject", "accept",
                                      "cancel-activity accept complete"])
async def test_each_update_and_cancel_is_written_once(sequence: str) -> None:
    run = running()
    run.add_update("u1")
    sid = scheduled(run)
    run.st.activities[sid].started = True
    txn = applied(run, *(act(run, sid, w) for w in sequence.split()))
    want = {"accept": ["WORKFLOW_EXECUTION_UPDATE_ACCEPTED"], "complete": ["WORKFLOW_EXECUTION_UPDATE_COMPLETED"],
            "reject": [], "marker": ["MARKER_RECORDED"], "cancel-activity": ["ACTIVITY_TASK_CANCEL_REQUESTED"]}
    assert names(txn.events[2:]) == [n for w in sequence.split() for n in want[w]]


def test_an_activity_cancel_is_requested_once_also_across_tasks() -> None:
    run = running()
    sid = scheduled(run)
    run.st.activities[sid].started = True  # a worker runs it: the request is recorded, the activity still pending
    req = applied(run, cmd(CANCEL_ACTIVITY, scheduled_event_id=sid)).events[2].event_id
    run.start_task()
    assert problem(run, cmd(CANCEL_ACTIVITY, scheduled_event_id=sid)) == \
        f"commands[0].scheduled_event_id: the cancel of the activity scheduled by event {sid} was already requested " \
        f"(event {req})"


def test_a_timer_cancelled_twice_in_one_task_is_refused_by_the_command_that_cancelled_it() -> None:
    run = running()
    applied(run, timer("t1"))
    run.start_task()
    assert problem(run, cmd(CANCEL_TIMER, timer_id="t1"), cmd(MARKER, marker_name="m"), cmd(CANCEL_TIMER, timer_id="t1")) \
        == "commands[2].timer_id: timer 't1' is already cancelled by commands[0]"


async def test_an_update_request_repeated_after_its_accept_waits_for_its_completion_without_a_second_delivery() -> None:
    """A restart loses the waiter of an accepted update (in memory); the caller's retry is not delivered again."""
    run = running()
    run.add_update("u1")
    applied(run, cmd(ACCEPT, update_id="u1"))
    run.st.pending_updates.clear()  # as after a restart
    run.start_task()

    class Cache:  # what ``update`` uses of the run cache: the run, under its lock
        lock = asyncio.Lock()

        def locked(self, namespace_id: str, workflow_id: str) -> asyncio.Lock:
            return self.lock

        async def resolve(self, namespace_id: str, workflow_id: str, run_id: str) -> Any:
            return run.st

    run.ctx.cache = Cache()  # type: ignore[assignment]
    req = svc.UpdateWorkflowExecutionRequest(workflow_execution=pb.WorkflowExecution(workflow_id="wf"),
                                             request=pb.UpdateRequest(update_id="u1", name="upd"))
    waiting = asyncio.ensure_future(update.update(run.ctx, run.ctx.namespaces.get(NS), req))
    await asyncio.sleep(0)
    assert run.st.pending_updates["u1"].delivered  # the workflow has it: no task delivers it again
    result = pb.Payloads(payloads=[pb.Payload(data=b"out")])
    txn = applied(run, cmd(COMPLETE_UPDATE, update_id="u1", success=result))
    for fn in txn.after_commit:
        fn()
    assert (await waiting).success == result


def test_a_buffered_firing_of_a_timer_the_task_cancels_is_not_written() -> None:
    run = running()
    first = applied(run, timer("t1")).events[2].event_id
    run.start_task()
    run.external(pb.EVENT_TYPE_TIMER_FIRED, "timer_fired_event_attributes",
                 pb.TimerFiredEventAttributes(timer_id="t1", started_event_id=first))
    txn = applied(run, cmd(CANCEL_TIMER, timer_id="t1"))
    assert names(txn.events[2:]) == ["TIMER_CANCELED"]  # its one end, as in Temporal; nothing new for the workflow
    assert txn.events[2].timer_canceled_event_attributes.started_event_id == first
    assert run.st.timers == {} and run.st.buffered == [] and txn.clear_buffered and run.st.workflow_task is None


def test_a_timer_restarted_under_the_id_of_one_whose_firing_is_buffered_stays_pending() -> None:
    run = running()
    first = applied(run, timer("t1")).events[2].event_id
    run.start_task()
    run.external(pb.EVENT_TYPE_TIMER_FIRED, "timer_fired_event_attributes",
                 pb.TimerFiredEventAttributes(timer_id="t1", started_event_id=first))
    assert len(run.st.buffered) == 1
    txn = applied(run, cmd(CANCEL_TIMER, timer_id="t1"), timer("t1", 2_000))
    assert names(txn.events[2:]) == ["TIMER_CANCELED", "TIMER_STARTED"]  # the old firing ended nothing pending
    new = txn.events[3].event_id
    info = run.st.timers["t1"]
    assert (info.started_event_id, info.fire_time_ms, info.task.event_id) == (new, T0 + 2_000, new)
    assert run.st.buffered == [] and run.st.workflow_task is None
    # a firing naming the old timer (a history an earlier server wrote) does not end the new one; its own does
    run.txn().event(pb.EVENT_TYPE_TIMER_FIRED, "timer_fired_event_attributes",
                    pb.TimerFiredEventAttributes(timer_id="t1", started_event_id=first))
    assert run.st.timers["t1"].started_event_id == new
    back = MutableState.rebuild(NS_ID, NS, "wf", "run-1", 0, events=[e.SerializeToString() for e in run.st.events],
                                buffered=[], activity_state=b"", db_version=0)
    assert {k: t.started_event_id for k, t in back.timers.items()} == {"t1": new}
    run.external(pb.EVENT_TYPE_TIMER_FIRED, "timer_fired_event_attributes",
                 pb.TimerFiredEventAttributes(timer_id="t1", started_event_id=new))
    assert run.st.timers == {}


# ---------------------------------------------------------------------------- closing the run
def assert_closed(run: Run, txn: Any, status: int) -> None:
    st = run.st
    assert st.status == status and not st.running and st.close_event == txn.events[2] == st.events[-1]
    assert st.close_time_ms == T0 and st.workflow_task is None and txn.current_status == status
    assert [t.kind for t in txn.transfer if t.kind in (T_CLOSE, T_VISIBILITY)] == [T_CLOSE, T_VISIBILITY]
    assert [t.fire_time_ms for t in txn.timers if t.kind == TM_RETENTION] == [T0 + 3_600_000]  # the namespace's


def test_complete_workflow() -> None:
    run = running()
    result = pb.Payloads(payloads=[pb.Payload(data=b"r")])
    txn = applied(run, cmd(COMPLETE, result=result))
    assert names(txn.events[2:]) == ["WORKFLOW_EXECUTION_COMPLETED"]
    a = txn.events[2].workflow_execution_completed_event_attributes
    assert (a.result, a.workflow_task_completed_event_id, a.new_execution_run_id) == (result, wtc_of(txn), "")
    assert_closed(run, txn, pb.WORKFLOW_EXECUTION_STATUS_COMPLETED)
    assert txn.new_run is None


def test_fail_workflow() -> None:
    run = running()
    txn = applied(run, cmd(FAIL, failure=pb.Failure(message="boom")))
    a = txn.events[2].workflow_execution_failed_event_attributes
    assert (a.failure.message, a.retry_state, a.workflow_task_completed_event_id) == \
        ("boom", pb.RETRY_STATE_RETRY_POLICY_NOT_SET, wtc_of(txn))
    assert_closed(run, txn, pb.WORKFLOW_EXECUTION_STATUS_FAILED)


def test_cancel_workflow() -> None:
    run = running()
    details = pb.Payloads(payloads=[pb.Payload(data=b"d")])
    txn = applied(run, cmd(CANCEL, details=details))
    assert txn.events[2].workflow_execution_canceled_event_attributes.details == details
    assert_closed(run, txn, pb.WORKFLOW_EXECUTION_STATUS_CANCELED)


@pytest.mark.parametrize("closing", [COMPLETE, FAIL])
def test_a_cron_run_that_completes_or_fails_names_its_successor_created_in_the_same_write(closing: int) -> None:
    run = Run(make_context(), cron_schedule="*/5 * * * *")
    run.start_task()
    c = cmd(COMPLETE, result=pb.Payloads(payloads=[pb.Payload(data=b"r")])) if closing == COMPLETE else \
        cmd(FAIL, failure=pb.Failure(message="boom"))
    txn = applied(run, c)
    closed = txn.events[2]
    attrs = closed.workflow_execution_completed_event_attributes if closing == COMPLETE else \
        closed.workflow_execution_failed_event_attributes
    assert txn.new_run is not None
    nst, events, _, _ = txn.new_run
    assert attrs.new_execution_run_id == nst.run_id != run.st.run_id
    s = events[0].workflow_execution_started_event_attributes
    assert (s.cron_schedule, s.continued_execution_run_id) == ("*/5 * * * *", run.st.run_id)
    assert s.first_workflow_task_backoff_ms > 0  # waits for the next tick
    if closing == COMPLETE:
        assert s.last_completion_result.payloads[0].data == b"r"
    else:
        assert s.continued_failure.message == "boom"


def test_cancel_ends_a_cron_chain() -> None:
    run = Run(make_context(), cron_schedule="*/5 * * * *")
    run.start_task()
    assert applied(run, cmd(CANCEL)).new_run is None


def test_continue_as_new_closes_the_run_and_builds_its_successor_in_the_same_write() -> None:
    parent = pb.ParentExecutionInfo(namespace=NS, execution=pb.WorkflowExecution(workflow_id="p", run_id="pr"),
                                    initiated_event_id=5)
    run = Run(make_context(), run_timeout_ms=50_000, execution_timeout_ms=90_000, parent=parent,
              memo=pb.Memo(fields={"m": pb.Payload(data=b"old")}), search_attributes=sa(CustomKeyword=keyword("k")))
    run.start_task()
    txn = applied(run, cmd(CONTINUE, input=pb.Payloads(payloads=[pb.Payload(data=b"next")]), task_queue="q2",
                           backoff_start_interval_ms=2_000))
    e = txn.events[2].workflow_execution_continued_as_new_event_attributes
    assert_closed(run, txn, pb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW)
    assert txn.new_run is not None
    nst, events, transfer, timers = txn.new_run
    assert e.new_execution_run_id == nst.run_id != run.st.run_id
    assert (e.workflow_type, e.task_queue, e.run_timeout_ms, e.workflow_task_completed_event_id) == \
        ("Wf", "q2", 50_000, wtc_of(txn))
    assert names(events) == ["WORKFLOW_EXECUTION_STARTED"]  # its first task waits out the backoff
    s = events[0].workflow_execution_started_event_attributes
    assert (s.workflow_type, s.task_queue, s.input.payloads[0].data, s.continued_execution_run_id) == \
        ("Wf", "q2", b"next", run.st.run_id)
    assert (s.first_execution_run_id, s.original_execution_run_id) == (run.st.run_id, nst.run_id)
    assert (s.execution_timeout_ms, s.run_timeout_ms, s.first_workflow_task_backoff_ms) == (90_000, 50_000, 2_000)
    assert s.parent == parent
    assert dict(s.memo.fields) == {"m": pb.Payload(data=b"old")}  # none given: the old run's
    assert dict(s.search_attributes.indexed_fields) == {"CustomKeyword": keyword("k")}
    assert nst.running and nst.next_event_id == 2 and nst.workflow_task is None
    assert [t.kind for t in timers].count("wtbackoff") == 1 and [t.kind for t in transfer] == [T_VISIBILITY]


def test_the_validation_object_holds_what_earlier_commands_claimed() -> None:
    run = running()
    applied(run, activity("a1"), timer("t1"))
    run.start_task()
    v = Validation(run.ctx, run.st)
    assert (v.activity_ids, v.timers, v.accepted_updates, v.max_id) == ({"a1"}, {"t1"}, set(), 1000)
    assert (v.cancelled_activities, v.cancelled_timers, v.update_commands) == ({}, {}, {})
    h = commands.HANDLERS[START_TIMER]
    assert h.check(timer("t2").start_timer_command_attributes, "commands[0]", v) is None
    assert v.timers == {"t1", "t2"} and run.st.timers.keys() == {"t1"}  # the run is not changed by a check
    c = commands.HANDLERS[CANCEL_TIMER]
    assert c.check(cmd(CANCEL_TIMER, timer_id="t1").cancel_timer_command_attributes, "commands[1]", v) is None
    assert v.timers == {"t2"} and v.cancelled_timers == {"t1": "commands[1]"} and "t1" in run.st.timers


async def test_the_successor_of_a_continue_as_new_counts_in_start_admission() -> None:
    """Its first workflow task is pending like any new run's (it was built in a side transaction whose hooks were lost)."""
    run = Run(make_context())
    run.start_task()
    txn = applied(run, cmd(CONTINUE, input=pb.Payloads(payloads=[pb.Payload(data=b"next")]), task_queue="q"))
    assert txn.new_run is not None
    nst, events, _, _ = txn.new_run
    assert names(events) == ["WORKFLOW_EXECUTION_STARTED", "WORKFLOW_TASK_SCHEDULED"]
    for hook in txn.after_commit:
        hook()
    pending = run.ctx.admission._ns[NS_ID].pending_wt
    assert (NS_ID, nst.workflow_id, nst.run_id, 2) in pending
