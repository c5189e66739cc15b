"""Public client API: :class:`Client`, :class:`WorkflowHandle` and what they return.

Names match Temporal's ``temporalio.client`` where Spindle has the same thing, so
``from spindle.client import Client, WorkflowFailureError, WorkflowUpdateStage``
works as it does there.
"""

from spindle._interceptors.client import (
    Interceptor,
    OutboundInterceptor,
    QueryWorkflowInput,
    SignalWorkflowInput,
    StartWorkflowInput,
    StartWorkflowUpdateInput,
)
from spindle.client._api_keys import ApiKey
from spindle.client._async_activity import AsyncActivityHandle
from spindle.client._batch import BatchOperationSummary
from spindle.client._client import Client
from spindle.client._erasure import BatchOperationDescription, BatchOperationState, ErasureCount, ErasureJob
from spindle.client._namespaces import NamespaceDescription
from spindle.client._raw_description import PendingActivityState
from spindle.client._reset import ResetType
from spindle.client._schedule import ScheduleAsyncIterator, ScheduleHandle, ScheduleUpdate, ScheduleUpdateInput
from spindle.client._schedule_description import (
    ScheduleActionExecutionStartWorkflow,
    ScheduleActionResult,
    ScheduleDescription,
    ScheduleInfo,
    ScheduleListEntry,
    ScheduleListInfo,
)
from spindle.client._schedule_types import (
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleBackfill,
    ScheduleIntervalSpec,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleSpec,
    ScheduleState,
)
from spindle.client._schedule_wire import decoded_args
from spindle.client._update import WorkflowUpdateHandle, WorkflowUpdateStage
from spindle.client._versioning import WorkflowExecutionVersioningInfo
from spindle.client._visibility import WorkflowExecutionAsyncIterator
from spindle.client._workflow_description import PendingActivity, PendingChild, WorkflowExecutionDescription
from spindle.client._workflow_handle import WorkflowHandle
from spindle.common._enums import WorkflowExecutionStatus, WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from spindle.common._history import History, HistoryEvent, WorkflowHistory
from spindle.exceptions import (
    RPCError,
    ScheduleAlreadyRunningError,
    WorkflowContinuedAsNewError,
    WorkflowFailureError,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
)

__all__ = [
    "BatchOperationSummary",
    "BatchOperationDescription",
    "BatchOperationState",
    "ErasureCount",
    "ErasureJob",
    "History",
    "HistoryEvent",
    "WorkflowHistory",
    "WorkflowExecutionAsyncIterator",
    "ResetType",
    "ApiKey",
    "Client",
    "WorkflowHandle",
    "WorkflowExecutionDescription",
    "WorkflowExecutionVersioningInfo",
    "PendingActivity",
    "PendingActivityState",
    "PendingChild",
    "NamespaceDescription",
    "AsyncActivityHandle",
    "WorkflowIDReusePolicy",
    "WorkflowIDConflictPolicy",
    "WorkflowExecutionStatus",
    "WorkflowUpdateHandle",
    "WorkflowUpdateStage",
    "WorkflowFailureError",
    "WorkflowUpdateFailedError",
    "WorkflowUpdateRPCTimeoutOrCancelledError",
    "WorkflowContinuedAsNewError",
    "RPCError",
    "Interceptor",
    "OutboundInterceptor",
    "StartWorkflowInput",
    "SignalWorkflowInput",
    "QueryWorkflowInput",
    "StartWorkflowUpdateInput",
    "Schedule",
    "ScheduleActionStartWorkflow",
    "ScheduleSpec",
    "ScheduleIntervalSpec",
    "SchedulePolicy",
    "ScheduleOverlapPolicy",
    "ScheduleState",
    "ScheduleBackfill",
    "ScheduleDescription",
    "ScheduleInfo",
    "ScheduleActionResult",
    "ScheduleListEntry",
    "ScheduleActionExecutionStartWorkflow",
    "ScheduleAsyncIterator",
    "ScheduleListInfo",
    "ScheduleHandle",
    "ScheduleUpdate",
    "ScheduleUpdateInput",
    "ScheduleAlreadyRunningError",
    "decoded_args",
]
