"""Versioned workers on a live server, with the SDK as users write it (the shape of Temporal's worker_versioning
sample, in our own words): a PINNED run stays on the build that started it, across a restart of that build's
worker, while an AUTO_UPGRADE run moves to the new current build at its next task."""

from __future__ import annotations

import asyncio

from collections.abc import AsyncIterator

import pytest

from waiting import eventually

from spindle import workflow
from spindle.api import messages_pb2 as pb
from spindle.api.workflowservice import v1 as wsv1
from spindle.client import Client
from spindle.common import VersioningBehavior, WorkerDeploymentVersion
from spindle.testing import WorkflowEnvironment
from spindle.worker import Worker, WorkerDeploymentConfig

pytestmark = pytest.mark.timeout(60)

QUEUE = "versioned-live"
DEPLOYMENT = "shop"


def _steps_workflow(label: str, behavior: VersioningBehavior, name: str) -> type:
    """A workflow that records, per signal, which code handled it ("<label>:<signal>")."""

    @workflow.defn(name=name, versioning_behavior=behavior)
    class Steps:
        def __init__(self) -> None:
            self.inbox: list[str] = []
            self.done: list[str] = []

        @workflow.run
        async def run(self) -> list[str]:
            while True:
                await workflow.wait_condition(lambda: bool(self.inbox))
                sig = self.inbox.pop(0)
                if sig == "conclude":
                    return self.done
                self.done.append(f"{label}:{sig}")

        @workflow.signal
        def step(self, sig: str) -> None:
            self.inbox.append(sig)

        @workflow.query
        def handled(self) -> list[str]:
            return self.done

    return Steps


PinnedV1 = _steps_workflow("v1", VersioningBehavior.PINNED, "Pinned")
PinnedV2 = _steps_workflow("v2", VersioningBehavior.PINNED, "Pinned")
AutoV1 = _steps_workflow("v1", VersioningBehavior.AUTO_UPGRADE, "Auto")
AutoV2 = _steps_workflow("v2", VersioningBehavior.AUTO_UPGRADE, "Auto")


def worker(client: Client, build: str, *workflows: type) -> Worker:
    return Worker(client, task_queue=QUEUE, workflows=list(workflows),
                  deployment_config=WorkerDeploymentConfig(version=WorkerDeploymentVersion(DEPLOYMENT, build),
                                                           use_worker_versioning=True))


async def make_current(client: Client, build: str) -> None:
    async def seen() -> None:
        info = (await client.workflow_service.describe_worker_deployment(wsv1.DescribeWorkerDeploymentRequest(
            namespace=client.namespace, deployment_name=DEPLOYMENT))).worker_deployment_info
        assert build in {v.deployment_version.build_id for v in info.version_summaries}

    await eventually(seen, f"build {build} polled", timeout=10, retry_on=(AssertionError, Exception))
    await client.workflow_service.set_worker_deployment_current_version(wsv1.SetWorkerDeploymentCurrentVersionRequest(
        namespace=client.namespace, deployment_name=DEPLOYMENT, build_id=build))


async def builds_of(client: Client, wid: str) -> list[str]:
    """The build that completed each workflow task of the run, in order."""
    history = await client.get_workflow_handle(wid).fetch_history()
    return [e.workflow_task_completed_event_attributes.deployment_version.build_id for e in history.to_proto_events()
            if e.event_type == pb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED]


@pytest.fixture
async def env() -> AsyncIterator[WorkflowEnvironment]:
    e = await WorkflowEnvironment.start_local()
    try:
        yield e
    finally:
        await e.shutdown()


async def test_pinned_stays_across_a_worker_restart_and_auto_upgrade_moves(env: WorkflowEnvironment) -> None:
    client = env.client
    w1 = worker(client, "1.0", PinnedV1, AutoV1)
    async with w1:
        await make_current(client, "1.0")
        pinned = await client.start_workflow("Pinned", id="pinned", task_queue=QUEUE)
        auto = await client.start_workflow("Auto", id="auto", task_queue=QUEUE)
        for h in (pinned, auto):
            await h.signal("step", "a")
        for h in (pinned, auto):
            await eventually(lambda h=h: _handled(h, ["v1:a"]), "v1 handled 'a'", timeout=10)
    # 1.0's worker restarts (a new process would do the same: nothing of the run is cached) and 2.0 starts
    async with worker(client, "1.0", PinnedV1, AutoV1), worker(client, "2.0", PinnedV2, AutoV2):
        await make_current(client, "2.0")
        for h in (pinned, auto):
            await h.signal("step", "b")
            await h.signal("step", "conclude")
        assert await asyncio.wait_for(pinned.result(), 20) == ["v1:a", "v1:b"]
        # the new build took over: it replayed the run's history with its own code, then went on
        assert await asyncio.wait_for(auto.result(), 20) == ["v2:a", "v2:b"]
        fresh = await client.start_workflow("Pinned", id="fresh", task_queue=QUEUE)
        await fresh.signal("step", "c")
        await fresh.signal("step", "conclude")
        assert await asyncio.wait_for(fresh.result(), 20) == ["v2:c"]
    assert set(await builds_of(client, "pinned")) == {"1.0"}
    auto_builds = await builds_of(client, "auto")
    assert auto_builds[0] == "1.0" and auto_builds[-1] == "2.0"
    assert set(await builds_of(client, "fresh")) == {"2.0"}
    d = await pinned.describe()
    assert d.versioning_info is not None and d.versioning_info.behavior == VersioningBehavior.PINNED
    assert d.versioning_info.deployment_version == WorkerDeploymentVersion(DEPLOYMENT, "1.0")


async def _handled(h: object, want: list[str]) -> None:
    assert await h.query("handled") == want  # type: ignore[attr-defined]
