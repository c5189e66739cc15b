"""Public worker API: :class:`Worker`, its interceptors, :class:`WorkerDeploymentConfig` (worker build versioning),
and :class:`SharedStateManager` for process-pool activities."""

from spindle._activity.shared_state import SharedHeartbeatSender, SharedStateManager
from spindle._interceptors.worker import (
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
from spindle.worker._deployment import WorkerDeploymentConfig
from spindle.worker._metrics import WorkerMetrics
from spindle.worker._replayer import Replayer, WorkflowReplayResult, WorkflowReplayResults
from spindle.worker._worker import Worker, WorkflowDeterminismCheckError
from spindle.worker.workflow_sandbox import UnsandboxedWorkflowRunner, WorkflowRunner

__all__ = [
    "Worker", "WorkflowDeterminismCheckError", "WorkerMetrics", "SharedStateManager", "SharedHeartbeatSender",
    "Interceptor", "ActivityInboundInterceptor", "ActivityOutboundInterceptor", "ExecuteActivityInput",
    "WorkflowInterceptorClassInput", "WorkflowInboundInterceptor", "WorkflowOutboundInterceptor",
    "ExecuteWorkflowInput", "HandleSignalInput", "HandleQueryInput", "HandleUpdateInput", "StartActivityInput", "StartChildWorkflowInput",
    "WorkerDeploymentConfig",
    "Replayer", "WorkflowReplayResult", "WorkflowReplayResults",
    "UnsandboxedWorkflowRunner", "WorkflowRunner",
]
