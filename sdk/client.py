"""Public client API: :class:`Client`, :class:`WorkflowHandle` and what they return.

Names match Temporal's ``temporalio.client`` where Spindle has the same thing, so
``from spindle.client import Client, WorkflowFailureError, WorkflowUpdateStage``
works as it does there.
"""

from spindle._api_keys import ApiKey
from spindle._client import (
    AsyncActivityHandle,
    Client,
    NamespaceDescription,
    PendingActivity,
    PendingChild,
    WorkflowExecutionDescription,
    WorkflowHandle,
)
from spindle._interceptor_client import (
    Interceptor,
    OutboundInterceptor,
    QueryWorkflowInput,
    SignalWorkflowInput,
    StartWorkflowInput,
    StartWorkflowUpdateInput,
)
from spindle._enums import WorkflowExecutionStatus, WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from spindle._raw_description import PendingActivityState
from spindle._schedule_client import ScheduleAsyncIterator, ScheduleHandle, ScheduleUpdate, ScheduleUpdateInput
from spindle._schedule_description import (
    ScheduleActionExecutionStartWorkflow,
    ScheduleActionResult,
    ScheduleDescription,
    ScheduleInfo,
    ScheduleListEntry,
    ScheduleListInfo,
)
from spindle._schedule_types import (
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleBackfill,
    ScheduleIntervalSpec,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleSpec,
    ScheduleState,
)
from spindle._update import WorkflowUpdateHandle, WorkflowUpdateStage
from spindle._schedule_wire import decoded_args
from spindle.exceptions import (
    RPCError,
    ScheduleAlreadyRunningError,
    WorkflowContinuedAsNewError,
    WorkflowFailureError,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
)

__all__ = [
    "ApiKey",
    "Client",
    "WorkflowHandle",
    "WorkflowExecutionDescription",
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
