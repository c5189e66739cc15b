"""Answering GetWorkflowExecutionHistory and DescribeWorkflowExecution from an archived history."""

from __future__ import annotations

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.controlplane._paging import token_position

from ._pages import fitting_prefix

__all__ = ["history_page", "describe_from_history", "CLOSE_STATUS"]

#: Closing event type -> the run's final status.
CLOSE_STATUS: dict[int, int] = {
    pb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED: pb.WORKFLOW_EXECUTION_STATUS_COMPLETED,
    pb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED: pb.WORKFLOW_EXECUTION_STATUS_FAILED,
    pb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED: pb.WORKFLOW_EXECUTION_STATUS_CANCELED,
    pb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED: pb.WORKFLOW_EXECUTION_STATUS_TERMINATED,
    pb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW: pb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW,
    pb.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT: pb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT,
}


def history_page(history: pb.History, req: svc.GetWorkflowExecutionHistoryRequest, *,
                 max_bytes: int = 4 * 1024 * 1024) -> svc.GetWorkflowExecutionHistoryResponse:
    """One page of an archived (closed, immutable) history, with the live API's page tokens.

    Raises:
        InvalidArgument: a malformed page token.
    """
    events = history.events
    if req.close_event_only:
        last = [events[-1]] if events else []
        return svc.GetWorkflowExecutionHistoryResponse(history=pb.History(events=last), archived=True)
    first = token_position(req.next_page_token, default=1, minimum=1)
    size = req.maximum_page_size or 1000
    page = events[first - 1:first - 1 + size]
    page = page[:fitting_prefix(page, max_bytes)]
    nxt = first + len(page)
    token = str(nxt).encode() if page and nxt <= len(events) else b""
    return svc.GetWorkflowExecutionHistoryResponse(history=pb.History(events=page), next_page_token=token, archived=True)


def describe_from_history(workflow_id: str, run_id: str, history: pb.History) -> svc.DescribeWorkflowExecutionResponse:
    """What DescribeWorkflowExecution says about a run that only exists in the archive.

    Status, times, type, queue, memo, search attributes (with upserts applied) and
    parent come from the events; an archived run has nothing pending.
    """
    resp = svc.DescribeWorkflowExecutionResponse(workflow_execution_info=svc.WorkflowExecutionInfo(
        execution=pb.WorkflowExecution(workflow_id=workflow_id, run_id=run_id), history_length=len(history.events)))
    info = resp.workflow_execution_info  # a live sub-message (a constructor argument would be copied)
    if not history.events:
        return resp
    first, last = history.events[0], history.events[-1]
    started = first.workflow_execution_started_event_attributes
    info.workflow_type = started.workflow_type
    info.task_queue = started.task_queue
    info.start_time_ms = first.event_time_ms
    info.execution_time_ms = first.event_time_ms + started.first_workflow_task_backoff_ms
    info.first_run_id = started.first_execution_run_id
    info.memo.CopyFrom(started.memo)
    info.search_attributes.CopyFrom(started.search_attributes)
    if started.HasField("parent"):
        info.parent_execution.CopyFrom(started.parent.execution)
        info.parent_namespace = started.parent.namespace
    for e in history.events:
        if e.event_type == pb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
            for k, v in e.upsert_workflow_search_attributes_event_attributes.search_attributes.indexed_fields.items():
                info.search_attributes.indexed_fields[k].CopyFrom(v)
    status = CLOSE_STATUS.get(last.event_type)
    if status is not None:
        info.status = status  # type: ignore[assignment]
        info.close_time_ms = last.event_time_ms
    resp.run_timeout_ms = started.run_timeout_ms
    resp.execution_timeout_ms = started.execution_timeout_ms
    return resp
