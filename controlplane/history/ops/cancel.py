"""Cancelling and terminating a workflow: a cancel request the workflow code handles, or a close by force.

A cancel request is an event for the workflow code (buffered while a workflow task runs);
asking twice changes nothing. Terminate closes the run at once: the workflow task in
flight is dropped (its late answer gets NOT_FOUND), buffered events are written, and the
run closes TERMINATED.
"""

from __future__ import annotations

from spindle.api import messages_pb2 as pb
from spindle.controlplane.errors import FailedPrecondition
from spindle.controlplane.namespaces import Namespace

from .._context import HistoryContext
from .._mutable_state import MutableState
from .._txn import Txn
from ._run import schedule_workflow_task
from .close import abandon_running_tasks, close_run


async def request_cancel(ctx: HistoryContext, ns: Namespace, execution: pb.WorkflowExecution, identity: str,
                         reason: str, external: tuple[int, pb.WorkflowExecution] | None = None) -> None:
    """Ask a running run to cancel (``external``: the requesting workflow's initiated event id and execution).

    Raises NotFound for an unknown run and FailedPrecondition for a closed one.
    """
    async with ctx.cache.locked(ns.id, execution.workflow_id):
        st = await ctx.cache.resolve(ns.id, execution.workflow_id, execution.run_id)
        if not st.running:
            raise FailedPrecondition(f"workflow_execution: workflow {st.workflow_id!r} is already closed")
        if st.cancel_requested:
            return
        txn = Txn(st, ctx.clock.now_ms())
        attrs = pb.WorkflowExecutionCancelRequestedEventAttributes(cause=reason, identity=identity)
        if external is not None:
            attrs.external_initiated_event_id = external[0]
            attrs.external_workflow_execution.CopyFrom(external[1])
        txn.external(pb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED,
                     "workflow_execution_cancel_requested_event_attributes", attrs)
        st.cancel_requested = True
        if st.workflow_task is None:
            schedule_workflow_task(ctx, txn)
        await ctx.commit(txn)


async def terminate(ctx: HistoryContext, ns: Namespace, execution: pb.WorkflowExecution, reason: str,
                    details: pb.Payloads, identity: str) -> None:
    """Close a running run as TERMINATED. Raises NotFound for an unknown run and FailedPrecondition for a closed one."""
    async with ctx.cache.locked(ns.id, execution.workflow_id):
        st = await ctx.cache.resolve(ns.id, execution.workflow_id, execution.run_id)
        if not st.running:
            raise FailedPrecondition(f"workflow_execution: workflow {st.workflow_id!r} is already closed")
        await _terminate(ctx, st, reason, details, identity)


async def _terminate(ctx: HistoryContext, st: MutableState, reason: str, details: pb.Payloads, identity: str) -> None:
    txn = Txn(st, ctx.clock.now_ms())
    abandon_running_tasks(ctx, txn)
    txn.event(pb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED, "workflow_execution_terminated_event_attributes",
              pb.WorkflowExecutionTerminatedEventAttributes(reason=reason, details=details, identity=identity))
    close_run(ctx, txn)
    await ctx.commit(txn)


__all__ = ["request_cancel", "terminate"]
