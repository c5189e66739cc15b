"""``MutableState``: the fold of history events into a run's state, event type by event type.

Each test appends events the way a ``Txn`` does (numbered from the state's next id) and
checks what the run then holds pending or closed; then the parts around the fold: the
events that wake the workflow, the activity retry state kept on the execution row, and
``rebuild`` (a stored history replayed gives the state the live run had).
"""

from __future__ import annotations

from typing import Any

import pytest

from spindle.api import messages_pb2 as pb
from spindle.controlplane.archival import BLOB_REF_ENCODING
from spindle.controlplane.history._event_kinds import CLOSE_STATUS, WAKES_WORKFLOW, wakes_workflow
from spindle.controlplane.history._mutable_state import RUNNING, MutableState

T0 = 1_800_000_000_000


def new_state() -> MutableState:
    return MutableState("ns-id", "default", "wf", "run-1", 3)


def add(st: MutableState, event_type: int, attr: str, time_ms: int = T0, **attrs: Any) -> pb.HistoryEvent:
    """Append one event (numbered as a Txn numbers it) and fold it in; the stored copy."""
    e = pb.HistoryEvent(event_id=st.next_event_id, event_time_ms=time_ms, event_type=event_type)
    target = getattr(e, attr)
    target.SetInParent()
    for k, v in attrs.items():
        if hasattr(v, "DESCRIPTOR"):
            getattr(target, k).CopyFrom(v)
        elif isinstance(v, dict):  # a map of messages
            for key, value in v.items():
                getattr(target, k)[key].CopyFrom(value)
        else:
            setattr(target, k, v)
    st.apply(e)
    return st.events[-1]


def started(st: MutableState, **attrs: Any) -> pb.HistoryEvent:
    attrs.setdefault("workflow_type", "Wf")
    attrs.setdefault("task_queue", "q")
    return add(st, pb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, "workflow_execution_started_event_attributes", **attrs)


def activity(st: MutableState, activity_id: str = "a1", time_ms: int = T0) -> int:
    return add(st, pb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, "activity_task_scheduled_event_attributes", time_ms,
               activity_id=activity_id, activity_type="Act", task_queue="q", start_to_close_timeout_ms=5_000,
               heartbeat_timeout_ms=1_000, input=pb.Payloads(payloads=[pb.Payload(data=b"i")])).event_id


def test_events_are_numbered_from_one_without_gaps() -> None:
    st = new_state()
    assert (st.next_event_id, len(st.events), st.status) == (1, 0, RUNNING)
    with pytest.raises(AssertionError, match="event 2 applied at 1"):
        st.apply(pb.HistoryEvent(event_id=2, event_type=pb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED))
    started(st)
    assert (st.next_event_id, [e.event_id for e in st.events]) == (2, [1])


def test_the_state_keeps_its_own_copy_and_counts_the_bytes() -> None:
    st = new_state()
    e = pb.HistoryEvent(event_id=1, event_time_ms=T0, event_type=pb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED,
                        workflow_execution_started_event_attributes=pb.WorkflowExecutionStartedEventAttributes(
                            workflow_type="Wf", task_queue="q"))
    st.apply(e)
    e.workflow_execution_started_event_attributes.workflow_type = "Changed"
    assert st.events[0].workflow_execution_started_event_attributes.workflow_type == "Wf"
    assert st.workflow_type == "Wf" and st.history_bytes == st.events[0].ByteSize()


def test_started_sets_the_runs_type_queue_start_time_search_attributes_and_memo() -> None:
    st = new_state()
    assert (st.workflow_type, st.task_queue) == ("", "")
    started(st, search_attributes=pb.SearchAttributes(indexed_fields={"K": pb.Payload(data=b"1")}),
            memo=pb.Memo(fields={"m": pb.Payload(data=b"2")}))
    assert (st.workflow_type, st.task_queue, st.start_time_ms) == ("Wf", "q", T0)
    assert st.search_attributes == {"K": pb.Payload(data=b"1")} and st.memo == {"m": pb.Payload(data=b"2")}


@pytest.mark.parametrize("outcome", [pb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, pb.EVENT_TYPE_WORKFLOW_TASK_FAILED,
                                     pb.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT])
def test_a_workflow_task_is_pending_from_scheduled_to_its_outcome(outcome: int) -> None:
    st = new_state()
    started(st)
    s = add(st, pb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED, "workflow_task_scheduled_event_attributes", T0 + 5,
            task_queue="q", start_to_close_timeout_ms=10_000)
    wt = st.workflow_task
    assert wt is not None
    assert (wt.scheduled_event_id, wt.attempt, wt.task_queue, wt.timeout_ms, wt.scheduled_time_ms, wt.started) == \
        (s.event_id, 1, "q", 10_000, T0 + 5, False)  # attempt 0 on the wire is the first
    add(st, pb.EVENT_TYPE_WORKFLOW_TASK_STARTED, "workflow_task_started_event_attributes", scheduled_event_id=s.event_id)
    assert st.workflow_task is wt
    attr = {pb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED: "workflow_task_completed_event_attributes",
            pb.EVENT_TYPE_WORKFLOW_TASK_FAILED: "workflow_task_failed_event_attributes",
            pb.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT: "workflow_task_timed_out_event_attributes"}[outcome]
    add(st, outcome, attr, scheduled_event_id=s.event_id, started_event_id=3)
    assert st.workflow_task is None
    assert st.last_completed_started_id == (3 if outcome == pb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED else 0)


def test_a_scheduled_activity_is_pending_by_its_event_id_and_its_activity_id() -> None:
    st = new_state()
    started(st)
    sid = activity(st, time_ms=T0 + 7)
    info = st.activities[sid]
    assert (info.scheduled_event_id, info.activity_id, info.activity_type, info.task_queue) == (sid, "a1", "Act", "q")
    assert (info.start_to_close_ms, info.heartbeat_ms, info.input.payloads[0].data) == (5_000, 1_000, b"i")
    assert (info.scheduled_time_ms, info.attempt_scheduled_time_ms, info.attempt) == (T0 + 7, T0 + 7, 1)
    assert st.activity_ids == {"a1": sid}


@pytest.mark.parametrize(("event_type", "attr"), [
    (pb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, "activity_task_completed_event_attributes"),
    (pb.EVENT_TYPE_ACTIVITY_TASK_CANCELED, "activity_task_canceled_event_attributes"),
    (pb.EVENT_TYPE_ACTIVITY_TASK_FAILED, "activity_task_failed_event_attributes"),
    (pb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT, "activity_task_timed_out_event_attributes"),
])
def test_an_activitys_final_outcome_ends_it(event_type: int, attr: str) -> None:
    st = new_state()
    started(st)
    sid, other = activity(st, "a1"), activity(st, "a2")
    add(st, event_type, attr, scheduled_event_id=sid)  # failures: retry_state 0, not IN_PROGRESS: final
    assert list(st.activities) == [other] and st.activity_ids == {"a2": other}


@pytest.mark.parametrize(("event_type", "attr"), [
    (pb.EVENT_TYPE_ACTIVITY_TASK_FAILED, "activity_task_failed_event_attributes"),
    (pb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT, "activity_task_timed_out_event_attributes"),
])
def test_an_attempt_that_will_be_retried_keeps_the_activity_pending_for_its_next_attempt(event_type: int, attr: str) -> None:
    st = new_state()
    started(st)
    sid = activity(st)
    info = st.activities[sid]
    info.started = info.dispatched = True
    add(st, event_type, attr, T0 + 100, scheduled_event_id=sid, retry_state=pb.RETRY_STATE_IN_PROGRESS, attempt=1,
        next_attempt_backoff_ms=2_000, failure=pb.Failure(message="try again"))
    assert st.activities[sid] is info
    assert (info.attempt, info.attempt_scheduled_time_ms, info.started, info.dispatched) == (2, T0 + 2_100, False, False)
    assert info.last_failure is not None and info.last_failure.message == "try again"
    # a stale report of an older attempt does not move the count back
    add(st, event_type, attr, scheduled_event_id=sid, retry_state=pb.RETRY_STATE_IN_PROGRESS, attempt=0)
    assert info.attempt == 2


def test_a_cancel_request_marks_the_activity_and_an_outcome_for_an_unknown_one_changes_nothing() -> None:
    st = new_state()
    started(st)
    sid = activity(st)
    req = add(st, pb.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED, "activity_task_cancel_requested_event_attributes",
              scheduled_event_id=sid)
    info = st.activities[sid]
    assert info.cancel_requested and info.cancel_requested_event_id == req.event_id
    add(st, pb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, "activity_task_completed_event_attributes", scheduled_event_id=99)
    add(st, pb.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED, "activity_task_cancel_requested_event_attributes",
        scheduled_event_id=98)
    assert list(st.activities) == [sid]


@pytest.mark.parametrize(("event_type", "attr"), [
    (pb.EVENT_TYPE_TIMER_FIRED, "timer_fired_event_attributes"),
    (pb.EVENT_TYPE_TIMER_CANCELED, "timer_canceled_event_attributes"),
])
def test_a_timer_is_pending_from_started_until_it_fires_or_is_cancelled(event_type: int, attr: str) -> None:
    st = new_state()
    started(st)
    e = add(st, pb.EVENT_TYPE_TIMER_STARTED, "timer_started_event_attributes", T0 + 10, timer_id="t1",
            start_to_fire_timeout_ms=500)
    info = st.timers["t1"]
    assert (info.timer_id, info.started_event_id, info.fire_time_ms, info.task) == ("t1", e.event_id, T0 + 510, None)
    add(st, event_type, attr, timer_id="t1")
    assert st.timers == {}


CHILD_CLOSES = [
    (pb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED, "child_workflow_execution_completed_event_attributes"),
    (pb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_FAILED, "child_workflow_execution_failed_event_attributes"),
    (pb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_CANCELED, "child_workflow_execution_canceled_event_attributes"),
    (pb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_TIMED_OUT, "child_workflow_execution_timed_out_event_attributes"),
    (pb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_TERMINATED, "child_workflow_execution_terminated_event_attributes"),
    (pb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_FAILED, "start_child_workflow_execution_failed_event_attributes"),
]


@pytest.mark.parametrize(("event_type", "attr"), CHILD_CLOSES)
def test_a_child_is_pending_from_initiated_until_it_closes_or_fails_to_start(event_type: int, attr: str) -> None:
    st = new_state()
    started(st)
    init = add(st, pb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED,
               "start_child_workflow_execution_initiated_event_attributes", namespace="default", workflow_id="kid",
               workflow_type="Kid", parent_close_policy=pb.PARENT_CLOSE_POLICY_ABANDON)
    kid = st.children[init.event_id]
    assert (kid.workflow_id, kid.workflow_type, kid.parent_close_policy, kid.run_id) == \
        ("kid", "Kid", pb.PARENT_CLOSE_POLICY_ABANDON, "")
    if event_type != pb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_FAILED:
        s = add(st, pb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED, "child_workflow_execution_started_event_attributes",
                initiated_event_id=init.event_id, workflow_execution=pb.WorkflowExecution(workflow_id="kid", run_id="kr"))
        assert (kid.run_id, kid.started_event_id) == ("kr", s.event_id)
    add(st, event_type, attr, initiated_event_id=init.event_id)
    assert st.children == {}


@pytest.mark.parametrize(("initiated", "initiated_attr", "done", "done_attr", "pending"), [
    (pb.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED,
     "signal_external_workflow_execution_initiated_event_attributes",
     pb.EVENT_TYPE_EXTERNAL_WORKFLOW_EXECUTION_SIGNALED, "external_workflow_execution_signaled_event_attributes",
     "signals_external"),
    (pb.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED,
     "signal_external_workflow_execution_initiated_event_attributes",
     pb.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_FAILED, "signal_external_workflow_execution_failed_event_attributes",
     "signals_external"),
    (pb.EVENT_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED,
     "request_cancel_external_workflow_execution_initiated_event_attributes",
     pb.EVENT_TYPE_EXTERNAL_WORKFLOW_EXECUTION_CANCEL_REQUESTED,
     "external_workflow_execution_cancel_requested_event_attributes", "cancels_external"),
    (pb.EVENT_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED,
     "request_cancel_external_workflow_execution_initiated_event_attributes",
     pb.EVENT_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_FAILED,
     "request_cancel_external_workflow_execution_failed_event_attributes", "cancels_external"),
])
def test_a_signal_or_cancel_of_another_workflow_is_pending_until_its_outcome(
        initiated: int, initiated_attr: str, done: int, done_attr: str, pending: str) -> None:
    st = new_state()
    started(st)
    init = add(st, initiated, initiated_attr, namespace="default")
    assert list(getattr(st, pending)) == [init.event_id]
    assert getattr(st, pending)[init.event_id] == getattr(init, initiated_attr)
    add(st, done, done_attr, initiated_event_id=init.event_id)
    assert getattr(st, pending) == {}


def test_updates_signals_cancel_requests_and_upserts() -> None:
    st = new_state()
    started(st, search_attributes=pb.SearchAttributes(indexed_fields={"A": pb.Payload(data=b"1"),
                                                                      "B": pb.Payload(data=b"2")}))
    add(st, pb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED, "workflow_execution_update_accepted_event_attributes",
        update_id="u1")
    done = add(st, pb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED, "workflow_execution_update_completed_event_attributes",
               update_id="u1", success=pb.Payloads(payloads=[pb.Payload(data=b"ok")]))
    assert st.accepted_updates == {"u1"} and st.completed_updates == {"u1": done.workflow_execution_update_completed_event_attributes}
    add(st, pb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED, "workflow_execution_signaled_event_attributes", signal_name="s",
        request_id="req-1")
    add(st, pb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED, "workflow_execution_signaled_event_attributes", signal_name="s")
    assert st.signal_request_ids == {"req-1"}
    assert not st.cancel_requested
    add(st, pb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED, "workflow_execution_cancel_requested_event_attributes")
    assert st.cancel_requested and st.running
    add(st, pb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES, "upsert_workflow_search_attributes_event_attributes",
        search_attributes=pb.SearchAttributes(indexed_fields={"B": pb.Payload(data=b"3"), "C": pb.Payload(data=b"4")}))
    assert st.search_attributes == {"A": pb.Payload(data=b"1"), "B": pb.Payload(data=b"3"), "C": pb.Payload(data=b"4")}


@pytest.mark.parametrize("close", sorted(CLOSE_STATUS))
def test_a_closing_event_sets_the_status_and_close_time_and_drops_the_workflow_task(close: int) -> None:
    st = new_state()
    started(st)
    add(st, pb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED, "workflow_task_scheduled_event_attributes", task_queue="q")
    attr = pb.HistoryEvent.DESCRIPTOR.oneofs_by_name["attributes"].fields[0].name  # any: the type decides
    e = pb.HistoryEvent(event_id=st.next_event_id, event_time_ms=T0 + 9, event_type=close)
    getattr(e, attr).SetInParent()
    st.apply(e)
    assert (st.status, st.running, st.close_time_ms, st.workflow_task) == (CLOSE_STATUS[close], False, T0 + 9, None)
    assert st.close_event == e
    assert CLOSE_STATUS[close] != RUNNING


def test_which_events_wake_the_workflow() -> None:
    for t in WAKES_WORKFLOW:
        assert wakes_workflow(pb.HistoryEvent(event_type=t))
    for t, attr in [(pb.EVENT_TYPE_ACTIVITY_TASK_FAILED, "activity_task_failed_event_attributes"),
                    (pb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT, "activity_task_timed_out_event_attributes")]:
        retried = pb.HistoryEvent(event_type=t)
        getattr(retried, attr).retry_state = pb.RETRY_STATE_IN_PROGRESS
        final = pb.HistoryEvent(event_type=t)
        getattr(final, attr).retry_state = pb.RETRY_STATE_MAXIMUM_ATTEMPTS_REACHED
        assert not wakes_workflow(retried) and wakes_workflow(final)
    for t in (pb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, pb.EVENT_TYPE_TIMER_STARTED, pb.EVENT_TYPE_MARKER_RECORDED,
              pb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, pb.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED,
              pb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED):
        assert not wakes_workflow(pb.HistoryEvent(event_type=t))


def test_the_retry_state_of_activities_past_their_first_attempt_survives_a_rebuild() -> None:
    st = new_state()
    started(st)
    first, retried = activity(st, "a1"), activity(st, "a2")
    assert st.activity_retry_state() == b""  # nothing past its first attempt
    info = st.activities[retried]
    info.attempt, info.attempt_scheduled_time_ms, info.last_worker_identity = 4, T0 + 9_000, "w2"
    info.last_failure = pb.Failure(message="third failure")
    raw = st.activity_retry_state()
    state = pb.ActivityRetryState.FromString(raw)
    assert [a.scheduled_event_id for a in state.activities] == [retried]
    back = MutableState.rebuild("ns-id", "default", "wf", "run-1", 3, events=[e.SerializeToString() for e in st.events],
                                buffered=[], activity_state=raw, db_version=7)
    b = back.activities[retried]
    assert (b.attempt, b.attempt_scheduled_time_ms, b.last_worker_identity) == (4, T0 + 9_000, "w2")
    assert b.last_failure is not None and b.last_failure.message == "third failure"
    assert back.activities[first].attempt == 1 and back.db_version == 7


def test_a_row_retry_state_older_than_the_history_or_of_a_closed_activity_is_ignored() -> None:
    st = new_state()
    started(st)
    sid = activity(st)
    add(st, pb.EVENT_TYPE_ACTIVITY_TASK_FAILED, "activity_task_failed_event_attributes", scheduled_event_id=sid,
        retry_state=pb.RETRY_STATE_IN_PROGRESS, attempt=4)  # an older server wrote retries as events: attempt 5 next
    stale = pb.ActivityRetryState(activities=[
        pb.PendingActivityAttempt(scheduled_event_id=sid, attempt=3, last_worker_identity="old"),
        pb.PendingActivityAttempt(scheduled_event_id=99, attempt=9)]).SerializeToString()
    st.load_activity_retry_state(stale)
    assert st.activities[sid].attempt == 5 and st.activities[sid].last_worker_identity == ""
    assert 99 not in st.activities


def test_rebuild_replays_the_history_and_restores_the_buffered_events() -> None:
    st = new_state()
    started(st)
    activity(st)
    add(st, pb.EVENT_TYPE_TIMER_STARTED, "timer_started_event_attributes", timer_id="t1", start_to_fire_timeout_ms=5)
    add(st, pb.EVENT_TYPE_MARKER_RECORDED, "marker_recorded_event_attributes", marker_name="m",
        details={"k": pb.Payloads(payloads=[pb.Payload(metadata={"encoding": BLOB_REF_ENCODING})])})
    signal = pb.HistoryEvent(event_type=pb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED,
                             workflow_execution_signaled_event_attributes=pb.WorkflowExecutionSignaledEventAttributes(
                                 signal_name="s", request_id="req-9"))
    back = MutableState.rebuild("ns-id", "default", "wf", "run-1", 3, events=[e.SerializeToString() for e in st.events],
                                buffered=[signal.SerializeToString()], activity_state=b"", db_version=1)
    assert (back.next_event_id, back.history_bytes) == (st.next_event_id, st.history_bytes)
    assert list(back.events) == list(st.events)
    assert back.activity_ids == st.activity_ids and list(back.timers) == ["t1"]
    assert back.may_hold_blob_refs and not st.may_hold_blob_refs  # set on load only
    assert [e.workflow_execution_signaled_event_attributes.signal_name for e in back.buffered] == ["s"]
    assert back.signal_request_ids == {"req-9"}  # a retried signal is not recorded twice after a reload


def test_buffered_bytes_counts_each_buffered_event_once_and_starts_over_when_emptied() -> None:
    st = new_state()
    e1 = pb.HistoryEvent(event_type=pb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED,
                         workflow_execution_signaled_event_attributes=pb.WorkflowExecutionSignaledEventAttributes(
                             signal_name="s" * 50))
    e2 = pb.HistoryEvent(event_type=pb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED)
    assert st.buffered_bytes() == 0
    st.buffered.append(e1)
    assert st.buffered_bytes() == e1.ByteSize()
    st.buffered.append(e2)
    assert st.buffered_bytes() == e1.ByteSize() + e2.ByteSize()
    st.buffered = [e2]
    assert st.buffered_bytes() == e2.ByteSize()
