"""Public worker API: :class:`Worker`."""

from spindle._worker import Worker, WorkflowDeterminismCheckError

__all__ = ["Worker", "WorkflowDeterminismCheckError"]
