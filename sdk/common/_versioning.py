"""Worker build versioning, with temporalio's names: versions, behaviors and overrides (issue 25).

A *worker deployment* is a named set of builds of workers; :class:`WorkerDeploymentVersion` names one
build. A workflow declares a :class:`VersioningBehavior` (``@workflow.defn(versioning_behavior=...)``):
``PINNED`` runs all its tasks on the build that started it, ``AUTO_UPGRADE`` moves to the deployment's
current version at its next task. A :class:`VersioningOverride` set on one execution
(``WorkflowHandle.set_versioning_override``) takes precedence over the behavior.
"""

from __future__ import annotations

import abc
import dataclasses
import enum

from spindle.api import messages_pb2 as pb

__all__ = ["AutoUpgradeVersioningOverride", "PinnedVersioningOverride", "VersioningBehavior", "VersioningOverride",
           "WorkerDeploymentVersion"]


@dataclasses.dataclass(frozen=True)
class WorkerDeploymentVersion:
    """One build of a worker deployment: ``deployment_name`` and ``build_id``.

    Its canonical string is ``"<deployment_name>.<build_id>"`` (the name must not contain a ``"."``;
    the build id may).
    """

    deployment_name: str
    build_id: str

    def to_canonical_string(self) -> str:
        """``"<deployment_name>.<build_id>"``, as Temporal writes a version."""
        return f"{self.deployment_name}.{self.build_id}"

    @staticmethod
    def from_canonical_string(canonical: str) -> WorkerDeploymentVersion:
        """The version of ``"<deployment_name>.<build_id>"``, split at the first ``"."``.

        Raises:
            ValueError: ``canonical`` has no ``"."``, or an empty name or build id.
        """
        name, dot, build_id = canonical.partition(".")
        if not dot or not name or not build_id:
            raise ValueError(f"expected '<deployment_name>.<build_id>', got {canonical!r}")
        return WorkerDeploymentVersion(deployment_name=name, build_id=build_id)

    def _to_proto(self) -> pb.WorkerDeploymentVersion:
        return pb.WorkerDeploymentVersion(deployment_name=self.deployment_name, build_id=self.build_id)

    @staticmethod
    def _from_proto(msg: pb.WorkerDeploymentVersion) -> WorkerDeploymentVersion | None:
        """The version a wire message holds; None for an empty one (an unversioned worker)."""
        if not msg.deployment_name and not msg.build_id:
            return None
        return WorkerDeploymentVersion(deployment_name=msg.deployment_name, build_id=msg.build_id)


class VersioningBehavior(enum.IntEnum):
    """How a workflow's later tasks choose a build; each value is the wire enum's number.

    ``UNSPECIFIED``: none declared (a versioned worker then needs a default behavior); ``PINNED``: every task
    runs on the build that started the execution; ``AUTO_UPGRADE``: the next task runs on the deployment's
    current version.
    """

    UNSPECIFIED = pb.VERSIONING_BEHAVIOR_UNSPECIFIED
    PINNED = pb.VERSIONING_BEHAVIOR_PINNED
    AUTO_UPGRADE = pb.VERSIONING_BEHAVIOR_AUTO_UPGRADE


class VersioningOverride(abc.ABC):
    """An override of one execution's versioning behavior: :class:`PinnedVersioningOverride` or
    :class:`AutoUpgradeVersioningOverride`."""

    @abc.abstractmethod
    def _to_proto(self) -> pb.VersioningOverride: ...

    @staticmethod
    def _from_proto(msg: pb.VersioningOverride) -> VersioningOverride | None:
        """The override a wire message holds; None when it holds none."""
        which = msg.WhichOneof("override")
        if which == "pinned":
            version = WorkerDeploymentVersion._from_proto(msg.pinned.version)
            return PinnedVersioningOverride(version) if version is not None else None
        if which == "auto_upgrade" and msg.auto_upgrade:
            return AutoUpgradeVersioningOverride()
        return None


@dataclasses.dataclass(frozen=True)
class PinnedVersioningOverride(VersioningOverride):
    """Run the execution's tasks on ``version``, whatever its behavior and the deployment's routing."""

    version: WorkerDeploymentVersion

    def _to_proto(self) -> pb.VersioningOverride:
        return pb.VersioningOverride(pinned=pb.VersioningOverride.PinnedOverride(
            behavior=pb.VersioningOverride.PINNED_OVERRIDE_BEHAVIOR_PINNED, version=self.version._to_proto()))


@dataclasses.dataclass(frozen=True)
class AutoUpgradeVersioningOverride(VersioningOverride):
    """Run the execution's next tasks on the deployment's current version, as an ``AUTO_UPGRADE`` workflow."""

    def _to_proto(self) -> pb.VersioningOverride:
        return pb.VersioningOverride(auto_upgrade=True)
