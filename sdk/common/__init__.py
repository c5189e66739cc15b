"""Types shared by the client, the worker and workflow code (Temporal's ``temporalio.common``).

``from spindle.common import RetryPolicy, WorkflowIDReusePolicy, SearchAttributeKey``
works as ``from temporalio.common import ...`` does.
"""

from spindle.common._enums import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from spindle.common._retry_policy import RetryPolicy
from spindle.common._search_attributes import (
    SearchAttributeIndexedValueType,
    SearchAttributeKey,
    SearchAttributePair,
    SearchAttributeUpdate,
    TypedSearchAttributes,
)

__all__ = [
    "RetryPolicy",
    "WorkflowIDReusePolicy",
    "WorkflowIDConflictPolicy",
    "SearchAttributeIndexedValueType",
    "SearchAttributeKey",
    "SearchAttributePair",
    "SearchAttributeUpdate",
    "TypedSearchAttributes",
]
