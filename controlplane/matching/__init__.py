"""Matching: task queues that hand tasks to long-polling workers."""

from ._queues import KIND_ACTIVITY, KIND_QUERY, KIND_WORKFLOW, Matching, TaskQueue, TaskRef

__all__ = ["KIND_ACTIVITY", "KIND_QUERY", "KIND_WORKFLOW", "Matching", "TaskQueue", "TaskRef"]
