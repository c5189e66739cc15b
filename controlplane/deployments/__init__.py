"""Worker deployments (worker build versioning): versions learnt from pollers, routing, and where a task goes."""

from ._document import (
                        DeploymentDoc,
                        VersionState,
                        check_deployment_name,
                        check_version,
                        ramp_bucket,
                        split_version_key,
                        version_key,
)
from ._registry import Deployments

__all__ = ["DeploymentDoc", "Deployments", "check_deployment_name", "check_version", "VersionState", "ramp_bucket", "split_version_key", "version_key"]
