"""Worker deployment messages, where Temporal code imports them from (``temporalio.api.deployment.v1``).

A worker deployment is a named set of builds (versions) of workers; these are the messages that describe
one (``DescribeWorkerDeploymentResponse.worker_deployment_info``) and its routing, with Temporal's field
names (``version_summaries[i].deployment_version.build_id`` ...).
"""

from spindle.api.messages_pb2 import WorkerDeploymentOptions, WorkerDeploymentVersion
from spindle.api.service_pb2 import (
    RoutingConfig,
    WorkerDeploymentInfo,
    WorkerDeploymentSummary,
    WorkerDeploymentVersionSummary,
)

__all__ = [
    "RoutingConfig",
    "WorkerDeploymentInfo",
    "WorkerDeploymentOptions",
    "WorkerDeploymentSummary",
    "WorkerDeploymentVersion",
    "WorkerDeploymentVersionSummary",
]
