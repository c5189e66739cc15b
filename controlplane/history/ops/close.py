"""Closing a run: the bookkeeping of every close, closes the server decides, and what a close tells others.

A run closes by a command of its workflow (complete, fail, cancel, continue-as-new),
by terminate, by its run timeout, or by reaching ``history_max_events``. Whatever the
cause, ``close_run`` follows the closing event in the same transaction. After the commit
the close's transfer task (``T_CLOSE``, handled by ``closed``) applies the parent-close
policy to children still open and records the close in the parent's history, both
through ``ctx.cross_shard`` (the parent or child may live on another shard). A run a
schedule started (search attribute ``ScheduledById``) tells its schedule too, so actions
waiting for it (overlap policies BUFFER_ONE, BUFFER_ALL, CANCEL_OTHER) go now.
"""

from __future__ import annotations

import json

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.controlplane.errors import FailedPrecondition, NotFound

from .._context import HistoryContext
from .._mutable_state import MutableState
from .._tasks import T_CLOSE, Task
from .._txn import Txn
from ._run import flush_buffered, timer_txn, visibility_task
from .retention import arm_retention


def abandon_running_tasks(ctx: HistoryContext, txn: Txn) -> None:
    """Before the run is closed from outside (terminate, run timeout): drop the workflow task
    in flight (its late completion gets NOT_FOUND) and flush buffered events into history."""
    st = txn.state
    wt = st.workflow_task
    if wt is not None:
        key = (st.namespace_id, st.workflow_id, st.run_id, wt.scheduled_event_id)
        admission = ctx.admission
        txn.after_commit.append(lambda: admission.workflow_task_done(key))
    if wt is not None and wt.started and wt.timeout_timer is not None:
        txn.delete_timer(wt.timeout_timer)
    st.workflow_task = None
    flush_buffered(txn)
    for info in st.activities.values():
        info.started = False  # their late answers get NOT_FOUND; close_run stops counting them


def close_run(ctx: HistoryContext, txn: Txn) -> None:
    """Bookkeeping after a closing event: current pointer, visibility, retention, parent and children, updates."""
    st = txn.state
    txn.current_status = st.status
    wt = st.workflow_task
    if wt is not None:
        key = (st.namespace_id, st.workflow_id, st.run_id, wt.scheduled_event_id)
        admission = ctx.admission
        txn.after_commit.append(lambda: admission.workflow_task_done(key))
    if txn.buffered or st.buffered:
        txn.clear_buffered = True
        st.buffered.clear()
    if st.run_timer is not None and st.run_timer.task_id:
        txn.timer_delete.append((st.run_timer.fire_time_ms, st.run_timer.task_id))
    txn.transfer.append(Task(T_CLOSE, st.namespace_id, st.workflow_id, st.run_id))
    # Tasks of the run still with workers (an activity that ignores its cancellation, a
    # workflow task of a run terminated meanwhile) no longer count as work in progress.
    run = (st.namespace_id, st.workflow_id, st.run_id)
    outstanding = ctx.outstanding
    txn.after_commit.append(lambda: outstanding.discard_run(run))
    visibility_task(ctx, txn)
    arm_retention(ctx, txn)
    pending = list(st.pending_updates.values())
    st.pending_updates.clear()

    def fail_pending() -> None:
        for pu in pending:
            if not pu.future.done():
                pu.future.set_result(svc.UpdateWorkflowExecutionResponse(
                    failure=pb.Failure(message="the workflow execution closed before the update completed",
                                       source="server"), run_id=st.run_id))

    txn.after_commit.append(fail_pending)


# ---------------------------------------------------------------------- closes the server decides
def enforce_history_limit(ctx: HistoryContext, txn: Txn) -> None:
    """Before a commit: fail the run if what ``txn`` appends or buffers brings it to a history limit.

    The limits are ``history_max_events`` events and ``history_max_bytes`` serialized bytes,
    events buffered behind a running workflow task included (a signal flood while a worker
    holds the task must not grow the run without bound). Checked on every write that adds
    events, so the history never grows past a limit by more than one write and the closing
    failure; later signals, activity results etc. find the run closed.
    """
    st = txn.state
    if not (txn.events or txn.buffered) or not st.running or history_limit_reached(ctx, st) is None:
        return
    abandon_running_tasks(ctx, txn)
    fail_for_history_size(ctx, txn)


def history_limit_reached(ctx: HistoryContext, st: MutableState) -> str | None:
    """Which history limit the run's events (written and buffered) reached, said for a user; None below both."""
    events = st.next_event_id - 1 + len(st.buffered)
    if events >= ctx.config.history_max_events:
        return (f"history has {events} events, over the limit of {ctx.config.history_max_events} "
                "(history_max_events)")
    size = st.history_bytes + st.buffered_bytes()
    if size > ctx.config.history_max_bytes:
        return (f"history has {size} bytes, over the limit of {ctx.config.history_max_bytes} bytes "
                "(history_max_bytes)")
    return None


def fail_for_history_size(ctx: HistoryContext, txn: Txn) -> None:
    st = txn.state
    reason = history_limit_reached(ctx, st) or (f"history has {st.next_event_id - 1} events, over the limit of "
                                                f"{ctx.config.history_max_events} (history_max_events)")
    txn.event(pb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED, "workflow_execution_failed_event_attributes",
              pb.WorkflowExecutionFailedEventAttributes(failure=pb.Failure(
                  message=f"{reason}; use continue-as-new to bound it",
                  source="server", server_failure_info=pb.ServerFailureInfo(non_retryable=True)),
                  retry_state=pb.RETRY_STATE_NON_RETRYABLE_FAILURE))
    close_run(ctx, txn)


async def run_timed_out(ctx: HistoryContext, t: Task) -> None:
    """The run-timeout timer fired: the run times out."""
    async with ctx.cache.locked(t.namespace_id, t.workflow_id):
        txn = await timer_txn(ctx, t)
        if txn is None:
            return
        st = txn.state
        st.run_timer = None
        abandon_running_tasks(ctx, txn)
        txn.event(pb.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT, "workflow_execution_timed_out_event_attributes",
                  pb.WorkflowExecutionTimedOutEventAttributes(retry_state=pb.RETRY_STATE_TIMEOUT))
        close_run(ctx, txn)
        await ctx.commit(txn)


# ---------------------------------------------------------------------- after the close (transfer task)
async def closed(ctx: HistoryContext, t: Task) -> None:
    """A run closed (``T_CLOSE``): apply the parent-close policy to open children, then tell the parent."""
    async with ctx.cache.locked(t.namespace_id, t.workflow_id):
        st = await ctx.cache.load(t.namespace_id, t.workflow_id, t.run_id)
        if st is None or st.close_event is None or st.started is None:
            return
        close = st.close_event
        parent = st.started.parent if st.started.HasField("parent") else None
        children = list(st.children.values())
        schedule_id = _scheduled_by(st)
    # parent-close policy for children still open
    for c in children:
        if c.parent_close_policy == pb.PARENT_CLOSE_POLICY_ABANDON or not c.run_id:
            continue
        try:
            ns = ctx.namespaces.get(c.namespace)
            ex = pb.WorkflowExecution(workflow_id=c.workflow_id, run_id=c.run_id)
            if c.parent_close_policy == pb.PARENT_CLOSE_POLICY_REQUEST_CANCEL:
                await ctx.cross_shard.request_cancel(ns, ex, "spindle-parent-close", "parent closed")
            else:
                await ctx.cross_shard.terminate(ns, ex, "parent workflow closed (parent close policy TERMINATE)",
                                                pb.Payloads(), "spindle-parent-close")
        except (NotFound, FailedPrecondition):
            pass
    # tell the schedule that started it (a continued-as-new run is not the end of the action)
    if schedule_id and close.event_type != pb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
        sns = ctx.namespaces.by_id(t.namespace_id)
        if sns is not None:
            await ctx.cross_shard.schedule_run_closed(sns, schedule_id,
                                                      pb.WorkflowExecution(workflow_id=st.workflow_id, run_id=st.run_id))
    # tell the parent (a continued-as-new run is not the end of the child)
    if parent is None or close.event_type == pb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
        return
    pns = ctx.namespaces.get(parent.namespace) if parent.namespace else ctx.namespaces.by_id(t.namespace_id)
    if pns is None:
        return
    await ctx.cross_shard.notify_parent(pns, parent, close, child_namespace=st.namespace,
                                        child=pb.WorkflowExecution(workflow_id=st.workflow_id, run_id=st.run_id),
                                        first_run_id=st.started.first_execution_run_id or st.run_id,
                                        workflow_type=st.workflow_type)


def _scheduled_by(st: MutableState) -> str:
    """The schedule id in the run's ``ScheduledById`` search attribute ('' if none or not a string)."""
    p = st.search_attributes.get("ScheduledById")
    if p is None or not p.data:
        return ""
    try:
        v = json.loads(p.data)
    except ValueError:
        return ""
    return v if isinstance(v, str) else ""


__all__ = ["abandon_running_tasks", "close_run", "closed", "enforce_history_limit", "fail_for_history_size",
           "run_timed_out"]
