"""Resetting a workflow: a new run of the workflow id that continues from a point of an earlier run's history.

Temporal's ``ResetWorkflowExecution``. The point is a ``WorkflowTaskCompleted`` event of the
base run. The new run (same workflow id, so the same shard; a new run id) gets a copy of
the base run's events up to and including the ``WorkflowTaskStarted`` before that event,
then ``WorkflowTaskFailed`` (cause ``RESET_WORKFLOW``, the reason as its failure), the
signals the base run received after the point (unless ``RESET_REAPPLY_TYPE_NONE``), each
once and with its request id, and a new ``WorkflowTaskScheduled``. A worker replays the copy
(the failed task's commands never happened) and runs its current code from there.

What was pending at the point:

- activities scheduled before the point and not closed by it are dispatched again
  (attempt 1; their timeouts start again now); activities the code schedules after the
  point are scheduled again by the new run's code: activities run again;
- timers started before the point and not fired by it keep their original fire time
  (a timer whose time has passed fires at once);
- a child workflow, external signal or external cancel still pending at the point is
  refused (INVALID_ARGUMENT): its answer would go to the base run. Children the old run
  started after the point are that run's children: when it is terminated their
  parent-close policy applies (default TERMINATE); the new run's code starts them again.

The current run of the workflow id, if running (the base run, or a later run of a
continued-as-new chain), is terminated in the same transaction that creates the new
run, with the reason and the new run id; a closed one stays as it is. A retry with the
same request id returns the run the first call made.
"""

from __future__ import annotations

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.controlplane.errors import InvalidArgument
from spindle.controlplane.namespaces import Namespace

from .._context import HistoryContext
from .._mutable_state import MutableState
from .._tasks import T_ACTIVITY_TASK, TM_ACTIVITY_TIMEOUT, TM_USER_TIMER, TM_WORKFLOW_RUN_TIMEOUT, Task
from .._txn import Txn
from .._versioning import task_extra
from ._run import new_run_id, new_timer, schedule_workflow_task, visibility_task
from .close import abandon_running_tasks, close_run

ALLOWED = "WorkflowTaskCompleted"


async def reset(ctx: HistoryContext, ns: Namespace, req: svc.ResetWorkflowExecutionRequest) -> str:
    """Make the reset run; returns its run id.

    Raises:
        NotFound: no such workflow or run.
        InvalidArgument: the event id does not name a WorkflowTaskCompleted event of the run,
            or something is pending at the point that a new run cannot take over.
    """
    ex = req.workflow_execution
    async with ctx.cache.locked(ns.id, ex.workflow_id):
        base = await ctx.cache.resolve(ns.id, ex.workflow_id, ex.run_id)
        cur_rid = await ctx.cache.current_run_id(ns.id, ex.workflow_id)
        cur = await ctx.cache.load(ns.id, ex.workflow_id, cur_rid) if cur_rid else None
        if req.request_id and cur is not None and await ctx.cache.start_request_id(cur) == req.request_id:
            return cur.run_id  # a retry of a reset that made ``cur``
        started_id, scheduled_id = reset_point(base, req.workflow_task_finish_event_id)
        now = ctx.clock.now_ms()
        new_txn = _new_run(ctx, base, started_id, scheduled_id, req, now)
        ctx.cache.put(new_txn.state)
        try:
            if cur is not None and cur.running:
                await ctx.commit(_terminate_for_reset(ctx, cur, new_txn, req))
            else:
                new_txn.start_request_id = req.request_id
                await ctx.commit(new_txn, new=True, current_expect=cur_rid or "")
        except Exception:
            ctx.cache.evict(new_txn.state)
            raise
        return new_txn.state.run_id


def reset_point(st: MutableState, event_id: int) -> tuple[int, int]:
    """The (WorkflowTaskStarted, WorkflowTaskScheduled) event ids of the task event ``event_id`` completed.

    Raises InvalidArgument naming the allowed event type and the ids of such events in the run.
    """
    events = st.events
    last = st.next_event_id - 1
    completed = [e.event_id for e in events if e.event_type == pb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED]
    where = (f"run {st.run_id} has events 1..{last}; its {ALLOWED} events are "
             f"{_ids(completed) if completed else 'none (no workflow task completed yet: nothing to reset to)'}")
    if event_id <= 0 or event_id > last:
        raise InvalidArgument(f"workflow_task_finish_event_id: {event_id} is not an event of the run; it must name a "
                              f"{ALLOWED} event ({where})")
    e = events[event_id - 1]
    if e.event_type != pb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
        raise InvalidArgument(f"workflow_task_finish_event_id: event {event_id} is {pb.EventType.Name(e.event_type)}, "
                              f"not {ALLOWED}; reset takes a {ALLOWED} event ({where})")
    a = e.workflow_task_completed_event_attributes
    started_id = a.started_event_id or event_id - 1
    scheduled_id = a.scheduled_event_id or started_id - 1
    return started_id, scheduled_id


def _ids(ids: list[int]) -> str:
    return ", ".join(map(str, ids)) if len(ids) <= 20 else f"{', '.join(map(str, ids[:10]))}, ... {ids[-1]}"


def _new_run(ctx: HistoryContext, base: MutableState, started_id: int, scheduled_id: int,
             req: svc.ResetWorkflowExecutionRequest, now: int) -> Txn:
    """The new run's events and tasks (not committed)."""
    nst = MutableState(base.namespace_id, base.namespace, base.workflow_id, new_run_id(), base.shard_id)
    nst.start_request_id = req.request_id
    nst.may_hold_blob_refs = base.may_hold_blob_refs
    txn = Txn(nst, now)
    for i in range(started_id):
        e = pb.HistoryEvent()
        e.CopyFrom(base.events[i])
        txn.append_numbered(e)
    _refuse_pending(nst, started_id)
    txn.event(pb.EVENT_TYPE_WORKFLOW_TASK_FAILED, "workflow_task_failed_event_attributes",
              pb.WorkflowTaskFailedEventAttributes(
                  scheduled_event_id=scheduled_id, started_event_id=started_id,
                  cause=pb.WORKFLOW_TASK_FAILED_CAUSE_RESET_WORKFLOW, identity=req.identity,
                  failure=pb.Failure(message=f"reset to event {started_id + 1} of run {base.run_id}: {req.reason}",
                                     source="server")))
    if req.reset_reapply_type != pb.RESET_REAPPLY_TYPE_NONE:
        for e in _signals_after(base, started_id):
            txn.event(pb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED, "workflow_execution_signaled_event_attributes",
                      e.workflow_execution_signaled_event_attributes)
    schedule_workflow_task(ctx, txn)
    _restart_pending(ctx, txn)
    _arm_run_timeout(txn, now)
    visibility_task(ctx, txn)
    return txn


def _refuse_pending(st: MutableState, started_id: int) -> None:
    what = []
    if st.children:
        what += [f"child workflow {c.workflow_id!r} (initiated at event {c.initiated_event_id})" for c in st.children.values()]
    what += [f"a signal to an external workflow (initiated at event {i})" for i in st.signals_external]
    what += [f"a cancel request to an external workflow (initiated at event {i})" for i in st.cancels_external]
    if what:
        raise InvalidArgument(
            f"workflow_task_finish_event_id: at event {started_id + 1} the run still waits for {'; '.join(what)}; "
            f"its answer would go to the old run: reset to a {ALLOWED} event before it was initiated or after "
            "it closed")


def _signals_after(base: MutableState, started_id: int) -> list[pb.HistoryEvent]:
    """Signals the base run received after the point (written or still buffered), in order, once per request id."""
    out: list[pb.HistoryEvent] = []
    seen: set[str] = set()
    later = list(base.events[started_id:]) + list(base.buffered)
    for e in later:
        if e.event_type != pb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
            continue
        rid = e.workflow_execution_signaled_event_attributes.request_id
        if rid:
            if rid in seen:
                continue
            seen.add(rid)
        out.append(e)
    return out


def _restart_pending(ctx: HistoryContext, txn: Txn) -> None:
    """Tasks for what was pending at the point: activities are dispatched again, timers re-armed."""
    st = txn.state
    now = txn.now_ms
    for sid, info in sorted(st.activities.items()):
        info.attempt = 1
        info.attempt_scheduled_time_ms = now
        txn.transfer.append(Task(T_ACTIVITY_TASK, st.namespace_id, st.workflow_id, st.run_id, sid, 1,
                                 extra=task_extra(st, info.task_queue)))
        if info.schedule_to_close_ms:
            info.timers["SCHEDULE_TO_CLOSE"] = new_timer(txn, TM_ACTIVITY_TIMEOUT, now + info.schedule_to_close_ms,
                                                         event_id=sid, attempt=0, sub="SCHEDULE_TO_CLOSE")
        if info.schedule_to_start_ms:
            info.timers["SCHEDULE_TO_START"] = new_timer(txn, TM_ACTIVITY_TIMEOUT, now + info.schedule_to_start_ms,
                                                         event_id=sid, attempt=1, sub="SCHEDULE_TO_START")
    for timer_id, t in st.timers.items():
        t.task = new_timer(txn, TM_USER_TIMER, max(t.fire_time_ms, now), event_id=t.started_event_id,
                           extra={"id": timer_id})


def _arm_run_timeout(txn: Txn, now: int) -> None:
    st = txn.state
    a = st.started
    assert a is not None
    deadline = now + a.run_timeout_ms if a.run_timeout_ms else 0
    if a.execution_expiration_time_ms:
        deadline = min(deadline, a.execution_expiration_time_ms) if deadline else a.execution_expiration_time_ms
    if deadline:
        st.run_timer = new_timer(txn, TM_WORKFLOW_RUN_TIMEOUT, max(deadline, now))


def _terminate_for_reset(ctx: HistoryContext, cur: MutableState, new: Txn,
                         req: svc.ResetWorkflowExecutionRequest) -> Txn:
    """One transaction that terminates the running current run and creates the reset run."""
    txn = Txn(cur, new.now_ms)
    abandon_running_tasks(ctx, txn)
    txn.event(pb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED, "workflow_execution_terminated_event_attributes",
              pb.WorkflowExecutionTerminatedEventAttributes(
                  reason=f"reset: {req.reason} (new run {new.state.run_id})" if req.reason
                  else f"reset (new run {new.state.run_id})", identity=req.identity))
    close_run(ctx, txn)
    txn.new_run = (new.state, new.events, new.transfer, new.timers)
    txn.new_run_request_id = req.request_id
    txn.after_commit.extend(new.after_commit)
    return txn


__all__ = ["reset", "reset_point"]
