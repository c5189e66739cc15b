from google.protobuf import field_mask_pb2 as _field_mask_pb2
from spindle.api import messages_pb2 as _messages_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SearchAttributeType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SEARCH_ATTRIBUTE_TYPE_UNSPECIFIED: _ClassVar[SearchAttributeType]
    SEARCH_ATTRIBUTE_TYPE_KEYWORD: _ClassVar[SearchAttributeType]
    SEARCH_ATTRIBUTE_TYPE_TEXT: _ClassVar[SearchAttributeType]
    SEARCH_ATTRIBUTE_TYPE_INT: _ClassVar[SearchAttributeType]
    SEARCH_ATTRIBUTE_TYPE_DOUBLE: _ClassVar[SearchAttributeType]
    SEARCH_ATTRIBUTE_TYPE_BOOL: _ClassVar[SearchAttributeType]
    SEARCH_ATTRIBUTE_TYPE_DATETIME: _ClassVar[SearchAttributeType]
    SEARCH_ATTRIBUTE_TYPE_KEYWORD_LIST: _ClassVar[SearchAttributeType]

class VersionDrainageStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    VERSION_DRAINAGE_STATUS_UNSPECIFIED: _ClassVar[VersionDrainageStatus]
    VERSION_DRAINAGE_STATUS_DRAINING: _ClassVar[VersionDrainageStatus]
    VERSION_DRAINAGE_STATUS_DRAINED: _ClassVar[VersionDrainageStatus]

class WorkerDeploymentVersionStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    WORKER_DEPLOYMENT_VERSION_STATUS_UNSPECIFIED: _ClassVar[WorkerDeploymentVersionStatus]
    WORKER_DEPLOYMENT_VERSION_STATUS_INACTIVE: _ClassVar[WorkerDeploymentVersionStatus]
    WORKER_DEPLOYMENT_VERSION_STATUS_CURRENT: _ClassVar[WorkerDeploymentVersionStatus]
    WORKER_DEPLOYMENT_VERSION_STATUS_RAMPING: _ClassVar[WorkerDeploymentVersionStatus]
    WORKER_DEPLOYMENT_VERSION_STATUS_DRAINING: _ClassVar[WorkerDeploymentVersionStatus]
    WORKER_DEPLOYMENT_VERSION_STATUS_DRAINED: _ClassVar[WorkerDeploymentVersionStatus]

class BatchOperationType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    BATCH_OPERATION_TYPE_UNSPECIFIED: _ClassVar[BatchOperationType]
    BATCH_OPERATION_TYPE_TERMINATE: _ClassVar[BatchOperationType]
    BATCH_OPERATION_TYPE_CANCEL: _ClassVar[BatchOperationType]
    BATCH_OPERATION_TYPE_SIGNAL: _ClassVar[BatchOperationType]
    BATCH_OPERATION_TYPE_DELETE: _ClassVar[BatchOperationType]
    BATCH_OPERATION_TYPE_RESET: _ClassVar[BatchOperationType]

class BatchOperationState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    BATCH_OPERATION_STATE_UNSPECIFIED: _ClassVar[BatchOperationState]
    BATCH_OPERATION_STATE_RUNNING: _ClassVar[BatchOperationState]
    BATCH_OPERATION_STATE_COMPLETED: _ClassVar[BatchOperationState]
    BATCH_OPERATION_STATE_FAILED: _ClassVar[BatchOperationState]

class BatchJobPhase(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    BATCH_JOB_PHASE_UNSPECIFIED: _ClassVar[BatchJobPhase]
    BATCH_JOB_PHASE_LIVE: _ClassVar[BatchJobPhase]
    BATCH_JOB_PHASE_ARCHIVE: _ClassVar[BatchJobPhase]
    BATCH_JOB_PHASE_DONE: _ClassVar[BatchJobPhase]
SEARCH_ATTRIBUTE_TYPE_UNSPECIFIED: SearchAttributeType
SEARCH_ATTRIBUTE_TYPE_KEYWORD: SearchAttributeType
SEARCH_ATTRIBUTE_TYPE_TEXT: SearchAttributeType
SEARCH_ATTRIBUTE_TYPE_INT: SearchAttributeType
SEARCH_ATTRIBUTE_TYPE_DOUBLE: SearchAttributeType
SEARCH_ATTRIBUTE_TYPE_BOOL: SearchAttributeType
SEARCH_ATTRIBUTE_TYPE_DATETIME: SearchAttributeType
SEARCH_ATTRIBUTE_TYPE_KEYWORD_LIST: SearchAttributeType
VERSION_DRAINAGE_STATUS_UNSPECIFIED: VersionDrainageStatus
VERSION_DRAINAGE_STATUS_DRAINING: VersionDrainageStatus
VERSION_DRAINAGE_STATUS_DRAINED: VersionDrainageStatus
WORKER_DEPLOYMENT_VERSION_STATUS_UNSPECIFIED: WorkerDeploymentVersionStatus
WORKER_DEPLOYMENT_VERSION_STATUS_INACTIVE: WorkerDeploymentVersionStatus
WORKER_DEPLOYMENT_VERSION_STATUS_CURRENT: WorkerDeploymentVersionStatus
WORKER_DEPLOYMENT_VERSION_STATUS_RAMPING: WorkerDeploymentVersionStatus
WORKER_DEPLOYMENT_VERSION_STATUS_DRAINING: WorkerDeploymentVersionStatus
WORKER_DEPLOYMENT_VERSION_STATUS_DRAINED: WorkerDeploymentVersionStatus
BATCH_OPERATION_TYPE_UNSPECIFIED: BatchOperationType
BATCH_OPERATION_TYPE_TERMINATE: BatchOperationType
BATCH_OPERATION_TYPE_CANCEL: BatchOperationType
BATCH_OPERATION_TYPE_SIGNAL: BatchOperationType
BATCH_OPERATION_TYPE_DELETE: BatchOperationType
BATCH_OPERATION_TYPE_RESET: BatchOperationType
BATCH_OPERATION_STATE_UNSPECIFIED: BatchOperationState
BATCH_OPERATION_STATE_RUNNING: BatchOperationState
BATCH_OPERATION_STATE_COMPLETED: BatchOperationState
BATCH_OPERATION_STATE_FAILED: BatchOperationState
BATCH_JOB_PHASE_UNSPECIFIED: BatchJobPhase
BATCH_JOB_PHASE_LIVE: BatchJobPhase
BATCH_JOB_PHASE_ARCHIVE: BatchJobPhase
BATCH_JOB_PHASE_DONE: BatchJobPhase

class NamespaceInfo(_message.Message):
    __slots__ = ("name", "id", "description", "owner_email", "retention_ms", "search_attributes", "archival_uri", "state", "create_time_ms", "update_time_ms", "rps_limit")
    class SearchAttributesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: SearchAttributeType
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[SearchAttributeType, str]] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    OWNER_EMAIL_FIELD_NUMBER: _ClassVar[int]
    RETENTION_MS_FIELD_NUMBER: _ClassVar[int]
    SEARCH_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    ARCHIVAL_URI_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    RPS_LIMIT_FIELD_NUMBER: _ClassVar[int]
    name: str
    id: str
    description: str
    owner_email: str
    retention_ms: int
    search_attributes: _containers.ScalarMap[str, SearchAttributeType]
    archival_uri: str
    state: str
    create_time_ms: int
    update_time_ms: int
    rps_limit: float
    def __init__(self, name: _Optional[str] = ..., id: _Optional[str] = ..., description: _Optional[str] = ..., owner_email: _Optional[str] = ..., retention_ms: _Optional[int] = ..., search_attributes: _Optional[_Mapping[str, SearchAttributeType]] = ..., archival_uri: _Optional[str] = ..., state: _Optional[str] = ..., create_time_ms: _Optional[int] = ..., update_time_ms: _Optional[int] = ..., rps_limit: _Optional[float] = ...) -> None: ...

class CreateNamespaceRequest(_message.Message):
    __slots__ = ("name", "description", "owner_email", "retention_ms", "search_attributes", "archival_uri", "rps_limit")
    class SearchAttributesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: SearchAttributeType
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[SearchAttributeType, str]] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    OWNER_EMAIL_FIELD_NUMBER: _ClassVar[int]
    RETENTION_MS_FIELD_NUMBER: _ClassVar[int]
    SEARCH_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    ARCHIVAL_URI_FIELD_NUMBER: _ClassVar[int]
    RPS_LIMIT_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    owner_email: str
    retention_ms: int
    search_attributes: _containers.ScalarMap[str, SearchAttributeType]
    archival_uri: str
    rps_limit: float
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., owner_email: _Optional[str] = ..., retention_ms: _Optional[int] = ..., search_attributes: _Optional[_Mapping[str, SearchAttributeType]] = ..., archival_uri: _Optional[str] = ..., rps_limit: _Optional[float] = ...) -> None: ...

class CreateNamespaceResponse(_message.Message):
    __slots__ = ("namespace_info",)
    NAMESPACE_INFO_FIELD_NUMBER: _ClassVar[int]
    namespace_info: NamespaceInfo
    def __init__(self, namespace_info: _Optional[_Union[NamespaceInfo, _Mapping]] = ...) -> None: ...

class DescribeNamespaceRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class DescribeNamespaceResponse(_message.Message):
    __slots__ = ("namespace_info",)
    NAMESPACE_INFO_FIELD_NUMBER: _ClassVar[int]
    namespace_info: NamespaceInfo
    def __init__(self, namespace_info: _Optional[_Union[NamespaceInfo, _Mapping]] = ...) -> None: ...

class ListNamespacesRequest(_message.Message):
    __slots__ = ("page_size", "next_page_token")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    next_page_token: bytes
    def __init__(self, page_size: _Optional[int] = ..., next_page_token: _Optional[bytes] = ...) -> None: ...

class ListNamespacesResponse(_message.Message):
    __slots__ = ("namespaces", "next_page_token")
    NAMESPACES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    namespaces: _containers.RepeatedCompositeFieldContainer[NamespaceInfo]
    next_page_token: bytes
    def __init__(self, namespaces: _Optional[_Iterable[_Union[NamespaceInfo, _Mapping]]] = ..., next_page_token: _Optional[bytes] = ...) -> None: ...

class UpdateNamespaceRequest(_message.Message):
    __slots__ = ("name", "update_mask", "description", "owner_email", "retention_ms", "search_attributes", "archival_uri", "rps_limit")
    class SearchAttributesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: SearchAttributeType
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[SearchAttributeType, str]] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    UPDATE_MASK_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    OWNER_EMAIL_FIELD_NUMBER: _ClassVar[int]
    RETENTION_MS_FIELD_NUMBER: _ClassVar[int]
    SEARCH_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    ARCHIVAL_URI_FIELD_NUMBER: _ClassVar[int]
    RPS_LIMIT_FIELD_NUMBER: _ClassVar[int]
    name: str
    update_mask: _containers.RepeatedScalarFieldContainer[str]
    description: str
    owner_email: str
    retention_ms: int
    search_attributes: _containers.ScalarMap[str, SearchAttributeType]
    archival_uri: str
    rps_limit: float
    def __init__(self, name: _Optional[str] = ..., update_mask: _Optional[_Iterable[str]] = ..., description: _Optional[str] = ..., owner_email: _Optional[str] = ..., retention_ms: _Optional[int] = ..., search_attributes: _Optional[_Mapping[str, SearchAttributeType]] = ..., archival_uri: _Optional[str] = ..., rps_limit: _Optional[float] = ...) -> None: ...

class UpdateNamespaceResponse(_message.Message):
    __slots__ = ("namespace_info",)
    NAMESPACE_INFO_FIELD_NUMBER: _ClassVar[int]
    namespace_info: NamespaceInfo
    def __init__(self, namespace_info: _Optional[_Union[NamespaceInfo, _Mapping]] = ...) -> None: ...

class DeleteNamespaceRequest(_message.Message):
    __slots__ = ("name", "force")
    NAME_FIELD_NUMBER: _ClassVar[int]
    FORCE_FIELD_NUMBER: _ClassVar[int]
    name: str
    force: bool
    def __init__(self, name: _Optional[str] = ..., force: _Optional[bool] = ...) -> None: ...

class DeleteNamespaceResponse(_message.Message):
    __slots__ = ("terminated_executions",)
    TERMINATED_EXECUTIONS_FIELD_NUMBER: _ClassVar[int]
    terminated_executions: int
    def __init__(self, terminated_executions: _Optional[int] = ...) -> None: ...

class AddSearchAttributesRequest(_message.Message):
    __slots__ = ("namespace", "search_attributes")
    class SearchAttributesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: SearchAttributeType
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[SearchAttributeType, str]] = ...) -> None: ...
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    SEARCH_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    search_attributes: _containers.ScalarMap[str, SearchAttributeType]
    def __init__(self, namespace: _Optional[str] = ..., search_attributes: _Optional[_Mapping[str, SearchAttributeType]] = ...) -> None: ...

class AddSearchAttributesResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class StartWorkflowExecutionRequest(_message.Message):
    __slots__ = ("namespace", "workflow_id", "workflow_type", "task_queue", "input", "execution_timeout_ms", "run_timeout_ms", "task_timeout_ms", "identity", "request_id", "workflow_id_reuse_policy", "workflow_id_conflict_policy", "memo", "search_attributes", "header", "workflow_start_delay_ms", "cron_schedule", "completion_callbacks")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_ID_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TYPE_FIELD_NUMBER: _ClassVar[int]
    TASK_QUEUE_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    RUN_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    TASK_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_ID_REUSE_POLICY_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_ID_CONFLICT_POLICY_FIELD_NUMBER: _ClassVar[int]
    MEMO_FIELD_NUMBER: _ClassVar[int]
    SEARCH_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    HEADER_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_START_DELAY_MS_FIELD_NUMBER: _ClassVar[int]
    CRON_SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    COMPLETION_CALLBACKS_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    workflow_id: str
    workflow_type: str
    task_queue: str
    input: _messages_pb2.Payloads
    execution_timeout_ms: int
    run_timeout_ms: int
    task_timeout_ms: int
    identity: str
    request_id: str
    workflow_id_reuse_policy: _messages_pb2.WorkflowIdReusePolicy
    workflow_id_conflict_policy: _messages_pb2.WorkflowIdConflictPolicy
    memo: _messages_pb2.Memo
    search_attributes: _messages_pb2.SearchAttributes
    header: _messages_pb2.Header
    workflow_start_delay_ms: int
    cron_schedule: str
    completion_callbacks: _containers.RepeatedCompositeFieldContainer[_messages_pb2.Callback]
    def __init__(self, namespace: _Optional[str] = ..., workflow_id: _Optional[str] = ..., workflow_type: _Optional[str] = ..., task_queue: _Optional[str] = ..., input: _Optional[_Union[_messages_pb2.Payloads, _Mapping]] = ..., execution_timeout_ms: _Optional[int] = ..., run_timeout_ms: _Optional[int] = ..., task_timeout_ms: _Optional[int] = ..., identity: _Optional[str] = ..., request_id: _Optional[str] = ..., workflow_id_reuse_policy: _Optional[_Union[_messages_pb2.WorkflowIdReusePolicy, str]] = ..., workflow_id_conflict_policy: _Optional[_Union[_messages_pb2.WorkflowIdConflictPolicy, str]] = ..., memo: _Optional[_Union[_messages_pb2.Memo, _Mapping]] = ..., search_attributes: _Optional[_Union[_messages_pb2.SearchAttributes, _Mapping]] = ..., header: _Optional[_Union[_messages_pb2.Header, _Mapping]] = ..., workflow_start_delay_ms: _Optional[int] = ..., cron_schedule: _Optional[str] = ..., completion_callbacks: _Optional[_Iterable[_Union[_messages_pb2.Callback, _Mapping]]] = ...) -> None: ...

class StartWorkflowExecutionResponse(_message.Message):
    __slots__ = ("run_id", "started")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    STARTED_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    started: bool
    def __init__(self, run_id: _Optional[str] = ..., started: _Optional[bool] = ...) -> None: ...

class SignalWorkflowExecutionRequest(_message.Message):
    __slots__ = ("namespace", "workflow_execution", "signal_name", "input", "identity", "request_id", "header")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_EXECUTION_FIELD_NUMBER: _ClassVar[int]
    SIGNAL_NAME_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    HEADER_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    workflow_execution: _messages_pb2.WorkflowExecution
    signal_name: str
    input: _messages_pb2.Payloads
    identity: str
    request_id: str
    header: _messages_pb2.Header
    def __init__(self, namespace: _Optional[str] = ..., workflow_execution: _Optional[_Union[_messages_pb2.WorkflowExecution, _Mapping]] = ..., signal_name: _Optional[str] = ..., input: _Optional[_Union[_messages_pb2.Payloads, _Mapping]] = ..., identity: _Optional[str] = ..., request_id: _Optional[str] = ..., header: _Optional[_Union[_messages_pb2.Header, _Mapping]] = ...) -> None: ...

class SignalWorkflowExecutionResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SignalWithStartWorkflowExecutionRequest(_message.Message):
    __slots__ = ("start", "signal_name", "signal_input", "signal_header")
    START_FIELD_NUMBER: _ClassVar[int]
    SIGNAL_NAME_FIELD_NUMBER: _ClassVar[int]
    SIGNAL_INPUT_FIELD_NUMBER: _ClassVar[int]
    SIGNAL_HEADER_FIELD_NUMBER: _ClassVar[int]
    start: StartWorkflowExecutionRequest
    signal_name: str
    signal_input: _messages_pb2.Payloads
    signal_header: _messages_pb2.Header
    def __init__(self, start: _Optional[_Union[StartWorkflowExecutionRequest, _Mapping]] = ..., signal_name: _Optional[str] = ..., signal_input: _Optional[_Union[_messages_pb2.Payloads, _Mapping]] = ..., signal_header: _Optional[_Union[_messages_pb2.Header, _Mapping]] = ...) -> None: ...

class SignalWithStartWorkflowExecutionResponse(_message.Message):
    __slots__ = ("run_id", "started")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    STARTED_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    started: bool
    def __init__(self, run_id: _Optional[str] = ..., started: _Optional[bool] = ...) -> None: ...

class QueryWorkflowRequest(_message.Message):
    __slots__ = ("namespace", "execution", "query", "timeout_ms")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    execution: _messages_pb2.WorkflowExecution
    query: _messages_pb2.WorkflowQuery
    timeout_ms: int
    def __init__(self, namespace: _Optional[str] = ..., execution: _Optional[_Union[_messages_pb2.WorkflowExecution, _Mapping]] = ..., query: _Optional[_Union[_messages_pb2.WorkflowQuery, _Mapping]] = ..., timeout_ms: _Optional[int] = ...) -> None: ...

class QueryWorkflowResponse(_message.Message):
    __slots__ = ("query_result",)
    QUERY_RESULT_FIELD_NUMBER: _ClassVar[int]
    query_result: _messages_pb2.Payloads
    def __init__(self, query_result: _Optional[_Union[_messages_pb2.Payloads, _Mapping]] = ...) -> None: ...

class UpdateWorkflowExecutionRequest(_message.Message):
    __slots__ = ("namespace", "workflow_execution", "request", "timeout_ms")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_EXECUTION_FIELD_NUMBER: _ClassVar[int]
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    workflow_execution: _messages_pb2.WorkflowExecution
    request: _messages_pb2.UpdateRequest
    timeout_ms: int
    def __init__(self, namespace: _Optional[str] = ..., workflow_execution: _Optional[_Union[_messages_pb2.WorkflowExecution, _Mapping]] = ..., request: _Optional[_Union[_messages_pb2.UpdateRequest, _Mapping]] = ..., timeout_ms: _Optional[int] = ...) -> None: ...

class UpdateWorkflowExecutionResponse(_message.Message):
    __slots__ = ("success", "failure", "run_id")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    success: _messages_pb2.Payloads
    failure: _messages_pb2.Failure
    run_id: str
    def __init__(self, success: _Optional[_Union[_messages_pb2.Payloads, _Mapping]] = ..., failure: _Optional[_Union[_messages_pb2.Failure, _Mapping]] = ..., run_id: _Optional[str] = ...) -> None: ...

class RequestCancelWorkflowExecutionRequest(_message.Message):
    __slots__ = ("namespace", "workflow_execution", "identity", "request_id", "reason")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_EXECUTION_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    workflow_execution: _messages_pb2.WorkflowExecution
    identity: str
    request_id: str
    reason: str
    def __init__(self, namespace: _Optional[str] = ..., workflow_execution: _Optional[_Union[_messages_pb2.WorkflowExecution, _Mapping]] = ..., identity: _Optional[str] = ..., request_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class RequestCancelWorkflowExecutionResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class TerminateWorkflowExecutionRequest(_message.Message):
    __slots__ = ("namespace", "workflow_execution", "reason", "details", "identity")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_EXECUTION_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    DETAILS_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    workflow_execution: _messages_pb2.WorkflowExecution
    reason: str
    details: _messages_pb2.Payloads
    identity: str
    def __init__(self, namespace: _Optional[str] = ..., workflow_execution: _Optional[_Union[_messages_pb2.WorkflowExecution, _Mapping]] = ..., reason: _Optional[str] = ..., details: _Optional[_Union[_messages_pb2.Payloads, _Mapping]] = ..., identity: _Optional[str] = ...) -> None: ...

class TerminateWorkflowExecutionResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class PendingActivityInfo(_message.Message):
    __slots__ = ("activity_id", "activity_type", "state", "attempt", "scheduled_event_id", "last_started_time_ms", "last_heartbeat_time_ms", "heartbeat_details", "last_failure")
    ACTIVITY_ID_FIELD_NUMBER: _ClassVar[int]
    ACTIVITY_TYPE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    SCHEDULED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    LAST_STARTED_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    LAST_HEARTBEAT_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_DETAILS_FIELD_NUMBER: _ClassVar[int]
    LAST_FAILURE_FIELD_NUMBER: _ClassVar[int]
    activity_id: str
    activity_type: str
    state: str
    attempt: int
    scheduled_event_id: int
    last_started_time_ms: int
    last_heartbeat_time_ms: int
    heartbeat_details: _messages_pb2.Payloads
    last_failure: _messages_pb2.Failure
    def __init__(self, activity_id: _Optional[str] = ..., activity_type: _Optional[str] = ..., state: _Optional[str] = ..., attempt: _Optional[int] = ..., scheduled_event_id: _Optional[int] = ..., last_started_time_ms: _Optional[int] = ..., last_heartbeat_time_ms: _Optional[int] = ..., heartbeat_details: _Optional[_Union[_messages_pb2.Payloads, _Mapping]] = ..., last_failure: _Optional[_Union[_messages_pb2.Failure, _Mapping]] = ...) -> None: ...

class PendingChildInfo(_message.Message):
    __slots__ = ("workflow_id", "run_id", "workflow_type", "initiated_event_id")
    WORKFLOW_ID_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TYPE_FIELD_NUMBER: _ClassVar[int]
    INITIATED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    workflow_id: str
    run_id: str
    workflow_type: str
    initiated_event_id: int
    def __init__(self, workflow_id: _Optional[str] = ..., run_id: _Optional[str] = ..., workflow_type: _Optional[str] = ..., initiated_event_id: _Optional[int] = ...) -> None: ...

class WorkflowExecutionInfo(_message.Message):
    __slots__ = ("execution", "workflow_type", "task_queue", "status", "start_time_ms", "close_time_ms", "execution_time_ms", "history_length", "memo", "search_attributes", "parent_execution", "parent_namespace", "first_run_id", "versioning_info")
    EXECUTION_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TYPE_FIELD_NUMBER: _ClassVar[int]
    TASK_QUEUE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    START_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    CLOSE_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    HISTORY_LENGTH_FIELD_NUMBER: _ClassVar[int]
    MEMO_FIELD_NUMBER: _ClassVar[int]
    SEARCH_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    PARENT_EXECUTION_FIELD_NUMBER: _ClassVar[int]
    PARENT_NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    FIRST_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    VERSIONING_INFO_FIELD_NUMBER: _ClassVar[int]
    execution: _messages_pb2.WorkflowExecution
    workflow_type: str
    task_queue: str
    status: _messages_pb2.WorkflowExecutionStatus
    start_time_ms: int
    close_time_ms: int
    execution_time_ms: int
    history_length: int
    memo: _messages_pb2.Memo
    search_attributes: _messages_pb2.SearchAttributes
    parent_execution: _messages_pb2.WorkflowExecution
    parent_namespace: str
    first_run_id: str
    versioning_info: _messages_pb2.WorkflowExecutionVersioningInfo
    def __init__(self, execution: _Optional[_Union[_messages_pb2.WorkflowExecution, _Mapping]] = ..., workflow_type: _Optional[str] = ..., task_queue: _Optional[str] = ..., status: _Optional[_Union[_messages_pb2.WorkflowExecutionStatus, str]] = ..., start_time_ms: _Optional[int] = ..., close_time_ms: _Optional[int] = ..., execution_time_ms: _Optional[int] = ..., history_length: _Optional[int] = ..., memo: _Optional[_Union[_messages_pb2.Memo, _Mapping]] = ..., search_attributes: _Optional[_Union[_messages_pb2.SearchAttributes, _Mapping]] = ..., parent_execution: _Optional[_Union[_messages_pb2.WorkflowExecution, _Mapping]] = ..., parent_namespace: _Optional[str] = ..., first_run_id: _Optional[str] = ..., versioning_info: _Optional[_Union[_messages_pb2.WorkflowExecutionVersioningInfo, _Mapping]] = ...) -> None: ...

class DescribeWorkflowExecutionRequest(_message.Message):
    __slots__ = ("namespace", "execution")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    execution: _messages_pb2.WorkflowExecution
    def __init__(self, namespace: _Optional[str] = ..., execution: _Optional[_Union[_messages_pb2.WorkflowExecution, _Mapping]] = ...) -> None: ...

class DescribeWorkflowExecutionResponse(_message.Message):
    __slots__ = ("workflow_execution_info", "pending_activities", "pending_children", "pending_workflow_task", "run_timeout_ms", "execution_timeout_ms")
    WORKFLOW_EXECUTION_INFO_FIELD_NUMBER: _ClassVar[int]
    PENDING_ACTIVITIES_FIELD_NUMBER: _ClassVar[int]
    PENDING_CHILDREN_FIELD_NUMBER: _ClassVar[int]
    PENDING_WORKFLOW_TASK_FIELD_NUMBER: _ClassVar[int]
    RUN_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    workflow_execution_info: WorkflowExecutionInfo
    pending_activities: _containers.RepeatedCompositeFieldContainer[PendingActivityInfo]
    pending_children: _containers.RepeatedCompositeFieldContainer[PendingChildInfo]
    pending_workflow_task: bool
    run_timeout_ms: int
    execution_timeout_ms: int
    def __init__(self, workflow_execution_info: _Optional[_Union[WorkflowExecutionInfo, _Mapping]] = ..., pending_activities: _Optional[_Iterable[_Union[PendingActivityInfo, _Mapping]]] = ..., pending_children: _Optional[_Iterable[_Union[PendingChildInfo, _Mapping]]] = ..., pending_workflow_task: _Optional[bool] = ..., run_timeout_ms: _Optional[int] = ..., execution_timeout_ms: _Optional[int] = ...) -> None: ...

class GetWorkflowExecutionHistoryRequest(_message.Message):
    __slots__ = ("namespace", "execution", "maximum_page_size", "next_page_token", "wait_new_event", "close_event_only")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_FIELD_NUMBER: _ClassVar[int]
    MAXIMUM_PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    WAIT_NEW_EVENT_FIELD_NUMBER: _ClassVar[int]
    CLOSE_EVENT_ONLY_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    execution: _messages_pb2.WorkflowExecution
    maximum_page_size: int
    next_page_token: bytes
    wait_new_event: bool
    close_event_only: bool
    def __init__(self, namespace: _Optional[str] = ..., execution: _Optional[_Union[_messages_pb2.WorkflowExecution, _Mapping]] = ..., maximum_page_size: _Optional[int] = ..., next_page_token: _Optional[bytes] = ..., wait_new_event: _Optional[bool] = ..., close_event_only: _Optional[bool] = ...) -> None: ...

class GetWorkflowExecutionHistoryResponse(_message.Message):
    __slots__ = ("history", "next_page_token", "archived")
    HISTORY_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    ARCHIVED_FIELD_NUMBER: _ClassVar[int]
    history: _messages_pb2.History
    next_page_token: bytes
    archived: bool
    def __init__(self, history: _Optional[_Union[_messages_pb2.History, _Mapping]] = ..., next_page_token: _Optional[bytes] = ..., archived: _Optional[bool] = ...) -> None: ...

class ListWorkflowExecutionsRequest(_message.Message):
    __slots__ = ("namespace", "page_size", "next_page_token", "query")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    page_size: int
    next_page_token: bytes
    query: str
    def __init__(self, namespace: _Optional[str] = ..., page_size: _Optional[int] = ..., next_page_token: _Optional[bytes] = ..., query: _Optional[str] = ...) -> None: ...

class ListWorkflowExecutionsResponse(_message.Message):
    __slots__ = ("executions", "next_page_token")
    EXECUTIONS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    executions: _containers.RepeatedCompositeFieldContainer[WorkflowExecutionInfo]
    next_page_token: bytes
    def __init__(self, executions: _Optional[_Iterable[_Union[WorkflowExecutionInfo, _Mapping]]] = ..., next_page_token: _Optional[bytes] = ...) -> None: ...

class CountWorkflowExecutionsRequest(_message.Message):
    __slots__ = ("namespace", "query")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    query: str
    def __init__(self, namespace: _Optional[str] = ..., query: _Optional[str] = ...) -> None: ...

class CountGroup(_message.Message):
    __slots__ = ("group_values", "count")
    GROUP_VALUES_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    group_values: _containers.RepeatedScalarFieldContainer[str]
    count: int
    def __init__(self, group_values: _Optional[_Iterable[str]] = ..., count: _Optional[int] = ...) -> None: ...

class CountWorkflowExecutionsResponse(_message.Message):
    __slots__ = ("count", "groups")
    COUNT_FIELD_NUMBER: _ClassVar[int]
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    count: int
    groups: _containers.RepeatedCompositeFieldContainer[CountGroup]
    def __init__(self, count: _Optional[int] = ..., groups: _Optional[_Iterable[_Union[CountGroup, _Mapping]]] = ...) -> None: ...

class StickyExecutionAttributes(_message.Message):
    __slots__ = ("worker_task_queue", "schedule_to_start_timeout_ms")
    WORKER_TASK_QUEUE_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_TO_START_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    worker_task_queue: str
    schedule_to_start_timeout_ms: int
    def __init__(self, worker_task_queue: _Optional[str] = ..., schedule_to_start_timeout_ms: _Optional[int] = ...) -> None: ...

class PollWorkflowTaskQueueRequest(_message.Message):
    __slots__ = ("namespace", "task_queue", "identity", "sticky", "deployment_options")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    TASK_QUEUE_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    STICKY_FIELD_NUMBER: _ClassVar[int]
    DEPLOYMENT_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    task_queue: str
    identity: str
    sticky: bool
    deployment_options: _messages_pb2.WorkerDeploymentOptions
    def __init__(self, namespace: _Optional[str] = ..., task_queue: _Optional[str] = ..., identity: _Optional[str] = ..., sticky: _Optional[bool] = ..., deployment_options: _Optional[_Union[_messages_pb2.WorkerDeploymentOptions, _Mapping]] = ...) -> None: ...

class PollWorkflowTaskQueueResponse(_message.Message):
    __slots__ = ("task_token", "workflow_execution", "workflow_type", "previous_started_event_id", "started_event_id", "attempt", "history", "next_page_token", "query", "updates", "scheduled_time_ms", "started_time_ms", "namespace", "task_queue")
    TASK_TOKEN_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_EXECUTION_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TYPE_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_STARTED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    STARTED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    HISTORY_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    UPDATES_FIELD_NUMBER: _ClassVar[int]
    SCHEDULED_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    STARTED_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    TASK_QUEUE_FIELD_NUMBER: _ClassVar[int]
    task_token: bytes
    workflow_execution: _messages_pb2.WorkflowExecution
    workflow_type: str
    previous_started_event_id: int
    started_event_id: int
    attempt: int
    history: _messages_pb2.History
    next_page_token: bytes
    query: _messages_pb2.WorkflowQuery
    updates: _containers.RepeatedCompositeFieldContainer[_messages_pb2.UpdateRequest]
    scheduled_time_ms: int
    started_time_ms: int
    namespace: str
    task_queue: str
    def __init__(self, task_token: _Optional[bytes] = ..., workflow_execution: _Optional[_Union[_messages_pb2.WorkflowExecution, _Mapping]] = ..., workflow_type: _Optional[str] = ..., previous_started_event_id: _Optional[int] = ..., started_event_id: _Optional[int] = ..., attempt: _Optional[int] = ..., history: _Optional[_Union[_messages_pb2.History, _Mapping]] = ..., next_page_token: _Optional[bytes] = ..., query: _Optional[_Union[_messages_pb2.WorkflowQuery, _Mapping]] = ..., updates: _Optional[_Iterable[_Union[_messages_pb2.UpdateRequest, _Mapping]]] = ..., scheduled_time_ms: _Optional[int] = ..., started_time_ms: _Optional[int] = ..., namespace: _Optional[str] = ..., task_queue: _Optional[str] = ...) -> None: ...

class RespondWorkflowTaskCompletedRequest(_message.Message):
    __slots__ = ("task_token", "commands", "identity", "sticky_attributes", "return_new_workflow_task", "namespace", "versioning_behavior", "deployment_options")
    TASK_TOKEN_FIELD_NUMBER: _ClassVar[int]
    COMMANDS_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    STICKY_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    RETURN_NEW_WORKFLOW_TASK_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    VERSIONING_BEHAVIOR_FIELD_NUMBER: _ClassVar[int]
    DEPLOYMENT_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    task_token: bytes
    commands: _containers.RepeatedCompositeFieldContainer[_messages_pb2.Command]
    identity: str
    sticky_attributes: StickyExecutionAttributes
    return_new_workflow_task: bool
    namespace: str
    versioning_behavior: _messages_pb2.VersioningBehavior
    deployment_options: _messages_pb2.WorkerDeploymentOptions
    def __init__(self, task_token: _Optional[bytes] = ..., commands: _Optional[_Iterable[_Union[_messages_pb2.Command, _Mapping]]] = ..., identity: _Optional[str] = ..., sticky_attributes: _Optional[_Union[StickyExecutionAttributes, _Mapping]] = ..., return_new_workflow_task: _Optional[bool] = ..., namespace: _Optional[str] = ..., versioning_behavior: _Optional[_Union[_messages_pb2.VersioningBehavior, str]] = ..., deployment_options: _Optional[_Union[_messages_pb2.WorkerDeploymentOptions, _Mapping]] = ...) -> None: ...

class RespondWorkflowTaskCompletedResponse(_message.Message):
    __slots__ = ("workflow_task", "activity_tasks")
    WORKFLOW_TASK_FIELD_NUMBER: _ClassVar[int]
    ACTIVITY_TASKS_FIELD_NUMBER: _ClassVar[int]
    workflow_task: PollWorkflowTaskQueueResponse
    activity_tasks: _containers.RepeatedCompositeFieldContainer[PollActivityTaskQueueResponse]
    def __init__(self, workflow_task: _Optional[_Union[PollWorkflowTaskQueueResponse, _Mapping]] = ..., activity_tasks: _Optional[_Iterable[_Union[PollActivityTaskQueueResponse, _Mapping]]] = ...) -> None: ...

class RespondWorkflowTaskFailedRequest(_message.Message):
    __slots__ = ("task_token", "cause", "failure", "identity", "namespace")
    TASK_TOKEN_FIELD_NUMBER: _ClassVar[int]
    CAUSE_FIELD_NUMBER: _ClassVar[int]
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    task_token: bytes
    cause: _messages_pb2.WorkflowTaskFailedCause
    failure: _messages_pb2.Failure
    identity: str
    namespace: str
    def __init__(self, task_token: _Optional[bytes] = ..., cause: _Optional[_Union[_messages_pb2.WorkflowTaskFailedCause, str]] = ..., failure: _Optional[_Union[_messages_pb2.Failure, _Mapping]] = ..., identity: _Optional[str] = ..., namespace: _Optional[str] = ...) -> None: ...

class RespondWorkflowTaskFailedResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class RespondQueryTaskCompletedRequest(_message.Message):
    __slots__ = ("task_token", "query_result", "error_message", "namespace")
    TASK_TOKEN_FIELD_NUMBER: _ClassVar[int]
    QUERY_RESULT_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    task_token: bytes
    query_result: _messages_pb2.Payloads
    error_message: str
    namespace: str
    def __init__(self, task_token: _Optional[bytes] = ..., query_result: _Optional[_Union[_messages_pb2.Payloads, _Mapping]] = ..., error_message: _Optional[str] = ..., namespace: _Optional[str] = ...) -> None: ...

class RespondQueryTaskCompletedResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class PollActivityTaskQueueRequest(_message.Message):
    __slots__ = ("namespace", "task_queue", "identity", "max_tasks_per_second", "deployment_options")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    TASK_QUEUE_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    MAX_TASKS_PER_SECOND_FIELD_NUMBER: _ClassVar[int]
    DEPLOYMENT_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    task_queue: str
    identity: str
    max_tasks_per_second: float
    deployment_options: _messages_pb2.WorkerDeploymentOptions
    def __init__(self, namespace: _Optional[str] = ..., task_queue: _Optional[str] = ..., identity: _Optional[str] = ..., max_tasks_per_second: _Optional[float] = ..., deployment_options: _Optional[_Union[_messages_pb2.WorkerDeploymentOptions, _Mapping]] = ...) -> None: ...

class PollActivityTaskQueueResponse(_message.Message):
    __slots__ = ("task_token", "workflow_namespace", "workflow_type", "workflow_execution", "activity_type", "activity_id", "input", "scheduled_time_ms", "current_attempt_scheduled_time_ms", "started_time_ms", "attempt", "schedule_to_close_timeout_ms", "start_to_close_timeout_ms", "heartbeat_timeout_ms", "heartbeat_details", "retry_policy", "header", "task_queue")
    TASK_TOKEN_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TYPE_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_EXECUTION_FIELD_NUMBER: _ClassVar[int]
    ACTIVITY_TYPE_FIELD_NUMBER: _ClassVar[int]
    ACTIVITY_ID_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    SCHEDULED_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    CURRENT_ATTEMPT_SCHEDULED_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    STARTED_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_TO_CLOSE_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    START_TO_CLOSE_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_DETAILS_FIELD_NUMBER: _ClassVar[int]
    RETRY_POLICY_FIELD_NUMBER: _ClassVar[int]
    HEADER_FIELD_NUMBER: _ClassVar[int]
    TASK_QUEUE_FIELD_NUMBER: _ClassVar[int]
    task_token: bytes
    workflow_namespace: str
    workflow_type: str
    workflow_execution: _messages_pb2.WorkflowExecution
    activity_type: str
    activity_id: str
    input: _messages_pb2.Payloads
    scheduled_time_ms: int
    current_attempt_scheduled_time_ms: int
    started_time_ms: int
    attempt: int
    schedule_to_close_timeout_ms: int
    start_to_close_timeout_ms: int
    heartbeat_timeout_ms: int
    heartbeat_details: _messages_pb2.Payloads
    retry_policy: _messages_pb2.RetryPolicy
    header: _messages_pb2.Header
    task_queue: str
    def __init__(self, task_token: _Optional[bytes] = ..., workflow_namespace: _Optional[str] = ..., workflow_type: _Optional[str] = ..., workflow_execution: _Optional[_Union[_messages_pb2.WorkflowExecution, _Mapping]] = ..., activity_type: _Optional[str] = ..., activity_id: _Optional[str] = ..., input: _Optional[_Union[_messages_pb2.Payloads, _Mapping]] = ..., scheduled_time_ms: _Optional[int] = ..., current_attempt_scheduled_time_ms: _Optional[int] = ..., started_time_ms: _Optional[int] = ..., attempt: _Optional[int] = ..., schedule_to_close_timeout_ms: _Optional[int] = ..., start_to_close_timeout_ms: _Optional[int] = ..., heartbeat_timeout_ms: _Optional[int] = ..., heartbeat_details: _Optional[_Union[_messages_pb2.Payloads, _Mapping]] = ..., retry_policy: _Optional[_Union[_messages_pb2.RetryPolicy, _Mapping]] = ..., header: _Optional[_Union[_messages_pb2.Header, _Mapping]] = ..., task_queue: _Optional[str] = ...) -> None: ...

class RespondActivityTaskCompletedRequest(_message.Message):
    __slots__ = ("task_token", "result", "identity", "namespace", "sticky_task_queue")
    TASK_TOKEN_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    STICKY_TASK_QUEUE_FIELD_NUMBER: _ClassVar[int]
    task_token: bytes
    result: _messages_pb2.Payloads
    identity: str
    namespace: str
    sticky_task_queue: str
    def __init__(self, task_token: _Optional[bytes] = ..., result: _Optional[_Union[_messages_pb2.Payloads, _Mapping]] = ..., identity: _Optional[str] = ..., namespace: _Optional[str] = ..., sticky_task_queue: _Optional[str] = ...) -> None: ...

class RespondActivityTaskCompletedResponse(_message.Message):
    __slots__ = ("workflow_task",)
    WORKFLOW_TASK_FIELD_NUMBER: _ClassVar[int]
    workflow_task: PollWorkflowTaskQueueResponse
    def __init__(self, workflow_task: _Optional[_Union[PollWorkflowTaskQueueResponse, _Mapping]] = ...) -> None: ...

class RespondActivityTaskFailedRequest(_message.Message):
    __slots__ = ("task_token", "failure", "identity", "namespace", "last_heartbeat_details", "sticky_task_queue")
    TASK_TOKEN_FIELD_NUMBER: _ClassVar[int]
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    LAST_HEARTBEAT_DETAILS_FIELD_NUMBER: _ClassVar[int]
    STICKY_TASK_QUEUE_FIELD_NUMBER: _ClassVar[int]
    task_token: bytes
    failure: _messages_pb2.Failure
    identity: str
    namespace: str
    last_heartbeat_details: _messages_pb2.Payloads
    sticky_task_queue: str
    def __init__(self, task_token: _Optional[bytes] = ..., failure: _Optional[_Union[_messages_pb2.Failure, _Mapping]] = ..., identity: _Optional[str] = ..., namespace: _Optional[str] = ..., last_heartbeat_details: _Optional[_Union[_messages_pb2.Payloads, _Mapping]] = ..., sticky_task_queue: _Optional[str] = ...) -> None: ...

class RespondActivityTaskFailedResponse(_message.Message):
    __slots__ = ("workflow_task",)
    WORKFLOW_TASK_FIELD_NUMBER: _ClassVar[int]
    workflow_task: PollWorkflowTaskQueueResponse
    def __init__(self, workflow_task: _Optional[_Union[PollWorkflowTaskQueueResponse, _Mapping]] = ...) -> None: ...

class RespondActivityTaskCanceledRequest(_message.Message):
    __slots__ = ("task_token", "details", "identity", "namespace", "sticky_task_queue")
    TASK_TOKEN_FIELD_NUMBER: _ClassVar[int]
    DETAILS_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    STICKY_TASK_QUEUE_FIELD_NUMBER: _ClassVar[int]
    task_token: bytes
    details: _messages_pb2.Payloads
    identity: str
    namespace: str
    sticky_task_queue: str
    def __init__(self, task_token: _Optional[bytes] = ..., details: _Optional[_Union[_messages_pb2.Payloads, _Mapping]] = ..., identity: _Optional[str] = ..., namespace: _Optional[str] = ..., sticky_task_queue: _Optional[str] = ...) -> None: ...

class RespondActivityTaskCanceledResponse(_message.Message):
    __slots__ = ("workflow_task",)
    WORKFLOW_TASK_FIELD_NUMBER: _ClassVar[int]
    workflow_task: PollWorkflowTaskQueueResponse
    def __init__(self, workflow_task: _Optional[_Union[PollWorkflowTaskQueueResponse, _Mapping]] = ...) -> None: ...

class RecordActivityTaskHeartbeatRequest(_message.Message):
    __slots__ = ("task_token", "details", "identity", "namespace")
    TASK_TOKEN_FIELD_NUMBER: _ClassVar[int]
    DETAILS_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    task_token: bytes
    details: _messages_pb2.Payloads
    identity: str
    namespace: str
    def __init__(self, task_token: _Optional[bytes] = ..., details: _Optional[_Union[_messages_pb2.Payloads, _Mapping]] = ..., identity: _Optional[str] = ..., namespace: _Optional[str] = ...) -> None: ...

class RecordActivityTaskHeartbeatResponse(_message.Message):
    __slots__ = ("cancel_requested",)
    CANCEL_REQUESTED_FIELD_NUMBER: _ClassVar[int]
    cancel_requested: bool
    def __init__(self, cancel_requested: _Optional[bool] = ...) -> None: ...

class GetSystemInfoRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetSystemInfoResponse(_message.Message):
    __slots__ = ("server_version", "store", "num_shards")
    SERVER_VERSION_FIELD_NUMBER: _ClassVar[int]
    STORE_FIELD_NUMBER: _ClassVar[int]
    NUM_SHARDS_FIELD_NUMBER: _ClassVar[int]
    server_version: str
    store: str
    num_shards: int
    def __init__(self, server_version: _Optional[str] = ..., store: _Optional[str] = ..., num_shards: _Optional[int] = ...) -> None: ...

class ApiKeyInfo(_message.Message):
    __slots__ = ("id", "name", "grants", "system_admin", "create_time_ms", "expire_time_ms", "revoke_time_ms", "created_by", "task_queues")
    class GrantsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class TaskQueuesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: ApiKeyTaskQueues
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[ApiKeyTaskQueues, _Mapping]] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    GRANTS_FIELD_NUMBER: _ClassVar[int]
    SYSTEM_ADMIN_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    EXPIRE_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    REVOKE_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    CREATED_BY_FIELD_NUMBER: _ClassVar[int]
    TASK_QUEUES_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    grants: _containers.ScalarMap[str, str]
    system_admin: bool
    create_time_ms: int
    expire_time_ms: int
    revoke_time_ms: int
    created_by: str
    task_queues: _containers.MessageMap[str, ApiKeyTaskQueues]
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., grants: _Optional[_Mapping[str, str]] = ..., system_admin: _Optional[bool] = ..., create_time_ms: _Optional[int] = ..., expire_time_ms: _Optional[int] = ..., revoke_time_ms: _Optional[int] = ..., created_by: _Optional[str] = ..., task_queues: _Optional[_Mapping[str, ApiKeyTaskQueues]] = ...) -> None: ...

class ApiKeyTaskQueues(_message.Message):
    __slots__ = ("names",)
    NAMES_FIELD_NUMBER: _ClassVar[int]
    names: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, names: _Optional[_Iterable[str]] = ...) -> None: ...

class CreateApiKeyRequest(_message.Message):
    __slots__ = ("name", "grants", "system_admin", "ttl_ms", "task_queues")
    class GrantsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class TaskQueuesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: ApiKeyTaskQueues
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[ApiKeyTaskQueues, _Mapping]] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    GRANTS_FIELD_NUMBER: _ClassVar[int]
    SYSTEM_ADMIN_FIELD_NUMBER: _ClassVar[int]
    TTL_MS_FIELD_NUMBER: _ClassVar[int]
    TASK_QUEUES_FIELD_NUMBER: _ClassVar[int]
    name: str
    grants: _containers.ScalarMap[str, str]
    system_admin: bool
    ttl_ms: int
    task_queues: _containers.MessageMap[str, ApiKeyTaskQueues]
    def __init__(self, name: _Optional[str] = ..., grants: _Optional[_Mapping[str, str]] = ..., system_admin: _Optional[bool] = ..., ttl_ms: _Optional[int] = ..., task_queues: _Optional[_Mapping[str, ApiKeyTaskQueues]] = ...) -> None: ...

class CreateApiKeyResponse(_message.Message):
    __slots__ = ("key", "secret")
    KEY_FIELD_NUMBER: _ClassVar[int]
    SECRET_FIELD_NUMBER: _ClassVar[int]
    key: ApiKeyInfo
    secret: str
    def __init__(self, key: _Optional[_Union[ApiKeyInfo, _Mapping]] = ..., secret: _Optional[str] = ...) -> None: ...

class ListApiKeysRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListApiKeysResponse(_message.Message):
    __slots__ = ("keys",)
    KEYS_FIELD_NUMBER: _ClassVar[int]
    keys: _containers.RepeatedCompositeFieldContainer[ApiKeyInfo]
    def __init__(self, keys: _Optional[_Iterable[_Union[ApiKeyInfo, _Mapping]]] = ...) -> None: ...

class RevokeApiKeyRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class RevokeApiKeyResponse(_message.Message):
    __slots__ = ("key",)
    KEY_FIELD_NUMBER: _ClassVar[int]
    key: ApiKeyInfo
    def __init__(self, key: _Optional[_Union[ApiKeyInfo, _Mapping]] = ...) -> None: ...

class CreateScheduleRequest(_message.Message):
    __slots__ = ("namespace", "schedule_id", "schedule", "identity", "request_id")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_ID_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    schedule_id: str
    schedule: _messages_pb2.Schedule
    identity: str
    request_id: str
    def __init__(self, namespace: _Optional[str] = ..., schedule_id: _Optional[str] = ..., schedule: _Optional[_Union[_messages_pb2.Schedule, _Mapping]] = ..., identity: _Optional[str] = ..., request_id: _Optional[str] = ...) -> None: ...

class CreateScheduleResponse(_message.Message):
    __slots__ = ("conflict_token",)
    CONFLICT_TOKEN_FIELD_NUMBER: _ClassVar[int]
    conflict_token: bytes
    def __init__(self, conflict_token: _Optional[bytes] = ...) -> None: ...

class DescribeScheduleRequest(_message.Message):
    __slots__ = ("namespace", "schedule_id")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_ID_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    schedule_id: str
    def __init__(self, namespace: _Optional[str] = ..., schedule_id: _Optional[str] = ...) -> None: ...

class DescribeScheduleResponse(_message.Message):
    __slots__ = ("schedule", "info", "conflict_token")
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    INFO_FIELD_NUMBER: _ClassVar[int]
    CONFLICT_TOKEN_FIELD_NUMBER: _ClassVar[int]
    schedule: _messages_pb2.Schedule
    info: _messages_pb2.ScheduleInfo
    conflict_token: bytes
    def __init__(self, schedule: _Optional[_Union[_messages_pb2.Schedule, _Mapping]] = ..., info: _Optional[_Union[_messages_pb2.ScheduleInfo, _Mapping]] = ..., conflict_token: _Optional[bytes] = ...) -> None: ...

class UpdateScheduleRequest(_message.Message):
    __slots__ = ("namespace", "schedule_id", "schedule", "conflict_token", "identity", "request_id")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_ID_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    CONFLICT_TOKEN_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    schedule_id: str
    schedule: _messages_pb2.Schedule
    conflict_token: bytes
    identity: str
    request_id: str
    def __init__(self, namespace: _Optional[str] = ..., schedule_id: _Optional[str] = ..., schedule: _Optional[_Union[_messages_pb2.Schedule, _Mapping]] = ..., conflict_token: _Optional[bytes] = ..., identity: _Optional[str] = ..., request_id: _Optional[str] = ...) -> None: ...

class UpdateScheduleResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ScheduleTrigger(_message.Message):
    __slots__ = ("overlap_policy",)
    OVERLAP_POLICY_FIELD_NUMBER: _ClassVar[int]
    overlap_policy: _messages_pb2.ScheduleOverlapPolicy
    def __init__(self, overlap_policy: _Optional[_Union[_messages_pb2.ScheduleOverlapPolicy, str]] = ...) -> None: ...

class ScheduleBackfillRequest(_message.Message):
    __slots__ = ("start_time_ms", "end_time_ms", "overlap_policy")
    START_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    END_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    OVERLAP_POLICY_FIELD_NUMBER: _ClassVar[int]
    start_time_ms: int
    end_time_ms: int
    overlap_policy: _messages_pb2.ScheduleOverlapPolicy
    def __init__(self, start_time_ms: _Optional[int] = ..., end_time_ms: _Optional[int] = ..., overlap_policy: _Optional[_Union[_messages_pb2.ScheduleOverlapPolicy, str]] = ...) -> None: ...

class SchedulePatch(_message.Message):
    __slots__ = ("trigger_immediately", "backfill_request", "pause", "unpause")
    TRIGGER_IMMEDIATELY_FIELD_NUMBER: _ClassVar[int]
    BACKFILL_REQUEST_FIELD_NUMBER: _ClassVar[int]
    PAUSE_FIELD_NUMBER: _ClassVar[int]
    UNPAUSE_FIELD_NUMBER: _ClassVar[int]
    trigger_immediately: ScheduleTrigger
    backfill_request: _containers.RepeatedCompositeFieldContainer[ScheduleBackfillRequest]
    pause: str
    unpause: str
    def __init__(self, trigger_immediately: _Optional[_Union[ScheduleTrigger, _Mapping]] = ..., backfill_request: _Optional[_Iterable[_Union[ScheduleBackfillRequest, _Mapping]]] = ..., pause: _Optional[str] = ..., unpause: _Optional[str] = ...) -> None: ...

class PatchScheduleRequest(_message.Message):
    __slots__ = ("namespace", "schedule_id", "patch", "identity", "request_id")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_ID_FIELD_NUMBER: _ClassVar[int]
    PATCH_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    schedule_id: str
    patch: SchedulePatch
    identity: str
    request_id: str
    def __init__(self, namespace: _Optional[str] = ..., schedule_id: _Optional[str] = ..., patch: _Optional[_Union[SchedulePatch, _Mapping]] = ..., identity: _Optional[str] = ..., request_id: _Optional[str] = ...) -> None: ...

class PatchScheduleResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class DeleteScheduleRequest(_message.Message):
    __slots__ = ("namespace", "schedule_id", "identity")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_ID_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    schedule_id: str
    identity: str
    def __init__(self, namespace: _Optional[str] = ..., schedule_id: _Optional[str] = ..., identity: _Optional[str] = ...) -> None: ...

class DeleteScheduleResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListSchedulesRequest(_message.Message):
    __slots__ = ("namespace", "maximum_page_size", "next_page_token")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    MAXIMUM_PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    maximum_page_size: int
    next_page_token: bytes
    def __init__(self, namespace: _Optional[str] = ..., maximum_page_size: _Optional[int] = ..., next_page_token: _Optional[bytes] = ...) -> None: ...

class ScheduleListEntry(_message.Message):
    __slots__ = ("schedule_id", "paused", "notes", "workflow_type", "recent_actions", "future_action_times_ms")
    SCHEDULE_ID_FIELD_NUMBER: _ClassVar[int]
    PAUSED_FIELD_NUMBER: _ClassVar[int]
    NOTES_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TYPE_FIELD_NUMBER: _ClassVar[int]
    RECENT_ACTIONS_FIELD_NUMBER: _ClassVar[int]
    FUTURE_ACTION_TIMES_MS_FIELD_NUMBER: _ClassVar[int]
    schedule_id: str
    paused: bool
    notes: str
    workflow_type: str
    recent_actions: _containers.RepeatedCompositeFieldContainer[_messages_pb2.ScheduleActionResult]
    future_action_times_ms: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, schedule_id: _Optional[str] = ..., paused: _Optional[bool] = ..., notes: _Optional[str] = ..., workflow_type: _Optional[str] = ..., recent_actions: _Optional[_Iterable[_Union[_messages_pb2.ScheduleActionResult, _Mapping]]] = ..., future_action_times_ms: _Optional[_Iterable[int]] = ...) -> None: ...

class ListSchedulesResponse(_message.Message):
    __slots__ = ("schedules", "next_page_token")
    SCHEDULES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    schedules: _containers.RepeatedCompositeFieldContainer[ScheduleListEntry]
    next_page_token: bytes
    def __init__(self, schedules: _Optional[_Iterable[_Union[ScheduleListEntry, _Mapping]]] = ..., next_page_token: _Optional[bytes] = ...) -> None: ...

class ResetWorkflowExecutionRequest(_message.Message):
    __slots__ = ("namespace", "workflow_execution", "reason", "workflow_task_finish_event_id", "request_id", "reset_reapply_type", "identity")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_EXECUTION_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TASK_FINISH_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    RESET_REAPPLY_TYPE_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    workflow_execution: _messages_pb2.WorkflowExecution
    reason: str
    workflow_task_finish_event_id: int
    request_id: str
    reset_reapply_type: _messages_pb2.ResetReapplyType
    identity: str
    def __init__(self, namespace: _Optional[str] = ..., workflow_execution: _Optional[_Union[_messages_pb2.WorkflowExecution, _Mapping]] = ..., reason: _Optional[str] = ..., workflow_task_finish_event_id: _Optional[int] = ..., request_id: _Optional[str] = ..., reset_reapply_type: _Optional[_Union[_messages_pb2.ResetReapplyType, str]] = ..., identity: _Optional[str] = ...) -> None: ...

class ResetWorkflowExecutionResponse(_message.Message):
    __slots__ = ("run_id",)
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    def __init__(self, run_id: _Optional[str] = ...) -> None: ...

class RoutingConfig(_message.Message):
    __slots__ = ("current_deployment_version", "ramping_deployment_version", "ramping_version_percentage", "current_version_changed_time_ms", "ramping_version_changed_time_ms")
    CURRENT_DEPLOYMENT_VERSION_FIELD_NUMBER: _ClassVar[int]
    RAMPING_DEPLOYMENT_VERSION_FIELD_NUMBER: _ClassVar[int]
    RAMPING_VERSION_PERCENTAGE_FIELD_NUMBER: _ClassVar[int]
    CURRENT_VERSION_CHANGED_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    RAMPING_VERSION_CHANGED_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    current_deployment_version: _messages_pb2.WorkerDeploymentVersion
    ramping_deployment_version: _messages_pb2.WorkerDeploymentVersion
    ramping_version_percentage: float
    current_version_changed_time_ms: int
    ramping_version_changed_time_ms: int
    def __init__(self, current_deployment_version: _Optional[_Union[_messages_pb2.WorkerDeploymentVersion, _Mapping]] = ..., ramping_deployment_version: _Optional[_Union[_messages_pb2.WorkerDeploymentVersion, _Mapping]] = ..., ramping_version_percentage: _Optional[float] = ..., current_version_changed_time_ms: _Optional[int] = ..., ramping_version_changed_time_ms: _Optional[int] = ...) -> None: ...

class WorkerDeploymentVersionSummary(_message.Message):
    __slots__ = ("deployment_version", "create_time_ms", "drainage_status", "status", "last_poller_time_ms", "task_queues", "open_pinned_executions")
    DEPLOYMENT_VERSION_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    DRAINAGE_STATUS_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    LAST_POLLER_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    TASK_QUEUES_FIELD_NUMBER: _ClassVar[int]
    OPEN_PINNED_EXECUTIONS_FIELD_NUMBER: _ClassVar[int]
    deployment_version: _messages_pb2.WorkerDeploymentVersion
    create_time_ms: int
    drainage_status: VersionDrainageStatus
    status: WorkerDeploymentVersionStatus
    last_poller_time_ms: int
    task_queues: _containers.RepeatedScalarFieldContainer[str]
    open_pinned_executions: int
    def __init__(self, deployment_version: _Optional[_Union[_messages_pb2.WorkerDeploymentVersion, _Mapping]] = ..., create_time_ms: _Optional[int] = ..., drainage_status: _Optional[_Union[VersionDrainageStatus, str]] = ..., status: _Optional[_Union[WorkerDeploymentVersionStatus, str]] = ..., last_poller_time_ms: _Optional[int] = ..., task_queues: _Optional[_Iterable[str]] = ..., open_pinned_executions: _Optional[int] = ...) -> None: ...

class WorkerDeploymentInfo(_message.Message):
    __slots__ = ("name", "version_summaries", "create_time_ms", "routing_config", "last_modifier_identity")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_SUMMARIES_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    ROUTING_CONFIG_FIELD_NUMBER: _ClassVar[int]
    LAST_MODIFIER_IDENTITY_FIELD_NUMBER: _ClassVar[int]
    name: str
    version_summaries: _containers.RepeatedCompositeFieldContainer[WorkerDeploymentVersionSummary]
    create_time_ms: int
    routing_config: RoutingConfig
    last_modifier_identity: str
    def __init__(self, name: _Optional[str] = ..., version_summaries: _Optional[_Iterable[_Union[WorkerDeploymentVersionSummary, _Mapping]]] = ..., create_time_ms: _Optional[int] = ..., routing_config: _Optional[_Union[RoutingConfig, _Mapping]] = ..., last_modifier_identity: _Optional[str] = ...) -> None: ...

class DescribeWorkerDeploymentRequest(_message.Message):
    __slots__ = ("namespace", "deployment_name")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    DEPLOYMENT_NAME_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    deployment_name: str
    def __init__(self, namespace: _Optional[str] = ..., deployment_name: _Optional[str] = ...) -> None: ...

class DescribeWorkerDeploymentResponse(_message.Message):
    __slots__ = ("conflict_token", "worker_deployment_info")
    CONFLICT_TOKEN_FIELD_NUMBER: _ClassVar[int]
    WORKER_DEPLOYMENT_INFO_FIELD_NUMBER: _ClassVar[int]
    conflict_token: bytes
    worker_deployment_info: WorkerDeploymentInfo
    def __init__(self, conflict_token: _Optional[bytes] = ..., worker_deployment_info: _Optional[_Union[WorkerDeploymentInfo, _Mapping]] = ...) -> None: ...

class WorkerDeploymentSummary(_message.Message):
    __slots__ = ("name", "create_time_ms", "routing_config")
    NAME_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    ROUTING_CONFIG_FIELD_NUMBER: _ClassVar[int]
    name: str
    create_time_ms: int
    routing_config: RoutingConfig
    def __init__(self, name: _Optional[str] = ..., create_time_ms: _Optional[int] = ..., routing_config: _Optional[_Union[RoutingConfig, _Mapping]] = ...) -> None: ...

class ListWorkerDeploymentsRequest(_message.Message):
    __slots__ = ("namespace", "page_size", "next_page_token")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    page_size: int
    next_page_token: bytes
    def __init__(self, namespace: _Optional[str] = ..., page_size: _Optional[int] = ..., next_page_token: _Optional[bytes] = ...) -> None: ...

class ListWorkerDeploymentsResponse(_message.Message):
    __slots__ = ("next_page_token", "worker_deployments")
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    WORKER_DEPLOYMENTS_FIELD_NUMBER: _ClassVar[int]
    next_page_token: bytes
    worker_deployments: _containers.RepeatedCompositeFieldContainer[WorkerDeploymentSummary]
    def __init__(self, next_page_token: _Optional[bytes] = ..., worker_deployments: _Optional[_Iterable[_Union[WorkerDeploymentSummary, _Mapping]]] = ...) -> None: ...

class SetWorkerDeploymentCurrentVersionRequest(_message.Message):
    __slots__ = ("namespace", "deployment_name", "build_id", "conflict_token", "identity", "ignore_missing_task_queues", "allow_no_pollers")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    DEPLOYMENT_NAME_FIELD_NUMBER: _ClassVar[int]
    BUILD_ID_FIELD_NUMBER: _ClassVar[int]
    CONFLICT_TOKEN_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    IGNORE_MISSING_TASK_QUEUES_FIELD_NUMBER: _ClassVar[int]
    ALLOW_NO_POLLERS_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    deployment_name: str
    build_id: str
    conflict_token: bytes
    identity: str
    ignore_missing_task_queues: bool
    allow_no_pollers: bool
    def __init__(self, namespace: _Optional[str] = ..., deployment_name: _Optional[str] = ..., build_id: _Optional[str] = ..., conflict_token: _Optional[bytes] = ..., identity: _Optional[str] = ..., ignore_missing_task_queues: _Optional[bool] = ..., allow_no_pollers: _Optional[bool] = ...) -> None: ...

class SetWorkerDeploymentCurrentVersionResponse(_message.Message):
    __slots__ = ("conflict_token", "previous_deployment_version")
    CONFLICT_TOKEN_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_DEPLOYMENT_VERSION_FIELD_NUMBER: _ClassVar[int]
    conflict_token: bytes
    previous_deployment_version: _messages_pb2.WorkerDeploymentVersion
    def __init__(self, conflict_token: _Optional[bytes] = ..., previous_deployment_version: _Optional[_Union[_messages_pb2.WorkerDeploymentVersion, _Mapping]] = ...) -> None: ...

class SetWorkerDeploymentRampingVersionRequest(_message.Message):
    __slots__ = ("namespace", "deployment_name", "build_id", "percentage", "conflict_token", "identity", "ignore_missing_task_queues", "allow_no_pollers")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    DEPLOYMENT_NAME_FIELD_NUMBER: _ClassVar[int]
    BUILD_ID_FIELD_NUMBER: _ClassVar[int]
    PERCENTAGE_FIELD_NUMBER: _ClassVar[int]
    CONFLICT_TOKEN_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    IGNORE_MISSING_TASK_QUEUES_FIELD_NUMBER: _ClassVar[int]
    ALLOW_NO_POLLERS_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    deployment_name: str
    build_id: str
    percentage: float
    conflict_token: bytes
    identity: str
    ignore_missing_task_queues: bool
    allow_no_pollers: bool
    def __init__(self, namespace: _Optional[str] = ..., deployment_name: _Optional[str] = ..., build_id: _Optional[str] = ..., percentage: _Optional[float] = ..., conflict_token: _Optional[bytes] = ..., identity: _Optional[str] = ..., ignore_missing_task_queues: _Optional[bool] = ..., allow_no_pollers: _Optional[bool] = ...) -> None: ...

class SetWorkerDeploymentRampingVersionResponse(_message.Message):
    __slots__ = ("conflict_token", "previous_deployment_version", "previous_percentage")
    CONFLICT_TOKEN_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_DEPLOYMENT_VERSION_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_PERCENTAGE_FIELD_NUMBER: _ClassVar[int]
    conflict_token: bytes
    previous_deployment_version: _messages_pb2.WorkerDeploymentVersion
    previous_percentage: float
    def __init__(self, conflict_token: _Optional[bytes] = ..., previous_deployment_version: _Optional[_Union[_messages_pb2.WorkerDeploymentVersion, _Mapping]] = ..., previous_percentage: _Optional[float] = ...) -> None: ...

class WorkflowExecutionOptions(_message.Message):
    __slots__ = ("versioning_override",)
    VERSIONING_OVERRIDE_FIELD_NUMBER: _ClassVar[int]
    versioning_override: _messages_pb2.VersioningOverride
    def __init__(self, versioning_override: _Optional[_Union[_messages_pb2.VersioningOverride, _Mapping]] = ...) -> None: ...

class UpdateWorkflowExecutionOptionsRequest(_message.Message):
    __slots__ = ("namespace", "workflow_execution", "workflow_execution_options", "update_mask", "identity")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_EXECUTION_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_EXECUTION_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    UPDATE_MASK_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    workflow_execution: _messages_pb2.WorkflowExecution
    workflow_execution_options: WorkflowExecutionOptions
    update_mask: _field_mask_pb2.FieldMask
    identity: str
    def __init__(self, namespace: _Optional[str] = ..., workflow_execution: _Optional[_Union[_messages_pb2.WorkflowExecution, _Mapping]] = ..., workflow_execution_options: _Optional[_Union[WorkflowExecutionOptions, _Mapping]] = ..., update_mask: _Optional[_Union[_field_mask_pb2.FieldMask, _Mapping]] = ..., identity: _Optional[str] = ...) -> None: ...

class UpdateWorkflowExecutionOptionsResponse(_message.Message):
    __slots__ = ("workflow_execution_options",)
    WORKFLOW_EXECUTION_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    workflow_execution_options: WorkflowExecutionOptions
    def __init__(self, workflow_execution_options: _Optional[_Union[WorkflowExecutionOptions, _Mapping]] = ...) -> None: ...

class DeleteWorkflowExecutionRequest(_message.Message):
    __slots__ = ("namespace", "workflow_execution", "reason", "identity")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_EXECUTION_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    workflow_execution: _messages_pb2.WorkflowExecution
    reason: str
    identity: str
    def __init__(self, namespace: _Optional[str] = ..., workflow_execution: _Optional[_Union[_messages_pb2.WorkflowExecution, _Mapping]] = ..., reason: _Optional[str] = ..., identity: _Optional[str] = ...) -> None: ...

class DeleteWorkflowExecutionResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class BatchOperationDeletion(_message.Message):
    __slots__ = ("identity",)
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    identity: str
    def __init__(self, identity: _Optional[str] = ...) -> None: ...

class StartBatchOperationRequest(_message.Message):
    __slots__ = ("namespace", "visibility_query", "job_id", "reason", "deletion_operation")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    VISIBILITY_QUERY_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    DELETION_OPERATION_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    visibility_query: str
    job_id: str
    reason: str
    deletion_operation: BatchOperationDeletion
    def __init__(self, namespace: _Optional[str] = ..., visibility_query: _Optional[str] = ..., job_id: _Optional[str] = ..., reason: _Optional[str] = ..., deletion_operation: _Optional[_Union[BatchOperationDeletion, _Mapping]] = ...) -> None: ...

class StartBatchOperationResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class DescribeBatchOperationRequest(_message.Message):
    __slots__ = ("namespace", "job_id")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    job_id: str
    def __init__(self, namespace: _Optional[str] = ..., job_id: _Optional[str] = ...) -> None: ...

class DescribeBatchOperationResponse(_message.Message):
    __slots__ = ("operation_type", "job_id", "state", "start_time_ms", "close_time_ms", "total_operation_count", "complete_operation_count", "failure_operation_count", "identity", "reason", "visibility_query", "terminated_count", "archived_count", "last_error")
    OPERATION_TYPE_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    START_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    CLOSE_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_OPERATION_COUNT_FIELD_NUMBER: _ClassVar[int]
    COMPLETE_OPERATION_COUNT_FIELD_NUMBER: _ClassVar[int]
    FAILURE_OPERATION_COUNT_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    VISIBILITY_QUERY_FIELD_NUMBER: _ClassVar[int]
    TERMINATED_COUNT_FIELD_NUMBER: _ClassVar[int]
    ARCHIVED_COUNT_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    operation_type: BatchOperationType
    job_id: str
    state: BatchOperationState
    start_time_ms: int
    close_time_ms: int
    total_operation_count: int
    complete_operation_count: int
    failure_operation_count: int
    identity: str
    reason: str
    visibility_query: str
    terminated_count: int
    archived_count: int
    last_error: str
    def __init__(self, operation_type: _Optional[_Union[BatchOperationType, str]] = ..., job_id: _Optional[str] = ..., state: _Optional[_Union[BatchOperationState, str]] = ..., start_time_ms: _Optional[int] = ..., close_time_ms: _Optional[int] = ..., total_operation_count: _Optional[int] = ..., complete_operation_count: _Optional[int] = ..., failure_operation_count: _Optional[int] = ..., identity: _Optional[str] = ..., reason: _Optional[str] = ..., visibility_query: _Optional[str] = ..., terminated_count: _Optional[int] = ..., archived_count: _Optional[int] = ..., last_error: _Optional[str] = ...) -> None: ...

class ListBatchOperationsRequest(_message.Message):
    __slots__ = ("namespace",)
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    def __init__(self, namespace: _Optional[str] = ...) -> None: ...

class ListBatchOperationsResponse(_message.Message):
    __slots__ = ("operation_info",)
    OPERATION_INFO_FIELD_NUMBER: _ClassVar[int]
    operation_info: _containers.RepeatedCompositeFieldContainer[DescribeBatchOperationResponse]
    def __init__(self, operation_info: _Optional[_Iterable[_Union[DescribeBatchOperationResponse, _Mapping]]] = ...) -> None: ...

class BatchJobRecord(_message.Message):
    __slots__ = ("request", "progress", "cutoff_time_ms", "archive_cursor", "phase", "namespace_id", "in_flight", "pending_blob_keys", "failed")
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    CUTOFF_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    ARCHIVE_CURSOR_FIELD_NUMBER: _ClassVar[int]
    PHASE_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_ID_FIELD_NUMBER: _ClassVar[int]
    IN_FLIGHT_FIELD_NUMBER: _ClassVar[int]
    PENDING_BLOB_KEYS_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    request: StartBatchOperationRequest
    progress: DescribeBatchOperationResponse
    cutoff_time_ms: int
    archive_cursor: str
    phase: BatchJobPhase
    namespace_id: str
    in_flight: _containers.RepeatedCompositeFieldContainer[BatchJobItem]
    pending_blob_keys: _containers.RepeatedScalarFieldContainer[str]
    failed: _containers.RepeatedCompositeFieldContainer[BatchJobItem]
    def __init__(self, request: _Optional[_Union[StartBatchOperationRequest, _Mapping]] = ..., progress: _Optional[_Union[DescribeBatchOperationResponse, _Mapping]] = ..., cutoff_time_ms: _Optional[int] = ..., archive_cursor: _Optional[str] = ..., phase: _Optional[_Union[BatchJobPhase, str]] = ..., namespace_id: _Optional[str] = ..., in_flight: _Optional[_Iterable[_Union[BatchJobItem, _Mapping]]] = ..., pending_blob_keys: _Optional[_Iterable[str]] = ..., failed: _Optional[_Iterable[_Union[BatchJobItem, _Mapping]]] = ...) -> None: ...

class BatchJobItem(_message.Message):
    __slots__ = ("workflow_id", "run_id", "running")
    WORKFLOW_ID_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    RUNNING_FIELD_NUMBER: _ClassVar[int]
    workflow_id: str
    run_id: str
    running: bool
    def __init__(self, workflow_id: _Optional[str] = ..., run_id: _Optional[str] = ..., running: _Optional[bool] = ...) -> None: ...

class CreateNexusEndpointRequest(_message.Message):
    __slots__ = ("spec",)
    SPEC_FIELD_NUMBER: _ClassVar[int]
    spec: _messages_pb2.EndpointSpec
    def __init__(self, spec: _Optional[_Union[_messages_pb2.EndpointSpec, _Mapping]] = ...) -> None: ...

class CreateNexusEndpointResponse(_message.Message):
    __slots__ = ("endpoint",)
    ENDPOINT_FIELD_NUMBER: _ClassVar[int]
    endpoint: _messages_pb2.Endpoint
    def __init__(self, endpoint: _Optional[_Union[_messages_pb2.Endpoint, _Mapping]] = ...) -> None: ...

class GetNexusEndpointRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class GetNexusEndpointResponse(_message.Message):
    __slots__ = ("endpoint",)
    ENDPOINT_FIELD_NUMBER: _ClassVar[int]
    endpoint: _messages_pb2.Endpoint
    def __init__(self, endpoint: _Optional[_Union[_messages_pb2.Endpoint, _Mapping]] = ...) -> None: ...

class ListNexusEndpointsRequest(_message.Message):
    __slots__ = ("page_size", "next_page_token", "name")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    next_page_token: bytes
    name: str
    def __init__(self, page_size: _Optional[int] = ..., next_page_token: _Optional[bytes] = ..., name: _Optional[str] = ...) -> None: ...

class ListNexusEndpointsResponse(_message.Message):
    __slots__ = ("next_page_token", "endpoints")
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    ENDPOINTS_FIELD_NUMBER: _ClassVar[int]
    next_page_token: bytes
    endpoints: _containers.RepeatedCompositeFieldContainer[_messages_pb2.Endpoint]
    def __init__(self, next_page_token: _Optional[bytes] = ..., endpoints: _Optional[_Iterable[_Union[_messages_pb2.Endpoint, _Mapping]]] = ...) -> None: ...

class UpdateNexusEndpointRequest(_message.Message):
    __slots__ = ("id", "version", "spec")
    ID_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    id: str
    version: int
    spec: _messages_pb2.EndpointSpec
    def __init__(self, id: _Optional[str] = ..., version: _Optional[int] = ..., spec: _Optional[_Union[_messages_pb2.EndpointSpec, _Mapping]] = ...) -> None: ...

class UpdateNexusEndpointResponse(_message.Message):
    __slots__ = ("endpoint",)
    ENDPOINT_FIELD_NUMBER: _ClassVar[int]
    endpoint: _messages_pb2.Endpoint
    def __init__(self, endpoint: _Optional[_Union[_messages_pb2.Endpoint, _Mapping]] = ...) -> None: ...

class DeleteNexusEndpointRequest(_message.Message):
    __slots__ = ("id", "version")
    ID_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    id: str
    version: int
    def __init__(self, id: _Optional[str] = ..., version: _Optional[int] = ...) -> None: ...

class DeleteNexusEndpointResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class PollNexusTaskQueueRequest(_message.Message):
    __slots__ = ("namespace", "task_queue", "identity", "deployment_options")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    TASK_QUEUE_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    DEPLOYMENT_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    task_queue: str
    identity: str
    deployment_options: _messages_pb2.WorkerDeploymentOptions
    def __init__(self, namespace: _Optional[str] = ..., task_queue: _Optional[str] = ..., identity: _Optional[str] = ..., deployment_options: _Optional[_Union[_messages_pb2.WorkerDeploymentOptions, _Mapping]] = ...) -> None: ...

class PollNexusTaskQueueResponse(_message.Message):
    __slots__ = ("task_token", "request")
    TASK_TOKEN_FIELD_NUMBER: _ClassVar[int]
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    task_token: bytes
    request: _messages_pb2.NexusRequest
    def __init__(self, task_token: _Optional[bytes] = ..., request: _Optional[_Union[_messages_pb2.NexusRequest, _Mapping]] = ...) -> None: ...

class RespondNexusTaskCompletedRequest(_message.Message):
    __slots__ = ("namespace", "identity", "task_token", "response")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    TASK_TOKEN_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    identity: str
    task_token: bytes
    response: _messages_pb2.NexusResponse
    def __init__(self, namespace: _Optional[str] = ..., identity: _Optional[str] = ..., task_token: _Optional[bytes] = ..., response: _Optional[_Union[_messages_pb2.NexusResponse, _Mapping]] = ...) -> None: ...

class RespondNexusTaskCompletedResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class RespondNexusTaskFailedRequest(_message.Message):
    __slots__ = ("namespace", "identity", "task_token", "error")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    TASK_TOKEN_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    identity: str
    task_token: bytes
    error: _messages_pb2.NexusHandlerError
    def __init__(self, namespace: _Optional[str] = ..., identity: _Optional[str] = ..., task_token: _Optional[bytes] = ..., error: _Optional[_Union[_messages_pb2.NexusHandlerError, _Mapping]] = ...) -> None: ...

class RespondNexusTaskFailedResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
