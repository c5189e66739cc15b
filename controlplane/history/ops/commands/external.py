"""Commands that reach another workflow: SIGNAL_EXTERNAL_ and REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION.

Each writes an "initiated" event and a transfer task; the task's handler (``ops.child``)
reaches the target and records the outcome in this run.
"""

from __future__ import annotations

from spindle.api import messages_pb2 as pb

from ..._context import HistoryContext
from ..._tasks import T_CANCEL_EXTERNAL, T_SIGNAL_EXTERNAL, Task
from ..._txn import Txn
from .handler import CommandHandler, Validation


def check_signal(a: pb.SignalExternalWorkflowExecutionCommandAttributes, where: str, v: Validation) -> str | None:
    """A target workflow id and a signal name, both within the limit."""
    if not a.execution.workflow_id or not a.signal_name:
        return f"{where}: execution.workflow_id and signal_name are required"
    if len(a.execution.workflow_id) > v.max_id or len(a.signal_name) > v.max_id:
        return f"{where}: execution.workflow_id and signal_name are limited to {v.max_id} characters"
    return None


def apply_signal(ctx: HistoryContext, txn: Txn, a: pb.SignalExternalWorkflowExecutionCommandAttributes, wtc: int,
                 identity: str) -> None:
    """SignalExternalWorkflowExecutionInitiated and the ``T_SIGNAL_EXTERNAL`` task."""
    st = txn.state
    e = txn.event(
        pb.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED,
        "signal_external_workflow_execution_initiated_event_attributes",
        pb.SignalExternalWorkflowExecutionInitiatedEventAttributes(
            workflow_task_completed_event_id=wtc, namespace=a.namespace or st.namespace,
            workflow_execution=a.execution, signal_name=a.signal_name, input=a.input,
            child_workflow_only=a.child_workflow_only, header=a.header),
    )
    txn.transfer.append(Task(T_SIGNAL_EXTERNAL, st.namespace_id, st.workflow_id, st.run_id, e.event_id))


def check_cancel(a: pb.RequestCancelExternalWorkflowExecutionCommandAttributes, where: str,
                 v: Validation) -> str | None:
    """A target workflow id within the limit."""
    if not a.workflow_id:
        return f"{where}.workflow_id: required"
    if len(a.workflow_id) > v.max_id:
        return f"{where}.workflow_id: longer than {v.max_id} characters"
    return None


def apply_cancel(ctx: HistoryContext, txn: Txn, a: pb.RequestCancelExternalWorkflowExecutionCommandAttributes, wtc: int,
                 identity: str) -> None:
    """RequestCancelExternalWorkflowExecutionInitiated and the ``T_CANCEL_EXTERNAL`` task."""
    st = txn.state
    e = txn.event(
        pb.EVENT_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED,
        "request_cancel_external_workflow_execution_initiated_event_attributes",
        pb.RequestCancelExternalWorkflowExecutionInitiatedEventAttributes(
            workflow_task_completed_event_id=wtc, namespace=a.namespace or st.namespace,
            workflow_execution=pb.WorkflowExecution(workflow_id=a.workflow_id, run_id=a.run_id),
            child_workflow_only=a.child_workflow_only, reason=a.reason),
    )
    txn.transfer.append(Task(T_CANCEL_EXTERNAL, st.namespace_id, st.workflow_id, st.run_id, e.event_id))


SIGNAL_EXTERNAL_WORKFLOW_EXECUTION = CommandHandler(
    pb.COMMAND_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION, "signal_external_workflow_execution_command_attributes",
    check=check_signal, apply=apply_signal)
REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION = CommandHandler(
    pb.COMMAND_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION,
    "request_cancel_external_workflow_execution_command_attributes",
    check=check_cancel, apply=apply_cancel)

__all__ = ["REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION", "SIGNAL_EXTERNAL_WORKFLOW_EXECUTION", "apply_cancel",
           "apply_signal", "check_cancel", "check_signal"]
