"""Signalling a workflow: from a client, or from another workflow (an external signal, on the target's side).

A signal is an event from outside the workflow code: buffered while a workflow task runs,
written at once otherwise (with a new workflow task if none is scheduled). A signal with
a request id already recorded for the run changes nothing (a retried signal, also after a
reload: the ids are rebuilt from the history and the buffered events).
"""

from __future__ import annotations

from spindle.api import messages_pb2 as pb
from spindle.controlplane.errors import FailedPrecondition
from spindle.controlplane.namespaces import Namespace

from .._context import HistoryContext
from .._mutable_state import MutableState
from .._txn import Txn
from ._run import schedule_workflow_task


async def signal(ctx: HistoryContext, ns: Namespace, execution: pb.WorkflowExecution, name: str, payloads: pb.Payloads,
                 header: pb.Header, identity: str, request_id: str) -> None:
    """Signal a run (the current run when ``execution.run_id`` is empty); NotFound, or FailedPrecondition if closed."""
    async with ctx.cache.locked(ns.id, execution.workflow_id):
        st = await ctx.cache.resolve(ns.id, execution.workflow_id, execution.run_id)
        await signal_locked(ctx, st, name, payloads, header, identity, request_id)


async def signal_locked(ctx: HistoryContext, st: MutableState, name: str, payloads: pb.Payloads, header: pb.Header,
                        identity: str, request_id: str, external: pb.WorkflowExecution | None = None) -> None:
    """Signal ``st`` (the caller holds its workflow id's lock)."""
    if not st.running:
        raise FailedPrecondition(f"workflow_execution: workflow {st.workflow_id!r} run {st.run_id} is already closed; "
                                 "signals go only to running executions")
    if request_id and request_id in st.signal_request_ids:
        return
    txn = Txn(st, ctx.clock.now_ms())
    attrs = pb.WorkflowExecutionSignaledEventAttributes(signal_name=name, input=payloads, header=header, identity=identity,
                                                        request_id=request_id)
    if external is not None:
        attrs.external_workflow_execution.CopyFrom(external)
    txn.external(pb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED, "workflow_execution_signaled_event_attributes", attrs)
    if st.workflow_task is None:
        schedule_workflow_task(ctx, txn)
    await ctx.commit(txn)
    if request_id:
        st.signal_request_ids.add(request_id)


async def deliver_external_signal(ctx: HistoryContext, tns: Namespace, target: pb.WorkflowExecution, name: str,
                                  payloads: pb.Payloads, header: pb.Header, request_id: str,
                                  source: pb.WorkflowExecution) -> None:
    """Signal ``target`` on behalf of the workflow ``source`` (runs on the process that owns the target's shard)."""
    async with ctx.cache.locked(tns.id, target.workflow_id):
        st = await ctx.cache.resolve(tns.id, target.workflow_id, target.run_id)
        await signal_locked(ctx, st, name, payloads, header, "spindle-signal-external", request_id, external=source)


__all__ = ["deliver_external_signal", "signal", "signal_locked"]
