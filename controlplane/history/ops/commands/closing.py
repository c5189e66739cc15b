"""Commands that close the run: COMPLETE_, FAIL_, CANCEL_ and CONTINUE_AS_NEW_WORKFLOW_EXECUTION.

Each writes the closing event, then ``close_run``'s bookkeeping (``ops.close``). A
completed or failed run of a cron chain names its successor, created in the same write
(``ops.cron``); a run that continues as new does too (``continue_as_new``). Each must be
the last command of its task (``CommandHandler.closes_run``).
"""

from __future__ import annotations

from spindle.api import messages_pb2 as pb
from spindle.controlplane._field_rules import workflow_task_timeout_ms

from ..._context import HistoryContext
from ..._mutable_state import MutableState
from ..._txn import Txn
from .. import cron
from .._run import build_run, new_run_id
from ..close import close_run
from .handler import CommandHandler, nothing_to_check, own_namespace


def apply_complete(ctx: HistoryContext, txn: Txn, a: pb.CompleteWorkflowExecutionCommandAttributes, wtc: int,
                   identity: str) -> None:
    """WorkflowExecutionCompleted and the close; a cron chain goes on at the next tick."""
    result = a.result
    nxt = cron.next_run_id(txn.state)
    txn.event(pb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, "workflow_execution_completed_event_attributes",
              pb.WorkflowExecutionCompletedEventAttributes(result=result, workflow_task_completed_event_id=wtc,
                                                           new_execution_run_id=nxt))
    close_run(ctx, txn)
    if nxt:
        cron.start_next(ctx, txn, nxt, result=result)


def apply_fail(ctx: HistoryContext, txn: Txn, a: pb.FailWorkflowExecutionCommandAttributes, wtc: int,
               identity: str) -> None:
    """WorkflowExecutionFailed and the close; a cron chain goes on at the next tick."""
    failure = a.failure
    nxt = cron.next_run_id(txn.state)
    txn.event(pb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED, "workflow_execution_failed_event_attributes",
              pb.WorkflowExecutionFailedEventAttributes(
                  failure=failure, retry_state=pb.RETRY_STATE_RETRY_POLICY_NOT_SET,
                  workflow_task_completed_event_id=wtc, new_execution_run_id=nxt))
    close_run(ctx, txn)
    if nxt:
        cron.start_next(ctx, txn, nxt, failure=failure)


def apply_cancel(ctx: HistoryContext, txn: Txn, a: pb.CancelWorkflowExecutionCommandAttributes, wtc: int,
                 identity: str) -> None:
    """WorkflowExecutionCanceled and the close (a cancelled cron chain ends)."""
    txn.event(pb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED, "workflow_execution_canceled_event_attributes",
              pb.WorkflowExecutionCanceledEventAttributes(details=a.details, workflow_task_completed_event_id=wtc))
    close_run(ctx, txn)


def continue_as_new(ctx: HistoryContext, txn: Txn, a: pb.ContinueAsNewWorkflowExecutionCommandAttributes, wtc: int,
                    identity: str = "") -> None:
    """Close the run as continued-as-new; its successor is created in the same transaction (``txn.new_run``)."""
    st = txn.state
    assert st.started is not None
    rid = new_run_id()
    old = st.started
    txn.event(pb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW, "workflow_execution_continued_as_new_event_attributes",
              pb.WorkflowExecutionContinuedAsNewEventAttributes(
                  new_execution_run_id=rid, workflow_type=a.workflow_type or old.workflow_type,
                  task_queue=a.task_queue or old.task_queue, input=a.input,
                  run_timeout_ms=a.run_timeout_ms or old.run_timeout_ms,
                  task_timeout_ms=workflow_task_timeout_ms(a.task_timeout_ms, old.task_timeout_ms),
                  workflow_task_completed_event_id=wtc,
                  backoff_start_interval_ms=a.backoff_start_interval_ms, memo=a.memo,
                  search_attributes=a.search_attributes, header=a.header))
    close_run(ctx, txn)
    attrs = pb.WorkflowExecutionStartedEventAttributes(
        workflow_type=a.workflow_type or old.workflow_type, task_queue=a.task_queue or old.task_queue, input=a.input,
        execution_timeout_ms=old.execution_timeout_ms, run_timeout_ms=a.run_timeout_ms or old.run_timeout_ms,
        task_timeout_ms=workflow_task_timeout_ms(a.task_timeout_ms, old.task_timeout_ms),
        continued_execution_run_id=st.run_id,
        first_execution_run_id=old.first_execution_run_id or st.run_id, original_execution_run_id=rid,
        memo=a.memo if a.HasField("memo") else old.memo,
        search_attributes=a.search_attributes if a.HasField("search_attributes") else old.search_attributes,
        identity=old.identity, attempt=1, execution_expiration_time_ms=old.execution_expiration_time_ms,
        first_workflow_task_backoff_ms=a.backoff_start_interval_ms, header=a.header,
        cron_schedule=old.cron_schedule,  # a cron run that continues as new stays in its chain
    )
    if old.HasField("parent"):
        attrs.parent.CopyFrom(old.parent)
    nst = MutableState(st.namespace_id, st.namespace, st.workflow_id, rid, st.shard_id)
    ntxn = build_run(ctx, nst, attrs, txn.now_ms, start_delay_ms=a.backoff_start_interval_ms)
    txn.new_run = (nst, ntxn.events, ntxn.transfer, ntxn.timers)
    txn.after_commit.extend(ntxn.after_commit)  # the new run's first workflow task counts in start admission


COMPLETE_WORKFLOW_EXECUTION = CommandHandler(
    pb.COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION, "complete_workflow_execution_command_attributes",
    check=nothing_to_check, apply=apply_complete, closes_run=True)
FAIL_WORKFLOW_EXECUTION = CommandHandler(
    pb.COMMAND_TYPE_FAIL_WORKFLOW_EXECUTION, "fail_workflow_execution_command_attributes",
    check=nothing_to_check, apply=apply_fail, closes_run=True)
CANCEL_WORKFLOW_EXECUTION = CommandHandler(
    pb.COMMAND_TYPE_CANCEL_WORKFLOW_EXECUTION, "cancel_workflow_execution_command_attributes",
    check=nothing_to_check, apply=apply_cancel, closes_run=True)
CONTINUE_AS_NEW_WORKFLOW_EXECUTION = CommandHandler(
    pb.COMMAND_TYPE_CONTINUE_AS_NEW_WORKFLOW_EXECUTION, "continue_as_new_workflow_execution_command_attributes",
    check=nothing_to_check, apply=continue_as_new, closes_run=True, search_attributes_namespace=own_namespace)

__all__ = ["CANCEL_WORKFLOW_EXECUTION", "COMPLETE_WORKFLOW_EXECUTION", "CONTINUE_AS_NEW_WORKFLOW_EXECUTION",
           "FAIL_WORKFLOW_EXECUTION", "apply_cancel", "apply_complete", "apply_fail", "continue_as_new"]
