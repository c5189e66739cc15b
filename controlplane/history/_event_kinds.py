"""What an event means for its run beyond its own fields: whether it closes the run, whether it wakes the workflow.

``MutableState.apply`` sets the run's status from ``CLOSE_STATUS``; ``Txn`` asks
``wakes_workflow`` of every event it adds, and a change that adds one schedules a
workflow task (the workflow code must see it).
"""

from __future__ import annotations

from spindle.api import messages_pb2 as pb

#: The events that close a run, and the status each leaves it in.
CLOSE_STATUS = {
    pb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED: pb.WORKFLOW_EXECUTION_STATUS_COMPLETED,
    pb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED: pb.WORKFLOW_EXECUTION_STATUS_FAILED,
    pb.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT: pb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT,
    pb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED: pb.WORKFLOW_EXECUTION_STATUS_CANCELED,
    pb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED: pb.WORKFLOW_EXECUTION_STATUS_TERMINATED,
    pb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW: pb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW,
}


#: Events after which the workflow must run a new workflow task.
WAKES_WORKFLOW = frozenset(
    {
        pb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED,
        pb.EVENT_TYPE_ACTIVITY_TASK_CANCELED,
        pb.EVENT_TYPE_TIMER_FIRED,
        pb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED,
        pb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED,
        pb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_FAILED,
        pb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED,
        pb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED,
        pb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_FAILED,
        pb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_CANCELED,
        pb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_TIMED_OUT,
        pb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_TERMINATED,
        pb.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_FAILED,
        pb.EVENT_TYPE_EXTERNAL_WORKFLOW_EXECUTION_SIGNALED,
        pb.EVENT_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_FAILED,
        pb.EVENT_TYPE_EXTERNAL_WORKFLOW_EXECUTION_CANCEL_REQUESTED,
    }
)


def wakes_workflow(e: pb.HistoryEvent) -> bool:
    """Whether ``e`` needs the workflow code to run (final activity failures do; retries don't)."""
    t = e.event_type
    if t in WAKES_WORKFLOW:
        return True
    if t == pb.EVENT_TYPE_ACTIVITY_TASK_FAILED:
        return e.activity_task_failed_event_attributes.retry_state != pb.RETRY_STATE_IN_PROGRESS
    if t == pb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
        return e.activity_task_timed_out_event_attributes.retry_state != pb.RETRY_STATE_IN_PROGRESS
    return False


__all__ = ["CLOSE_STATUS", "WAKES_WORKFLOW", "wakes_workflow"]
