"""Wire enums, where Temporal code imports them from (``temporalio.api.enums.v1``).

Each is the protobuf enum wrapper of ``spindle.api.messages_pb2`` / ``service_pb2``:
``EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED``, ``EventType.Name(n)``, ``EventType.Value("...")``,
as with Temporal's generated enums; their values are Spindle's wire values.
"""

from spindle.api.messages_pb2 import (
    CommandType,
    EventType,
    ParentClosePolicy,
    ResetReapplyType,
    RetryState,
    ScheduleOverlapPolicy,
    TimeoutType,
    VersioningBehavior,
    WorkflowExecutionStatus,
    WorkflowIdConflictPolicy,
    WorkflowIdReusePolicy,
    WorkflowTaskFailedCause,
)
from spindle.api.service_pb2 import VersionDrainageStatus, WorkerDeploymentVersionStatus

__all__ = [
    "CommandType",
    "EventType",
    "ParentClosePolicy",
    "ResetReapplyType",
    "RetryState",
    "ScheduleOverlapPolicy",
    "TimeoutType",
    "VersionDrainageStatus",
    "VersioningBehavior",
    "WorkerDeploymentVersionStatus",
    "WorkflowExecutionStatus",
    "WorkflowIdConflictPolicy",
    "WorkflowIdReusePolicy",
    "WorkflowTaskFailedCause",
]
