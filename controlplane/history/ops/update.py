"""Workflow updates: delivered with a workflow task, accepted and completed (or rejected) by the workflow."""

from __future__ import annotations

import asyncio
import uuid

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.controlplane.errors import DeadlineExceeded, FailedPrecondition
from spindle.controlplane.namespaces import Namespace

from .._context import HistoryContext
from .._pending import PendingUpdate
from .._txn import Txn
from ._run import schedule_workflow_task


async def update(ctx: HistoryContext, ns: Namespace, req: svc.UpdateWorkflowExecutionRequest
                 ) -> svc.UpdateWorkflowExecutionResponse:
    """Deliver an update to the workflow and wait for its outcome (an update already completed returns its outcome).

    The update waits in the run's state (in memory) until a workflow task delivers it; the
    workflow accepts and completes it (events) or rejects it (no event). Raises
    FailedPrecondition for a closed run and DeadlineExceeded when no outcome comes in time.
    """
    timeout = (req.timeout_ms / 1000.0) if req.timeout_ms else ctx.config.update_timeout
    upd = req.request
    if not upd.update_id:
        upd.update_id = uuid.uuid4().hex
    async with ctx.cache.locked(ns.id, req.workflow_execution.workflow_id):
        st = await ctx.cache.resolve(ns.id, req.workflow_execution.workflow_id, req.workflow_execution.run_id)
        done = st.completed_updates.get(upd.update_id)
        if done is not None:
            return _update_response(done, st.run_id)
        if not st.running:
            raise FailedPrecondition(f"workflow_execution: workflow {st.workflow_id!r} is already closed")
        pu = st.pending_updates.get(upd.update_id)
        if pu is None:
            # Accepted by an earlier task, its waiter lost with the process (pending updates live in
            # memory): wait for its completion without delivering it again (a second ACCEPT_UPDATE is refused).
            accepted = upd.update_id in st.accepted_updates
            pu = PendingUpdate(upd, asyncio.get_running_loop().create_future(), delivered=accepted)
            st.pending_updates[upd.update_id] = pu
            if not accepted and st.workflow_task is None:
                txn = Txn(st, ctx.clock.now_ms())
                schedule_workflow_task(ctx, txn)
                await ctx.commit(txn)
    try:
        return await asyncio.wait_for(asyncio.shield(pu.future), timeout)
    except asyncio.TimeoutError as e:
        raise DeadlineExceeded(f"update {upd.name!r}: no outcome within {timeout:g} s (is a worker running?)") from e


def _update_response(done: pb.WorkflowExecutionUpdateCompletedEventAttributes, run_id: str
                     ) -> svc.UpdateWorkflowExecutionResponse:
    resp = svc.UpdateWorkflowExecutionResponse(run_id=run_id)
    if done.HasField("failure"):
        resp.failure.CopyFrom(done.failure)
    else:
        resp.success.CopyFrom(done.success)
    return resp


__all__ = ["update"]
