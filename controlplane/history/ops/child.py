"""Children and other workflows: child starts, a child's close in its parent, external signals and cancels.

A workflow's command to start a child, signal or cancel another workflow writes an
"initiated" event and a transfer task. The task's handler (here) reaches the target
through ``ctx.cross_shard`` (the target may live on another shard, or another process),
then records the outcome in the initiating run: ChildWorkflowExecutionStarted or
StartChildWorkflowExecutionFailed, ExternalWorkflowExecutionSignaled or
SignalExternalWorkflowExecutionFailed, and so on. Every handler is idempotent: it re-reads
the initiating run's state (and the request id ``{run_id}:{event_id}`` it gives the
target) first, so a retried or recovered task never applies twice.

``notify_parent`` runs on the parent's side: ``close.closed`` calls it through the port
when a child closes.
"""

from __future__ import annotations

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.controlplane.errors import AlreadyExists, FailedPrecondition, NotFound, ServiceError
from spindle.controlplane.namespaces import Namespace

from .._context import HistoryContext
from .._pacing import wait_for_token
from .._tasks import Task
from .._txn import Txn
from ._run import schedule_workflow_task

_CHILD_CLOSE = {
    pb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED: (pb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED,
                                                 "child_workflow_execution_completed_event_attributes"),
    pb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED: (pb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_FAILED,
                                              "child_workflow_execution_failed_event_attributes"),
    pb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED: (pb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_CANCELED,
                                                "child_workflow_execution_canceled_event_attributes"),
    pb.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT: (pb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_TIMED_OUT,
                                                 "child_workflow_execution_timed_out_event_attributes"),
    pb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED: (pb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_TERMINATED,
                                                  "child_workflow_execution_terminated_event_attributes"),
}


async def notify_parent(ctx: HistoryContext, pns: Namespace, parent: pb.ParentExecutionInfo,
                        close: pb.HistoryEvent, *, child_namespace: str, child: pb.WorkflowExecution,
                        first_run_id: str, workflow_type: str) -> None:
    """Record a child's close (``close``, its last event) in the parent's history.

    Arguments are plain values so that a cluster member can run this on the
    process that owns the parent's shard (through the cross-shard port).
    """
    mapping = _CHILD_CLOSE.get(close.event_type)
    if mapping is None:
        return
    etype, attr = mapping
    async with ctx.cache.locked(pns.id, parent.execution.workflow_id):
        pst = await ctx.cache.load(pns.id, parent.execution.workflow_id, parent.execution.run_id)
        if pst is None or not pst.running:
            return
        info = pst.children.get(parent.initiated_event_id)
        if info is None:
            return
        txn = Txn(pst, ctx.clock.now_ms())
        if not info.started_event_id and not any(
                e.event_type == pb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED
                and e.child_workflow_execution_started_event_attributes.initiated_event_id == parent.initiated_event_id
                for e in pst.buffered):
            txn.external(pb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED, "child_workflow_execution_started_event_attributes",
                         pb.ChildWorkflowExecutionStartedEventAttributes(
                             namespace=child_namespace, initiated_event_id=parent.initiated_event_id,
                             workflow_execution=pb.WorkflowExecution(workflow_id=child.workflow_id,
                                                                     run_id=first_run_id),
                             workflow_type=workflow_type))
        attrs = getattr(pb, _attr_class(attr))(
            namespace=child_namespace, workflow_execution=child,
            workflow_type=workflow_type, initiated_event_id=parent.initiated_event_id,
            started_event_id=info.started_event_id)
        if etype == pb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED:
            attrs.result.CopyFrom(close.workflow_execution_completed_event_attributes.result)
        elif etype == pb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_FAILED:
            attrs.failure.CopyFrom(close.workflow_execution_failed_event_attributes.failure)
        elif etype == pb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_CANCELED:
            attrs.details.CopyFrom(close.workflow_execution_canceled_event_attributes.details)
        elif etype == pb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_TERMINATED:
            attrs.reason = close.workflow_execution_terminated_event_attributes.reason
        txn.external(etype, attr, attrs)
        if pst.workflow_task is None:
            schedule_workflow_task(ctx, txn)
        await ctx.commit(txn)


async def start_child(ctx: HistoryContext, t: Task) -> None:
    """Start the child a ``T_START_CHILD`` task names, then record ChildWorkflowExecutionStarted (or the failure)."""
    async with ctx.cache.locked(t.namespace_id, t.workflow_id):
        st = await ctx.cache.load(t.namespace_id, t.workflow_id, t.run_id)
        if st is None or not st.running or t.event_id not in st.children or st.children[t.event_id].run_id:
            return
        init = st.events[t.event_id - 1].start_child_workflow_execution_initiated_event_attributes
    try:
        cns = ctx.namespaces.get(init.namespace)
    except ServiceError:
        await _child_start_failed(ctx, t, init, "NAMESPACE_NOT_FOUND")
        return
    # paced by the child's namespace's rps_limit like a client's start: waits for its token (the parent is
    # not failed; the task's row stays until the child started, so a crash while waiting loses nothing)
    await wait_for_token(ctx.start_tokens, cns)
    req = svc.StartWorkflowExecutionRequest(
        namespace=init.namespace, workflow_id=init.workflow_id, workflow_type=init.workflow_type,
        task_queue=init.task_queue, input=init.input, execution_timeout_ms=init.execution_timeout_ms,
        run_timeout_ms=init.run_timeout_ms, task_timeout_ms=init.task_timeout_ms, identity="spindle-child",
        request_id=f"{t.run_id}:{t.event_id}", workflow_id_reuse_policy=init.workflow_id_reuse_policy,
        memo=init.memo, search_attributes=init.search_attributes, header=init.header)
    parent = pb.ParentExecutionInfo(namespace=st.namespace,
                                    execution=pb.WorkflowExecution(workflow_id=t.workflow_id, run_id=t.run_id),
                                    initiated_event_id=t.event_id)
    try:
        run_id, _ = await ctx.cross_shard.start_workflow(cns, req, parent=parent)
    except AlreadyExists:
        await _child_start_failed(ctx, t, init, "WORKFLOW_ALREADY_EXISTS")
        return
    async with ctx.cache.locked(t.namespace_id, t.workflow_id):
        st = await ctx.cache.load(t.namespace_id, t.workflow_id, t.run_id)
        if st is None or not st.running or t.event_id not in st.children or st.children[t.event_id].run_id:
            return
        if any(e.event_type == pb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED
               and e.child_workflow_execution_started_event_attributes.initiated_event_id == t.event_id for e in st.buffered):
            return
        txn = Txn(st, ctx.clock.now_ms())
        txn.external(pb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED, "child_workflow_execution_started_event_attributes",
                     pb.ChildWorkflowExecutionStartedEventAttributes(
                         namespace=init.namespace, initiated_event_id=t.event_id,
                         workflow_execution=pb.WorkflowExecution(workflow_id=init.workflow_id, run_id=run_id),
                         workflow_type=init.workflow_type))
        st.children[t.event_id].run_id = run_id
        if st.workflow_task is None:
            schedule_workflow_task(ctx, txn)
        await ctx.commit(txn)


async def _child_start_failed(ctx: HistoryContext, t: Task,
                              init: pb.StartChildWorkflowExecutionInitiatedEventAttributes, cause: str) -> None:
    async with ctx.cache.locked(t.namespace_id, t.workflow_id):
        st = await ctx.cache.load(t.namespace_id, t.workflow_id, t.run_id)
        if st is None or not st.running or t.event_id not in st.children:
            return
        txn = Txn(st, ctx.clock.now_ms())
        txn.external(pb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_FAILED,
                     "start_child_workflow_execution_failed_event_attributes",
                     pb.StartChildWorkflowExecutionFailedEventAttributes(
                         namespace=init.namespace, workflow_id=init.workflow_id, workflow_type=init.workflow_type,
                         cause=cause, initiated_event_id=t.event_id,
                         workflow_task_completed_event_id=init.workflow_task_completed_event_id))
        if st.workflow_task is None:
            schedule_workflow_task(ctx, txn)
        await ctx.commit(txn)


async def signal_external(ctx: HistoryContext, t: Task) -> None:
    """Signal the workflow a ``T_SIGNAL_EXTERNAL`` task names, then record the outcome in the initiating run."""
    async with ctx.cache.locked(t.namespace_id, t.workflow_id):
        st = await ctx.cache.load(t.namespace_id, t.workflow_id, t.run_id)
        if st is None or not st.running or t.event_id not in st.signals_external:
            return
        init = st.signals_external[t.event_id]
    cause = ""
    try:
        tns = ctx.namespaces.get(init.namespace)
        await ctx.cross_shard.signal(tns, init.workflow_execution, init.signal_name, init.input, init.header,
                                           f"{t.run_id}:{t.event_id}",
                                           pb.WorkflowExecution(workflow_id=t.workflow_id, run_id=t.run_id))
    except (NotFound, FailedPrecondition):
        cause = "EXTERNAL_WORKFLOW_EXECUTION_NOT_FOUND"
    await _external_outcome(ctx, t, init.namespace, init.workflow_execution, cause, signal=True)


async def cancel_external(ctx: HistoryContext, t: Task) -> None:
    """Ask the workflow a ``T_CANCEL_EXTERNAL`` task names to cancel, then record the outcome."""
    async with ctx.cache.locked(t.namespace_id, t.workflow_id):
        st = await ctx.cache.load(t.namespace_id, t.workflow_id, t.run_id)
        if st is None or not st.running or t.event_id not in st.cancels_external:
            return
        init = st.cancels_external[t.event_id]
    cause = ""
    try:
        tns = ctx.namespaces.get(init.namespace)
        await ctx.cross_shard.request_cancel(tns, init.workflow_execution, "spindle-cancel-external", init.reason,
                                  external=(t.event_id, pb.WorkflowExecution(workflow_id=t.workflow_id, run_id=t.run_id)))
    except (NotFound, FailedPrecondition):
        cause = "EXTERNAL_WORKFLOW_EXECUTION_NOT_FOUND"
    await _external_outcome(ctx, t, init.namespace, init.workflow_execution, cause, signal=False)


async def _external_outcome(ctx: HistoryContext, t: Task, namespace: str, execution: pb.WorkflowExecution, cause: str,
                            *, signal: bool) -> None:
    async with ctx.cache.locked(t.namespace_id, t.workflow_id):
        st = await ctx.cache.load(t.namespace_id, t.workflow_id, t.run_id)
        pending = (st.signals_external if signal else st.cancels_external) if st is not None else {}
        if st is None or not st.running or t.event_id not in pending:
            return
        txn = Txn(st, ctx.clock.now_ms())
        if signal and cause:
            txn.external(pb.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_FAILED,
                         "signal_external_workflow_execution_failed_event_attributes",
                         pb.SignalExternalWorkflowExecutionFailedEventAttributes(
                             cause=cause, namespace=namespace, workflow_execution=execution, initiated_event_id=t.event_id))
        elif signal:
            txn.external(pb.EVENT_TYPE_EXTERNAL_WORKFLOW_EXECUTION_SIGNALED,
                         "external_workflow_execution_signaled_event_attributes",
                         pb.ExternalWorkflowExecutionSignaledEventAttributes(
                             initiated_event_id=t.event_id, namespace=namespace, workflow_execution=execution))
        elif cause:
            txn.external(pb.EVENT_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_FAILED,
                         "request_cancel_external_workflow_execution_failed_event_attributes",
                         pb.RequestCancelExternalWorkflowExecutionFailedEventAttributes(
                             cause=cause, namespace=namespace, workflow_execution=execution, initiated_event_id=t.event_id))
        else:
            txn.external(pb.EVENT_TYPE_EXTERNAL_WORKFLOW_EXECUTION_CANCEL_REQUESTED,
                         "external_workflow_execution_cancel_requested_event_attributes",
                         pb.ExternalWorkflowExecutionCancelRequestedEventAttributes(
                             initiated_event_id=t.event_id, namespace=namespace, workflow_execution=execution))
        pending.pop(t.event_id, None)
        if st.workflow_task is None:
            schedule_workflow_task(ctx, txn)
        await ctx.commit(txn)


def _attr_class(attr: str) -> str:
    return "".join(p.capitalize() for p in attr.split("_"))


__all__ = ["cancel_external", "notify_parent", "signal_external", "start_child"]
