"""Public worker API: :class:`Worker`."""

from sdk._worker import Worker, WorkflowDeterminismCheckError

__all__ = ["Worker", "WorkflowDeterminismCheckError"]
