from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class TimeoutType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TIMEOUT_TYPE_UNSPECIFIED: _ClassVar[TimeoutType]
    TIMEOUT_TYPE_START_TO_CLOSE: _ClassVar[TimeoutType]
    TIMEOUT_TYPE_SCHEDULE_TO_START: _ClassVar[TimeoutType]
    TIMEOUT_TYPE_SCHEDULE_TO_CLOSE: _ClassVar[TimeoutType]
    TIMEOUT_TYPE_HEARTBEAT: _ClassVar[TimeoutType]

class RetryState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RETRY_STATE_UNSPECIFIED: _ClassVar[RetryState]
    RETRY_STATE_IN_PROGRESS: _ClassVar[RetryState]
    RETRY_STATE_NON_RETRYABLE_FAILURE: _ClassVar[RetryState]
    RETRY_STATE_TIMEOUT: _ClassVar[RetryState]
    RETRY_STATE_MAXIMUM_ATTEMPTS_REACHED: _ClassVar[RetryState]
    RETRY_STATE_RETRY_POLICY_NOT_SET: _ClassVar[RetryState]
    RETRY_STATE_CANCEL_REQUESTED: _ClassVar[RetryState]

class ApplicationErrorCategory(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    APPLICATION_ERROR_CATEGORY_UNSPECIFIED: _ClassVar[ApplicationErrorCategory]
    APPLICATION_ERROR_CATEGORY_BENIGN: _ClassVar[ApplicationErrorCategory]

class WorkflowExecutionStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    WORKFLOW_EXECUTION_STATUS_UNSPECIFIED: _ClassVar[WorkflowExecutionStatus]
    WORKFLOW_EXECUTION_STATUS_RUNNING: _ClassVar[WorkflowExecutionStatus]
    WORKFLOW_EXECUTION_STATUS_COMPLETED: _ClassVar[WorkflowExecutionStatus]
    WORKFLOW_EXECUTION_STATUS_FAILED: _ClassVar[WorkflowExecutionStatus]
    WORKFLOW_EXECUTION_STATUS_CANCELED: _ClassVar[WorkflowExecutionStatus]
    WORKFLOW_EXECUTION_STATUS_TERMINATED: _ClassVar[WorkflowExecutionStatus]
    WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW: _ClassVar[WorkflowExecutionStatus]
    WORKFLOW_EXECUTION_STATUS_TIMED_OUT: _ClassVar[WorkflowExecutionStatus]

class WorkflowIdReusePolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    WORKFLOW_ID_REUSE_POLICY_UNSPECIFIED: _ClassVar[WorkflowIdReusePolicy]
    WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE: _ClassVar[WorkflowIdReusePolicy]
    WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY: _ClassVar[WorkflowIdReusePolicy]
    WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE: _ClassVar[WorkflowIdReusePolicy]

class WorkflowIdConflictPolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    WORKFLOW_ID_CONFLICT_POLICY_UNSPECIFIED: _ClassVar[WorkflowIdConflictPolicy]
    WORKFLOW_ID_CONFLICT_POLICY_FAIL: _ClassVar[WorkflowIdConflictPolicy]
    WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING: _ClassVar[WorkflowIdConflictPolicy]
    WORKFLOW_ID_CONFLICT_POLICY_TERMINATE_EXISTING: _ClassVar[WorkflowIdConflictPolicy]

class ParentClosePolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PARENT_CLOSE_POLICY_UNSPECIFIED: _ClassVar[ParentClosePolicy]
    PARENT_CLOSE_POLICY_TERMINATE: _ClassVar[ParentClosePolicy]
    PARENT_CLOSE_POLICY_ABANDON: _ClassVar[ParentClosePolicy]
    PARENT_CLOSE_POLICY_REQUEST_CANCEL: _ClassVar[ParentClosePolicy]

class WorkflowTaskFailedCause(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    WORKFLOW_TASK_FAILED_CAUSE_UNSPECIFIED: _ClassVar[WorkflowTaskFailedCause]
    WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_WORKER_UNHANDLED_FAILURE: _ClassVar[WorkflowTaskFailedCause]
    WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR: _ClassVar[WorkflowTaskFailedCause]
    WORKFLOW_TASK_FAILED_CAUSE_BAD_COMMAND: _ClassVar[WorkflowTaskFailedCause]
    WORKFLOW_TASK_FAILED_CAUSE_UNREGISTERED_WORKFLOW_TYPE: _ClassVar[WorkflowTaskFailedCause]
    WORKFLOW_TASK_FAILED_CAUSE_HISTORY_TOO_LARGE: _ClassVar[WorkflowTaskFailedCause]
    WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND: _ClassVar[WorkflowTaskFailedCause]
    WORKFLOW_TASK_FAILED_CAUSE_RESET_WORKFLOW: _ClassVar[WorkflowTaskFailedCause]

class EventType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    EVENT_TYPE_UNSPECIFIED: _ClassVar[EventType]
    EVENT_TYPE_WORKFLOW_EXECUTION_STARTED: _ClassVar[EventType]
    EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED: _ClassVar[EventType]
    EVENT_TYPE_WORKFLOW_EXECUTION_FAILED: _ClassVar[EventType]
    EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT: _ClassVar[EventType]
    EVENT_TYPE_WORKFLOW_TASK_SCHEDULED: _ClassVar[EventType]
    EVENT_TYPE_WORKFLOW_TASK_STARTED: _ClassVar[EventType]
    EVENT_TYPE_WORKFLOW_TASK_COMPLETED: _ClassVar[EventType]
    EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT: _ClassVar[EventType]
    EVENT_TYPE_WORKFLOW_TASK_FAILED: _ClassVar[EventType]
    EVENT_TYPE_ACTIVITY_TASK_SCHEDULED: _ClassVar[EventType]
    EVENT_TYPE_ACTIVITY_TASK_STARTED: _ClassVar[EventType]
    EVENT_TYPE_ACTIVITY_TASK_COMPLETED: _ClassVar[EventType]
    EVENT_TYPE_ACTIVITY_TASK_FAILED: _ClassVar[EventType]
    EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT: _ClassVar[EventType]
    EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED: _ClassVar[EventType]
    EVENT_TYPE_ACTIVITY_TASK_CANCELED: _ClassVar[EventType]
    EVENT_TYPE_TIMER_STARTED: _ClassVar[EventType]
    EVENT_TYPE_TIMER_FIRED: _ClassVar[EventType]
    EVENT_TYPE_TIMER_CANCELED: _ClassVar[EventType]
    EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED: _ClassVar[EventType]
    EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED: _ClassVar[EventType]
    EVENT_TYPE_MARKER_RECORDED: _ClassVar[EventType]
    EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED: _ClassVar[EventType]
    EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED: _ClassVar[EventType]
    EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW: _ClassVar[EventType]
    EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED: _ClassVar[EventType]
    EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_FAILED: _ClassVar[EventType]
    EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED: _ClassVar[EventType]
    EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED: _ClassVar[EventType]
    EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_FAILED: _ClassVar[EventType]
    EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_CANCELED: _ClassVar[EventType]
    EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_TIMED_OUT: _ClassVar[EventType]
    EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_TERMINATED: _ClassVar[EventType]
    EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED: _ClassVar[EventType]
    EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_FAILED: _ClassVar[EventType]
    EVENT_TYPE_EXTERNAL_WORKFLOW_EXECUTION_SIGNALED: _ClassVar[EventType]
    EVENT_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED: _ClassVar[EventType]
    EVENT_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_FAILED: _ClassVar[EventType]
    EVENT_TYPE_EXTERNAL_WORKFLOW_EXECUTION_CANCEL_REQUESTED: _ClassVar[EventType]
    EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES: _ClassVar[EventType]
    EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED: _ClassVar[EventType]
    EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED: _ClassVar[EventType]
    EVENT_TYPE_WORKFLOW_EXECUTION_OPTIONS_UPDATED: _ClassVar[EventType]
    EVENT_TYPE_NEXUS_OPERATION_SCHEDULED: _ClassVar[EventType]
    EVENT_TYPE_NEXUS_OPERATION_STARTED: _ClassVar[EventType]
    EVENT_TYPE_NEXUS_OPERATION_COMPLETED: _ClassVar[EventType]
    EVENT_TYPE_NEXUS_OPERATION_FAILED: _ClassVar[EventType]
    EVENT_TYPE_NEXUS_OPERATION_CANCELED: _ClassVar[EventType]
    EVENT_TYPE_NEXUS_OPERATION_TIMED_OUT: _ClassVar[EventType]
    EVENT_TYPE_NEXUS_OPERATION_CANCEL_REQUESTED: _ClassVar[EventType]

class VersioningBehavior(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    VERSIONING_BEHAVIOR_UNSPECIFIED: _ClassVar[VersioningBehavior]
    VERSIONING_BEHAVIOR_PINNED: _ClassVar[VersioningBehavior]
    VERSIONING_BEHAVIOR_AUTO_UPGRADE: _ClassVar[VersioningBehavior]

class CommandType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    COMMAND_TYPE_UNSPECIFIED: _ClassVar[CommandType]
    COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK: _ClassVar[CommandType]
    COMMAND_TYPE_REQUEST_CANCEL_ACTIVITY_TASK: _ClassVar[CommandType]
    COMMAND_TYPE_START_TIMER: _ClassVar[CommandType]
    COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION: _ClassVar[CommandType]
    COMMAND_TYPE_FAIL_WORKFLOW_EXECUTION: _ClassVar[CommandType]
    COMMAND_TYPE_CANCEL_TIMER: _ClassVar[CommandType]
    COMMAND_TYPE_CANCEL_WORKFLOW_EXECUTION: _ClassVar[CommandType]
    COMMAND_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION: _ClassVar[CommandType]
    COMMAND_TYPE_RECORD_MARKER: _ClassVar[CommandType]
    COMMAND_TYPE_CONTINUE_AS_NEW_WORKFLOW_EXECUTION: _ClassVar[CommandType]
    COMMAND_TYPE_START_CHILD_WORKFLOW_EXECUTION: _ClassVar[CommandType]
    COMMAND_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION: _ClassVar[CommandType]
    COMMAND_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES: _ClassVar[CommandType]
    COMMAND_TYPE_ACCEPT_UPDATE: _ClassVar[CommandType]
    COMMAND_TYPE_COMPLETE_UPDATE: _ClassVar[CommandType]
    COMMAND_TYPE_REJECT_UPDATE: _ClassVar[CommandType]
    COMMAND_TYPE_SCHEDULE_NEXUS_OPERATION: _ClassVar[CommandType]
    COMMAND_TYPE_REQUEST_CANCEL_NEXUS_OPERATION: _ClassVar[CommandType]

class ResetReapplyType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RESET_REAPPLY_TYPE_UNSPECIFIED: _ClassVar[ResetReapplyType]
    RESET_REAPPLY_TYPE_SIGNAL: _ClassVar[ResetReapplyType]
    RESET_REAPPLY_TYPE_NONE: _ClassVar[ResetReapplyType]

class ScheduleOverlapPolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SCHEDULE_OVERLAP_POLICY_UNSPECIFIED: _ClassVar[ScheduleOverlapPolicy]
    SCHEDULE_OVERLAP_POLICY_SKIP: _ClassVar[ScheduleOverlapPolicy]
    SCHEDULE_OVERLAP_POLICY_BUFFER_ONE: _ClassVar[ScheduleOverlapPolicy]
    SCHEDULE_OVERLAP_POLICY_BUFFER_ALL: _ClassVar[ScheduleOverlapPolicy]
    SCHEDULE_OVERLAP_POLICY_CANCEL_OTHER: _ClassVar[ScheduleOverlapPolicy]
    SCHEDULE_OVERLAP_POLICY_TERMINATE_OTHER: _ClassVar[ScheduleOverlapPolicy]
    SCHEDULE_OVERLAP_POLICY_ALLOW_ALL: _ClassVar[ScheduleOverlapPolicy]

class NexusHandlerErrorRetryBehavior(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    NEXUS_HANDLER_ERROR_RETRY_BEHAVIOR_UNSPECIFIED: _ClassVar[NexusHandlerErrorRetryBehavior]
    NEXUS_HANDLER_ERROR_RETRY_BEHAVIOR_RETRYABLE: _ClassVar[NexusHandlerErrorRetryBehavior]
    NEXUS_HANDLER_ERROR_RETRY_BEHAVIOR_NON_RETRYABLE: _ClassVar[NexusHandlerErrorRetryBehavior]
TIMEOUT_TYPE_UNSPECIFIED: TimeoutType
TIMEOUT_TYPE_START_TO_CLOSE: TimeoutType
TIMEOUT_TYPE_SCHEDULE_TO_START: TimeoutType
TIMEOUT_TYPE_SCHEDULE_TO_CLOSE: TimeoutType
TIMEOUT_TYPE_HEARTBEAT: TimeoutType
RETRY_STATE_UNSPECIFIED: RetryState
RETRY_STATE_IN_PROGRESS: RetryState
RETRY_STATE_NON_RETRYABLE_FAILURE: RetryState
RETRY_STATE_TIMEOUT: RetryState
RETRY_STATE_MAXIMUM_ATTEMPTS_REACHED: RetryState
RETRY_STATE_RETRY_POLICY_NOT_SET: RetryState
RETRY_STATE_CANCEL_REQUESTED: RetryState
APPLICATION_ERROR_CATEGORY_UNSPECIFIED: ApplicationErrorCategory
APPLICATION_ERROR_CATEGORY_BENIGN: ApplicationErrorCategory
WORKFLOW_EXECUTION_STATUS_UNSPECIFIED: WorkflowExecutionStatus
WORKFLOW_EXECUTION_STATUS_RUNNING: WorkflowExecutionStatus
WORKFLOW_EXECUTION_STATUS_COMPLETED: WorkflowExecutionStatus
WORKFLOW_EXECUTION_STATUS_FAILED: WorkflowExecutionStatus
WORKFLOW_EXECUTION_STATUS_CANCELED: WorkflowExecutionStatus
WORKFLOW_EXECUTION_STATUS_TERMINATED: WorkflowExecutionStatus
WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW: WorkflowExecutionStatus
WORKFLOW_EXECUTION_STATUS_TIMED_OUT: WorkflowExecutionStatus
WORKFLOW_ID_REUSE_POLICY_UNSPECIFIED: WorkflowIdReusePolicy
WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE: WorkflowIdReusePolicy
WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY: WorkflowIdReusePolicy
WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE: WorkflowIdReusePolicy
WORKFLOW_ID_CONFLICT_POLICY_UNSPECIFIED: WorkflowIdConflictPolicy
WORKFLOW_ID_CONFLICT_POLICY_FAIL: WorkflowIdConflictPolicy
WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING: WorkflowIdConflictPolicy
WORKFLOW_ID_CONFLICT_POLICY_TERMINATE_EXISTING: WorkflowIdConflictPolicy
PARENT_CLOSE_POLICY_UNSPECIFIED: ParentClosePolicy
PARENT_CLOSE_POLICY_TERMINATE: ParentClosePolicy
PARENT_CLOSE_POLICY_ABANDON: ParentClosePolicy
PARENT_CLOSE_POLICY_REQUEST_CANCEL: ParentClosePolicy
WORKFLOW_TASK_FAILED_CAUSE_UNSPECIFIED: WorkflowTaskFailedCause
WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_WORKER_UNHANDLED_FAILURE: WorkflowTaskFailedCause
WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR: WorkflowTaskFailedCause
WORKFLOW_TASK_FAILED_CAUSE_BAD_COMMAND: WorkflowTaskFailedCause
WORKFLOW_TASK_FAILED_CAUSE_UNREGISTERED_WORKFLOW_TYPE: WorkflowTaskFailedCause
WORKFLOW_TASK_FAILED_CAUSE_HISTORY_TOO_LARGE: WorkflowTaskFailedCause
WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND: WorkflowTaskFailedCause
WORKFLOW_TASK_FAILED_CAUSE_RESET_WORKFLOW: WorkflowTaskFailedCause
EVENT_TYPE_UNSPECIFIED: EventType
EVENT_TYPE_WORKFLOW_EXECUTION_STARTED: EventType
EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED: EventType
EVENT_TYPE_WORKFLOW_EXECUTION_FAILED: EventType
EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT: EventType
EVENT_TYPE_WORKFLOW_TASK_SCHEDULED: EventType
EVENT_TYPE_WORKFLOW_TASK_STARTED: EventType
EVENT_TYPE_WORKFLOW_TASK_COMPLETED: EventType
EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT: EventType
EVENT_TYPE_WORKFLOW_TASK_FAILED: EventType
EVENT_TYPE_ACTIVITY_TASK_SCHEDULED: EventType
EVENT_TYPE_ACTIVITY_TASK_STARTED: EventType
EVENT_TYPE_ACTIVITY_TASK_COMPLETED: EventType
EVENT_TYPE_ACTIVITY_TASK_FAILED: EventType
EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT: EventType
EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED: EventType
EVENT_TYPE_ACTIVITY_TASK_CANCELED: EventType
EVENT_TYPE_TIMER_STARTED: EventType
EVENT_TYPE_TIMER_FIRED: EventType
EVENT_TYPE_TIMER_CANCELED: EventType
EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED: EventType
EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED: EventType
EVENT_TYPE_MARKER_RECORDED: EventType
EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED: EventType
EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED: EventType
EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW: EventType
EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED: EventType
EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_FAILED: EventType
EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED: EventType
EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED: EventType
EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_FAILED: EventType
EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_CANCELED: EventType
EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_TIMED_OUT: EventType
EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_TERMINATED: EventType
EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED: EventType
EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_FAILED: EventType
EVENT_TYPE_EXTERNAL_WORKFLOW_EXECUTION_SIGNALED: EventType
EVENT_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED: EventType
EVENT_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_FAILED: EventType
EVENT_TYPE_EXTERNAL_WORKFLOW_EXECUTION_CANCEL_REQUESTED: EventType
EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES: EventType
EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED: EventType
EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED: EventType
EVENT_TYPE_WORKFLOW_EXECUTION_OPTIONS_UPDATED: EventType
EVENT_TYPE_NEXUS_OPERATION_SCHEDULED: EventType
EVENT_TYPE_NEXUS_OPERATION_STARTED: EventType
EVENT_TYPE_NEXUS_OPERATION_COMPLETED: EventType
EVENT_TYPE_NEXUS_OPERATION_FAILED: EventType
EVENT_TYPE_NEXUS_OPERATION_CANCELED: EventType
EVENT_TYPE_NEXUS_OPERATION_TIMED_OUT: EventType
EVENT_TYPE_NEXUS_OPERATION_CANCEL_REQUESTED: EventType
VERSIONING_BEHAVIOR_UNSPECIFIED: VersioningBehavior
VERSIONING_BEHAVIOR_PINNED: VersioningBehavior
VERSIONING_BEHAVIOR_AUTO_UPGRADE: VersioningBehavior
COMMAND_TYPE_UNSPECIFIED: CommandType
COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK: CommandType
COMMAND_TYPE_REQUEST_CANCEL_ACTIVITY_TASK: CommandType
COMMAND_TYPE_START_TIMER: CommandType
COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION: CommandType
COMMAND_TYPE_FAIL_WORKFLOW_EXECUTION: CommandType
COMMAND_TYPE_CANCEL_TIMER: CommandType
COMMAND_TYPE_CANCEL_WORKFLOW_EXECUTION: CommandType
COMMAND_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION: CommandType
COMMAND_TYPE_RECORD_MARKER: CommandType
COMMAND_TYPE_CONTINUE_AS_NEW_WORKFLOW_EXECUTION: CommandType
COMMAND_TYPE_START_CHILD_WORKFLOW_EXECUTION: CommandType
COMMAND_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION: CommandType
COMMAND_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES: CommandType
COMMAND_TYPE_ACCEPT_UPDATE: CommandType
COMMAND_TYPE_COMPLETE_UPDATE: CommandType
COMMAND_TYPE_REJECT_UPDATE: CommandType
COMMAND_TYPE_SCHEDULE_NEXUS_OPERATION: CommandType
COMMAND_TYPE_REQUEST_CANCEL_NEXUS_OPERATION: CommandType
RESET_REAPPLY_TYPE_UNSPECIFIED: ResetReapplyType
RESET_REAPPLY_TYPE_SIGNAL: ResetReapplyType
RESET_REAPPLY_TYPE_NONE: ResetReapplyType
SCHEDULE_OVERLAP_POLICY_UNSPECIFIED: ScheduleOverlapPolicy
SCHEDULE_OVERLAP_POLICY_SKIP: ScheduleOverlapPolicy
SCHEDULE_OVERLAP_POLICY_BUFFER_ONE: ScheduleOverlapPolicy
SCHEDULE_OVERLAP_POLICY_BUFFER_ALL: ScheduleOverlapPolicy
SCHEDULE_OVERLAP_POLICY_CANCEL_OTHER: ScheduleOverlapPolicy
SCHEDULE_OVERLAP_POLICY_TERMINATE_OTHER: ScheduleOverlapPolicy
SCHEDULE_OVERLAP_POLICY_ALLOW_ALL: ScheduleOverlapPolicy
NEXUS_HANDLER_ERROR_RETRY_BEHAVIOR_UNSPECIFIED: NexusHandlerErrorRetryBehavior
NEXUS_HANDLER_ERROR_RETRY_BEHAVIOR_RETRYABLE: NexusHandlerErrorRetryBehavior
NEXUS_HANDLER_ERROR_RETRY_BEHAVIOR_NON_RETRYABLE: NexusHandlerErrorRetryBehavior

class Payload(_message.Message):
    __slots__ = ("metadata", "data")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: bytes
        def __init__(self, key: _Optional[str] = ..., value: _Optional[bytes] = ...) -> None: ...
    METADATA_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    metadata: _containers.ScalarMap[str, bytes]
    data: bytes
    def __init__(self, metadata: _Optional[_Mapping[str, bytes]] = ..., data: _Optional[bytes] = ...) -> None: ...

class Payloads(_message.Message):
    __slots__ = ("payloads",)
    PAYLOADS_FIELD_NUMBER: _ClassVar[int]
    payloads: _containers.RepeatedCompositeFieldContainer[Payload]
    def __init__(self, payloads: _Optional[_Iterable[_Union[Payload, _Mapping]]] = ...) -> None: ...

class WorkflowExecution(_message.Message):
    __slots__ = ("workflow_id", "run_id")
    WORKFLOW_ID_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    workflow_id: str
    run_id: str
    def __init__(self, workflow_id: _Optional[str] = ..., run_id: _Optional[str] = ...) -> None: ...

class RetryPolicy(_message.Message):
    __slots__ = ("initial_interval_ms", "backoff_coefficient", "maximum_interval_ms", "maximum_attempts", "non_retryable_error_types")
    INITIAL_INTERVAL_MS_FIELD_NUMBER: _ClassVar[int]
    BACKOFF_COEFFICIENT_FIELD_NUMBER: _ClassVar[int]
    MAXIMUM_INTERVAL_MS_FIELD_NUMBER: _ClassVar[int]
    MAXIMUM_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    NON_RETRYABLE_ERROR_TYPES_FIELD_NUMBER: _ClassVar[int]
    initial_interval_ms: int
    backoff_coefficient: float
    maximum_interval_ms: int
    maximum_attempts: int
    non_retryable_error_types: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, initial_interval_ms: _Optional[int] = ..., backoff_coefficient: _Optional[float] = ..., maximum_interval_ms: _Optional[int] = ..., maximum_attempts: _Optional[int] = ..., non_retryable_error_types: _Optional[_Iterable[str]] = ...) -> None: ...

class ApplicationFailureInfo(_message.Message):
    __slots__ = ("type", "non_retryable", "details", "next_retry_delay_ms", "category")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    NON_RETRYABLE_FIELD_NUMBER: _ClassVar[int]
    DETAILS_FIELD_NUMBER: _ClassVar[int]
    NEXT_RETRY_DELAY_MS_FIELD_NUMBER: _ClassVar[int]
    CATEGORY_FIELD_NUMBER: _ClassVar[int]
    type: str
    non_retryable: bool
    details: Payloads
    next_retry_delay_ms: int
    category: ApplicationErrorCategory
    def __init__(self, type: _Optional[str] = ..., non_retryable: _Optional[bool] = ..., details: _Optional[_Union[Payloads, _Mapping]] = ..., next_retry_delay_ms: _Optional[int] = ..., category: _Optional[_Union[ApplicationErrorCategory, str]] = ...) -> None: ...

class TimeoutFailureInfo(_message.Message):
    __slots__ = ("timeout_type", "last_heartbeat_details")
    TIMEOUT_TYPE_FIELD_NUMBER: _ClassVar[int]
    LAST_HEARTBEAT_DETAILS_FIELD_NUMBER: _ClassVar[int]
    timeout_type: TimeoutType
    last_heartbeat_details: Payloads
    def __init__(self, timeout_type: _Optional[_Union[TimeoutType, str]] = ..., last_heartbeat_details: _Optional[_Union[Payloads, _Mapping]] = ...) -> None: ...

class CanceledFailureInfo(_message.Message):
    __slots__ = ("details",)
    DETAILS_FIELD_NUMBER: _ClassVar[int]
    details: Payloads
    def __init__(self, details: _Optional[_Union[Payloads, _Mapping]] = ...) -> None: ...

class TerminatedFailureInfo(_message.Message):
    __slots__ = ("reason",)
    REASON_FIELD_NUMBER: _ClassVar[int]
    reason: str
    def __init__(self, reason: _Optional[str] = ...) -> None: ...

class ServerFailureInfo(_message.Message):
    __slots__ = ("non_retryable",)
    NON_RETRYABLE_FIELD_NUMBER: _ClassVar[int]
    non_retryable: bool
    def __init__(self, non_retryable: _Optional[bool] = ...) -> None: ...

class ActivityFailureInfo(_message.Message):
    __slots__ = ("scheduled_event_id", "started_event_id", "activity_type", "activity_id", "retry_state")
    SCHEDULED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    STARTED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    ACTIVITY_TYPE_FIELD_NUMBER: _ClassVar[int]
    ACTIVITY_ID_FIELD_NUMBER: _ClassVar[int]
    RETRY_STATE_FIELD_NUMBER: _ClassVar[int]
    scheduled_event_id: int
    started_event_id: int
    activity_type: str
    activity_id: str
    retry_state: RetryState
    def __init__(self, scheduled_event_id: _Optional[int] = ..., started_event_id: _Optional[int] = ..., activity_type: _Optional[str] = ..., activity_id: _Optional[str] = ..., retry_state: _Optional[_Union[RetryState, str]] = ...) -> None: ...

class ChildWorkflowExecutionFailureInfo(_message.Message):
    __slots__ = ("namespace", "workflow_execution", "workflow_type", "initiated_event_id", "started_event_id", "retry_state")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_EXECUTION_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TYPE_FIELD_NUMBER: _ClassVar[int]
    INITIATED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    STARTED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    RETRY_STATE_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    workflow_execution: WorkflowExecution
    workflow_type: str
    initiated_event_id: int
    started_event_id: int
    retry_state: RetryState
    def __init__(self, namespace: _Optional[str] = ..., workflow_execution: _Optional[_Union[WorkflowExecution, _Mapping]] = ..., workflow_type: _Optional[str] = ..., initiated_event_id: _Optional[int] = ..., started_event_id: _Optional[int] = ..., retry_state: _Optional[_Union[RetryState, str]] = ...) -> None: ...

class Failure(_message.Message):
    __slots__ = ("message", "source", "stack_trace", "cause", "application_failure_info", "timeout_failure_info", "canceled_failure_info", "terminated_failure_info", "server_failure_info", "activity_failure_info", "child_workflow_execution_failure_info", "nexus_operation_execution_failure_info", "nexus_handler_failure_info", "encoded_attributes")
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    STACK_TRACE_FIELD_NUMBER: _ClassVar[int]
    CAUSE_FIELD_NUMBER: _ClassVar[int]
    APPLICATION_FAILURE_INFO_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_FAILURE_INFO_FIELD_NUMBER: _ClassVar[int]
    CANCELED_FAILURE_INFO_FIELD_NUMBER: _ClassVar[int]
    TERMINATED_FAILURE_INFO_FIELD_NUMBER: _ClassVar[int]
    SERVER_FAILURE_INFO_FIELD_NUMBER: _ClassVar[int]
    ACTIVITY_FAILURE_INFO_FIELD_NUMBER: _ClassVar[int]
    CHILD_WORKFLOW_EXECUTION_FAILURE_INFO_FIELD_NUMBER: _ClassVar[int]
    NEXUS_OPERATION_EXECUTION_FAILURE_INFO_FIELD_NUMBER: _ClassVar[int]
    NEXUS_HANDLER_FAILURE_INFO_FIELD_NUMBER: _ClassVar[int]
    ENCODED_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    message: str
    source: str
    stack_trace: str
    cause: Failure
    application_failure_info: ApplicationFailureInfo
    timeout_failure_info: TimeoutFailureInfo
    canceled_failure_info: CanceledFailureInfo
    terminated_failure_info: TerminatedFailureInfo
    server_failure_info: ServerFailureInfo
    activity_failure_info: ActivityFailureInfo
    child_workflow_execution_failure_info: ChildWorkflowExecutionFailureInfo
    nexus_operation_execution_failure_info: NexusOperationFailureInfo
    nexus_handler_failure_info: NexusHandlerFailureInfo
    encoded_attributes: Payload
    def __init__(self, message: _Optional[str] = ..., source: _Optional[str] = ..., stack_trace: _Optional[str] = ..., cause: _Optional[_Union[Failure, _Mapping]] = ..., application_failure_info: _Optional[_Union[ApplicationFailureInfo, _Mapping]] = ..., timeout_failure_info: _Optional[_Union[TimeoutFailureInfo, _Mapping]] = ..., canceled_failure_info: _Optional[_Union[CanceledFailureInfo, _Mapping]] = ..., terminated_failure_info: _Optional[_Union[TerminatedFailureInfo, _Mapping]] = ..., server_failure_info: _Optional[_Union[ServerFailureInfo, _Mapping]] = ..., activity_failure_info: _Optional[_Union[ActivityFailureInfo, _Mapping]] = ..., child_workflow_execution_failure_info: _Optional[_Union[ChildWorkflowExecutionFailureInfo, _Mapping]] = ..., nexus_operation_execution_failure_info: _Optional[_Union[NexusOperationFailureInfo, _Mapping]] = ..., nexus_handler_failure_info: _Optional[_Union[NexusHandlerFailureInfo, _Mapping]] = ..., encoded_attributes: _Optional[_Union[Payload, _Mapping]] = ...) -> None: ...

class Memo(_message.Message):
    __slots__ = ("fields",)
    class FieldsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: Payload
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[Payload, _Mapping]] = ...) -> None: ...
    FIELDS_FIELD_NUMBER: _ClassVar[int]
    fields: _containers.MessageMap[str, Payload]
    def __init__(self, fields: _Optional[_Mapping[str, Payload]] = ...) -> None: ...

class SearchAttributes(_message.Message):
    __slots__ = ("indexed_fields",)
    class IndexedFieldsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: Payload
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[Payload, _Mapping]] = ...) -> None: ...
    INDEXED_FIELDS_FIELD_NUMBER: _ClassVar[int]
    indexed_fields: _containers.MessageMap[str, Payload]
    def __init__(self, indexed_fields: _Optional[_Mapping[str, Payload]] = ...) -> None: ...

class Header(_message.Message):
    __slots__ = ("fields",)
    class FieldsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: Payload
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[Payload, _Mapping]] = ...) -> None: ...
    FIELDS_FIELD_NUMBER: _ClassVar[int]
    fields: _containers.MessageMap[str, Payload]
    def __init__(self, fields: _Optional[_Mapping[str, Payload]] = ...) -> None: ...

class ParentExecutionInfo(_message.Message):
    __slots__ = ("namespace", "execution", "initiated_event_id")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_FIELD_NUMBER: _ClassVar[int]
    INITIATED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    execution: WorkflowExecution
    initiated_event_id: int
    def __init__(self, namespace: _Optional[str] = ..., execution: _Optional[_Union[WorkflowExecution, _Mapping]] = ..., initiated_event_id: _Optional[int] = ...) -> None: ...

class WorkflowExecutionStartedEventAttributes(_message.Message):
    __slots__ = ("workflow_type", "task_queue", "input", "execution_timeout_ms", "run_timeout_ms", "task_timeout_ms", "parent", "continued_execution_run_id", "first_execution_run_id", "original_execution_run_id", "memo", "search_attributes", "identity", "attempt", "execution_expiration_time_ms", "first_workflow_task_backoff_ms", "header", "continued_failure", "last_completion_result", "cron_schedule")
    WORKFLOW_TYPE_FIELD_NUMBER: _ClassVar[int]
    TASK_QUEUE_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    RUN_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    TASK_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    PARENT_FIELD_NUMBER: _ClassVar[int]
    CONTINUED_EXECUTION_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    FIRST_EXECUTION_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    ORIGINAL_EXECUTION_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    MEMO_FIELD_NUMBER: _ClassVar[int]
    SEARCH_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_EXPIRATION_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    FIRST_WORKFLOW_TASK_BACKOFF_MS_FIELD_NUMBER: _ClassVar[int]
    HEADER_FIELD_NUMBER: _ClassVar[int]
    CONTINUED_FAILURE_FIELD_NUMBER: _ClassVar[int]
    LAST_COMPLETION_RESULT_FIELD_NUMBER: _ClassVar[int]
    CRON_SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    workflow_type: str
    task_queue: str
    input: Payloads
    execution_timeout_ms: int
    run_timeout_ms: int
    task_timeout_ms: int
    parent: ParentExecutionInfo
    continued_execution_run_id: str
    first_execution_run_id: str
    original_execution_run_id: str
    memo: Memo
    search_attributes: SearchAttributes
    identity: str
    attempt: int
    execution_expiration_time_ms: int
    first_workflow_task_backoff_ms: int
    header: Header
    continued_failure: Failure
    last_completion_result: Payloads
    cron_schedule: str
    def __init__(self, workflow_type: _Optional[str] = ..., task_queue: _Optional[str] = ..., input: _Optional[_Union[Payloads, _Mapping]] = ..., execution_timeout_ms: _Optional[int] = ..., run_timeout_ms: _Optional[int] = ..., task_timeout_ms: _Optional[int] = ..., parent: _Optional[_Union[ParentExecutionInfo, _Mapping]] = ..., continued_execution_run_id: _Optional[str] = ..., first_execution_run_id: _Optional[str] = ..., original_execution_run_id: _Optional[str] = ..., memo: _Optional[_Union[Memo, _Mapping]] = ..., search_attributes: _Optional[_Union[SearchAttributes, _Mapping]] = ..., identity: _Optional[str] = ..., attempt: _Optional[int] = ..., execution_expiration_time_ms: _Optional[int] = ..., first_workflow_task_backoff_ms: _Optional[int] = ..., header: _Optional[_Union[Header, _Mapping]] = ..., continued_failure: _Optional[_Union[Failure, _Mapping]] = ..., last_completion_result: _Optional[_Union[Payloads, _Mapping]] = ..., cron_schedule: _Optional[str] = ...) -> None: ...

class WorkflowExecutionCompletedEventAttributes(_message.Message):
    __slots__ = ("result", "workflow_task_completed_event_id", "new_execution_run_id")
    RESULT_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TASK_COMPLETED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    NEW_EXECUTION_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    result: Payloads
    workflow_task_completed_event_id: int
    new_execution_run_id: str
    def __init__(self, result: _Optional[_Union[Payloads, _Mapping]] = ..., workflow_task_completed_event_id: _Optional[int] = ..., new_execution_run_id: _Optional[str] = ...) -> None: ...

class WorkflowExecutionFailedEventAttributes(_message.Message):
    __slots__ = ("failure", "retry_state", "workflow_task_completed_event_id", "new_execution_run_id")
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    RETRY_STATE_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TASK_COMPLETED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    NEW_EXECUTION_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    failure: Failure
    retry_state: RetryState
    workflow_task_completed_event_id: int
    new_execution_run_id: str
    def __init__(self, failure: _Optional[_Union[Failure, _Mapping]] = ..., retry_state: _Optional[_Union[RetryState, str]] = ..., workflow_task_completed_event_id: _Optional[int] = ..., new_execution_run_id: _Optional[str] = ...) -> None: ...

class WorkflowExecutionTimedOutEventAttributes(_message.Message):
    __slots__ = ("retry_state",)
    RETRY_STATE_FIELD_NUMBER: _ClassVar[int]
    retry_state: RetryState
    def __init__(self, retry_state: _Optional[_Union[RetryState, str]] = ...) -> None: ...

class WorkflowExecutionCanceledEventAttributes(_message.Message):
    __slots__ = ("details", "workflow_task_completed_event_id")
    DETAILS_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TASK_COMPLETED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    details: Payloads
    workflow_task_completed_event_id: int
    def __init__(self, details: _Optional[_Union[Payloads, _Mapping]] = ..., workflow_task_completed_event_id: _Optional[int] = ...) -> None: ...

class WorkflowExecutionTerminatedEventAttributes(_message.Message):
    __slots__ = ("reason", "details", "identity")
    REASON_FIELD_NUMBER: _ClassVar[int]
    DETAILS_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    reason: str
    details: Payloads
    identity: str
    def __init__(self, reason: _Optional[str] = ..., details: _Optional[_Union[Payloads, _Mapping]] = ..., identity: _Optional[str] = ...) -> None: ...

class WorkflowExecutionContinuedAsNewEventAttributes(_message.Message):
    __slots__ = ("new_execution_run_id", "workflow_type", "task_queue", "input", "run_timeout_ms", "task_timeout_ms", "workflow_task_completed_event_id", "backoff_start_interval_ms", "memo", "search_attributes", "header")
    NEW_EXECUTION_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TYPE_FIELD_NUMBER: _ClassVar[int]
    TASK_QUEUE_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    RUN_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    TASK_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TASK_COMPLETED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    BACKOFF_START_INTERVAL_MS_FIELD_NUMBER: _ClassVar[int]
    MEMO_FIELD_NUMBER: _ClassVar[int]
    SEARCH_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    HEADER_FIELD_NUMBER: _ClassVar[int]
    new_execution_run_id: str
    workflow_type: str
    task_queue: str
    input: Payloads
    run_timeout_ms: int
    task_timeout_ms: int
    workflow_task_completed_event_id: int
    backoff_start_interval_ms: int
    memo: Memo
    search_attributes: SearchAttributes
    header: Header
    def __init__(self, new_execution_run_id: _Optional[str] = ..., workflow_type: _Optional[str] = ..., task_queue: _Optional[str] = ..., input: _Optional[_Union[Payloads, _Mapping]] = ..., run_timeout_ms: _Optional[int] = ..., task_timeout_ms: _Optional[int] = ..., workflow_task_completed_event_id: _Optional[int] = ..., backoff_start_interval_ms: _Optional[int] = ..., memo: _Optional[_Union[Memo, _Mapping]] = ..., search_attributes: _Optional[_Union[SearchAttributes, _Mapping]] = ..., header: _Optional[_Union[Header, _Mapping]] = ...) -> None: ...

class WorkflowTaskScheduledEventAttributes(_message.Message):
    __slots__ = ("task_queue", "start_to_close_timeout_ms", "attempt")
    TASK_QUEUE_FIELD_NUMBER: _ClassVar[int]
    START_TO_CLOSE_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    task_queue: str
    start_to_close_timeout_ms: int
    attempt: int
    def __init__(self, task_queue: _Optional[str] = ..., start_to_close_timeout_ms: _Optional[int] = ..., attempt: _Optional[int] = ...) -> None: ...

class WorkflowTaskStartedEventAttributes(_message.Message):
    __slots__ = ("scheduled_event_id", "identity", "request_id", "history_size_bytes", "suggest_continue_as_new", "deployment_version")
    SCHEDULED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    HISTORY_SIZE_BYTES_FIELD_NUMBER: _ClassVar[int]
    SUGGEST_CONTINUE_AS_NEW_FIELD_NUMBER: _ClassVar[int]
    DEPLOYMENT_VERSION_FIELD_NUMBER: _ClassVar[int]
    scheduled_event_id: int
    identity: str
    request_id: str
    history_size_bytes: int
    suggest_continue_as_new: bool
    deployment_version: WorkerDeploymentVersion
    def __init__(self, scheduled_event_id: _Optional[int] = ..., identity: _Optional[str] = ..., request_id: _Optional[str] = ..., history_size_bytes: _Optional[int] = ..., suggest_continue_as_new: _Optional[bool] = ..., deployment_version: _Optional[_Union[WorkerDeploymentVersion, _Mapping]] = ...) -> None: ...

class WorkflowTaskCompletedEventAttributes(_message.Message):
    __slots__ = ("scheduled_event_id", "started_event_id", "identity", "binary_checksum", "versioning_behavior", "deployment_version")
    SCHEDULED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    STARTED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    BINARY_CHECKSUM_FIELD_NUMBER: _ClassVar[int]
    VERSIONING_BEHAVIOR_FIELD_NUMBER: _ClassVar[int]
    DEPLOYMENT_VERSION_FIELD_NUMBER: _ClassVar[int]
    scheduled_event_id: int
    started_event_id: int
    identity: str
    binary_checksum: str
    versioning_behavior: VersioningBehavior
    deployment_version: WorkerDeploymentVersion
    def __init__(self, scheduled_event_id: _Optional[int] = ..., started_event_id: _Optional[int] = ..., identity: _Optional[str] = ..., binary_checksum: _Optional[str] = ..., versioning_behavior: _Optional[_Union[VersioningBehavior, str]] = ..., deployment_version: _Optional[_Union[WorkerDeploymentVersion, _Mapping]] = ...) -> None: ...

class WorkflowTaskTimedOutEventAttributes(_message.Message):
    __slots__ = ("scheduled_event_id", "started_event_id", "timeout_type")
    SCHEDULED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    STARTED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_TYPE_FIELD_NUMBER: _ClassVar[int]
    scheduled_event_id: int
    started_event_id: int
    timeout_type: TimeoutType
    def __init__(self, scheduled_event_id: _Optional[int] = ..., started_event_id: _Optional[int] = ..., timeout_type: _Optional[_Union[TimeoutType, str]] = ...) -> None: ...

class WorkflowTaskFailedEventAttributes(_message.Message):
    __slots__ = ("scheduled_event_id", "started_event_id", "cause", "failure", "identity")
    SCHEDULED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    STARTED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    CAUSE_FIELD_NUMBER: _ClassVar[int]
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    scheduled_event_id: int
    started_event_id: int
    cause: WorkflowTaskFailedCause
    failure: Failure
    identity: str
    def __init__(self, scheduled_event_id: _Optional[int] = ..., started_event_id: _Optional[int] = ..., cause: _Optional[_Union[WorkflowTaskFailedCause, str]] = ..., failure: _Optional[_Union[Failure, _Mapping]] = ..., identity: _Optional[str] = ...) -> None: ...

class ActivityTaskScheduledEventAttributes(_message.Message):
    __slots__ = ("activity_id", "activity_type", "task_queue", "input", "schedule_to_close_timeout_ms", "schedule_to_start_timeout_ms", "start_to_close_timeout_ms", "heartbeat_timeout_ms", "workflow_task_completed_event_id", "retry_policy", "header")
    ACTIVITY_ID_FIELD_NUMBER: _ClassVar[int]
    ACTIVITY_TYPE_FIELD_NUMBER: _ClassVar[int]
    TASK_QUEUE_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_TO_CLOSE_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_TO_START_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    START_TO_CLOSE_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TASK_COMPLETED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    RETRY_POLICY_FIELD_NUMBER: _ClassVar[int]
    HEADER_FIELD_NUMBER: _ClassVar[int]
    activity_id: str
    activity_type: str
    task_queue: str
    input: Payloads
    schedule_to_close_timeout_ms: int
    schedule_to_start_timeout_ms: int
    start_to_close_timeout_ms: int
    heartbeat_timeout_ms: int
    workflow_task_completed_event_id: int
    retry_policy: RetryPolicy
    header: Header
    def __init__(self, activity_id: _Optional[str] = ..., activity_type: _Optional[str] = ..., task_queue: _Optional[str] = ..., input: _Optional[_Union[Payloads, _Mapping]] = ..., schedule_to_close_timeout_ms: _Optional[int] = ..., schedule_to_start_timeout_ms: _Optional[int] = ..., start_to_close_timeout_ms: _Optional[int] = ..., heartbeat_timeout_ms: _Optional[int] = ..., workflow_task_completed_event_id: _Optional[int] = ..., retry_policy: _Optional[_Union[RetryPolicy, _Mapping]] = ..., header: _Optional[_Union[Header, _Mapping]] = ...) -> None: ...

class ActivityTaskStartedEventAttributes(_message.Message):
    __slots__ = ("scheduled_event_id", "identity", "request_id", "attempt", "last_failure")
    SCHEDULED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    LAST_FAILURE_FIELD_NUMBER: _ClassVar[int]
    scheduled_event_id: int
    identity: str
    request_id: str
    attempt: int
    last_failure: Failure
    def __init__(self, scheduled_event_id: _Optional[int] = ..., identity: _Optional[str] = ..., request_id: _Optional[str] = ..., attempt: _Optional[int] = ..., last_failure: _Optional[_Union[Failure, _Mapping]] = ...) -> None: ...

class ActivityTaskCompletedEventAttributes(_message.Message):
    __slots__ = ("result", "scheduled_event_id", "started_event_id", "identity")
    RESULT_FIELD_NUMBER: _ClassVar[int]
    SCHEDULED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    STARTED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    result: Payloads
    scheduled_event_id: int
    started_event_id: int
    identity: str
    def __init__(self, result: _Optional[_Union[Payloads, _Mapping]] = ..., scheduled_event_id: _Optional[int] = ..., started_event_id: _Optional[int] = ..., identity: _Optional[str] = ...) -> None: ...

class ActivityTaskFailedEventAttributes(_message.Message):
    __slots__ = ("failure", "scheduled_event_id", "started_event_id", "identity", "retry_state", "attempt", "next_attempt_backoff_ms")
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    SCHEDULED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    STARTED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    RETRY_STATE_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    NEXT_ATTEMPT_BACKOFF_MS_FIELD_NUMBER: _ClassVar[int]
    failure: Failure
    scheduled_event_id: int
    started_event_id: int
    identity: str
    retry_state: RetryState
    attempt: int
    next_attempt_backoff_ms: int
    def __init__(self, failure: _Optional[_Union[Failure, _Mapping]] = ..., scheduled_event_id: _Optional[int] = ..., started_event_id: _Optional[int] = ..., identity: _Optional[str] = ..., retry_state: _Optional[_Union[RetryState, str]] = ..., attempt: _Optional[int] = ..., next_attempt_backoff_ms: _Optional[int] = ...) -> None: ...

class ActivityTaskTimedOutEventAttributes(_message.Message):
    __slots__ = ("failure", "scheduled_event_id", "started_event_id", "retry_state", "attempt", "next_attempt_backoff_ms")
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    SCHEDULED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    STARTED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    RETRY_STATE_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    NEXT_ATTEMPT_BACKOFF_MS_FIELD_NUMBER: _ClassVar[int]
    failure: Failure
    scheduled_event_id: int
    started_event_id: int
    retry_state: RetryState
    attempt: int
    next_attempt_backoff_ms: int
    def __init__(self, failure: _Optional[_Union[Failure, _Mapping]] = ..., scheduled_event_id: _Optional[int] = ..., started_event_id: _Optional[int] = ..., retry_state: _Optional[_Union[RetryState, str]] = ..., attempt: _Optional[int] = ..., next_attempt_backoff_ms: _Optional[int] = ...) -> None: ...

class ActivityTaskCancelRequestedEventAttributes(_message.Message):
    __slots__ = ("scheduled_event_id", "workflow_task_completed_event_id")
    SCHEDULED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TASK_COMPLETED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    scheduled_event_id: int
    workflow_task_completed_event_id: int
    def __init__(self, scheduled_event_id: _Optional[int] = ..., workflow_task_completed_event_id: _Optional[int] = ...) -> None: ...

class ActivityTaskCanceledEventAttributes(_message.Message):
    __slots__ = ("details", "latest_cancel_requested_event_id", "scheduled_event_id", "started_event_id", "identity")
    DETAILS_FIELD_NUMBER: _ClassVar[int]
    LATEST_CANCEL_REQUESTED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    SCHEDULED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    STARTED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    details: Payloads
    latest_cancel_requested_event_id: int
    scheduled_event_id: int
    started_event_id: int
    identity: str
    def __init__(self, details: _Optional[_Union[Payloads, _Mapping]] = ..., latest_cancel_requested_event_id: _Optional[int] = ..., scheduled_event_id: _Optional[int] = ..., started_event_id: _Optional[int] = ..., identity: _Optional[str] = ...) -> None: ...

class TimerStartedEventAttributes(_message.Message):
    __slots__ = ("timer_id", "start_to_fire_timeout_ms", "workflow_task_completed_event_id")
    TIMER_ID_FIELD_NUMBER: _ClassVar[int]
    START_TO_FIRE_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TASK_COMPLETED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    timer_id: str
    start_to_fire_timeout_ms: int
    workflow_task_completed_event_id: int
    def __init__(self, timer_id: _Optional[str] = ..., start_to_fire_timeout_ms: _Optional[int] = ..., workflow_task_completed_event_id: _Optional[int] = ...) -> None: ...

class TimerFiredEventAttributes(_message.Message):
    __slots__ = ("timer_id", "started_event_id")
    TIMER_ID_FIELD_NUMBER: _ClassVar[int]
    STARTED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    timer_id: str
    started_event_id: int
    def __init__(self, timer_id: _Optional[str] = ..., started_event_id: _Optional[int] = ...) -> None: ...

class TimerCanceledEventAttributes(_message.Message):
    __slots__ = ("timer_id", "started_event_id", "workflow_task_completed_event_id", "identity")
    TIMER_ID_FIELD_NUMBER: _ClassVar[int]
    STARTED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TASK_COMPLETED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    timer_id: str
    started_event_id: int
    workflow_task_completed_event_id: int
    identity: str
    def __init__(self, timer_id: _Optional[str] = ..., started_event_id: _Optional[int] = ..., workflow_task_completed_event_id: _Optional[int] = ..., identity: _Optional[str] = ...) -> None: ...

class WorkflowExecutionCancelRequestedEventAttributes(_message.Message):
    __slots__ = ("cause", "identity", "external_initiated_event_id", "external_workflow_execution")
    CAUSE_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    EXTERNAL_INITIATED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    EXTERNAL_WORKFLOW_EXECUTION_FIELD_NUMBER: _ClassVar[int]
    cause: str
    identity: str
    external_initiated_event_id: int
    external_workflow_execution: WorkflowExecution
    def __init__(self, cause: _Optional[str] = ..., identity: _Optional[str] = ..., external_initiated_event_id: _Optional[int] = ..., external_workflow_execution: _Optional[_Union[WorkflowExecution, _Mapping]] = ...) -> None: ...

class MarkerRecordedEventAttributes(_message.Message):
    __slots__ = ("marker_name", "details", "workflow_task_completed_event_id", "header", "failure")
    class DetailsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: Payloads
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[Payloads, _Mapping]] = ...) -> None: ...
    MARKER_NAME_FIELD_NUMBER: _ClassVar[int]
    DETAILS_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TASK_COMPLETED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    HEADER_FIELD_NUMBER: _ClassVar[int]
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    marker_name: str
    details: _containers.MessageMap[str, Payloads]
    workflow_task_completed_event_id: int
    header: Header
    failure: Failure
    def __init__(self, marker_name: _Optional[str] = ..., details: _Optional[_Mapping[str, Payloads]] = ..., workflow_task_completed_event_id: _Optional[int] = ..., header: _Optional[_Union[Header, _Mapping]] = ..., failure: _Optional[_Union[Failure, _Mapping]] = ...) -> None: ...

class WorkflowExecutionSignaledEventAttributes(_message.Message):
    __slots__ = ("signal_name", "input", "identity", "header", "external_workflow_execution", "request_id")
    SIGNAL_NAME_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    HEADER_FIELD_NUMBER: _ClassVar[int]
    EXTERNAL_WORKFLOW_EXECUTION_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    signal_name: str
    input: Payloads
    identity: str
    header: Header
    external_workflow_execution: WorkflowExecution
    request_id: str
    def __init__(self, signal_name: _Optional[str] = ..., input: _Optional[_Union[Payloads, _Mapping]] = ..., identity: _Optional[str] = ..., header: _Optional[_Union[Header, _Mapping]] = ..., external_workflow_execution: _Optional[_Union[WorkflowExecution, _Mapping]] = ..., request_id: _Optional[str] = ...) -> None: ...

class StartChildWorkflowExecutionInitiatedEventAttributes(_message.Message):
    __slots__ = ("namespace", "workflow_id", "workflow_type", "task_queue", "input", "execution_timeout_ms", "run_timeout_ms", "task_timeout_ms", "parent_close_policy", "workflow_task_completed_event_id", "workflow_id_reuse_policy", "memo", "search_attributes", "header")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_ID_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TYPE_FIELD_NUMBER: _ClassVar[int]
    TASK_QUEUE_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    RUN_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    TASK_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    PARENT_CLOSE_POLICY_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TASK_COMPLETED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_ID_REUSE_POLICY_FIELD_NUMBER: _ClassVar[int]
    MEMO_FIELD_NUMBER: _ClassVar[int]
    SEARCH_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    HEADER_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    workflow_id: str
    workflow_type: str
    task_queue: str
    input: Payloads
    execution_timeout_ms: int
    run_timeout_ms: int
    task_timeout_ms: int
    parent_close_policy: ParentClosePolicy
    workflow_task_completed_event_id: int
    workflow_id_reuse_policy: WorkflowIdReusePolicy
    memo: Memo
    search_attributes: SearchAttributes
    header: Header
    def __init__(self, namespace: _Optional[str] = ..., workflow_id: _Optional[str] = ..., workflow_type: _Optional[str] = ..., task_queue: _Optional[str] = ..., input: _Optional[_Union[Payloads, _Mapping]] = ..., execution_timeout_ms: _Optional[int] = ..., run_timeout_ms: _Optional[int] = ..., task_timeout_ms: _Optional[int] = ..., parent_close_policy: _Optional[_Union[ParentClosePolicy, str]] = ..., workflow_task_completed_event_id: _Optional[int] = ..., workflow_id_reuse_policy: _Optional[_Union[WorkflowIdReusePolicy, str]] = ..., memo: _Optional[_Union[Memo, _Mapping]] = ..., search_attributes: _Optional[_Union[SearchAttributes, _Mapping]] = ..., header: _Optional[_Union[Header, _Mapping]] = ...) -> None: ...

class StartChildWorkflowExecutionFailedEventAttributes(_message.Message):
    __slots__ = ("namespace", "workflow_id", "workflow_type", "cause", "initiated_event_id", "workflow_task_completed_event_id")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_ID_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TYPE_FIELD_NUMBER: _ClassVar[int]
    CAUSE_FIELD_NUMBER: _ClassVar[int]
    INITIATED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TASK_COMPLETED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    workflow_id: str
    workflow_type: str
    cause: str
    initiated_event_id: int
    workflow_task_completed_event_id: int
    def __init__(self, namespace: _Optional[str] = ..., workflow_id: _Optional[str] = ..., workflow_type: _Optional[str] = ..., cause: _Optional[str] = ..., initiated_event_id: _Optional[int] = ..., workflow_task_completed_event_id: _Optional[int] = ...) -> None: ...

class ChildWorkflowExecutionStartedEventAttributes(_message.Message):
    __slots__ = ("namespace", "initiated_event_id", "workflow_execution", "workflow_type")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    INITIATED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_EXECUTION_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TYPE_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    initiated_event_id: int
    workflow_execution: WorkflowExecution
    workflow_type: str
    def __init__(self, namespace: _Optional[str] = ..., initiated_event_id: _Optional[int] = ..., workflow_execution: _Optional[_Union[WorkflowExecution, _Mapping]] = ..., workflow_type: _Optional[str] = ...) -> None: ...

class ChildWorkflowExecutionCompletedEventAttributes(_message.Message):
    __slots__ = ("result", "namespace", "workflow_execution", "workflow_type", "initiated_event_id", "started_event_id")
    RESULT_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_EXECUTION_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TYPE_FIELD_NUMBER: _ClassVar[int]
    INITIATED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    STARTED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    result: Payloads
    namespace: str
    workflow_execution: WorkflowExecution
    workflow_type: str
    initiated_event_id: int
    started_event_id: int
    def __init__(self, result: _Optional[_Union[Payloads, _Mapping]] = ..., namespace: _Optional[str] = ..., workflow_execution: _Optional[_Union[WorkflowExecution, _Mapping]] = ..., workflow_type: _Optional[str] = ..., initiated_event_id: _Optional[int] = ..., started_event_id: _Optional[int] = ...) -> None: ...

class ChildWorkflowExecutionFailedEventAttributes(_message.Message):
    __slots__ = ("failure", "namespace", "workflow_execution", "workflow_type", "initiated_event_id", "started_event_id", "retry_state")
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_EXECUTION_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TYPE_FIELD_NUMBER: _ClassVar[int]
    INITIATED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    STARTED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    RETRY_STATE_FIELD_NUMBER: _ClassVar[int]
    failure: Failure
    namespace: str
    workflow_execution: WorkflowExecution
    workflow_type: str
    initiated_event_id: int
    started_event_id: int
    retry_state: RetryState
    def __init__(self, failure: _Optional[_Union[Failure, _Mapping]] = ..., namespace: _Optional[str] = ..., workflow_execution: _Optional[_Union[WorkflowExecution, _Mapping]] = ..., workflow_type: _Optional[str] = ..., initiated_event_id: _Optional[int] = ..., started_event_id: _Optional[int] = ..., retry_state: _Optional[_Union[RetryState, str]] = ...) -> None: ...

class ChildWorkflowExecutionCanceledEventAttributes(_message.Message):
    __slots__ = ("details", "namespace", "workflow_execution", "workflow_type", "initiated_event_id", "started_event_id")
    DETAILS_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_EXECUTION_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TYPE_FIELD_NUMBER: _ClassVar[int]
    INITIATED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    STARTED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    details: Payloads
    namespace: str
    workflow_execution: WorkflowExecution
    workflow_type: str
    initiated_event_id: int
    started_event_id: int
    def __init__(self, details: _Optional[_Union[Payloads, _Mapping]] = ..., namespace: _Optional[str] = ..., workflow_execution: _Optional[_Union[WorkflowExecution, _Mapping]] = ..., workflow_type: _Optional[str] = ..., initiated_event_id: _Optional[int] = ..., started_event_id: _Optional[int] = ...) -> None: ...

class ChildWorkflowExecutionTimedOutEventAttributes(_message.Message):
    __slots__ = ("namespace", "workflow_execution", "workflow_type", "initiated_event_id", "started_event_id", "retry_state")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_EXECUTION_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TYPE_FIELD_NUMBER: _ClassVar[int]
    INITIATED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    STARTED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    RETRY_STATE_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    workflow_execution: WorkflowExecution
    workflow_type: str
    initiated_event_id: int
    started_event_id: int
    retry_state: RetryState
    def __init__(self, namespace: _Optional[str] = ..., workflow_execution: _Optional[_Union[WorkflowExecution, _Mapping]] = ..., workflow_type: _Optional[str] = ..., initiated_event_id: _Optional[int] = ..., started_event_id: _Optional[int] = ..., retry_state: _Optional[_Union[RetryState, str]] = ...) -> None: ...

class ChildWorkflowExecutionTerminatedEventAttributes(_message.Message):
    __slots__ = ("namespace", "workflow_execution", "workflow_type", "initiated_event_id", "started_event_id", "reason")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_EXECUTION_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TYPE_FIELD_NUMBER: _ClassVar[int]
    INITIATED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    STARTED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    workflow_execution: WorkflowExecution
    workflow_type: str
    initiated_event_id: int
    started_event_id: int
    reason: str
    def __init__(self, namespace: _Optional[str] = ..., workflow_execution: _Optional[_Union[WorkflowExecution, _Mapping]] = ..., workflow_type: _Optional[str] = ..., initiated_event_id: _Optional[int] = ..., started_event_id: _Optional[int] = ..., reason: _Optional[str] = ...) -> None: ...

class SignalExternalWorkflowExecutionInitiatedEventAttributes(_message.Message):
    __slots__ = ("workflow_task_completed_event_id", "namespace", "workflow_execution", "signal_name", "input", "child_workflow_only", "header")
    WORKFLOW_TASK_COMPLETED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_EXECUTION_FIELD_NUMBER: _ClassVar[int]
    SIGNAL_NAME_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    CHILD_WORKFLOW_ONLY_FIELD_NUMBER: _ClassVar[int]
    HEADER_FIELD_NUMBER: _ClassVar[int]
    workflow_task_completed_event_id: int
    namespace: str
    workflow_execution: WorkflowExecution
    signal_name: str
    input: Payloads
    child_workflow_only: bool
    header: Header
    def __init__(self, workflow_task_completed_event_id: _Optional[int] = ..., namespace: _Optional[str] = ..., workflow_execution: _Optional[_Union[WorkflowExecution, _Mapping]] = ..., signal_name: _Optional[str] = ..., input: _Optional[_Union[Payloads, _Mapping]] = ..., child_workflow_only: _Optional[bool] = ..., header: _Optional[_Union[Header, _Mapping]] = ...) -> None: ...

class SignalExternalWorkflowExecutionFailedEventAttributes(_message.Message):
    __slots__ = ("cause", "workflow_task_completed_event_id", "namespace", "workflow_execution", "initiated_event_id")
    CAUSE_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TASK_COMPLETED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_EXECUTION_FIELD_NUMBER: _ClassVar[int]
    INITIATED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    cause: str
    workflow_task_completed_event_id: int
    namespace: str
    workflow_execution: WorkflowExecution
    initiated_event_id: int
    def __init__(self, cause: _Optional[str] = ..., workflow_task_completed_event_id: _Optional[int] = ..., namespace: _Optional[str] = ..., workflow_execution: _Optional[_Union[WorkflowExecution, _Mapping]] = ..., initiated_event_id: _Optional[int] = ...) -> None: ...

class ExternalWorkflowExecutionSignaledEventAttributes(_message.Message):
    __slots__ = ("initiated_event_id", "namespace", "workflow_execution")
    INITIATED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_EXECUTION_FIELD_NUMBER: _ClassVar[int]
    initiated_event_id: int
    namespace: str
    workflow_execution: WorkflowExecution
    def __init__(self, initiated_event_id: _Optional[int] = ..., namespace: _Optional[str] = ..., workflow_execution: _Optional[_Union[WorkflowExecution, _Mapping]] = ...) -> None: ...

class RequestCancelExternalWorkflowExecutionInitiatedEventAttributes(_message.Message):
    __slots__ = ("workflow_task_completed_event_id", "namespace", "workflow_execution", "child_workflow_only", "reason")
    WORKFLOW_TASK_COMPLETED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_EXECUTION_FIELD_NUMBER: _ClassVar[int]
    CHILD_WORKFLOW_ONLY_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    workflow_task_completed_event_id: int
    namespace: str
    workflow_execution: WorkflowExecution
    child_workflow_only: bool
    reason: str
    def __init__(self, workflow_task_completed_event_id: _Optional[int] = ..., namespace: _Optional[str] = ..., workflow_execution: _Optional[_Union[WorkflowExecution, _Mapping]] = ..., child_workflow_only: _Optional[bool] = ..., reason: _Optional[str] = ...) -> None: ...

class RequestCancelExternalWorkflowExecutionFailedEventAttributes(_message.Message):
    __slots__ = ("cause", "workflow_task_completed_event_id", "namespace", "workflow_execution", "initiated_event_id")
    CAUSE_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TASK_COMPLETED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_EXECUTION_FIELD_NUMBER: _ClassVar[int]
    INITIATED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    cause: str
    workflow_task_completed_event_id: int
    namespace: str
    workflow_execution: WorkflowExecution
    initiated_event_id: int
    def __init__(self, cause: _Optional[str] = ..., workflow_task_completed_event_id: _Optional[int] = ..., namespace: _Optional[str] = ..., workflow_execution: _Optional[_Union[WorkflowExecution, _Mapping]] = ..., initiated_event_id: _Optional[int] = ...) -> None: ...

class ExternalWorkflowExecutionCancelRequestedEventAttributes(_message.Message):
    __slots__ = ("initiated_event_id", "namespace", "workflow_execution")
    INITIATED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_EXECUTION_FIELD_NUMBER: _ClassVar[int]
    initiated_event_id: int
    namespace: str
    workflow_execution: WorkflowExecution
    def __init__(self, initiated_event_id: _Optional[int] = ..., namespace: _Optional[str] = ..., workflow_execution: _Optional[_Union[WorkflowExecution, _Mapping]] = ...) -> None: ...

class UpsertWorkflowSearchAttributesEventAttributes(_message.Message):
    __slots__ = ("workflow_task_completed_event_id", "search_attributes")
    WORKFLOW_TASK_COMPLETED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    SEARCH_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    workflow_task_completed_event_id: int
    search_attributes: SearchAttributes
    def __init__(self, workflow_task_completed_event_id: _Optional[int] = ..., search_attributes: _Optional[_Union[SearchAttributes, _Mapping]] = ...) -> None: ...

class WorkflowExecutionUpdateAcceptedEventAttributes(_message.Message):
    __slots__ = ("update_id", "name", "input", "header", "identity", "workflow_task_completed_event_id")
    UPDATE_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    HEADER_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TASK_COMPLETED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    update_id: str
    name: str
    input: Payloads
    header: Header
    identity: str
    workflow_task_completed_event_id: int
    def __init__(self, update_id: _Optional[str] = ..., name: _Optional[str] = ..., input: _Optional[_Union[Payloads, _Mapping]] = ..., header: _Optional[_Union[Header, _Mapping]] = ..., identity: _Optional[str] = ..., workflow_task_completed_event_id: _Optional[int] = ...) -> None: ...

class WorkflowExecutionUpdateCompletedEventAttributes(_message.Message):
    __slots__ = ("update_id", "accepted_event_id", "success", "failure", "workflow_task_completed_event_id")
    UPDATE_ID_FIELD_NUMBER: _ClassVar[int]
    ACCEPTED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TASK_COMPLETED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    update_id: str
    accepted_event_id: int
    success: Payloads
    failure: Failure
    workflow_task_completed_event_id: int
    def __init__(self, update_id: _Optional[str] = ..., accepted_event_id: _Optional[int] = ..., success: _Optional[_Union[Payloads, _Mapping]] = ..., failure: _Optional[_Union[Failure, _Mapping]] = ..., workflow_task_completed_event_id: _Optional[int] = ...) -> None: ...

class WorkerDeploymentVersion(_message.Message):
    __slots__ = ("deployment_name", "build_id")
    DEPLOYMENT_NAME_FIELD_NUMBER: _ClassVar[int]
    BUILD_ID_FIELD_NUMBER: _ClassVar[int]
    deployment_name: str
    build_id: str
    def __init__(self, deployment_name: _Optional[str] = ..., build_id: _Optional[str] = ...) -> None: ...

class WorkerDeploymentOptions(_message.Message):
    __slots__ = ("version", "use_worker_versioning", "default_versioning_behavior")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    USE_WORKER_VERSIONING_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_VERSIONING_BEHAVIOR_FIELD_NUMBER: _ClassVar[int]
    version: WorkerDeploymentVersion
    use_worker_versioning: bool
    default_versioning_behavior: VersioningBehavior
    def __init__(self, version: _Optional[_Union[WorkerDeploymentVersion, _Mapping]] = ..., use_worker_versioning: _Optional[bool] = ..., default_versioning_behavior: _Optional[_Union[VersioningBehavior, str]] = ...) -> None: ...

class VersioningOverride(_message.Message):
    __slots__ = ("pinned", "auto_upgrade")
    class PinnedOverrideBehavior(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        PINNED_OVERRIDE_BEHAVIOR_UNSPECIFIED: _ClassVar[VersioningOverride.PinnedOverrideBehavior]
        PINNED_OVERRIDE_BEHAVIOR_PINNED: _ClassVar[VersioningOverride.PinnedOverrideBehavior]
    PINNED_OVERRIDE_BEHAVIOR_UNSPECIFIED: VersioningOverride.PinnedOverrideBehavior
    PINNED_OVERRIDE_BEHAVIOR_PINNED: VersioningOverride.PinnedOverrideBehavior
    class PinnedOverride(_message.Message):
        __slots__ = ("behavior", "version")
        BEHAVIOR_FIELD_NUMBER: _ClassVar[int]
        VERSION_FIELD_NUMBER: _ClassVar[int]
        behavior: VersioningOverride.PinnedOverrideBehavior
        version: WorkerDeploymentVersion
        def __init__(self, behavior: _Optional[_Union[VersioningOverride.PinnedOverrideBehavior, str]] = ..., version: _Optional[_Union[WorkerDeploymentVersion, _Mapping]] = ...) -> None: ...
    PINNED_FIELD_NUMBER: _ClassVar[int]
    AUTO_UPGRADE_FIELD_NUMBER: _ClassVar[int]
    pinned: VersioningOverride.PinnedOverride
    auto_upgrade: bool
    def __init__(self, pinned: _Optional[_Union[VersioningOverride.PinnedOverride, _Mapping]] = ..., auto_upgrade: _Optional[bool] = ...) -> None: ...

class WorkflowExecutionOptionsUpdatedEventAttributes(_message.Message):
    __slots__ = ("versioning_override", "unset_versioning_override", "identity")
    VERSIONING_OVERRIDE_FIELD_NUMBER: _ClassVar[int]
    UNSET_VERSIONING_OVERRIDE_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    versioning_override: VersioningOverride
    unset_versioning_override: bool
    identity: str
    def __init__(self, versioning_override: _Optional[_Union[VersioningOverride, _Mapping]] = ..., unset_versioning_override: _Optional[bool] = ..., identity: _Optional[str] = ...) -> None: ...

class WorkflowExecutionVersioningInfo(_message.Message):
    __slots__ = ("behavior", "deployment_version", "versioning_override", "pinned_version")
    BEHAVIOR_FIELD_NUMBER: _ClassVar[int]
    DEPLOYMENT_VERSION_FIELD_NUMBER: _ClassVar[int]
    VERSIONING_OVERRIDE_FIELD_NUMBER: _ClassVar[int]
    PINNED_VERSION_FIELD_NUMBER: _ClassVar[int]
    behavior: VersioningBehavior
    deployment_version: WorkerDeploymentVersion
    versioning_override: VersioningOverride
    pinned_version: WorkerDeploymentVersion
    def __init__(self, behavior: _Optional[_Union[VersioningBehavior, str]] = ..., deployment_version: _Optional[_Union[WorkerDeploymentVersion, _Mapping]] = ..., versioning_override: _Optional[_Union[VersioningOverride, _Mapping]] = ..., pinned_version: _Optional[_Union[WorkerDeploymentVersion, _Mapping]] = ...) -> None: ...

class HistoryEvent(_message.Message):
    __slots__ = ("event_id", "event_time_ms", "event_type", "workflow_execution_started_event_attributes", "workflow_execution_completed_event_attributes", "workflow_execution_failed_event_attributes", "workflow_execution_timed_out_event_attributes", "workflow_task_scheduled_event_attributes", "workflow_task_started_event_attributes", "workflow_task_completed_event_attributes", "workflow_task_timed_out_event_attributes", "workflow_task_failed_event_attributes", "activity_task_scheduled_event_attributes", "activity_task_started_event_attributes", "activity_task_completed_event_attributes", "activity_task_failed_event_attributes", "activity_task_timed_out_event_attributes", "activity_task_cancel_requested_event_attributes", "activity_task_canceled_event_attributes", "timer_started_event_attributes", "timer_fired_event_attributes", "timer_canceled_event_attributes", "workflow_execution_cancel_requested_event_attributes", "workflow_execution_canceled_event_attributes", "marker_recorded_event_attributes", "workflow_execution_signaled_event_attributes", "workflow_execution_terminated_event_attributes", "workflow_execution_continued_as_new_event_attributes", "start_child_workflow_execution_initiated_event_attributes", "start_child_workflow_execution_failed_event_attributes", "child_workflow_execution_started_event_attributes", "child_workflow_execution_completed_event_attributes", "child_workflow_execution_failed_event_attributes", "child_workflow_execution_canceled_event_attributes", "child_workflow_execution_timed_out_event_attributes", "child_workflow_execution_terminated_event_attributes", "signal_external_workflow_execution_initiated_event_attributes", "signal_external_workflow_execution_failed_event_attributes", "external_workflow_execution_signaled_event_attributes", "request_cancel_external_workflow_execution_initiated_event_attributes", "request_cancel_external_workflow_execution_failed_event_attributes", "external_workflow_execution_cancel_requested_event_attributes", "upsert_workflow_search_attributes_event_attributes", "workflow_execution_update_accepted_event_attributes", "workflow_execution_update_completed_event_attributes", "workflow_execution_options_updated_event_attributes", "nexus_operation_scheduled_event_attributes", "nexus_operation_started_event_attributes", "nexus_operation_completed_event_attributes", "nexus_operation_failed_event_attributes", "nexus_operation_canceled_event_attributes", "nexus_operation_timed_out_event_attributes", "nexus_operation_cancel_requested_event_attributes")
    EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    EVENT_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    EVENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_EXECUTION_STARTED_EVENT_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_EXECUTION_COMPLETED_EVENT_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_EXECUTION_FAILED_EVENT_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_EXECUTION_TIMED_OUT_EVENT_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TASK_SCHEDULED_EVENT_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TASK_STARTED_EVENT_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TASK_COMPLETED_EVENT_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TASK_TIMED_OUT_EVENT_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TASK_FAILED_EVENT_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    ACTIVITY_TASK_SCHEDULED_EVENT_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    ACTIVITY_TASK_STARTED_EVENT_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    ACTIVITY_TASK_COMPLETED_EVENT_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    ACTIVITY_TASK_FAILED_EVENT_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    ACTIVITY_TASK_TIMED_OUT_EVENT_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    ACTIVITY_TASK_CANCEL_REQUESTED_EVENT_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    ACTIVITY_TASK_CANCELED_EVENT_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    TIMER_STARTED_EVENT_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    TIMER_FIRED_EVENT_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    TIMER_CANCELED_EVENT_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_EXECUTION_CANCEL_REQUESTED_EVENT_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_EXECUTION_CANCELED_EVENT_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    MARKER_RECORDED_EVENT_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_EXECUTION_SIGNALED_EVENT_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_EXECUTION_TERMINATED_EVENT_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_EXECUTION_CONTINUED_AS_NEW_EVENT_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    START_CHILD_WORKFLOW_EXECUTION_INITIATED_EVENT_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    START_CHILD_WORKFLOW_EXECUTION_FAILED_EVENT_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    CHILD_WORKFLOW_EXECUTION_STARTED_EVENT_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    CHILD_WORKFLOW_EXECUTION_COMPLETED_EVENT_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    CHILD_WORKFLOW_EXECUTION_FAILED_EVENT_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    CHILD_WORKFLOW_EXECUTION_CANCELED_EVENT_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    CHILD_WORKFLOW_EXECUTION_TIMED_OUT_EVENT_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    CHILD_WORKFLOW_EXECUTION_TERMINATED_EVENT_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED_EVENT_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_FAILED_EVENT_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    EXTERNAL_WORKFLOW_EXECUTION_SIGNALED_EVENT_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED_EVENT_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_FAILED_EVENT_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    EXTERNAL_WORKFLOW_EXECUTION_CANCEL_REQUESTED_EVENT_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    UPSERT_WORKFLOW_SEARCH_ATTRIBUTES_EVENT_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_EXECUTION_UPDATE_ACCEPTED_EVENT_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_EXECUTION_UPDATE_COMPLETED_EVENT_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_EXECUTION_OPTIONS_UPDATED_EVENT_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    NEXUS_OPERATION_SCHEDULED_EVENT_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    NEXUS_OPERATION_STARTED_EVENT_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    NEXUS_OPERATION_COMPLETED_EVENT_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    NEXUS_OPERATION_FAILED_EVENT_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    NEXUS_OPERATION_CANCELED_EVENT_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    NEXUS_OPERATION_TIMED_OUT_EVENT_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    NEXUS_OPERATION_CANCEL_REQUESTED_EVENT_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    event_id: int
    event_time_ms: int
    event_type: EventType
    workflow_execution_started_event_attributes: WorkflowExecutionStartedEventAttributes
    workflow_execution_completed_event_attributes: WorkflowExecutionCompletedEventAttributes
    workflow_execution_failed_event_attributes: WorkflowExecutionFailedEventAttributes
    workflow_execution_timed_out_event_attributes: WorkflowExecutionTimedOutEventAttributes
    workflow_task_scheduled_event_attributes: WorkflowTaskScheduledEventAttributes
    workflow_task_started_event_attributes: WorkflowTaskStartedEventAttributes
    workflow_task_completed_event_attributes: WorkflowTaskCompletedEventAttributes
    workflow_task_timed_out_event_attributes: WorkflowTaskTimedOutEventAttributes
    workflow_task_failed_event_attributes: WorkflowTaskFailedEventAttributes
    activity_task_scheduled_event_attributes: ActivityTaskScheduledEventAttributes
    activity_task_started_event_attributes: ActivityTaskStartedEventAttributes
    activity_task_completed_event_attributes: ActivityTaskCompletedEventAttributes
    activity_task_failed_event_attributes: ActivityTaskFailedEventAttributes
    activity_task_timed_out_event_attributes: ActivityTaskTimedOutEventAttributes
    activity_task_cancel_requested_event_attributes: ActivityTaskCancelRequestedEventAttributes
    activity_task_canceled_event_attributes: ActivityTaskCanceledEventAttributes
    timer_started_event_attributes: TimerStartedEventAttributes
    timer_fired_event_attributes: TimerFiredEventAttributes
    timer_canceled_event_attributes: TimerCanceledEventAttributes
    workflow_execution_cancel_requested_event_attributes: WorkflowExecutionCancelRequestedEventAttributes
    workflow_execution_canceled_event_attributes: WorkflowExecutionCanceledEventAttributes
    marker_recorded_event_attributes: MarkerRecordedEventAttributes
    workflow_execution_signaled_event_attributes: WorkflowExecutionSignaledEventAttributes
    workflow_execution_terminated_event_attributes: WorkflowExecutionTerminatedEventAttributes
    workflow_execution_continued_as_new_event_attributes: WorkflowExecutionContinuedAsNewEventAttributes
    start_child_workflow_execution_initiated_event_attributes: StartChildWorkflowExecutionInitiatedEventAttributes
    start_child_workflow_execution_failed_event_attributes: StartChildWorkflowExecutionFailedEventAttributes
    child_workflow_execution_started_event_attributes: ChildWorkflowExecutionStartedEventAttributes
    child_workflow_execution_completed_event_attributes: ChildWorkflowExecutionCompletedEventAttributes
    child_workflow_execution_failed_event_attributes: ChildWorkflowExecutionFailedEventAttributes
    child_workflow_execution_canceled_event_attributes: ChildWorkflowExecutionCanceledEventAttributes
    child_workflow_execution_timed_out_event_attributes: ChildWorkflowExecutionTimedOutEventAttributes
    child_workflow_execution_terminated_event_attributes: ChildWorkflowExecutionTerminatedEventAttributes
    signal_external_workflow_execution_initiated_event_attributes: SignalExternalWorkflowExecutionInitiatedEventAttributes
    signal_external_workflow_execution_failed_event_attributes: SignalExternalWorkflowExecutionFailedEventAttributes
    external_workflow_execution_signaled_event_attributes: ExternalWorkflowExecutionSignaledEventAttributes
    request_cancel_external_workflow_execution_initiated_event_attributes: RequestCancelExternalWorkflowExecutionInitiatedEventAttributes
    request_cancel_external_workflow_execution_failed_event_attributes: RequestCancelExternalWorkflowExecutionFailedEventAttributes
    external_workflow_execution_cancel_requested_event_attributes: ExternalWorkflowExecutionCancelRequestedEventAttributes
    upsert_workflow_search_attributes_event_attributes: UpsertWorkflowSearchAttributesEventAttributes
    workflow_execution_update_accepted_event_attributes: WorkflowExecutionUpdateAcceptedEventAttributes
    workflow_execution_update_completed_event_attributes: WorkflowExecutionUpdateCompletedEventAttributes
    workflow_execution_options_updated_event_attributes: WorkflowExecutionOptionsUpdatedEventAttributes
    nexus_operation_scheduled_event_attributes: NexusOperationScheduledEventAttributes
    nexus_operation_started_event_attributes: NexusOperationStartedEventAttributes
    nexus_operation_completed_event_attributes: NexusOperationCompletedEventAttributes
    nexus_operation_failed_event_attributes: NexusOperationFailedEventAttributes
    nexus_operation_canceled_event_attributes: NexusOperationCanceledEventAttributes
    nexus_operation_timed_out_event_attributes: NexusOperationTimedOutEventAttributes
    nexus_operation_cancel_requested_event_attributes: NexusOperationCancelRequestedEventAttributes
    def __init__(self, event_id: _Optional[int] = ..., event_time_ms: _Optional[int] = ..., event_type: _Optional[_Union[EventType, str]] = ..., workflow_execution_started_event_attributes: _Optional[_Union[WorkflowExecutionStartedEventAttributes, _Mapping]] = ..., workflow_execution_completed_event_attributes: _Optional[_Union[WorkflowExecutionCompletedEventAttributes, _Mapping]] = ..., workflow_execution_failed_event_attributes: _Optional[_Union[WorkflowExecutionFailedEventAttributes, _Mapping]] = ..., workflow_execution_timed_out_event_attributes: _Optional[_Union[WorkflowExecutionTimedOutEventAttributes, _Mapping]] = ..., workflow_task_scheduled_event_attributes: _Optional[_Union[WorkflowTaskScheduledEventAttributes, _Mapping]] = ..., workflow_task_started_event_attributes: _Optional[_Union[WorkflowTaskStartedEventAttributes, _Mapping]] = ..., workflow_task_completed_event_attributes: _Optional[_Union[WorkflowTaskCompletedEventAttributes, _Mapping]] = ..., workflow_task_timed_out_event_attributes: _Optional[_Union[WorkflowTaskTimedOutEventAttributes, _Mapping]] = ..., workflow_task_failed_event_attributes: _Optional[_Union[WorkflowTaskFailedEventAttributes, _Mapping]] = ..., activity_task_scheduled_event_attributes: _Optional[_Union[ActivityTaskScheduledEventAttributes, _Mapping]] = ..., activity_task_started_event_attributes: _Optional[_Union[ActivityTaskStartedEventAttributes, _Mapping]] = ..., activity_task_completed_event_attributes: _Optional[_Union[ActivityTaskCompletedEventAttributes, _Mapping]] = ..., activity_task_failed_event_attributes: _Optional[_Union[ActivityTaskFailedEventAttributes, _Mapping]] = ..., activity_task_timed_out_event_attributes: _Optional[_Union[ActivityTaskTimedOutEventAttributes, _Mapping]] = ..., activity_task_cancel_requested_event_attributes: _Optional[_Union[ActivityTaskCancelRequestedEventAttributes, _Mapping]] = ..., activity_task_canceled_event_attributes: _Optional[_Union[ActivityTaskCanceledEventAttributes, _Mapping]] = ..., timer_started_event_attributes: _Optional[_Union[TimerStartedEventAttributes, _Mapping]] = ..., timer_fired_event_attributes: _Optional[_Union[TimerFiredEventAttributes, _Mapping]] = ..., timer_canceled_event_attributes: _Optional[_Union[TimerCanceledEventAttributes, _Mapping]] = ..., workflow_execution_cancel_requested_event_attributes: _Optional[_Union[WorkflowExecutionCancelRequestedEventAttributes, _Mapping]] = ..., workflow_execution_canceled_event_attributes: _Optional[_Union[WorkflowExecutionCanceledEventAttributes, _Mapping]] = ..., marker_recorded_event_attributes: _Optional[_Union[MarkerRecordedEventAttributes, _Mapping]] = ..., workflow_execution_signaled_event_attributes: _Optional[_Union[WorkflowExecutionSignaledEventAttributes, _Mapping]] = ..., workflow_execution_terminated_event_attributes: _Optional[_Union[WorkflowExecutionTerminatedEventAttributes, _Mapping]] = ..., workflow_execution_continued_as_new_event_attributes: _Optional[_Union[WorkflowExecutionContinuedAsNewEventAttributes, _Mapping]] = ..., start_child_workflow_execution_initiated_event_attributes: _Optional[_Union[StartChildWorkflowExecutionInitiatedEventAttributes, _Mapping]] = ..., start_child_workflow_execution_failed_event_attributes: _Optional[_Union[StartChildWorkflowExecutionFailedEventAttributes, _Mapping]] = ..., child_workflow_execution_started_event_attributes: _Optional[_Union[ChildWorkflowExecutionStartedEventAttributes, _Mapping]] = ..., child_workflow_execution_completed_event_attributes: _Optional[_Union[ChildWorkflowExecutionCompletedEventAttributes, _Mapping]] = ..., child_workflow_execution_failed_event_attributes: _Optional[_Union[ChildWorkflowExecutionFailedEventAttributes, _Mapping]] = ..., child_workflow_execution_canceled_event_attributes: _Optional[_Union[ChildWorkflowExecutionCanceledEventAttributes, _Mapping]] = ..., child_workflow_execution_timed_out_event_attributes: _Optional[_Union[ChildWorkflowExecutionTimedOutEventAttributes, _Mapping]] = ..., child_workflow_execution_terminated_event_attributes: _Optional[_Union[ChildWorkflowExecutionTerminatedEventAttributes, _Mapping]] = ..., signal_external_workflow_execution_initiated_event_attributes: _Optional[_Union[SignalExternalWorkflowExecutionInitiatedEventAttributes, _Mapping]] = ..., signal_external_workflow_execution_failed_event_attributes: _Optional[_Union[SignalExternalWorkflowExecutionFailedEventAttributes, _Mapping]] = ..., external_workflow_execution_signaled_event_attributes: _Optional[_Union[ExternalWorkflowExecutionSignaledEventAttributes, _Mapping]] = ..., request_cancel_external_workflow_execution_initiated_event_attributes: _Optional[_Union[RequestCancelExternalWorkflowExecutionInitiatedEventAttributes, _Mapping]] = ..., request_cancel_external_workflow_execution_failed_event_attributes: _Optional[_Union[RequestCancelExternalWorkflowExecutionFailedEventAttributes, _Mapping]] = ..., external_workflow_execution_cancel_requested_event_attributes: _Optional[_Union[ExternalWorkflowExecutionCancelRequestedEventAttributes, _Mapping]] = ..., upsert_workflow_search_attributes_event_attributes: _Optional[_Union[UpsertWorkflowSearchAttributesEventAttributes, _Mapping]] = ..., workflow_execution_update_accepted_event_attributes: _Optional[_Union[WorkflowExecutionUpdateAcceptedEventAttributes, _Mapping]] = ..., workflow_execution_update_completed_event_attributes: _Optional[_Union[WorkflowExecutionUpdateCompletedEventAttributes, _Mapping]] = ..., workflow_execution_options_updated_event_attributes: _Optional[_Union[WorkflowExecutionOptionsUpdatedEventAttributes, _Mapping]] = ..., nexus_operation_scheduled_event_attributes: _Optional[_Union[NexusOperationScheduledEventAttributes, _Mapping]] = ..., nexus_operation_started_event_attributes: _Optional[_Union[NexusOperationStartedEventAttributes, _Mapping]] = ..., nexus_operation_completed_event_attributes: _Optional[_Union[NexusOperationCompletedEventAttributes, _Mapping]] = ..., nexus_operation_failed_event_attributes: _Optional[_Union[NexusOperationFailedEventAttributes, _Mapping]] = ..., nexus_operation_canceled_event_attributes: _Optional[_Union[NexusOperationCanceledEventAttributes, _Mapping]] = ..., nexus_operation_timed_out_event_attributes: _Optional[_Union[NexusOperationTimedOutEventAttributes, _Mapping]] = ..., nexus_operation_cancel_requested_event_attributes: _Optional[_Union[NexusOperationCancelRequestedEventAttributes, _Mapping]] = ...) -> None: ...

class History(_message.Message):
    __slots__ = ("events",)
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[HistoryEvent]
    def __init__(self, events: _Optional[_Iterable[_Union[HistoryEvent, _Mapping]]] = ...) -> None: ...

class ScheduleActivityTaskCommandAttributes(_message.Message):
    __slots__ = ("activity_id", "activity_type", "task_queue", "input", "schedule_to_close_timeout_ms", "schedule_to_start_timeout_ms", "start_to_close_timeout_ms", "heartbeat_timeout_ms", "retry_policy", "request_eager_execution", "header")
    ACTIVITY_ID_FIELD_NUMBER: _ClassVar[int]
    ACTIVITY_TYPE_FIELD_NUMBER: _ClassVar[int]
    TASK_QUEUE_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_TO_CLOSE_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_TO_START_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    START_TO_CLOSE_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    RETRY_POLICY_FIELD_NUMBER: _ClassVar[int]
    REQUEST_EAGER_EXECUTION_FIELD_NUMBER: _ClassVar[int]
    HEADER_FIELD_NUMBER: _ClassVar[int]
    activity_id: str
    activity_type: str
    task_queue: str
    input: Payloads
    schedule_to_close_timeout_ms: int
    schedule_to_start_timeout_ms: int
    start_to_close_timeout_ms: int
    heartbeat_timeout_ms: int
    retry_policy: RetryPolicy
    request_eager_execution: bool
    header: Header
    def __init__(self, activity_id: _Optional[str] = ..., activity_type: _Optional[str] = ..., task_queue: _Optional[str] = ..., input: _Optional[_Union[Payloads, _Mapping]] = ..., schedule_to_close_timeout_ms: _Optional[int] = ..., schedule_to_start_timeout_ms: _Optional[int] = ..., start_to_close_timeout_ms: _Optional[int] = ..., heartbeat_timeout_ms: _Optional[int] = ..., retry_policy: _Optional[_Union[RetryPolicy, _Mapping]] = ..., request_eager_execution: _Optional[bool] = ..., header: _Optional[_Union[Header, _Mapping]] = ...) -> None: ...

class RequestCancelActivityTaskCommandAttributes(_message.Message):
    __slots__ = ("scheduled_event_id",)
    SCHEDULED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    scheduled_event_id: int
    def __init__(self, scheduled_event_id: _Optional[int] = ...) -> None: ...

class StartTimerCommandAttributes(_message.Message):
    __slots__ = ("timer_id", "start_to_fire_timeout_ms")
    TIMER_ID_FIELD_NUMBER: _ClassVar[int]
    START_TO_FIRE_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    timer_id: str
    start_to_fire_timeout_ms: int
    def __init__(self, timer_id: _Optional[str] = ..., start_to_fire_timeout_ms: _Optional[int] = ...) -> None: ...

class CancelTimerCommandAttributes(_message.Message):
    __slots__ = ("timer_id",)
    TIMER_ID_FIELD_NUMBER: _ClassVar[int]
    timer_id: str
    def __init__(self, timer_id: _Optional[str] = ...) -> None: ...

class CompleteWorkflowExecutionCommandAttributes(_message.Message):
    __slots__ = ("result",)
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: Payloads
    def __init__(self, result: _Optional[_Union[Payloads, _Mapping]] = ...) -> None: ...

class FailWorkflowExecutionCommandAttributes(_message.Message):
    __slots__ = ("failure",)
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    failure: Failure
    def __init__(self, failure: _Optional[_Union[Failure, _Mapping]] = ...) -> None: ...

class CancelWorkflowExecutionCommandAttributes(_message.Message):
    __slots__ = ("details",)
    DETAILS_FIELD_NUMBER: _ClassVar[int]
    details: Payloads
    def __init__(self, details: _Optional[_Union[Payloads, _Mapping]] = ...) -> None: ...

class RequestCancelExternalWorkflowExecutionCommandAttributes(_message.Message):
    __slots__ = ("namespace", "workflow_id", "run_id", "child_workflow_only", "reason")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_ID_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    CHILD_WORKFLOW_ONLY_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    workflow_id: str
    run_id: str
    child_workflow_only: bool
    reason: str
    def __init__(self, namespace: _Optional[str] = ..., workflow_id: _Optional[str] = ..., run_id: _Optional[str] = ..., child_workflow_only: _Optional[bool] = ..., reason: _Optional[str] = ...) -> None: ...

class RecordMarkerCommandAttributes(_message.Message):
    __slots__ = ("marker_name", "details", "header", "failure")
    class DetailsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: Payloads
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[Payloads, _Mapping]] = ...) -> None: ...
    MARKER_NAME_FIELD_NUMBER: _ClassVar[int]
    DETAILS_FIELD_NUMBER: _ClassVar[int]
    HEADER_FIELD_NUMBER: _ClassVar[int]
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    marker_name: str
    details: _containers.MessageMap[str, Payloads]
    header: Header
    failure: Failure
    def __init__(self, marker_name: _Optional[str] = ..., details: _Optional[_Mapping[str, Payloads]] = ..., header: _Optional[_Union[Header, _Mapping]] = ..., failure: _Optional[_Union[Failure, _Mapping]] = ...) -> None: ...

class ContinueAsNewWorkflowExecutionCommandAttributes(_message.Message):
    __slots__ = ("workflow_type", "task_queue", "input", "run_timeout_ms", "task_timeout_ms", "backoff_start_interval_ms", "memo", "search_attributes", "header")
    WORKFLOW_TYPE_FIELD_NUMBER: _ClassVar[int]
    TASK_QUEUE_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    RUN_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    TASK_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    BACKOFF_START_INTERVAL_MS_FIELD_NUMBER: _ClassVar[int]
    MEMO_FIELD_NUMBER: _ClassVar[int]
    SEARCH_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    HEADER_FIELD_NUMBER: _ClassVar[int]
    workflow_type: str
    task_queue: str
    input: Payloads
    run_timeout_ms: int
    task_timeout_ms: int
    backoff_start_interval_ms: int
    memo: Memo
    search_attributes: SearchAttributes
    header: Header
    def __init__(self, workflow_type: _Optional[str] = ..., task_queue: _Optional[str] = ..., input: _Optional[_Union[Payloads, _Mapping]] = ..., run_timeout_ms: _Optional[int] = ..., task_timeout_ms: _Optional[int] = ..., backoff_start_interval_ms: _Optional[int] = ..., memo: _Optional[_Union[Memo, _Mapping]] = ..., search_attributes: _Optional[_Union[SearchAttributes, _Mapping]] = ..., header: _Optional[_Union[Header, _Mapping]] = ...) -> None: ...

class StartChildWorkflowExecutionCommandAttributes(_message.Message):
    __slots__ = ("namespace", "workflow_id", "workflow_type", "task_queue", "input", "execution_timeout_ms", "run_timeout_ms", "task_timeout_ms", "parent_close_policy", "workflow_id_reuse_policy", "memo", "search_attributes", "header")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_ID_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TYPE_FIELD_NUMBER: _ClassVar[int]
    TASK_QUEUE_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    RUN_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    TASK_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    PARENT_CLOSE_POLICY_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_ID_REUSE_POLICY_FIELD_NUMBER: _ClassVar[int]
    MEMO_FIELD_NUMBER: _ClassVar[int]
    SEARCH_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    HEADER_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    workflow_id: str
    workflow_type: str
    task_queue: str
    input: Payloads
    execution_timeout_ms: int
    run_timeout_ms: int
    task_timeout_ms: int
    parent_close_policy: ParentClosePolicy
    workflow_id_reuse_policy: WorkflowIdReusePolicy
    memo: Memo
    search_attributes: SearchAttributes
    header: Header
    def __init__(self, namespace: _Optional[str] = ..., workflow_id: _Optional[str] = ..., workflow_type: _Optional[str] = ..., task_queue: _Optional[str] = ..., input: _Optional[_Union[Payloads, _Mapping]] = ..., execution_timeout_ms: _Optional[int] = ..., run_timeout_ms: _Optional[int] = ..., task_timeout_ms: _Optional[int] = ..., parent_close_policy: _Optional[_Union[ParentClosePolicy, str]] = ..., workflow_id_reuse_policy: _Optional[_Union[WorkflowIdReusePolicy, str]] = ..., memo: _Optional[_Union[Memo, _Mapping]] = ..., search_attributes: _Optional[_Union[SearchAttributes, _Mapping]] = ..., header: _Optional[_Union[Header, _Mapping]] = ...) -> None: ...

class SignalExternalWorkflowExecutionCommandAttributes(_message.Message):
    __slots__ = ("namespace", "execution", "signal_name", "input", "child_workflow_only", "header")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_FIELD_NUMBER: _ClassVar[int]
    SIGNAL_NAME_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    CHILD_WORKFLOW_ONLY_FIELD_NUMBER: _ClassVar[int]
    HEADER_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    execution: WorkflowExecution
    signal_name: str
    input: Payloads
    child_workflow_only: bool
    header: Header
    def __init__(self, namespace: _Optional[str] = ..., execution: _Optional[_Union[WorkflowExecution, _Mapping]] = ..., signal_name: _Optional[str] = ..., input: _Optional[_Union[Payloads, _Mapping]] = ..., child_workflow_only: _Optional[bool] = ..., header: _Optional[_Union[Header, _Mapping]] = ...) -> None: ...

class UpsertWorkflowSearchAttributesCommandAttributes(_message.Message):
    __slots__ = ("search_attributes",)
    SEARCH_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    search_attributes: SearchAttributes
    def __init__(self, search_attributes: _Optional[_Union[SearchAttributes, _Mapping]] = ...) -> None: ...

class AcceptUpdateCommandAttributes(_message.Message):
    __slots__ = ("update_id",)
    UPDATE_ID_FIELD_NUMBER: _ClassVar[int]
    update_id: str
    def __init__(self, update_id: _Optional[str] = ...) -> None: ...

class CompleteUpdateCommandAttributes(_message.Message):
    __slots__ = ("update_id", "success", "failure")
    UPDATE_ID_FIELD_NUMBER: _ClassVar[int]
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    update_id: str
    success: Payloads
    failure: Failure
    def __init__(self, update_id: _Optional[str] = ..., success: _Optional[_Union[Payloads, _Mapping]] = ..., failure: _Optional[_Union[Failure, _Mapping]] = ...) -> None: ...

class RejectUpdateCommandAttributes(_message.Message):
    __slots__ = ("update_id", "failure")
    UPDATE_ID_FIELD_NUMBER: _ClassVar[int]
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    update_id: str
    failure: Failure
    def __init__(self, update_id: _Optional[str] = ..., failure: _Optional[_Union[Failure, _Mapping]] = ...) -> None: ...

class Command(_message.Message):
    __slots__ = ("command_type", "schedule_activity_task_command_attributes", "start_timer_command_attributes", "complete_workflow_execution_command_attributes", "fail_workflow_execution_command_attributes", "request_cancel_activity_task_command_attributes", "cancel_timer_command_attributes", "cancel_workflow_execution_command_attributes", "request_cancel_external_workflow_execution_command_attributes", "record_marker_command_attributes", "continue_as_new_workflow_execution_command_attributes", "start_child_workflow_execution_command_attributes", "signal_external_workflow_execution_command_attributes", "upsert_workflow_search_attributes_command_attributes", "schedule_nexus_operation_command_attributes", "request_cancel_nexus_operation_command_attributes", "accept_update_command_attributes", "complete_update_command_attributes", "reject_update_command_attributes")
    COMMAND_TYPE_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_ACTIVITY_TASK_COMMAND_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    START_TIMER_COMMAND_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    COMPLETE_WORKFLOW_EXECUTION_COMMAND_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    FAIL_WORKFLOW_EXECUTION_COMMAND_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    REQUEST_CANCEL_ACTIVITY_TASK_COMMAND_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    CANCEL_TIMER_COMMAND_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    CANCEL_WORKFLOW_EXECUTION_COMMAND_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_COMMAND_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    RECORD_MARKER_COMMAND_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    CONTINUE_AS_NEW_WORKFLOW_EXECUTION_COMMAND_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    START_CHILD_WORKFLOW_EXECUTION_COMMAND_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_COMMAND_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    UPSERT_WORKFLOW_SEARCH_ATTRIBUTES_COMMAND_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_NEXUS_OPERATION_COMMAND_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    REQUEST_CANCEL_NEXUS_OPERATION_COMMAND_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    ACCEPT_UPDATE_COMMAND_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    COMPLETE_UPDATE_COMMAND_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    REJECT_UPDATE_COMMAND_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    command_type: CommandType
    schedule_activity_task_command_attributes: ScheduleActivityTaskCommandAttributes
    start_timer_command_attributes: StartTimerCommandAttributes
    complete_workflow_execution_command_attributes: CompleteWorkflowExecutionCommandAttributes
    fail_workflow_execution_command_attributes: FailWorkflowExecutionCommandAttributes
    request_cancel_activity_task_command_attributes: RequestCancelActivityTaskCommandAttributes
    cancel_timer_command_attributes: CancelTimerCommandAttributes
    cancel_workflow_execution_command_attributes: CancelWorkflowExecutionCommandAttributes
    request_cancel_external_workflow_execution_command_attributes: RequestCancelExternalWorkflowExecutionCommandAttributes
    record_marker_command_attributes: RecordMarkerCommandAttributes
    continue_as_new_workflow_execution_command_attributes: ContinueAsNewWorkflowExecutionCommandAttributes
    start_child_workflow_execution_command_attributes: StartChildWorkflowExecutionCommandAttributes
    signal_external_workflow_execution_command_attributes: SignalExternalWorkflowExecutionCommandAttributes
    upsert_workflow_search_attributes_command_attributes: UpsertWorkflowSearchAttributesCommandAttributes
    schedule_nexus_operation_command_attributes: ScheduleNexusOperationCommandAttributes
    request_cancel_nexus_operation_command_attributes: RequestCancelNexusOperationCommandAttributes
    accept_update_command_attributes: AcceptUpdateCommandAttributes
    complete_update_command_attributes: CompleteUpdateCommandAttributes
    reject_update_command_attributes: RejectUpdateCommandAttributes
    def __init__(self, command_type: _Optional[_Union[CommandType, str]] = ..., schedule_activity_task_command_attributes: _Optional[_Union[ScheduleActivityTaskCommandAttributes, _Mapping]] = ..., start_timer_command_attributes: _Optional[_Union[StartTimerCommandAttributes, _Mapping]] = ..., complete_workflow_execution_command_attributes: _Optional[_Union[CompleteWorkflowExecutionCommandAttributes, _Mapping]] = ..., fail_workflow_execution_command_attributes: _Optional[_Union[FailWorkflowExecutionCommandAttributes, _Mapping]] = ..., request_cancel_activity_task_command_attributes: _Optional[_Union[RequestCancelActivityTaskCommandAttributes, _Mapping]] = ..., cancel_timer_command_attributes: _Optional[_Union[CancelTimerCommandAttributes, _Mapping]] = ..., cancel_workflow_execution_command_attributes: _Optional[_Union[CancelWorkflowExecutionCommandAttributes, _Mapping]] = ..., request_cancel_external_workflow_execution_command_attributes: _Optional[_Union[RequestCancelExternalWorkflowExecutionCommandAttributes, _Mapping]] = ..., record_marker_command_attributes: _Optional[_Union[RecordMarkerCommandAttributes, _Mapping]] = ..., continue_as_new_workflow_execution_command_attributes: _Optional[_Union[ContinueAsNewWorkflowExecutionCommandAttributes, _Mapping]] = ..., start_child_workflow_execution_command_attributes: _Optional[_Union[StartChildWorkflowExecutionCommandAttributes, _Mapping]] = ..., signal_external_workflow_execution_command_attributes: _Optional[_Union[SignalExternalWorkflowExecutionCommandAttributes, _Mapping]] = ..., upsert_workflow_search_attributes_command_attributes: _Optional[_Union[UpsertWorkflowSearchAttributesCommandAttributes, _Mapping]] = ..., schedule_nexus_operation_command_attributes: _Optional[_Union[ScheduleNexusOperationCommandAttributes, _Mapping]] = ..., request_cancel_nexus_operation_command_attributes: _Optional[_Union[RequestCancelNexusOperationCommandAttributes, _Mapping]] = ..., accept_update_command_attributes: _Optional[_Union[AcceptUpdateCommandAttributes, _Mapping]] = ..., complete_update_command_attributes: _Optional[_Union[CompleteUpdateCommandAttributes, _Mapping]] = ..., reject_update_command_attributes: _Optional[_Union[RejectUpdateCommandAttributes, _Mapping]] = ...) -> None: ...

class UpdateRequest(_message.Message):
    __slots__ = ("update_id", "name", "input", "header", "identity")
    UPDATE_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    HEADER_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    update_id: str
    name: str
    input: Payloads
    header: Header
    identity: str
    def __init__(self, update_id: _Optional[str] = ..., name: _Optional[str] = ..., input: _Optional[_Union[Payloads, _Mapping]] = ..., header: _Optional[_Union[Header, _Mapping]] = ..., identity: _Optional[str] = ...) -> None: ...

class WorkflowQuery(_message.Message):
    __slots__ = ("query_type", "query_args", "header")
    QUERY_TYPE_FIELD_NUMBER: _ClassVar[int]
    QUERY_ARGS_FIELD_NUMBER: _ClassVar[int]
    HEADER_FIELD_NUMBER: _ClassVar[int]
    query_type: str
    query_args: Payloads
    header: Header
    def __init__(self, query_type: _Optional[str] = ..., query_args: _Optional[_Union[Payloads, _Mapping]] = ..., header: _Optional[_Union[Header, _Mapping]] = ...) -> None: ...

class WorkflowExecutionAlreadyStartedFailure(_message.Message):
    __slots__ = ("start_request_id", "run_id")
    START_REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    start_request_id: str
    run_id: str
    def __init__(self, start_request_id: _Optional[str] = ..., run_id: _Optional[str] = ...) -> None: ...

class PendingActivityAttempt(_message.Message):
    __slots__ = ("scheduled_event_id", "attempt", "attempt_scheduled_time_ms", "last_failure", "last_worker_identity")
    SCHEDULED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_SCHEDULED_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    LAST_FAILURE_FIELD_NUMBER: _ClassVar[int]
    LAST_WORKER_IDENTITY_FIELD_NUMBER: _ClassVar[int]
    scheduled_event_id: int
    attempt: int
    attempt_scheduled_time_ms: int
    last_failure: Failure
    last_worker_identity: str
    def __init__(self, scheduled_event_id: _Optional[int] = ..., attempt: _Optional[int] = ..., attempt_scheduled_time_ms: _Optional[int] = ..., last_failure: _Optional[_Union[Failure, _Mapping]] = ..., last_worker_identity: _Optional[str] = ...) -> None: ...

class ActivityRetryState(_message.Message):
    __slots__ = ("activities",)
    ACTIVITIES_FIELD_NUMBER: _ClassVar[int]
    activities: _containers.RepeatedCompositeFieldContainer[PendingActivityAttempt]
    def __init__(self, activities: _Optional[_Iterable[_Union[PendingActivityAttempt, _Mapping]]] = ...) -> None: ...

class ScheduleIntervalSpec(_message.Message):
    __slots__ = ("every_ms", "offset_ms")
    EVERY_MS_FIELD_NUMBER: _ClassVar[int]
    OFFSET_MS_FIELD_NUMBER: _ClassVar[int]
    every_ms: int
    offset_ms: int
    def __init__(self, every_ms: _Optional[int] = ..., offset_ms: _Optional[int] = ...) -> None: ...

class ScheduleSpec(_message.Message):
    __slots__ = ("cron_expressions", "intervals", "time_zone_name", "jitter_ms", "start_at_ms", "end_at_ms")
    CRON_EXPRESSIONS_FIELD_NUMBER: _ClassVar[int]
    INTERVALS_FIELD_NUMBER: _ClassVar[int]
    TIME_ZONE_NAME_FIELD_NUMBER: _ClassVar[int]
    JITTER_MS_FIELD_NUMBER: _ClassVar[int]
    START_AT_MS_FIELD_NUMBER: _ClassVar[int]
    END_AT_MS_FIELD_NUMBER: _ClassVar[int]
    cron_expressions: _containers.RepeatedScalarFieldContainer[str]
    intervals: _containers.RepeatedCompositeFieldContainer[ScheduleIntervalSpec]
    time_zone_name: str
    jitter_ms: int
    start_at_ms: int
    end_at_ms: int
    def __init__(self, cron_expressions: _Optional[_Iterable[str]] = ..., intervals: _Optional[_Iterable[_Union[ScheduleIntervalSpec, _Mapping]]] = ..., time_zone_name: _Optional[str] = ..., jitter_ms: _Optional[int] = ..., start_at_ms: _Optional[int] = ..., end_at_ms: _Optional[int] = ...) -> None: ...

class ScheduleActionStartWorkflow(_message.Message):
    __slots__ = ("workflow_id", "workflow_type", "task_queue", "input", "execution_timeout_ms", "run_timeout_ms", "task_timeout_ms", "memo", "search_attributes", "header")
    WORKFLOW_ID_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TYPE_FIELD_NUMBER: _ClassVar[int]
    TASK_QUEUE_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    RUN_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    TASK_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    MEMO_FIELD_NUMBER: _ClassVar[int]
    SEARCH_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    HEADER_FIELD_NUMBER: _ClassVar[int]
    workflow_id: str
    workflow_type: str
    task_queue: str
    input: Payloads
    execution_timeout_ms: int
    run_timeout_ms: int
    task_timeout_ms: int
    memo: Memo
    search_attributes: SearchAttributes
    header: Header
    def __init__(self, workflow_id: _Optional[str] = ..., workflow_type: _Optional[str] = ..., task_queue: _Optional[str] = ..., input: _Optional[_Union[Payloads, _Mapping]] = ..., execution_timeout_ms: _Optional[int] = ..., run_timeout_ms: _Optional[int] = ..., task_timeout_ms: _Optional[int] = ..., memo: _Optional[_Union[Memo, _Mapping]] = ..., search_attributes: _Optional[_Union[SearchAttributes, _Mapping]] = ..., header: _Optional[_Union[Header, _Mapping]] = ...) -> None: ...

class SchedulePolicies(_message.Message):
    __slots__ = ("overlap_policy", "catchup_window_ms", "pause_on_failure")
    OVERLAP_POLICY_FIELD_NUMBER: _ClassVar[int]
    CATCHUP_WINDOW_MS_FIELD_NUMBER: _ClassVar[int]
    PAUSE_ON_FAILURE_FIELD_NUMBER: _ClassVar[int]
    overlap_policy: ScheduleOverlapPolicy
    catchup_window_ms: int
    pause_on_failure: bool
    def __init__(self, overlap_policy: _Optional[_Union[ScheduleOverlapPolicy, str]] = ..., catchup_window_ms: _Optional[int] = ..., pause_on_failure: _Optional[bool] = ...) -> None: ...

class ScheduleState(_message.Message):
    __slots__ = ("paused", "notes", "remaining_actions")
    PAUSED_FIELD_NUMBER: _ClassVar[int]
    NOTES_FIELD_NUMBER: _ClassVar[int]
    REMAINING_ACTIONS_FIELD_NUMBER: _ClassVar[int]
    paused: bool
    notes: str
    remaining_actions: int
    def __init__(self, paused: _Optional[bool] = ..., notes: _Optional[str] = ..., remaining_actions: _Optional[int] = ...) -> None: ...

class Schedule(_message.Message):
    __slots__ = ("spec", "action", "policies", "state")
    SPEC_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    POLICIES_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    spec: ScheduleSpec
    action: ScheduleActionStartWorkflow
    policies: SchedulePolicies
    state: ScheduleState
    def __init__(self, spec: _Optional[_Union[ScheduleSpec, _Mapping]] = ..., action: _Optional[_Union[ScheduleActionStartWorkflow, _Mapping]] = ..., policies: _Optional[_Union[SchedulePolicies, _Mapping]] = ..., state: _Optional[_Union[ScheduleState, _Mapping]] = ...) -> None: ...

class ScheduleActionResult(_message.Message):
    __slots__ = ("schedule_time_ms", "actual_time_ms", "workflow_id", "run_id")
    SCHEDULE_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    ACTUAL_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_ID_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    schedule_time_ms: int
    actual_time_ms: int
    workflow_id: str
    run_id: str
    def __init__(self, schedule_time_ms: _Optional[int] = ..., actual_time_ms: _Optional[int] = ..., workflow_id: _Optional[str] = ..., run_id: _Optional[str] = ...) -> None: ...

class ScheduleInfo(_message.Message):
    __slots__ = ("action_count", "missed_catchup_window", "overlap_skipped", "running_workflows", "recent_actions", "future_action_times_ms", "create_time_ms", "update_time_ms")
    ACTION_COUNT_FIELD_NUMBER: _ClassVar[int]
    MISSED_CATCHUP_WINDOW_FIELD_NUMBER: _ClassVar[int]
    OVERLAP_SKIPPED_FIELD_NUMBER: _ClassVar[int]
    RUNNING_WORKFLOWS_FIELD_NUMBER: _ClassVar[int]
    RECENT_ACTIONS_FIELD_NUMBER: _ClassVar[int]
    FUTURE_ACTION_TIMES_MS_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    action_count: int
    missed_catchup_window: int
    overlap_skipped: int
    running_workflows: _containers.RepeatedCompositeFieldContainer[WorkflowExecution]
    recent_actions: _containers.RepeatedCompositeFieldContainer[ScheduleActionResult]
    future_action_times_ms: _containers.RepeatedScalarFieldContainer[int]
    create_time_ms: int
    update_time_ms: int
    def __init__(self, action_count: _Optional[int] = ..., missed_catchup_window: _Optional[int] = ..., overlap_skipped: _Optional[int] = ..., running_workflows: _Optional[_Iterable[_Union[WorkflowExecution, _Mapping]]] = ..., recent_actions: _Optional[_Iterable[_Union[ScheduleActionResult, _Mapping]]] = ..., future_action_times_ms: _Optional[_Iterable[int]] = ..., create_time_ms: _Optional[int] = ..., update_time_ms: _Optional[int] = ...) -> None: ...

class ScheduleBufferedAction(_message.Message):
    __slots__ = ("nominal_time_ms", "actual_time_ms", "overlap_policy", "manual")
    NOMINAL_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    ACTUAL_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    OVERLAP_POLICY_FIELD_NUMBER: _ClassVar[int]
    MANUAL_FIELD_NUMBER: _ClassVar[int]
    nominal_time_ms: int
    actual_time_ms: int
    overlap_policy: ScheduleOverlapPolicy
    manual: bool
    def __init__(self, nominal_time_ms: _Optional[int] = ..., actual_time_ms: _Optional[int] = ..., overlap_policy: _Optional[_Union[ScheduleOverlapPolicy, str]] = ..., manual: _Optional[bool] = ...) -> None: ...

class ScheduleRecord(_message.Message):
    __slots__ = ("schedule", "info", "last_processed_ms", "buffered", "timer_fire_time_ms", "timer_task_id", "namespace_name", "conflict_token", "create_request_id")
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    INFO_FIELD_NUMBER: _ClassVar[int]
    LAST_PROCESSED_MS_FIELD_NUMBER: _ClassVar[int]
    BUFFERED_FIELD_NUMBER: _ClassVar[int]
    TIMER_FIRE_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    TIMER_TASK_ID_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_NAME_FIELD_NUMBER: _ClassVar[int]
    CONFLICT_TOKEN_FIELD_NUMBER: _ClassVar[int]
    CREATE_REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    schedule: Schedule
    info: ScheduleInfo
    last_processed_ms: int
    buffered: _containers.RepeatedCompositeFieldContainer[ScheduleBufferedAction]
    timer_fire_time_ms: int
    timer_task_id: int
    namespace_name: str
    conflict_token: int
    create_request_id: str
    def __init__(self, schedule: _Optional[_Union[Schedule, _Mapping]] = ..., info: _Optional[_Union[ScheduleInfo, _Mapping]] = ..., last_processed_ms: _Optional[int] = ..., buffered: _Optional[_Iterable[_Union[ScheduleBufferedAction, _Mapping]]] = ..., timer_fire_time_ms: _Optional[int] = ..., timer_task_id: _Optional[int] = ..., namespace_name: _Optional[str] = ..., conflict_token: _Optional[int] = ..., create_request_id: _Optional[str] = ...) -> None: ...

class EndpointTarget(_message.Message):
    __slots__ = ("worker",)
    class Worker(_message.Message):
        __slots__ = ("namespace", "task_queue")
        NAMESPACE_FIELD_NUMBER: _ClassVar[int]
        TASK_QUEUE_FIELD_NUMBER: _ClassVar[int]
        namespace: str
        task_queue: str
        def __init__(self, namespace: _Optional[str] = ..., task_queue: _Optional[str] = ...) -> None: ...
    WORKER_FIELD_NUMBER: _ClassVar[int]
    worker: EndpointTarget.Worker
    def __init__(self, worker: _Optional[_Union[EndpointTarget.Worker, _Mapping]] = ...) -> None: ...

class EndpointSpec(_message.Message):
    __slots__ = ("name", "description", "target", "allowed_caller_namespaces")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    ALLOWED_CALLER_NAMESPACES_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: Payload
    target: EndpointTarget
    allowed_caller_namespaces: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, name: _Optional[str] = ..., description: _Optional[_Union[Payload, _Mapping]] = ..., target: _Optional[_Union[EndpointTarget, _Mapping]] = ..., allowed_caller_namespaces: _Optional[_Iterable[str]] = ...) -> None: ...

class Endpoint(_message.Message):
    __slots__ = ("version", "id", "spec", "created_time_ms", "last_modified_time_ms")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    CREATED_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    LAST_MODIFIED_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    version: int
    id: str
    spec: EndpointSpec
    created_time_ms: int
    last_modified_time_ms: int
    def __init__(self, version: _Optional[int] = ..., id: _Optional[str] = ..., spec: _Optional[_Union[EndpointSpec, _Mapping]] = ..., created_time_ms: _Optional[int] = ..., last_modified_time_ms: _Optional[int] = ...) -> None: ...

class NexusOperationFailureInfo(_message.Message):
    __slots__ = ("scheduled_event_id", "endpoint", "service", "operation", "operation_token")
    SCHEDULED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    ENDPOINT_FIELD_NUMBER: _ClassVar[int]
    SERVICE_FIELD_NUMBER: _ClassVar[int]
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    OPERATION_TOKEN_FIELD_NUMBER: _ClassVar[int]
    scheduled_event_id: int
    endpoint: str
    service: str
    operation: str
    operation_token: str
    def __init__(self, scheduled_event_id: _Optional[int] = ..., endpoint: _Optional[str] = ..., service: _Optional[str] = ..., operation: _Optional[str] = ..., operation_token: _Optional[str] = ...) -> None: ...

class NexusHandlerFailureInfo(_message.Message):
    __slots__ = ("type", "retry_behavior")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    RETRY_BEHAVIOR_FIELD_NUMBER: _ClassVar[int]
    type: str
    retry_behavior: NexusHandlerErrorRetryBehavior
    def __init__(self, type: _Optional[str] = ..., retry_behavior: _Optional[_Union[NexusHandlerErrorRetryBehavior, str]] = ...) -> None: ...

class NexusHandlerError(_message.Message):
    __slots__ = ("error_type", "failure", "retry_behavior")
    ERROR_TYPE_FIELD_NUMBER: _ClassVar[int]
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    RETRY_BEHAVIOR_FIELD_NUMBER: _ClassVar[int]
    error_type: str
    failure: Failure
    retry_behavior: NexusHandlerErrorRetryBehavior
    def __init__(self, error_type: _Optional[str] = ..., failure: _Optional[_Union[Failure, _Mapping]] = ..., retry_behavior: _Optional[_Union[NexusHandlerErrorRetryBehavior, str]] = ...) -> None: ...

class NexusUnsuccessfulOperationError(_message.Message):
    __slots__ = ("operation_state", "failure")
    OPERATION_STATE_FIELD_NUMBER: _ClassVar[int]
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    operation_state: str
    failure: Failure
    def __init__(self, operation_state: _Optional[str] = ..., failure: _Optional[_Union[Failure, _Mapping]] = ...) -> None: ...

class Callback(_message.Message):
    __slots__ = ("nexus",)
    class Nexus(_message.Message):
        __slots__ = ("url", "header")
        class HeaderEntry(_message.Message):
            __slots__ = ("key", "value")
            KEY_FIELD_NUMBER: _ClassVar[int]
            VALUE_FIELD_NUMBER: _ClassVar[int]
            key: str
            value: str
            def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
        URL_FIELD_NUMBER: _ClassVar[int]
        HEADER_FIELD_NUMBER: _ClassVar[int]
        url: str
        header: _containers.ScalarMap[str, str]
        def __init__(self, url: _Optional[str] = ..., header: _Optional[_Mapping[str, str]] = ...) -> None: ...
    NEXUS_FIELD_NUMBER: _ClassVar[int]
    nexus: Callback.Nexus
    def __init__(self, nexus: _Optional[_Union[Callback.Nexus, _Mapping]] = ...) -> None: ...

class NexusStartOperationRequest(_message.Message):
    __slots__ = ("service", "operation", "request_id", "callback", "payload", "callback_header")
    class CallbackHeaderEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    SERVICE_FIELD_NUMBER: _ClassVar[int]
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    CALLBACK_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    CALLBACK_HEADER_FIELD_NUMBER: _ClassVar[int]
    service: str
    operation: str
    request_id: str
    callback: str
    payload: Payload
    callback_header: _containers.ScalarMap[str, str]
    def __init__(self, service: _Optional[str] = ..., operation: _Optional[str] = ..., request_id: _Optional[str] = ..., callback: _Optional[str] = ..., payload: _Optional[_Union[Payload, _Mapping]] = ..., callback_header: _Optional[_Mapping[str, str]] = ...) -> None: ...

class NexusCancelOperationRequest(_message.Message):
    __slots__ = ("service", "operation", "operation_token")
    SERVICE_FIELD_NUMBER: _ClassVar[int]
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    OPERATION_TOKEN_FIELD_NUMBER: _ClassVar[int]
    service: str
    operation: str
    operation_token: str
    def __init__(self, service: _Optional[str] = ..., operation: _Optional[str] = ..., operation_token: _Optional[str] = ...) -> None: ...

class NexusRequest(_message.Message):
    __slots__ = ("header", "scheduled_time_ms", "start_operation", "cancel_operation")
    class HeaderEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    HEADER_FIELD_NUMBER: _ClassVar[int]
    SCHEDULED_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    START_OPERATION_FIELD_NUMBER: _ClassVar[int]
    CANCEL_OPERATION_FIELD_NUMBER: _ClassVar[int]
    header: _containers.ScalarMap[str, str]
    scheduled_time_ms: int
    start_operation: NexusStartOperationRequest
    cancel_operation: NexusCancelOperationRequest
    def __init__(self, header: _Optional[_Mapping[str, str]] = ..., scheduled_time_ms: _Optional[int] = ..., start_operation: _Optional[_Union[NexusStartOperationRequest, _Mapping]] = ..., cancel_operation: _Optional[_Union[NexusCancelOperationRequest, _Mapping]] = ...) -> None: ...

class NexusStartOperationResponse(_message.Message):
    __slots__ = ("sync_success", "async_success", "operation_error")
    class Sync(_message.Message):
        __slots__ = ("payload",)
        PAYLOAD_FIELD_NUMBER: _ClassVar[int]
        payload: Payload
        def __init__(self, payload: _Optional[_Union[Payload, _Mapping]] = ...) -> None: ...
    class Async(_message.Message):
        __slots__ = ("operation_token",)
        OPERATION_TOKEN_FIELD_NUMBER: _ClassVar[int]
        operation_token: str
        def __init__(self, operation_token: _Optional[str] = ...) -> None: ...
    SYNC_SUCCESS_FIELD_NUMBER: _ClassVar[int]
    ASYNC_SUCCESS_FIELD_NUMBER: _ClassVar[int]
    OPERATION_ERROR_FIELD_NUMBER: _ClassVar[int]
    sync_success: NexusStartOperationResponse.Sync
    async_success: NexusStartOperationResponse.Async
    operation_error: NexusUnsuccessfulOperationError
    def __init__(self, sync_success: _Optional[_Union[NexusStartOperationResponse.Sync, _Mapping]] = ..., async_success: _Optional[_Union[NexusStartOperationResponse.Async, _Mapping]] = ..., operation_error: _Optional[_Union[NexusUnsuccessfulOperationError, _Mapping]] = ...) -> None: ...

class NexusCancelOperationResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class NexusResponse(_message.Message):
    __slots__ = ("start_operation", "cancel_operation")
    START_OPERATION_FIELD_NUMBER: _ClassVar[int]
    CANCEL_OPERATION_FIELD_NUMBER: _ClassVar[int]
    start_operation: NexusStartOperationResponse
    cancel_operation: NexusCancelOperationResponse
    def __init__(self, start_operation: _Optional[_Union[NexusStartOperationResponse, _Mapping]] = ..., cancel_operation: _Optional[_Union[NexusCancelOperationResponse, _Mapping]] = ...) -> None: ...

class ScheduleNexusOperationCommandAttributes(_message.Message):
    __slots__ = ("endpoint", "service", "operation", "input", "schedule_to_close_timeout_ms", "nexus_header")
    class NexusHeaderEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ENDPOINT_FIELD_NUMBER: _ClassVar[int]
    SERVICE_FIELD_NUMBER: _ClassVar[int]
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_TO_CLOSE_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    NEXUS_HEADER_FIELD_NUMBER: _ClassVar[int]
    endpoint: str
    service: str
    operation: str
    input: Payload
    schedule_to_close_timeout_ms: int
    nexus_header: _containers.ScalarMap[str, str]
    def __init__(self, endpoint: _Optional[str] = ..., service: _Optional[str] = ..., operation: _Optional[str] = ..., input: _Optional[_Union[Payload, _Mapping]] = ..., schedule_to_close_timeout_ms: _Optional[int] = ..., nexus_header: _Optional[_Mapping[str, str]] = ...) -> None: ...

class RequestCancelNexusOperationCommandAttributes(_message.Message):
    __slots__ = ("scheduled_event_id",)
    SCHEDULED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    scheduled_event_id: int
    def __init__(self, scheduled_event_id: _Optional[int] = ...) -> None: ...

class NexusOperationScheduledEventAttributes(_message.Message):
    __slots__ = ("endpoint", "service", "operation", "input", "schedule_to_close_timeout_ms", "nexus_header", "workflow_task_completed_event_id", "request_id", "endpoint_id")
    class NexusHeaderEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ENDPOINT_FIELD_NUMBER: _ClassVar[int]
    SERVICE_FIELD_NUMBER: _ClassVar[int]
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_TO_CLOSE_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    NEXUS_HEADER_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TASK_COMPLETED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    ENDPOINT_ID_FIELD_NUMBER: _ClassVar[int]
    endpoint: str
    service: str
    operation: str
    input: Payload
    schedule_to_close_timeout_ms: int
    nexus_header: _containers.ScalarMap[str, str]
    workflow_task_completed_event_id: int
    request_id: str
    endpoint_id: str
    def __init__(self, endpoint: _Optional[str] = ..., service: _Optional[str] = ..., operation: _Optional[str] = ..., input: _Optional[_Union[Payload, _Mapping]] = ..., schedule_to_close_timeout_ms: _Optional[int] = ..., nexus_header: _Optional[_Mapping[str, str]] = ..., workflow_task_completed_event_id: _Optional[int] = ..., request_id: _Optional[str] = ..., endpoint_id: _Optional[str] = ...) -> None: ...

class NexusOperationStartedEventAttributes(_message.Message):
    __slots__ = ("scheduled_event_id", "operation_token", "request_id")
    SCHEDULED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    OPERATION_TOKEN_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    scheduled_event_id: int
    operation_token: str
    request_id: str
    def __init__(self, scheduled_event_id: _Optional[int] = ..., operation_token: _Optional[str] = ..., request_id: _Optional[str] = ...) -> None: ...

class NexusOperationCompletedEventAttributes(_message.Message):
    __slots__ = ("scheduled_event_id", "result", "request_id")
    SCHEDULED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    scheduled_event_id: int
    result: Payload
    request_id: str
    def __init__(self, scheduled_event_id: _Optional[int] = ..., result: _Optional[_Union[Payload, _Mapping]] = ..., request_id: _Optional[str] = ...) -> None: ...

class NexusOperationFailedEventAttributes(_message.Message):
    __slots__ = ("scheduled_event_id", "failure", "request_id")
    SCHEDULED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    scheduled_event_id: int
    failure: Failure
    request_id: str
    def __init__(self, scheduled_event_id: _Optional[int] = ..., failure: _Optional[_Union[Failure, _Mapping]] = ..., request_id: _Optional[str] = ...) -> None: ...

class NexusOperationCanceledEventAttributes(_message.Message):
    __slots__ = ("scheduled_event_id", "failure", "request_id")
    SCHEDULED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    scheduled_event_id: int
    failure: Failure
    request_id: str
    def __init__(self, scheduled_event_id: _Optional[int] = ..., failure: _Optional[_Union[Failure, _Mapping]] = ..., request_id: _Optional[str] = ...) -> None: ...

class NexusOperationTimedOutEventAttributes(_message.Message):
    __slots__ = ("scheduled_event_id", "failure", "request_id")
    SCHEDULED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    scheduled_event_id: int
    failure: Failure
    request_id: str
    def __init__(self, scheduled_event_id: _Optional[int] = ..., failure: _Optional[_Union[Failure, _Mapping]] = ..., request_id: _Optional[str] = ...) -> None: ...

class NexusOperationCancelRequestedEventAttributes(_message.Message):
    __slots__ = ("scheduled_event_id", "workflow_task_completed_event_id")
    SCHEDULED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TASK_COMPLETED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    scheduled_event_id: int
    workflow_task_completed_event_id: int
    def __init__(self, scheduled_event_id: _Optional[int] = ..., workflow_task_completed_event_id: _Optional[int] = ...) -> None: ...
