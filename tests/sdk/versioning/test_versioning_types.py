"""``spindle.common``'s versioning types and ``@workflow.defn(versioning_behavior=...)`` (issue 25)."""

from __future__ import annotations

import dataclasses

import pytest

from spindle import common, workflow
from spindle._workflow.defn import WorkflowDefinition
from spindle.api import messages_pb2 as pb
from spindle.common import (
    AutoUpgradeVersioningOverride,
    PinnedVersioningOverride,
    VersioningBehavior,
    VersioningOverride,
    WorkerDeploymentVersion,
)
from spindle.worker import WorkerDeploymentConfig


def test_canonical_string_round_trip_splits_at_the_first_dot() -> None:
    v = WorkerDeploymentVersion(deployment_name="my-deployment", build_id="1.0")
    assert v.to_canonical_string() == "my-deployment.1.0"
    assert WorkerDeploymentVersion.from_canonical_string("my-deployment.1.0") == v
    assert WorkerDeploymentVersion.from_canonical_string("a.b.c.d") == WorkerDeploymentVersion("a", "b.c.d")
    for bad in ("nodot", ".1.0", "name."):
        with pytest.raises(ValueError, match="deployment_name"):
            WorkerDeploymentVersion.from_canonical_string(bad)
    with pytest.raises(dataclasses.FrozenInstanceError):
        v.build_id = "2.0"  # type: ignore[misc]


def test_behavior_values_are_the_wire_enum() -> None:
    assert [(b.name, int(b)) for b in VersioningBehavior] == [
        ("UNSPECIFIED", pb.VERSIONING_BEHAVIOR_UNSPECIFIED), ("PINNED", pb.VERSIONING_BEHAVIOR_PINNED),
        ("AUTO_UPGRADE", pb.VERSIONING_BEHAVIOR_AUTO_UPGRADE)]


def test_overrides_to_and_from_the_wire() -> None:
    pinned = PinnedVersioningOverride(WorkerDeploymentVersion("d", "2.0"))
    auto = AutoUpgradeVersioningOverride()
    assert isinstance(pinned, VersioningOverride) and isinstance(auto, VersioningOverride)
    msg = pinned._to_proto()
    assert msg.pinned.version.build_id == "2.0"
    assert msg.pinned.behavior == pb.VersioningOverride.PINNED_OVERRIDE_BEHAVIOR_PINNED
    assert VersioningOverride._from_proto(msg) == pinned
    assert auto._to_proto().auto_upgrade
    assert VersioningOverride._from_proto(auto._to_proto()) == auto
    assert VersioningOverride._from_proto(pb.VersioningOverride()) is None
    with pytest.raises(TypeError):
        VersioningOverride()  # type: ignore[abstract]


def test_defn_stores_the_behavior() -> None:
    @workflow.defn(name="Pinned", versioning_behavior=common.VersioningBehavior.PINNED)
    class Pinned:
        @workflow.run
        async def run(self) -> None: ...

    @workflow.defn(versioning_behavior=VersioningBehavior.AUTO_UPGRADE)
    async def auto() -> None: ...

    @workflow.defn
    async def plain() -> None: ...

    assert WorkflowDefinition.from_target(Pinned).versioning_behavior is VersioningBehavior.PINNED
    assert WorkflowDefinition.from_target(Pinned.run).versioning_behavior is VersioningBehavior.PINNED
    assert WorkflowDefinition.from_target(auto).versioning_behavior is VersioningBehavior.AUTO_UPGRADE
    assert WorkflowDefinition.from_target(plain).versioning_behavior is VersioningBehavior.UNSPECIFIED
    with pytest.raises(ValueError):
        workflow.defn(versioning_behavior=7)  # type: ignore[arg-type]


def test_worker_deployment_config_defaults() -> None:
    config = WorkerDeploymentConfig(version=WorkerDeploymentVersion("d", "1.0"))
    assert not config.use_worker_versioning
    assert config.default_versioning_behavior is VersioningBehavior.UNSPECIFIED


def test_the_sample_imports_resolve() -> None:
    """The names the worker_versioning sample imports, after temporalio -> spindle."""
    import spindle.api.workflowservice.v1 as wsv1

    from spindle.client import Client
    from spindle.common import WorkerDeploymentVersion as Version
    from spindle.worker import Worker
    from spindle.worker import WorkerDeploymentConfig as Config

    assert wsv1.DescribeWorkerDeploymentRequest(namespace="default", deployment_name="d").deployment_name == "d"
    assert wsv1.SetWorkerDeploymentCurrentVersionRequest(namespace="n", deployment_name="d", build_id="1").build_id
    assert Version is WorkerDeploymentVersion and Config is WorkerDeploymentConfig and Client and Worker
