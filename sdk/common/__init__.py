"""Types shared by the client, the worker and workflow code (Temporal's ``temporalio.common``).

``from spindle.common import RetryPolicy, WorkflowIDReusePolicy, SearchAttributeKey``
works as ``from temporalio.common import ...`` does; so do worker versioning's
``WorkerDeploymentVersion``, ``VersioningBehavior`` and the ``VersioningOverride`` kinds.
"""

from spindle.common._enums import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from spindle.common._raw_value import RawValue
from spindle.common._retry_policy import RetryPolicy
from spindle.common._search_attributes import (
    SearchAttributeIndexedValueType,
    SearchAttributeKey,
    SearchAttributePair,
    SearchAttributeUpdate,
    TypedSearchAttributes,
)
from spindle.common._versioning import (
    AutoUpgradeVersioningOverride,
    PinnedVersioningOverride,
    VersioningBehavior,
    VersioningOverride,
    WorkerDeploymentVersion,
)

__all__ = [
    "RawValue",
    "RetryPolicy",
    "WorkflowIDReusePolicy",
    "WorkflowIDConflictPolicy",
    "SearchAttributeIndexedValueType",
    "SearchAttributeKey",
    "SearchAttributePair",
    "SearchAttributeUpdate",
    "TypedSearchAttributes",
    "WorkerDeploymentVersion",
    "VersioningBehavior",
    "VersioningOverride",
    "PinnedVersioningOverride",
    "AutoUpgradeVersioningOverride",
]
