"""Public client API: :class:`Client`, :class:`WorkflowHandle` and what they return."""

from spindle._client import (
    AsyncActivityHandle,
    Client,
    NamespaceDescription,
    PendingActivity,
    PendingChild,
    WorkflowExecutionDescription,
    WorkflowHandle,
)
from spindle._enums import WorkflowExecutionStatus, WorkflowIDConflictPolicy, WorkflowIDReusePolicy

__all__ = [
    "Client",
    "WorkflowHandle",
    "WorkflowExecutionDescription",
    "PendingActivity",
    "PendingChild",
    "NamespaceDescription",
    "AsyncActivityHandle",
    "WorkflowIDReusePolicy",
    "WorkflowIDConflictPolicy",
    "WorkflowExecutionStatus",
]
