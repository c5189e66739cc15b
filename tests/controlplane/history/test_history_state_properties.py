"""Property tests: random lives of a run keep ``MutableState`` consistent with its history.

Hypothesis draws a sequence of steps, each one what an operation of the history service
does to a run: a workflow task completed with a few commands (valid or not: a bad one fails
the task), an activity attempt's outcome, a timer firing, a child starting or closing, the
outcome of a signal or cancel sent to another workflow, a signal, a cancel request, an
update arriving, a workflow task timing out. Events from outside the workflow are buffered
while a workflow task runs, as the operations buffer them. After every step the state is
checked against its history (the invariants the operations rely on, listed in
``check_invariants``), and, when nothing is buffered, against the state ``rebuild`` makes
from the same history (what a restarted server loads).
"""

from __future__ import annotations

import asyncio

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from _history_world import NS, OTHER, Run, cmd, keyword, make_context
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as S

from spindle.api import messages_pb2 as pb
from spindle.controlplane.history._event_kinds import CLOSE_STATUS, wakes_workflow
from spindle.controlplane.history._mutable_state import RUNNING, MutableState
from spindle.controlplane.history._txn import Txn
from spindle.controlplane.history.ops import activity_task, workflow_task
from spindle.controlplane.history.ops._run import schedule_workflow_task

WT_OUTCOMES = {pb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED: "workflow_task_completed_event_attributes",
               pb.EVENT_TYPE_WORKFLOW_TASK_FAILED: "workflow_task_failed_event_attributes",
               pb.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT: "workflow_task_timed_out_event_attributes"}
CHILD_ENDS = {
    pb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED: "child_workflow_execution_completed_event_attributes",
    pb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_FAILED: "child_workflow_execution_failed_event_attributes",
    pb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_CANCELED: "child_workflow_execution_canceled_event_attributes",
    pb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_TIMED_OUT: "child_workflow_execution_timed_out_event_attributes",
    pb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_TERMINATED: "child_workflow_execution_terminated_event_attributes",
    pb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_FAILED: "start_child_workflow_execution_failed_event_attributes",
}
SIGNAL_EXT_ENDS = {pb.EVENT_TYPE_EXTERNAL_WORKFLOW_EXECUTION_SIGNALED: "external_workflow_execution_signaled_event_attributes",
                   pb.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_FAILED:
                       "signal_external_workflow_execution_failed_event_attributes"}
CANCEL_EXT_ENDS = {
    pb.EVENT_TYPE_EXTERNAL_WORKFLOW_EXECUTION_CANCEL_REQUESTED: "external_workflow_execution_cancel_requested_event_attributes",
    pb.EVENT_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_FAILED:
        "request_cancel_external_workflow_execution_failed_event_attributes"}


# ---------------------------------------------------------------------------- what the history says
def attrs_of(e: pb.HistoryEvent) -> Any:
    which = e.WhichOneof("attributes")
    return getattr(e, which) if which else None


def activity_is_done(e: pb.HistoryEvent) -> int | None:
    """The scheduled event id of the activity ``e`` ends, if it ends one."""
    t = e.event_type
    if t == pb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
        return e.activity_task_completed_event_attributes.scheduled_event_id
    if t == pb.EVENT_TYPE_ACTIVITY_TASK_CANCELED:
        return e.activity_task_canceled_event_attributes.scheduled_event_id
    if t == pb.EVENT_TYPE_ACTIVITY_TASK_FAILED and \
            e.activity_task_failed_event_attributes.retry_state != pb.RETRY_STATE_IN_PROGRESS:
        return e.activity_task_failed_event_attributes.scheduled_event_id
    if t == pb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT and \
            e.activity_task_timed_out_event_attributes.retry_state != pb.RETRY_STATE_IN_PROGRESS:
        return e.activity_task_timed_out_event_attributes.scheduled_event_id
    return None


def caused_by_the_workflow(e: pb.HistoryEvent, by_id: dict[int, pb.HistoryEvent]) -> bool:
    """An activity cancelled at once by the workflow's own request (written right after it, waking nothing)."""
    if e.event_type != pb.EVENT_TYPE_ACTIVITY_TASK_CANCELED:
        return False
    req = e.activity_task_canceled_event_attributes.latest_cancel_requested_event_id
    return req == e.event_id - 1 and by_id[req].event_type == pb.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED


def ended(events: list[pb.HistoryEvent], kinds: dict[int, str]) -> set[int]:
    """The initiated event ids that the events of ``kinds`` (each with ``initiated_event_id``) end."""
    return {getattr(e, kinds[e.event_type]).initiated_event_id for e in events if e.event_type in kinds}


def check_invariants(st: MutableState) -> None:
    """What the operations rely on, checked against the run's history (``st.events``) and buffered events."""
    events = list(st.events)
    by_id = {e.event_id: e for e in events}
    buffered = list(st.buffered)
    # the history: numbered 1..n without gaps, started first, sizes counted
    assert [e.event_id for e in events] == list(range(1, len(events) + 1))
    assert st.next_event_id == len(events) + 1
    assert st.history_bytes == sum(e.ByteSize() for e in events)
    assert events[0].event_type == pb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED
    assert all(e.event_id == 0 for e in buffered)  # numbered only when flushed
    # closed: exactly one closing event, the last, and the status it says
    closes = [e for e in events if e.event_type in CLOSE_STATUS]
    if st.status == RUNNING:
        assert closes == [] and st.close_event is None
    else:
        assert len(closes) == 1 and closes[0] == events[-1] == st.close_event
        assert st.status == CLOSE_STATUS[closes[0].event_type] and st.workflow_task is None and buffered == []
    # the workflow task: the pending one is the last scheduled, with no outcome
    scheduled = [e for e in events if e.event_type == pb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED]
    outcomes = {getattr(e, WT_OUTCOMES[e.event_type]).scheduled_event_id for e in events if e.event_type in WT_OUTCOMES}
    assert len(outcomes) == len([e for e in events if e.event_type in WT_OUTCOMES])  # one outcome per task
    wt = st.workflow_task
    if wt is not None:
        assert scheduled and wt.scheduled_event_id == scheduled[-1].event_id and wt.scheduled_event_id not in outcomes
        if wt.started:
            assert wt.started_event_id == st.next_event_id  # its Started event comes with its outcome
    else:
        assert all(e.event_id in outcomes for e in scheduled)
    for e in events:  # every outcome right after its task's Started, which names the scheduled task
        if e.event_type in WT_OUTCOMES:
            s = by_id[e.event_id - 1]
            assert s.event_type == pb.EVENT_TYPE_WORKFLOW_TASK_STARTED
            assert s.workflow_task_started_event_attributes.scheduled_event_id == \
                getattr(e, WT_OUTCOMES[e.event_type]).scheduled_event_id
    if buffered:
        assert wt is not None and wt.started  # buffered only behind a running task
    # nothing that needs the workflow is left without a task to show it
    last_seen = max((e.event_id for e in events if e.event_type == pb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED), default=0)
    if st.running and (any(wakes_workflow(e) and not caused_by_the_workflow(e, by_id) for e in events
                           if e.event_id > last_seen) or buffered):
        assert wt is not None
    # activities: pending exactly while scheduled and not ended
    done = {sid for e in events if (sid := activity_is_done(e)) is not None}
    live = {e.event_id: e.activity_task_scheduled_event_attributes for e in events
            if e.event_type == pb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED and e.event_id not in done}
    assert set(st.activities) == set(live)
    assert st.activity_ids == {a.activity_id: sid for sid, a in live.items()}
    for sid, info in st.activities.items():
        assert (info.scheduled_event_id, info.activity_id, info.activity_type) == \
            (sid, live[sid].activity_id, live[sid].activity_type)
        assert info.attempt >= 1
    # an activity's cancel is requested once
    requests = [e.activity_task_cancel_requested_event_attributes.scheduled_event_id for e in events
                if e.event_type == pb.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED]
    assert len(requests) == len(set(requests))
    # timers: pending exactly while started and neither fired nor cancelled (each end names its TimerStarted,
    # and a timer ends once: a firing buffered behind the task that cancelled it is not written)
    ends = [e for e in events if e.event_type in (pb.EVENT_TYPE_TIMER_FIRED, pb.EVENT_TYPE_TIMER_CANCELED)]
    timer_ends = {attrs_of(e).started_event_id for e in ends}
    assert len(timer_ends) == len(ends)
    for e in ends:
        start = by_id[attrs_of(e).started_event_id]
        assert start.event_type == pb.EVENT_TYPE_TIMER_STARTED and \
            start.timer_started_event_attributes.timer_id == attrs_of(e).timer_id
    assert {t.started_event_id for t in st.timers.values()} == \
        {e.event_id for e in events if e.event_type == pb.EVENT_TYPE_TIMER_STARTED} - timer_ends
    # timers: each pending one started by its event, and not fired or cancelled since
    for timer_id, info in st.timers.items():
        start = by_id[info.started_event_id]
        assert start.timer_started_event_attributes.timer_id == timer_id
        assert not any(e.event_type in (pb.EVENT_TYPE_TIMER_FIRED, pb.EVENT_TYPE_TIMER_CANCELED)
                       and attrs_of(e).timer_id == timer_id for e in events if e.event_id > info.started_event_id)
    # children, signals and cancels of other workflows: pending while initiated and not ended
    kids = {e.event_id for e in events if e.event_type == pb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED}
    assert set(st.children) == kids - ended(events, CHILD_ENDS)
    for sid, kid in st.children.items() if st.running else ():  # a close drops the buffered events
        started = [e for e in events + buffered if e.event_type == pb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED
                   and e.child_workflow_execution_started_event_attributes.initiated_event_id == sid]
        assert bool(kid.run_id) == bool(started)
    for pending, initiated, ends in (
            (st.signals_external, pb.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED, SIGNAL_EXT_ENDS),
            (st.cancels_external, pb.EVENT_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED, CANCEL_EXT_ENDS)):
        sent = {e.event_id for e in events if e.event_type == initiated}
        # the outcome's handler drops it at once, also while its event waits in the buffer (which a close drops)
        if st.running:
            assert set(pending) == sent - ended(events + buffered, ends)
        else:
            assert set(pending) <= sent - ended(events, ends)
    # updates: accepted and completed as the history says, completed only once accepted
    accepted = [e.workflow_execution_update_accepted_event_attributes.update_id for e in events
                if e.event_type == pb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED]
    completed = [e for e in events if e.event_type == pb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED]
    assert st.accepted_updates == set(accepted) and set(st.completed_updates) == \
        {e.workflow_execution_update_completed_event_attributes.update_id for e in completed}
    assert len(accepted) == len(st.accepted_updates) and len(completed) == len(st.completed_updates)  # once each
    for e in completed:
        a = e.workflow_execution_update_completed_event_attributes
        acc = by_id[a.accepted_event_id]
        assert acc.event_id < e.event_id and acc.workflow_execution_update_accepted_event_attributes.update_id == a.update_id


def summary(st: MutableState) -> dict[str, Any]:
    """What a run's state holds, to compare a live state with the one rebuilt from its history."""
    wt = st.workflow_task
    return {
        "next": st.next_event_id, "bytes": st.history_bytes, "status": st.status, "close": st.close_time_ms,
        "wt": None if wt is None else (wt.scheduled_event_id, wt.attempt, wt.task_queue, wt.timeout_ms),
        "last_completed": st.last_completed_started_id,
        "activities": {k: (a.activity_id, a.attempt, a.attempt_scheduled_time_ms, a.cancel_requested,
                           a.cancel_requested_event_id, a.last_failure) for k, a in st.activities.items()},
        "activity_ids": st.activity_ids,
        "timers": {k: (t.started_event_id, t.fire_time_ms) for k, t in st.timers.items()},
        "children": {k: (c.workflow_id, c.run_id, c.started_event_id) for k, c in st.children.items()},
        "signals_external": set(st.signals_external), "cancels_external": set(st.cancels_external),
        "cancel_requested": st.cancel_requested, "search_attributes": st.search_attributes, "memo": st.memo,
        "accepted": st.accepted_updates, "completed": set(st.completed_updates),
        "signal_request_ids": st.signal_request_ids,
    }


def check_rebuild(st: MutableState) -> None:
    back = MutableState.rebuild(st.namespace_id, st.namespace, st.workflow_id, st.run_id, st.shard_id,
                                events=[e.SerializeToString() for e in st.events], buffered=[],
                                activity_state=st.activity_retry_state(), db_version=0)
    want, got = summary(st), summary(back)
    if not st.running:
        # the close dropped the events buffered behind the last task: a child's start, or the outcome of a
        # signal or cancel sent to another workflow, is then in memory only
        for s in (want, got):
            s["children"] = {k: (wid, sid) for k, (wid, _, sid) in s["children"].items()}
        for k in ("signals_external", "cancels_external"):
            assert want.pop(k) <= got.pop(k)
    assert got == want


# ---------------------------------------------------------------------------- the steps
class Life:
    """One run and the ids its steps draw from."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.run = Run(make_context(), search_attributes=pb.SearchAttributes(
            indexed_fields={"CustomKeyword": keyword("start")}))
        self.loop = loop
        self.serial = 0

    @property
    def st(self) -> MutableState:
        return self.run.st

    def next_id(self, prefix: str) -> str:
        self.serial += 1
        return f"{prefix}{self.serial}"

    def schedule_if_needed(self, txn: Txn) -> None:
        if txn.wake and self.st.running and self.st.workflow_task is None:
            schedule_workflow_task(self.run.ctx, txn)


class Taken:
    """What the task's earlier commands did (what a later command is drawn against).

    Attributes:
        cancelled: scheduled event ids of the activities whose cancel the task requested.
        timers: the run's pending timers as the task's earlier commands leave them; ``timers_cancelled`` the
            ids they cancelled.
        accepted, finished: updates the task accepted, and those it rejected or completed.
    """

    def __init__(self, st: MutableState) -> None:
        self.cancelled: set[int] = set()
        self.timers = set(st.timers)
        self.timers_cancelled: set[str] = set()
        self.accepted: set[str] = set()
        self.finished: set[str] = set()


def draw_commands(life: Life, data: S.DataObject, taken: Taken) -> list[pb.Command]:
    """A command for the run as it is (or a timer's cancel and its restart under the same id); about one in ten
    is a mistake (the task then fails with BAD_COMMAND).

    A mistake names something that does not exist, or repeats what the run or the task's earlier commands
    already did (a second cancel of an activity or a timer, an update accepted, rejected or completed again):
    ``validate`` must refuse each, or ``apply`` fails or writes an event twice (``check_invariants``).
    """
    st = life.st
    wrong = data.draw(S.integers(0, 9), label="mistake?") == 0
    kinds = [pb.COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK, pb.COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK, pb.COMMAND_TYPE_START_TIMER,
             pb.COMMAND_TYPE_START_TIMER,
             pb.COMMAND_TYPE_START_CHILD_WORKFLOW_EXECUTION, pb.COMMAND_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION,
             pb.COMMAND_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION, pb.COMMAND_TYPE_RECORD_MARKER,
             pb.COMMAND_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES]
    # the ids each kind is drawn from: the right ones, or (a mistake) ones already settled and one never used
    acted = taken.accepted | taken.finished
    if wrong:
        cancellable = sorted(taken.cancelled | {sid for sid, a in st.activities.items() if a.cancel_requested}) + [999]
        timers = sorted(taken.timers_cancelled - taken.timers) + ["nope"]
        answered = sorted(acted | st.accepted_updates) + ["nope"]
        updates = {pb.COMMAND_TYPE_ACCEPT_UPDATE: answered, pb.COMMAND_TYPE_REJECT_UPDATE: answered,
                   pb.COMMAND_TYPE_COMPLETE_UPDATE: sorted(
                       taken.finished | set(st.completed_updates)
                       | (set(st.pending_updates) - st.accepted_updates - taken.accepted)) + ["nope"]}
    else:
        cancellable = sorted(sid for sid, a in st.activities.items() if sid not in taken.cancelled and not a.cancel_requested)
        timers = sorted(taken.timers)
        unanswered = sorted(set(st.pending_updates) - st.accepted_updates - acted)
        updates = {pb.COMMAND_TYPE_ACCEPT_UPDATE: unanswered, pb.COMMAND_TYPE_REJECT_UPDATE: unanswered,
                   pb.COMMAND_TYPE_COMPLETE_UPDATE: sorted(
                       (st.accepted_updates | taken.accepted) - set(st.completed_updates) - taken.finished)}
    kinds += [pb.COMMAND_TYPE_REQUEST_CANCEL_ACTIVITY_TASK] * (2 if cancellable else 0)
    kinds += [pb.COMMAND_TYPE_CANCEL_TIMER] * (2 if timers else 0)
    # the race a worker meets: it cancels (and may restart) a timer whose firing waits behind its task
    fired = sorted({e.timer_fired_event_attributes.timer_id for e in st.buffered
                    if e.event_type == pb.EVENT_TYPE_TIMER_FIRED} & taken.timers)
    kinds += [pb.COMMAND_TYPE_CANCEL_TIMER] * (4 if fired and not wrong else 0)
    kinds += [k for k, ids in updates.items() for _ in range(2) if ids]
    if wrong:  # most often a repeat, when there is one (the mistakes an unknown id cannot show)
        repeats = [k for k, ids in ((pb.COMMAND_TYPE_REQUEST_CANCEL_ACTIVITY_TASK, cancellable),
                                    (pb.COMMAND_TYPE_CANCEL_TIMER, timers), *updates.items()) if len(ids) > 1]
        if repeats and data.draw(S.integers(0, 3), label="repeat?") > 0:
            kinds = repeats
    kind = data.draw(S.sampled_from(kinds), label="command")
    if kind == pb.COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK:
        aid = data.draw(S.sampled_from(sorted(st.activity_ids) or ["a0"]), label="used id") if wrong else life.next_id("a")
        return [cmd(kind, activity_id=aid, activity_type="Act", start_to_close_timeout_ms=data.draw(
            S.sampled_from([0, 5_000]), label="start_to_close"), schedule_to_close_timeout_ms=60_000,
            request_eager_execution=data.draw(S.booleans(), label="eager"))]
    if kind == pb.COMMAND_TYPE_REQUEST_CANCEL_ACTIVITY_TASK:
        sid = data.draw(S.sampled_from(cancellable), label="sid")
        taken.cancelled.add(sid)
        return [cmd(kind, scheduled_event_id=sid)]
    if kind == pb.COMMAND_TYPE_CANCEL_TIMER:
        tid = data.draw(S.sampled_from(fired if fired and not wrong else timers), label="timer_id")
        taken.timers.discard(tid)
        taken.timers_cancelled.add(tid)
        out = [cmd(kind, timer_id=tid)]
        if data.draw(S.booleans(), label="restart it"):  # a new timer under its id (its firing may be buffered)
            taken.timers.add(tid)
            out.append(cmd(pb.COMMAND_TYPE_START_TIMER, timer_id=tid, start_to_fire_timeout_ms=2_000))
        return out
    if kind == pb.COMMAND_TYPE_START_TIMER:
        tid = data.draw(S.sampled_from(["t1", "t2", "t3"]), label="timer_id")  # a pending one: a mistake
        taken.timers.add(tid)
        return [cmd(kind, timer_id=tid, start_to_fire_timeout_ms=1_000)]
    if kind == pb.COMMAND_TYPE_START_CHILD_WORKFLOW_EXECUTION:
        return [cmd(kind, workflow_id=life.next_id("kid"), workflow_type="Kid",
                    namespace="missing" if wrong else data.draw(S.sampled_from(["", OTHER]), label="namespace"))]
    if kind == pb.COMMAND_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION:
        return [cmd(kind, execution=pb.WorkflowExecution(workflow_id="peer"), signal_name="" if wrong else "s")]
    if kind == pb.COMMAND_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION:
        return [cmd(kind, workflow_id="peer", namespace=NS)]
    if kind == pb.COMMAND_TYPE_RECORD_MARKER:
        return [cmd(kind, marker_name="" if wrong else "m")]
    if kind == pb.COMMAND_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
        return [cmd(kind, search_attributes=pb.SearchAttributes(indexed_fields={
            "Nope" if wrong else "CustomKeyword": keyword(life.next_id("v"))}))]
    uid = data.draw(S.sampled_from(updates[kind]), label="update_id")
    if kind == pb.COMMAND_TYPE_ACCEPT_UPDATE:
        taken.accepted.add(uid)
    else:
        taken.finished.add(uid)
    if kind == pb.COMMAND_TYPE_REJECT_UPDATE:
        return [cmd(kind, update_id=uid, failure=pb.Failure(message="no"))]
    if kind == pb.COMMAND_TYPE_COMPLETE_UPDATE:
        return [cmd(kind, update_id=uid, success=pb.Payloads())]
    return [cmd(kind, update_id=uid)]


def complete_task(life: Life, data: S.DataObject) -> None:
    taken = Taken(life.st)
    cmds = [c for _ in range(data.draw(S.integers(0, 4), label="commands")) for c in draw_commands(life, data, taken)]
    if data.draw(S.integers(0, 14), label="close?") == 0:
        kind = data.draw(S.sampled_from([pb.COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION, pb.COMMAND_TYPE_FAIL_WORKFLOW_EXECUTION,
                                         pb.COMMAND_TYPE_CANCEL_WORKFLOW_EXECUTION,
                                         pb.COMMAND_TYPE_CONTINUE_AS_NEW_WORKFLOW_EXECUTION]), label="closing")
        cmds.append(cmd(kind))
    life.run.complete_task(*cmds)


def activity_outcome(life: Life, data: S.DataObject) -> None:
    open_ = sorted(sid for sid, a in life.st.activities.items() if not a.closed)
    if not open_:
        return
    info = life.st.activities[data.draw(S.sampled_from(open_), label="activity")]
    info.started, info.identity = True, "activity-worker"  # the attempt a worker reports on
    ctx, txn = life.run.ctx, life.run.txn()
    how = data.draw(S.sampled_from(["completed", "canceled", "retried", "failed"]), label="outcome")
    if how == "completed":
        activity_task._final_outcome(ctx, txn, info, pb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED,
                                     "activity_task_completed_event_attributes",
                                     pb.ActivityTaskCompletedEventAttributes(scheduled_event_id=info.scheduled_event_id))
    elif how == "canceled":
        activity_task._final_outcome(ctx, txn, info, pb.EVENT_TYPE_ACTIVITY_TASK_CANCELED,
                                     "activity_task_canceled_event_attributes",
                                     pb.ActivityTaskCanceledEventAttributes(scheduled_event_id=info.scheduled_event_id))
    else:
        failure = pb.Failure(message="boom", application_failure_info=pb.ApplicationFailureInfo(
            non_retryable=how == "failed"))
        activity_task._fail_attempt(ctx, txn, info, failure, timeout_sub=None, identity="activity-worker")
    life.schedule_if_needed(txn)


def timer_fires(life: Life, data: S.DataObject) -> None:
    st = life.st
    fired = {e.timer_fired_event_attributes.timer_id for e in st.buffered if e.event_type == pb.EVENT_TYPE_TIMER_FIRED}
    due = sorted(t for t in st.timers if t not in fired)  # a timer fires once (``user_timer.fired``)
    if due:
        info = st.timers[data.draw(S.sampled_from(due), label="timer")]
        life.schedule_if_needed(life.run.external(pb.EVENT_TYPE_TIMER_FIRED, "timer_fired_event_attributes",
                                                  pb.TimerFiredEventAttributes(timer_id=info.timer_id,
                                                                               started_event_id=info.started_event_id)))


def timer_fires_behind_a_task(life: Life, data: S.DataObject) -> None:
    """A signal wakes the workflow, a poller takes the task, and a timer fires while it runs (the firing is buffered)."""
    if not life.st.timers:
        return
    if life.st.workflow_task is None:
        signal(life, data)
    wt = life.st.workflow_task
    if wt is not None and not wt.started:
        life.run.start_task()
    timer_fires(life, data)


def child_moves(life: Life, data: S.DataObject) -> None:
    st = life.st
    if not st.children:
        return
    sid = data.draw(S.sampled_from(sorted(st.children)), label="child")
    kid = st.children[sid]
    if not kid.run_id:  # ``child.start_child``: started, or failed to start
        if data.draw(S.booleans(), label="child starts"):
            txn = life.run.external(pb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED,
                                    "child_workflow_execution_started_event_attributes",
                                    pb.ChildWorkflowExecutionStartedEventAttributes(
                                        initiated_event_id=sid,
                                        workflow_execution=pb.WorkflowExecution(workflow_id=kid.workflow_id, run_id="kr")))
            kid.run_id = "kr"
        else:
            txn = life.run.external(pb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_FAILED,
                                    "start_child_workflow_execution_failed_event_attributes",
                                    pb.StartChildWorkflowExecutionFailedEventAttributes(initiated_event_id=sid))
    else:  # ``child.notify_parent``
        end = data.draw(S.sampled_from(sorted(set(CHILD_ENDS) - {pb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_FAILED})),
                        label="child end")
        if any(e.event_type in CHILD_ENDS and attrs_of(e).initiated_event_id == sid for e in st.buffered):
            return  # its close is recorded once
        attrs = getattr(pb, "".join(p.capitalize() for p in CHILD_ENDS[end].split("_")))(
            initiated_event_id=sid, started_event_id=kid.started_event_id)
        txn = life.run.external(end, CHILD_ENDS[end], attrs)
    life.schedule_if_needed(txn)


def external_outcome(life: Life, data: S.DataObject) -> None:
    """``child._external_outcome``: the outcome is recorded (buffered or not) and the send stops pending at once."""
    st = life.st
    choices = [(sid, True) for sid in sorted(st.signals_external)] + [(sid, False) for sid in sorted(st.cancels_external)]
    if not choices:
        return
    sid, signal = data.draw(S.sampled_from(choices), label="sent")
    ends = SIGNAL_EXT_ENDS if signal else CANCEL_EXT_ENDS
    end = data.draw(S.sampled_from(sorted(ends)), label="send outcome")
    attrs = getattr(pb, "".join(p.capitalize() for p in ends[end].split("_")))(initiated_event_id=sid)
    txn = life.run.external(end, ends[end], attrs)
    (st.signals_external if signal else st.cancels_external).pop(sid, None)
    life.schedule_if_needed(txn)


def signal(life: Life, data: S.DataObject) -> None:
    life.schedule_if_needed(life.run.external(
        pb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED, "workflow_execution_signaled_event_attributes",
        pb.WorkflowExecutionSignaledEventAttributes(signal_name="s", request_id=life.next_id("req"))))


def cancel_requested(life: Life, data: S.DataObject) -> None:
    if not life.st.cancel_requested:
        life.schedule_if_needed(life.run.external(
            pb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED, "workflow_execution_cancel_requested_event_attributes",
            pb.WorkflowExecutionCancelRequestedEventAttributes(cause="asked")))


def update_arrives(life: Life, data: S.DataObject) -> None:
    """``ops.update``: the request waits, and a workflow task is scheduled to deliver it."""
    life.run.add_update(life.next_id("u"), delivered=False, loop=life.loop)
    if life.st.workflow_task is None:
        schedule_workflow_task(life.run.ctx, life.run.txn())


def workflow_task_times_out(life: Life, data: S.DataObject) -> None:
    wt = life.st.workflow_task
    if wt is None:
        return
    if not wt.started:
        wt = life.run.start_task()
    workflow_task.fail(life.run.ctx, life.run.txn(), wt, pb.WORKFLOW_TASK_FAILED_CAUSE_UNSPECIFIED, pb.Failure(),
                       "", timed_out=True)


STEPS: list[Callable[[Life, S.DataObject], None]] = [
    complete_task, complete_task, complete_task, complete_task, activity_outcome, activity_outcome, activity_outcome,
    timer_fires, timer_fires, timer_fires_behind_a_task, timer_fires_behind_a_task, child_moves, child_moves, child_moves,
    external_outcome, signal, cancel_requested, update_arrives, update_arrives, workflow_task_times_out,
]


def poller_takes_task(life: Life, data: S.DataObject) -> None:
    """A scheduled task is taken by a poller now or later (outside events are buffered behind a taken one)."""
    wt = life.st.workflow_task
    if wt is not None and not wt.started and data.draw(S.booleans(), label="poller takes it"):
        life.run.start_task()


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    lp = asyncio.new_event_loop()
    yield lp
    lp.close()


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=S.data())
def test_random_lives_of_a_run_keep_its_state_consistent_with_its_history(
        data: S.DataObject, loop: asyncio.AbstractEventLoop) -> None:
    life = Life(loop)
    check_invariants(life.st)
    for _ in range(data.draw(S.integers(1, 25), label="steps")):
        if not life.st.running:
            break
        poller_takes_task(life, data)
        step = data.draw(S.sampled_from(STEPS), label="step")
        step(life, data)
        check_invariants(life.st)
        if not life.st.buffered:
            check_rebuild(life.st)
