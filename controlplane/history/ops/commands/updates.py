"""Update commands: ACCEPT_UPDATE, REJECT_UPDATE and COMPLETE_UPDATE (the request side is ``ops.update``).

An update delivered in a workflow task is accepted (recorded) or rejected (not recorded:
its caller gets the failure); an accepted one completes in the same or a later task,
and its caller gets the outcome after the commit.
"""

from __future__ import annotations

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc

from ..._context import HistoryContext
from ..._txn import Txn
from .handler import CommandHandler, Validation


def _settled(u: str, where: str, v: Validation) -> str | None:
    """Why update ``u`` can no longer be accepted or rejected: an earlier command of the task, or of the run, did."""
    earlier = v.update_commands.get(u)
    if earlier is not None:
        return f"{where}.update_id: update {u!r} is already {earlier[0]} by {earlier[1]}"
    st = v.state
    if u in st.completed_updates:
        return f"{where}.update_id: update {u!r} was already completed (by an earlier workflow task)"
    if u in st.accepted_updates:
        return f"{where}.update_id: update {u!r} was already accepted (by an earlier workflow task)"
    if u not in st.pending_updates:
        return f"{where}.update_id: no pending update {u!r}"
    return None


def check_accept(a: pb.AcceptUpdateCommandAttributes, where: str, v: Validation) -> str | None:
    """The update is pending: neither accepted (by the run or this task), nor rejected or completed by this task."""
    problem = _settled(a.update_id, where, v)
    if problem is None:
        v.accepted_updates.add(a.update_id)
        v.update_commands[a.update_id] = ("accepted", where)
    return problem


def apply_accept(ctx: HistoryContext, txn: Txn, a: pb.AcceptUpdateCommandAttributes, wtc: int, identity: str) -> None:
    """WorkflowExecutionUpdateAccepted, with the update's request."""
    pu = txn.state.pending_updates[a.update_id]
    txn.event(pb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED, "workflow_execution_update_accepted_event_attributes",
              pb.WorkflowExecutionUpdateAcceptedEventAttributes(
                  update_id=a.update_id, name=pu.request.name, input=pu.request.input, header=pu.request.header,
                  identity=pu.request.identity, workflow_task_completed_event_id=wtc))


def check_reject(a: pb.RejectUpdateCommandAttributes, where: str, v: Validation) -> str | None:
    """The update is pending and not yet accepted (a rejection is the other answer to its delivery)."""
    problem = _settled(a.update_id, where, v)
    if problem is None:
        v.update_commands[a.update_id] = ("rejected", where)
    return problem


def apply_reject(ctx: HistoryContext, txn: Txn, a: pb.RejectUpdateCommandAttributes, wtc: int, identity: str) -> None:
    """No event: the update stops pending and its caller gets the failure after the commit."""
    st = txn.state
    fut = st.pending_updates.pop(a.update_id).future
    resp = svc.UpdateWorkflowExecutionResponse(failure=a.failure, run_id=st.run_id)

    def answer() -> None:
        if not fut.done():
            fut.set_result(resp)

    txn.after_commit.append(answer)


def check_complete(a: pb.CompleteUpdateCommandAttributes, where: str, v: Validation) -> str | None:
    """The update was accepted (by the run, or by an earlier command of the task) and is not completed."""
    u = a.update_id
    earlier = v.update_commands.get(u)
    if earlier is not None and earlier[0] != "accepted":
        return f"{where}.update_id: update {u!r} is already {earlier[0]} by {earlier[1]}"
    if u in v.state.completed_updates:
        return f"{where}.update_id: update {u!r} was already completed (by an earlier workflow task)"
    if u not in v.accepted_updates:
        return f"{where}.update_id: update {u!r} was not accepted"
    v.update_commands[u] = ("completed", where)
    return None


def apply_complete(ctx: HistoryContext, txn: Txn, a: pb.CompleteUpdateCommandAttributes, wtc: int,
                   identity: str) -> None:
    """WorkflowExecutionUpdateCompleted (naming its Accepted event); a caller still waiting gets the outcome."""
    st = txn.state
    accepted_id = next((e.event_id for e in reversed(st.events)
                        if e.event_type == pb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED
                        and e.workflow_execution_update_accepted_event_attributes.update_id == a.update_id), 0)
    attrs = pb.WorkflowExecutionUpdateCompletedEventAttributes(update_id=a.update_id, accepted_event_id=accepted_id,
                                                              workflow_task_completed_event_id=wtc)
    if a.HasField("failure"):
        attrs.failure.CopyFrom(a.failure)
    else:
        attrs.success.CopyFrom(a.success)
    txn.event(pb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED, "workflow_execution_update_completed_event_attributes",
              attrs)
    pu = st.pending_updates.pop(a.update_id, None)
    if pu is not None:
        resp = svc.UpdateWorkflowExecutionResponse(run_id=st.run_id)
        if a.HasField("failure"):
            resp.failure.CopyFrom(a.failure)
        else:
            resp.success.CopyFrom(a.success)
        fut = pu.future

        def answer() -> None:
            if not fut.done():
                fut.set_result(resp)

        txn.after_commit.append(answer)


ACCEPT_UPDATE = CommandHandler(pb.COMMAND_TYPE_ACCEPT_UPDATE, "accept_update_command_attributes",
                               check=check_accept, apply=apply_accept)
REJECT_UPDATE = CommandHandler(pb.COMMAND_TYPE_REJECT_UPDATE, "reject_update_command_attributes",
                               check=check_reject, apply=apply_reject)
COMPLETE_UPDATE = CommandHandler(pb.COMMAND_TYPE_COMPLETE_UPDATE, "complete_update_command_attributes",
                                 check=check_complete, apply=apply_complete)

__all__ = ["ACCEPT_UPDATE", "COMPLETE_UPDATE", "REJECT_UPDATE", "apply_accept", "apply_complete", "apply_reject",
           "check_accept", "check_complete", "check_reject"]
