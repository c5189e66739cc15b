"""``describe().raw_description``: the describe response in the shape of Temporal's protobuf.

Temporal code reads ``(await handle.describe()).raw_description.pending_activities[0]
.activity_type.name`` or ``raw_description.workflow_execution_info.execution.run_id``.
Spindle's own wire messages are flatter (``activity_type`` is a string), so this
module builds read-only views with Temporal's field names from Spindle's
``DescribeWorkflowExecutionResponse``. Times are ``google.protobuf.Timestamp`` and
durations ``google.protobuf.Duration`` (``.ToDatetime()``, ``.ToTimedelta()``), unset
ones being the zero value, as in a protobuf message; payload fields (memo, search
attributes, heartbeat details, failures) are Spindle's messages, already decoded by
the client's codecs. Fields Spindle does not track are absent.
"""

from __future__ import annotations

import dataclasses
import enum

from collections.abc import Sequence

from google.protobuf.duration_pb2 import Duration
from google.protobuf.timestamp_pb2 import Timestamp

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.common._enums import WorkflowExecutionStatus

__all__ = [
    "PendingActivityState",
    "RawWorkflowDescription",
    "RawWorkflowExecutionInfo",
    "RawWorkflowExecutionConfig",
    "RawPendingActivityInfo",
    "RawPendingChildExecutionInfo",
    "RawWorkflowExecution",
    "RawTypeName",
    "RawTaskQueue",
    "raw_description",
    "raw_execution_info",
]


class PendingActivityState(enum.IntEnum):
    """Where a pending activity is (Temporal's ``PendingActivityState`` names and numbers)."""

    UNSPECIFIED = 0
    SCHEDULED = 1
    STARTED = 2
    CANCEL_REQUESTED = 3


@dataclasses.dataclass(frozen=True)
class RawTypeName:
    """A workflow or activity type (``.name``), as Temporal's ``WorkflowType`` / ``ActivityType``."""

    name: str


@dataclasses.dataclass(frozen=True)
class RawTaskQueue:
    """A task queue (``.name``), as Temporal's ``TaskQueue``."""

    name: str


@dataclasses.dataclass(frozen=True)
class RawWorkflowExecution:
    """A workflow id and run id, as Temporal's ``WorkflowExecution``."""

    workflow_id: str
    run_id: str


@dataclasses.dataclass(frozen=True)
class RawWorkflowExecutionInfo:
    """Temporal's ``WorkflowExecutionInfo`` fields that Spindle has."""

    execution: RawWorkflowExecution
    type: RawTypeName
    task_queue: str
    status: WorkflowExecutionStatus | int
    start_time: Timestamp
    close_time: Timestamp
    execution_time: Timestamp
    history_length: int
    memo: pb.Memo
    search_attributes: pb.SearchAttributes
    parent_execution: RawWorkflowExecution | None
    parent_namespace: str
    first_run_id: str


@dataclasses.dataclass(frozen=True)
class RawWorkflowExecutionConfig:
    """Temporal's ``WorkflowExecutionConfig`` fields that Spindle has."""

    task_queue: RawTaskQueue
    workflow_execution_timeout: Duration
    workflow_run_timeout: Duration


@dataclasses.dataclass(frozen=True)
class RawPendingActivityInfo:
    """Temporal's ``PendingActivityInfo`` fields that Spindle has (plus ``scheduled_event_id``)."""

    activity_id: str
    activity_type: RawTypeName
    state: PendingActivityState
    attempt: int
    heartbeat_details: pb.Payloads
    last_heartbeat_time: Timestamp
    last_started_time: Timestamp
    last_failure: pb.Failure | None
    scheduled_event_id: int


@dataclasses.dataclass(frozen=True)
class RawPendingChildExecutionInfo:
    """Temporal's ``PendingChildExecutionInfo`` fields that Spindle has."""

    workflow_id: str
    run_id: str
    workflow_type_name: str
    initiated_id: int


@dataclasses.dataclass(frozen=True)
class RawWorkflowDescription:
    """Temporal's ``DescribeWorkflowExecutionResponse`` shape.

    ``pending_workflow_task`` is a bool here (Temporal has a message that is set
    while a workflow task is pending). ``spindle_response`` is Spindle's own message.
    """

    workflow_execution_info: RawWorkflowExecutionInfo
    execution_config: RawWorkflowExecutionConfig
    pending_activities: Sequence[RawPendingActivityInfo]
    pending_children: Sequence[RawPendingChildExecutionInfo]
    pending_workflow_task: bool
    spindle_response: svc.DescribeWorkflowExecutionResponse = dataclasses.field(repr=False, compare=False)


def _ts(ms: int) -> Timestamp:
    t = Timestamp()
    if ms:
        t.FromMilliseconds(ms)
    return t


def _dur(ms: int) -> Duration:
    d = Duration()
    if ms:
        d.FromMilliseconds(ms)
    return d


def _status(v: int) -> WorkflowExecutionStatus | int:
    try:
        return WorkflowExecutionStatus(v)
    except ValueError:
        return v


def _activity_state(name: str) -> PendingActivityState:
    try:
        return PendingActivityState[name]
    except KeyError:
        return PendingActivityState.UNSPECIFIED


def raw_execution_info(info: svc.WorkflowExecutionInfo) -> RawWorkflowExecutionInfo:
    """Temporal's view of one execution's info (also what list rows have, as ``raw_info``)."""
    parent = None
    if info.HasField("parent_execution") and info.parent_execution.workflow_id:
        parent = RawWorkflowExecution(info.parent_execution.workflow_id, info.parent_execution.run_id)
    return RawWorkflowExecutionInfo(
        execution=RawWorkflowExecution(info.execution.workflow_id, info.execution.run_id),
        type=RawTypeName(info.workflow_type),
        task_queue=info.task_queue,
        status=_status(info.status),
        start_time=_ts(info.start_time_ms),
        close_time=_ts(info.close_time_ms),
        execution_time=_ts(info.execution_time_ms),
        history_length=info.history_length,
        memo=info.memo,
        search_attributes=info.search_attributes,
        parent_execution=parent,
        parent_namespace=info.parent_namespace,
        first_run_id=info.first_run_id,
    )


def raw_description(resp: svc.DescribeWorkflowExecutionResponse) -> RawWorkflowDescription:
    """Build the Temporal-shaped view of a (codec-decoded) describe response."""
    info = resp.workflow_execution_info
    return RawWorkflowDescription(
        workflow_execution_info=raw_execution_info(info),
        execution_config=RawWorkflowExecutionConfig(
            task_queue=RawTaskQueue(info.task_queue),
            workflow_execution_timeout=_dur(resp.execution_timeout_ms),
            workflow_run_timeout=_dur(resp.run_timeout_ms),
        ),
        pending_activities=tuple(
            RawPendingActivityInfo(
                activity_id=a.activity_id,
                activity_type=RawTypeName(a.activity_type),
                state=_activity_state(a.state),
                attempt=a.attempt,
                heartbeat_details=a.heartbeat_details,
                last_heartbeat_time=_ts(a.last_heartbeat_time_ms),
                last_started_time=_ts(a.last_started_time_ms),
                last_failure=a.last_failure if a.HasField("last_failure") else None,
                scheduled_event_id=a.scheduled_event_id,
            )
            for a in resp.pending_activities
        ),
        pending_children=tuple(
            RawPendingChildExecutionInfo(c.workflow_id, c.run_id, c.workflow_type, c.initiated_event_id)
            for c in resp.pending_children
        ),
        pending_workflow_task=resp.pending_workflow_task,
        spindle_response=resp,
    )
