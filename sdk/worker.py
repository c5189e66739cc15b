"""Public worker API: :class:`Worker`, its interceptors, and :class:`SharedStateManager` for process-pool activities."""

from spindle._activity_shared_state import SharedHeartbeatSender, SharedStateManager
from spindle._interceptor_worker import (
    ActivityInboundInterceptor,
    ActivityOutboundInterceptor,
    ExecuteActivityInput,
    ExecuteWorkflowInput,
    HandleQueryInput,
    HandleSignalInput,
    HandleUpdateInput,
    Interceptor,
    StartActivityInput,
    StartChildWorkflowInput,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
    WorkflowOutboundInterceptor,
)
from spindle._worker import Worker, WorkflowDeterminismCheckError
from spindle._worker_metrics import WorkerMetrics

__all__ = [
    "Worker", "WorkflowDeterminismCheckError", "WorkerMetrics", "SharedStateManager", "SharedHeartbeatSender",
    "Interceptor", "ActivityInboundInterceptor", "ActivityOutboundInterceptor", "ExecuteActivityInput",
    "WorkflowInterceptorClassInput", "WorkflowInboundInterceptor", "WorkflowOutboundInterceptor",
    "ExecuteWorkflowInput", "HandleSignalInput", "HandleQueryInput", "HandleUpdateInput", "StartActivityInput", "StartChildWorkflowInput",
]
