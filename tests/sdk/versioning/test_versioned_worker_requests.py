"""What a worker with (and without) ``deployment_config`` sends: polls, sticky polls, completions (issue 25)."""

from __future__ import annotations

import asyncio
import collections

from typing import Any

import pytest

from spindle import activity, common, workflow
from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.common import VersioningBehavior, WorkerDeploymentVersion
from spindle.converter import DataConverter
from spindle.worker import Worker, WorkerDeploymentConfig

Q = "versioned-q"
VERSION = WorkerDeploymentVersion(deployment_name="my-deployment", build_id="1.0")


@workflow.defn(name="Pinned", versioning_behavior=common.VersioningBehavior.PINNED)
class Pinned:
    @workflow.run
    async def run(self) -> str:
        return "pinned"


@workflow.defn(name="Auto", versioning_behavior=common.VersioningBehavior.AUTO_UPGRADE)
class Auto:
    @workflow.run
    async def run(self) -> str:
        return "auto"


@workflow.defn(name="Undeclared")
async def undeclared() -> str:
    return "undeclared"


@activity.defn
async def act() -> None:
    return None


class _Stub:
    """Records every request; polls wait for queued tasks (none by default), completions answer empty."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.wf_tasks: dict[str, asyncio.Queue[svc.PollWorkflowTaskQueueResponse]] = collections.defaultdict(
            asyncio.Queue)
        self.changed = asyncio.Event()

    def of(self, name: str) -> list[Any]:
        return [r for n, r in self.calls if n == name]

    def _record(self, name: str, req: Any) -> None:
        self.calls.append((name, req))
        self.changed.set()

    async def wait_for(self, name: str, count: int = 1) -> list[Any]:
        async def wait() -> list[Any]:
            while len(self.of(name)) < count:
                self.changed.clear()
                await self.changed.wait()
            return self.of(name)

        return await asyncio.wait_for(wait(), 5)

    async def PollWorkflowTaskQueue(self, req: svc.PollWorkflowTaskQueueRequest, **_: Any) -> Any:
        self._record("PollWorkflowTaskQueue", req)
        return await self.wf_tasks[req.task_queue].get()

    async def PollActivityTaskQueue(self, req: svc.PollActivityTaskQueueRequest, **_: Any) -> Any:
        self._record("PollActivityTaskQueue", req)
        await asyncio.Event().wait()

    async def RespondWorkflowTaskCompleted(self, req: svc.RespondWorkflowTaskCompletedRequest, **_: Any) -> Any:
        self._record("RespondWorkflowTaskCompleted", req)
        return svc.RespondWorkflowTaskCompletedResponse()

    async def RespondWorkflowTaskFailed(self, req: Any, **_: Any) -> Any:
        self._record("RespondWorkflowTaskFailed", req)
        return svc.RespondWorkflowTaskFailedResponse()


class _Client:
    def __init__(self, stub: _Stub) -> None:
        self._stub = stub
        self.namespace = "default"
        self.data_converter = DataConverter.default
        self.codecs: tuple[Any, ...] = ()
        self.identity = "me"


def _first_task(workflow_type: str, run_id: str) -> svc.PollWorkflowTaskQueueResponse:
    started = pb.HistoryEvent(event_id=1, event_type=pb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, event_time_ms=1000)
    started.workflow_execution_started_event_attributes.workflow_type = workflow_type
    started.workflow_execution_started_event_attributes.task_queue = Q
    events = [started, pb.HistoryEvent(event_id=2, event_type=pb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED),
              pb.HistoryEvent(event_id=3, event_type=pb.EVENT_TYPE_WORKFLOW_TASK_STARTED)]
    return svc.PollWorkflowTaskQueueResponse(
        task_token=f"tok-{run_id}".encode(), workflow_execution=pb.WorkflowExecution(workflow_id=run_id, run_id=run_id),
        workflow_type=workflow_type, started_event_id=3, history=pb.History(events=events), namespace="default",
        task_queue=Q)


async def _run(config: WorkerDeploymentConfig | None, workflows: list[Any], types: list[str]) -> _Stub:
    """Serve one first task of each of ``types``; return the stub once all are completed and every poller polled."""
    stub = _Stub()
    worker = Worker(_Client(stub), task_queue=Q, workflows=workflows, activities=[act], deployment_config=config,
                    workflow_task_pollers=1, activity_task_pollers=1)
    async with worker:
        for i, t in enumerate(types):
            stub.wf_tasks[Q].put_nowait(_first_task(t, f"run-{i}"))
        await stub.wait_for("RespondWorkflowTaskCompleted", len(types))
        await stub.wait_for("PollActivityTaskQueue")
        polls = await stub.wait_for("PollWorkflowTaskQueue", 2)
        assert {p.sticky for p in polls} == {True, False}
    return stub


async def test_a_versioned_worker_names_its_build_on_every_poll_and_completion() -> None:
    config = WorkerDeploymentConfig(version=VERSION, use_worker_versioning=True,
                                    default_versioning_behavior=VersioningBehavior.AUTO_UPGRADE)
    stub = await _run(config, [Pinned, Auto, undeclared], ["Pinned", "Auto", "Undeclared"])
    expected = pb.WorkerDeploymentOptions(
        version=pb.WorkerDeploymentVersion(deployment_name="my-deployment", build_id="1.0"),
        use_worker_versioning=True, default_versioning_behavior=pb.VERSIONING_BEHAVIOR_AUTO_UPGRADE)
    for name in ("PollWorkflowTaskQueue", "PollActivityTaskQueue", "RespondWorkflowTaskCompleted"):
        for req in stub.of(name):
            assert req.deployment_options == expected, name
    sticky = [p for p in stub.of("PollWorkflowTaskQueue") if p.sticky]
    assert sticky and all(p.deployment_options == expected for p in sticky)
    behaviors = {r.task_token.decode(): r.versioning_behavior for r in stub.of("RespondWorkflowTaskCompleted")}
    assert behaviors == {"tok-run-0": pb.VERSIONING_BEHAVIOR_PINNED, "tok-run-1": pb.VERSIONING_BEHAVIOR_AUTO_UPGRADE,
                         "tok-run-2": pb.VERSIONING_BEHAVIOR_AUTO_UPGRADE}  # the default for the undeclared one


async def test_a_worker_that_only_reports_its_version_sends_use_worker_versioning_false() -> None:
    stub = await _run(WorkerDeploymentConfig(version=VERSION), [Pinned, undeclared], ["Pinned", "Undeclared"])
    [poll, *_] = stub.of("PollWorkflowTaskQueue")
    assert poll.deployment_options.version.build_id == "1.0" and not poll.deployment_options.use_worker_versioning
    behaviors = {r.task_token.decode(): r.versioning_behavior for r in stub.of("RespondWorkflowTaskCompleted")}
    assert behaviors == {"tok-run-0": pb.VERSIONING_BEHAVIOR_PINNED, "tok-run-1": pb.VERSIONING_BEHAVIOR_UNSPECIFIED}


async def test_an_unversioned_worker_sends_exactly_what_it_sent_before() -> None:
    stub = await _run(None, [Pinned], ["Pinned"])
    for poll in stub.of("PollWorkflowTaskQueue"):
        before = svc.PollWorkflowTaskQueueRequest(namespace="default", task_queue=poll.task_queue, identity="me",
                                                  sticky=poll.sticky)
        assert poll.SerializeToString() == before.SerializeToString()
    for poll in stub.of("PollActivityTaskQueue"):
        before = svc.PollActivityTaskQueueRequest(namespace="default", task_queue=Q, identity="me")
        assert poll.SerializeToString() == before.SerializeToString()
    [done] = stub.of("RespondWorkflowTaskCompleted")
    assert {f.name for f, _ in done.ListFields()} == {"task_token", "commands", "identity", "namespace"}
    # (return_new_workflow_task is False for a closing task; no sticky attributes then either)


def test_a_versioned_worker_refuses_a_workflow_without_a_behavior_before_polling() -> None:
    stub = _Stub()
    with pytest.raises(ValueError, match=r"workflow\(s\) 'Undeclared' declare no versioning behavior") as info:
        Worker(_Client(stub), task_queue=Q, workflows=[Pinned, undeclared],
               deployment_config=WorkerDeploymentConfig(version=VERSION, use_worker_versioning=True))
    assert "WorkerDeploymentConfig(default_versioning_behavior=...)" in str(info.value)
    assert not stub.calls
    # A default behavior, or not using versioning, makes the same workflows acceptable.
    Worker(_Client(stub), task_queue=Q, workflows=[Pinned, undeclared],
           deployment_config=WorkerDeploymentConfig(version=VERSION, use_worker_versioning=True,
                                                    default_versioning_behavior=VersioningBehavior.PINNED))
    Worker(_Client(stub), task_queue=Q, workflows=[Pinned, undeclared],
           deployment_config=WorkerDeploymentConfig(version=VERSION))


def test_a_bad_deployment_config_is_refused() -> None:
    with pytest.raises(TypeError, match="WorkerDeploymentConfig"):
        Worker(_Client(_Stub()), task_queue=Q, workflows=[Pinned], deployment_config=VERSION)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="deployment name and a build id"):
        Worker(_Client(_Stub()), task_queue=Q, workflows=[Pinned],
               deployment_config=WorkerDeploymentConfig(version=WorkerDeploymentVersion("d", "")))
