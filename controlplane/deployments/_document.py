"""A worker deployment's state as one document, and the routing rule read from it (pure: no I/O).

A deployment is a named set of builds (versions) of the workers of one or more task queues,
learnt from the pollers that name it. Its routing config says where new and auto-upgrade
executions go: to the **current** version, or for ``ramp_pct`` percent of workflow ids to the
**ramping** one (decided by a hash of the workflow id, so an id always gets the same answer);
with no current version they go to unversioned workers. Pinned executions do not read it.

Versions are written ``<deployment>.<build>`` (Temporal's canonical string); a deployment
name therefore holds no ``.``, and the build id is everything after the first one.
"""

from __future__ import annotations

import json
import zlib

from dataclasses import dataclass, field
from typing import Any

from spindle.controlplane.errors import InvalidArgument

SEPARATOR = "."


def check_deployment_name(name: str, path: str) -> None:
    """A deployment name's rule: not empty, no ``.`` (InvalidArgument naming ``path``)."""
    if not name:
        raise InvalidArgument(f"{path}: required")
    if SEPARATOR in name:
        raise InvalidArgument(f"{path}: must not contain {SEPARATOR!r} (a version is written "
                              f"<deployment>{SEPARATOR}<build>), got {name!r}")


def check_version(deployment_name: str, build_id: str, path: str) -> None:
    """A version's rule: a deployment name (:func:`check_deployment_name`) and a build id."""
    check_deployment_name(deployment_name, f"{path}.deployment_name")
    if not build_id:
        raise InvalidArgument(f"{path}.build_id: required")


def version_key(deployment_name: str, build_id: str) -> str:
    """``<deployment>.<build>``: how a version is named in task routing and in visibility."""
    return f"{deployment_name}{SEPARATOR}{build_id}"


def split_version_key(key: str) -> tuple[str, str]:
    """``(deployment, build)`` of a version key (``("", "")`` for ``""``)."""
    name, _, build = key.partition(SEPARATOR)
    return name, build


def ramp_bucket(workflow_id: str) -> float:
    """Where a workflow id falls in 0 (incl.) .. 100 (excl.), in steps of 0.01: stable across processes."""
    return (zlib.crc32(workflow_id.encode("utf-8")) % 10_000) / 100.0


@dataclass
class VersionState:
    """One build of a deployment, as the pollers and the routing changes made it."""

    created_ms: int = 0
    last_poll_ms: int = 0
    #: Task queues a poller of this build polled, as ``"<kind>:<name>"`` (kind 0 workflow, 1 activity).
    task_queues: list[str] = field(default_factory=list)
    #: Whether it has ever been current or ramping (an inactive version is never draining).
    was_active: bool = False


@dataclass
class DeploymentDoc:
    """A deployment's versions and routing config (the store keeps it as JSON)."""

    name: str
    created_ms: int = 0
    modifier: str = ""
    current: str = ""  # build id; "" = unversioned workers take new executions
    current_changed_ms: int = 0
    ramping: str = ""  # build id; "" = nothing ramps
    ramp_pct: float = 0.0
    ramping_changed_ms: int = 0
    versions: dict[str, VersionState] = field(default_factory=dict)

    def target(self, workflow_id: str) -> str:
        """The version key a new or auto-upgrade task of ``workflow_id`` goes to ("" = unversioned workers)."""
        if self.ramping and self.ramp_pct > 0 and ramp_bucket(workflow_id) < self.ramp_pct:
            return version_key(self.name, self.ramping)
        return version_key(self.name, self.current) if self.current else ""

    def queues(self) -> set[str]:
        """Every ``"<kind>:<name>"`` task queue any version of this deployment polled."""
        return {q for v in self.versions.values() for q in v.task_queues}

    def to_json(self) -> str:
        d: dict[str, Any] = {
            "created_ms": self.created_ms, "modifier": self.modifier,
            "current": self.current, "current_changed_ms": self.current_changed_ms,
            "ramping": self.ramping, "ramp_pct": self.ramp_pct, "ramping_changed_ms": self.ramping_changed_ms,
            "versions": {b: {"created_ms": v.created_ms, "last_poll_ms": v.last_poll_ms,
                             "task_queues": v.task_queues, "was_active": v.was_active}
                         for b, v in sorted(self.versions.items())},
        }
        return json.dumps(d, sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, name: str, text: str) -> "DeploymentDoc":
        d = json.loads(text)
        versions = {b: VersionState(int(v.get("created_ms", 0)), int(v.get("last_poll_ms", 0)),
                                    list(v.get("task_queues", [])), bool(v.get("was_active", False)))
                    for b, v in d.get("versions", {}).items()}
        return cls(name, int(d.get("created_ms", 0)), str(d.get("modifier", "")), str(d.get("current", "")),
                   int(d.get("current_changed_ms", 0)), str(d.get("ramping", "")), float(d.get("ramp_pct", 0.0)),
                   int(d.get("ramping_changed_ms", 0)), versions)


__all__ = ["DeploymentDoc", "SEPARATOR", "check_deployment_name", "check_version", "VersionState", "ramp_bucket", "split_version_key", "version_key"]
