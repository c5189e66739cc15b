"""An execution's worker build versioning from the client side: what ``describe()`` says, and overrides.

``describe().versioning_info`` reads ``WorkflowExecutionInfo.versioning_info`` (which build ran the
execution's last task, with which behavior, and an operator's override); ``set_versioning_override``
(on a handle, or on every execution a query matches) sends ``UpdateWorkflowExecutionOptions`` with the
update mask ``["versioning_override"]``.
"""

from __future__ import annotations

import dataclasses

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.common._versioning import VersioningBehavior, VersioningOverride, WorkerDeploymentVersion

__all__ = ["WorkflowExecutionVersioningInfo", "check_override", "options_request", "versioning_info"]

#: The field mask path of the override in ``UpdateWorkflowExecutionOptionsRequest.update_mask``.
OVERRIDE_PATH = "versioning_override"


@dataclasses.dataclass(frozen=True)
class WorkflowExecutionVersioningInfo:
    """Where an execution's workflow tasks run (``describe().versioning_info``).

    Attributes:
        behavior: what the execution's last completed task declared (``UNSPECIFIED``: an unversioned
            worker completed it).
        deployment_version: the build that completed that task (None: an unversioned worker).
        versioning_override: an operator's override (``set_versioning_override``), or None.
        pinned_version: the build the next workflow task waits for (None: the deployment's routing decides).
    """

    behavior: VersioningBehavior
    deployment_version: WorkerDeploymentVersion | None
    versioning_override: VersioningOverride | None
    pinned_version: WorkerDeploymentVersion | None = None


def versioning_info(info: svc.WorkflowExecutionInfo) -> WorkflowExecutionVersioningInfo | None:
    """The typed versioning info of ``info`` (None when the execution never ran on a versioned worker)."""
    if not info.HasField("versioning_info"):
        return None
    v = info.versioning_info
    try:
        behavior = VersioningBehavior(v.behavior)
    except ValueError:  # a newer server's behavior
        behavior = VersioningBehavior.UNSPECIFIED
    return WorkflowExecutionVersioningInfo(
        behavior=behavior, deployment_version=WorkerDeploymentVersion._from_proto(v.deployment_version),
        versioning_override=VersioningOverride._from_proto(v.versioning_override),
        pinned_version=WorkerDeploymentVersion._from_proto(v.pinned_version))


def check_override(override: object) -> VersioningOverride | None:
    """``override`` if it is a VersioningOverride or None; TypeError otherwise."""
    if override is not None and not isinstance(override, VersioningOverride):
        raise TypeError("versioning override: expected a spindle.common.PinnedVersioningOverride, "
                        f"AutoUpgradeVersioningOverride or None, got {type(override).__name__}")
    return override


def options_request(namespace: str, execution: pb.WorkflowExecution, override: VersioningOverride | None,
                    identity: str) -> svc.UpdateWorkflowExecutionOptionsRequest:
    """The request that sets ``override`` on ``execution`` (None: removes the override it has)."""
    req = svc.UpdateWorkflowExecutionOptionsRequest(namespace=namespace, workflow_execution=execution,
                                                    identity=identity)
    req.update_mask.paths.append(OVERRIDE_PATH)
    if override is not None:
        req.workflow_execution_options.versioning_override.CopyFrom(override._to_proto())
    else:
        req.workflow_execution_options.SetInParent()
    return req
