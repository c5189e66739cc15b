"""A worker's build (worker build versioning, issue 25): :class:`WorkerDeploymentConfig` and what it sends.

A worker given ``deployment_config`` names its build on every poll (workflow, sticky and activity) and on
every workflow task completion, with the behavior the workflow declares; the server then routes each
execution's tasks by the deployment's current version and the execution's behavior. The options message is
built once per worker; a worker without ``deployment_config`` sends none of these fields.
"""

from __future__ import annotations

import dataclasses

from collections.abc import Mapping
from typing import Any

from spindle.api import messages_pb2 as pb
from spindle.common._versioning import VersioningBehavior, WorkerDeploymentVersion

__all__ = ["WorkerDeploymentConfig", "deployment_options", "versioning_behaviors"]


@dataclasses.dataclass(frozen=True)
class WorkerDeploymentConfig:
    """Which build of which worker deployment a worker is (temporalio's ``WorkerDeploymentConfig``).

    Attributes:
        version: the deployment's name and this worker's build id.
        use_worker_versioning: the server routes tasks to this worker by version (the deployment's current
            or ramping version, or the build a ``PINNED`` execution started on). False: the worker only
            reports its version, and takes tasks as an unversioned worker.
        default_versioning_behavior: the behavior of registered workflows that declare none
            (``@workflow.defn(versioning_behavior=...)``). With ``use_worker_versioning`` and no default,
            every workflow must declare one.
    """

    version: WorkerDeploymentVersion
    use_worker_versioning: bool = False
    default_versioning_behavior: VersioningBehavior = VersioningBehavior.UNSPECIFIED


def deployment_options(config: WorkerDeploymentConfig | None) -> pb.WorkerDeploymentOptions | None:
    """The wire options a worker with ``config`` sends (None: an unversioned worker, which sends nothing).

    Raises:
        TypeError: ``config`` is not a WorkerDeploymentConfig, or its version not a WorkerDeploymentVersion.
        ValueError: an empty deployment name or build id, or a default behavior that is not a VersioningBehavior.
    """
    if config is None:
        return None
    if not isinstance(config, WorkerDeploymentConfig):
        raise TypeError(f"Worker(deployment_config=...) takes a spindle.worker.WorkerDeploymentConfig (or None), "
                        f"got {type(config).__name__}")
    version = config.version
    if not isinstance(version, WorkerDeploymentVersion):
        raise TypeError(f"WorkerDeploymentConfig.version: expected a spindle.common.WorkerDeploymentVersion, "
                        f"got {type(version).__name__}")
    if not version.deployment_name or not version.build_id:
        raise ValueError(f"WorkerDeploymentConfig.version needs a deployment name and a build id, got {version}")
    default = VersioningBehavior(config.default_versioning_behavior)
    return pb.WorkerDeploymentOptions(version=version._to_proto(), use_worker_versioning=config.use_worker_versioning,
                                      default_versioning_behavior=int(default))  # type: ignore[arg-type]


def versioning_behaviors(config: WorkerDeploymentConfig | None, definitions: Mapping[str, Any]) -> dict[str, int]:
    """The behavior each registered workflow declares on completion (its own, else the config's default).

    Empty without ``config``.

    Raises:
        ValueError: ``use_worker_versioning`` is on, there is no default behavior, and a workflow declares none;
            the message names every such workflow.
    """
    if config is None:
        return {}
    default = VersioningBehavior(config.default_versioning_behavior)
    out = {name: int(getattr(d, "versioning_behavior", 0) or default) for name, d in definitions.items()}
    missing = sorted(name for name, behavior in out.items() if not behavior)
    if config.use_worker_versioning and missing:
        raise ValueError(
            f"workflow(s) {', '.join(repr(m) for m in missing)} declare no versioning behavior, and this worker uses "
            "worker versioning with no default: pass @workflow.defn(versioning_behavior=VersioningBehavior.PINNED or "
            "AUTO_UPGRADE), or WorkerDeploymentConfig(default_versioning_behavior=...)")
    return out
