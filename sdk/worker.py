"""Public worker API: :class:`Worker`, and :class:`SharedStateManager` for process-pool activities."""

from spindle._activity_shared_state import SharedHeartbeatSender, SharedStateManager
from spindle._worker import Worker, WorkflowDeterminismCheckError

__all__ = ["Worker", "WorkflowDeterminismCheckError", "SharedStateManager", "SharedHeartbeatSender"]
