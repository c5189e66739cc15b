"""Starting a workflow: the id conflict and reuse policies, start idempotency, and the new run's first write.

A start takes the workflow id's lock and looks at the current run. A running one is
returned (the same request id, or USE_EXISTING), signalled (signal-with-start, once per
request id),
terminated in the same transaction that creates the new run (TERMINATE_EXISTING) or
refused (ALREADY_EXISTS, carrying its run id and start request id); a closed one is
replaced unless the reuse policy forbids it. The new run's first events and tasks are
written in one transaction that also moves the current-run row, only if it still points
where the start saw it.
"""

from __future__ import annotations

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.controlplane._field_rules import workflow_task_timeout_ms
from spindle.controlplane.errors import AlreadyExists
from spindle.controlplane.namespaces import Namespace

from .._context import HistoryContext
from .._mutable_state import MutableState
from .._txn import Txn
from . import cron
from ._run import build_run, new_run_id
from .close import abandon_running_tasks, close_run
from .signal import signal_locked

#: Close statuses that ALLOW_DUPLICATE_FAILED_ONLY lets a new run replace.
FAILED_LIKE = {
    pb.WORKFLOW_EXECUTION_STATUS_FAILED,
    pb.WORKFLOW_EXECUTION_STATUS_CANCELED,
    pb.WORKFLOW_EXECUTION_STATUS_TERMINATED,
    pb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT,
}


async def start_workflow(ctx: HistoryContext, ns: Namespace, req: svc.StartWorkflowExecutionRequest, *,
                         parent: pb.ParentExecutionInfo | None = None,
                         signal: tuple[str, pb.Payloads, pb.Header] | None = None) -> tuple[str, bool]:
    """Start a run (or, per the conflict policy, return the running one). Returns (run_id, started)."""
    async with ctx.cache.locked(ns.id, req.workflow_id):
        return await _start_locked(ctx, ns, req, parent=parent, signal=signal)


async def _start_locked(ctx: HistoryContext, ns: Namespace, req: svc.StartWorkflowExecutionRequest, *,
                        parent: pb.ParentExecutionInfo | None,
                        signal: tuple[str, pb.Payloads, pb.Header] | None) -> tuple[str, bool]:
    cur_rid = await ctx.cache.current_run_id(ns.id, req.workflow_id)
    expect = ""
    terminate: MutableState | None = None
    if cur_rid is not None:
        cur = await ctx.cache.load(ns.id, req.workflow_id, cur_rid)
        conflict = req.workflow_id_conflict_policy
        if cur is not None and cur.running:
            if signal is not None and conflict != pb.WORKFLOW_ID_CONFLICT_POLICY_TERMINATE_EXISTING:
                # Signal-with-start is deduplicated by the start's request id: a retry of the call that
                # started this run (the signal went in with its start) or that signalled it changes nothing.
                if req.request_id and await ctx.cache.start_request_id(cur) == req.request_id:
                    return cur.run_id, False
                await signal_locked(ctx, cur, signal[0], signal[1], signal[2], req.identity, req.request_id)
                return cur.run_id, False
            started_by = cur.started.identity if cur.started else ""
            cur_request_id = await ctx.cache.start_request_id(cur)
            if req.request_id and cur_request_id == req.request_id:
                return cur.run_id, False
            if conflict == pb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING:
                return cur.run_id, False
            if conflict != pb.WORKFLOW_ID_CONFLICT_POLICY_TERMINATE_EXISTING:
                raise AlreadyExists(
                    f"workflow_id: workflow {req.workflow_id!r} is already running (run {cur.run_id}"
                    f"{', started by ' + started_by if started_by else ''})", run_id=cur.run_id,
                    start_request_id=cur_request_id)
            # TERMINATE_EXISTING: the reuse policy is not consulted (it governs closed runs; the
            # frontend refuses REJECT_DUPLICATE with it), as in Temporal
            terminate = cur
        elif cur is not None:
            cur_request_id = await ctx.cache.start_request_id(cur)
            if req.request_id and cur_request_id == req.request_id:
                return cur.run_id, False
            policy = req.workflow_id_reuse_policy
            if policy == pb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE:
                raise AlreadyExists(f"workflow_id: workflow {req.workflow_id!r} already ran (run {cur.run_id}) and the "
                                    "id reuse policy is REJECT_DUPLICATE", run_id=cur.run_id,
                                    start_request_id=cur_request_id)
            if policy == pb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY and cur.status not in FAILED_LIKE:
                raise AlreadyExists(f"workflow_id: workflow {req.workflow_id!r} already completed (run {cur.run_id}) and "
                                    "the id reuse policy is ALLOW_DUPLICATE_FAILED_ONLY", run_id=cur.run_id,
                                    start_request_id=cur_request_id)
        expect = cur_rid
    now = ctx.clock.now_ms()
    # legacy cron: the first workflow task waits for the first tick (the frontend refuses a start delay with it)
    delay_ms = cron.backoff_ms(req.cron_schedule, now) if req.cron_schedule else req.workflow_start_delay_ms
    rid = new_run_id()
    shard = ctx.shards.shard_for(ns.id, req.workflow_id)
    st = MutableState(ns.id, ns.name, req.workflow_id, rid, shard.shard_id)
    st.start_request_id = req.request_id
    attrs = pb.WorkflowExecutionStartedEventAttributes(
        workflow_type=req.workflow_type, task_queue=req.task_queue, input=req.input,
        execution_timeout_ms=req.execution_timeout_ms, run_timeout_ms=req.run_timeout_ms or req.execution_timeout_ms,
        task_timeout_ms=workflow_task_timeout_ms(req.task_timeout_ms,  # clamped to 2 minutes, as in Temporal
                                                 int(ctx.config.default_workflow_task_timeout * 1000)),
        first_execution_run_id=rid, original_execution_run_id=rid, memo=req.memo,
        search_attributes=req.search_attributes, identity=req.identity, attempt=1,
        execution_expiration_time_ms=(now + delay_ms + req.execution_timeout_ms)
        if req.execution_timeout_ms else 0,
        first_workflow_task_backoff_ms=delay_ms, header=req.header, cron_schedule=req.cron_schedule,
    )
    if parent is not None:
        attrs.parent.CopyFrom(parent)
    txn = build_run(ctx, st, attrs, now, start_delay_ms=delay_ms)
    txn.start_request_id = req.request_id
    if signal is not None:
        txn.event(pb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED, "workflow_execution_signaled_event_attributes",
                  pb.WorkflowExecutionSignaledEventAttributes(signal_name=signal[0], input=signal[1], header=signal[2],
                                                              identity=req.identity, request_id=req.request_id))
    ctx.cache.put(st)
    try:
        if terminate is None:
            await ctx.commit(txn, new=True, current_expect=expect)
        else:
            await ctx.commit(_terminate_for_new_run(ctx, terminate, txn, req.identity))
    except Exception:
        ctx.cache.evict(st)
        raise
    return rid, True


def _terminate_for_new_run(ctx: HistoryContext, cur: MutableState, new: Txn, identity: str) -> Txn:
    """One transaction that terminates ``cur`` and creates the run ``new`` builds (TERMINATE_EXISTING).

    Written like continue-as-new: the closing run's mutation carries the new run's, and
    the current-run pointer moves from ``cur`` to the new run only if it still points at
    ``cur``. Either both happen or neither.
    """
    txn = Txn(cur, new.now_ms)
    abandon_running_tasks(ctx, txn)
    txn.event(pb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED, "workflow_execution_terminated_event_attributes",
              pb.WorkflowExecutionTerminatedEventAttributes(
                  reason=f"terminated by a new start of workflow id {cur.workflow_id!r} "
                         f"(id conflict policy TERMINATE_EXISTING; new run {new.state.run_id})",
                  identity=identity))
    close_run(ctx, txn)
    txn.new_run = (new.state, new.events, new.transfer, new.timers)
    txn.new_run_request_id = new.start_request_id
    txn.after_commit.extend(new.after_commit)
    return txn


__all__ = ["FAILED_LIKE", "start_workflow"]
