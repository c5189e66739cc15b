"""A worker at the wire level, for the deployment tests: polls naming a build, completions naming a behavior.

Driving the protocol by hand lets each test say exactly which build polls when, so "no task
runs on the wrong build" is checked poll by poll, not inferred from results.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import grpc

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.api import service_pb2_grpc
from spindle.controlplane.config import ServerConfig
from spindle.controlplane.server import ControlPlane, serve
from spindle.controlplane.store.sqlite import SqliteStore

NS = "default"
QUEUE = "orders-q"
DEPLOYMENT = "orders"
PINNED = pb.VERSIONING_BEHAVIOR_PINNED
AUTO = pb.VERSIONING_BEHAVIOR_AUTO_UPGRADE


def options(build: str | None) -> pb.WorkerDeploymentOptions | None:
    if build is None:
        return None
    return pb.WorkerDeploymentOptions(version=pb.WorkerDeploymentVersion(deployment_name=DEPLOYMENT, build_id=build),
                                      use_worker_versioning=True)


class Wire:
    """One connection's calls, as a worker or an operator makes them."""

    def __init__(self, stub: service_pb2_grpc.WorkflowServiceStub) -> None:
        self.stub = stub

    async def start(self, wid: str, queue: str = QUEUE) -> str:
        r = await self.stub.StartWorkflowExecution(svc.StartWorkflowExecutionRequest(
            namespace=NS, workflow_id=wid, workflow_type="Order", task_queue=queue, request_id=wid), timeout=10)
        return str(r.run_id)

    async def poll(self, build: str | None, *, queue: str = QUEUE, wait: float = 1.5, sticky: bool = False,
                   identity: str = "") -> svc.PollWorkflowTaskQueueResponse:
        """One workflow poll by a worker of ``build`` (None: unversioned); an empty response when none came."""
        req = svc.PollWorkflowTaskQueueRequest(namespace=NS, task_queue=queue, sticky=sticky,
                                               identity=identity or f"worker-{build}")
        o = options(build)
        if o is not None:
            req.deployment_options.CopyFrom(o)
        return await self.stub.PollWorkflowTaskQueue(req, timeout=wait)

    async def complete(self, task: svc.PollWorkflowTaskQueueResponse, build: str | None, behavior: int = PINNED, *,
                       commands: list[pb.Command] | None = None, sticky_queue: str = "") -> None:
        req = svc.RespondWorkflowTaskCompletedRequest(task_token=task.task_token, commands=commands or [],
                                                      identity=f"worker-{build}", namespace=NS)
        o = options(build)
        if o is not None:
            req.deployment_options.CopyFrom(o)
            req.versioning_behavior = behavior  # type: ignore[assignment]
        if sticky_queue:
            req.sticky_attributes.worker_task_queue = sticky_queue
            req.sticky_attributes.schedule_to_start_timeout_ms = 5000
        await self.stub.RespondWorkflowTaskCompleted(req, timeout=10)

    async def signal(self, wid: str) -> None:
        await self.stub.SignalWorkflowExecution(svc.SignalWorkflowExecutionRequest(
            namespace=NS, workflow_execution=pb.WorkflowExecution(workflow_id=wid), signal_name="go"), timeout=10)

    async def set_current(self, build: str, **kw: Any) -> svc.SetWorkerDeploymentCurrentVersionResponse:
        return await self.stub.SetWorkerDeploymentCurrentVersion(svc.SetWorkerDeploymentCurrentVersionRequest(
            namespace=NS, deployment_name=DEPLOYMENT, build_id=build, identity="ops", **kw), timeout=10)

    async def set_ramping(self, build: str, pct: float, **kw: Any) -> svc.SetWorkerDeploymentRampingVersionResponse:
        return await self.stub.SetWorkerDeploymentRampingVersion(svc.SetWorkerDeploymentRampingVersionRequest(
            namespace=NS, deployment_name=DEPLOYMENT, build_id=build, percentage=pct, identity="ops", **kw),
            timeout=10)

    async def describe_deployment(self) -> svc.WorkerDeploymentInfo:
        r = await self.stub.DescribeWorkerDeployment(svc.DescribeWorkerDeploymentRequest(
            namespace=NS, deployment_name=DEPLOYMENT), timeout=10)
        return r.worker_deployment_info

    async def describe(self, wid: str) -> svc.DescribeWorkflowExecutionResponse:
        return await self.stub.DescribeWorkflowExecution(svc.DescribeWorkflowExecutionRequest(
            namespace=NS, execution=pb.WorkflowExecution(workflow_id=wid)), timeout=10)

    async def pin(self, wid: str, build: str | None) -> svc.UpdateWorkflowExecutionOptionsResponse:
        """Set a pinned override to ``build`` (None: remove the override)."""
        req = svc.UpdateWorkflowExecutionOptionsRequest(namespace=NS, workflow_execution=pb.WorkflowExecution(
            workflow_id=wid), identity="ops")
        req.update_mask.paths.append("versioning_override")
        if build is not None:
            req.workflow_execution_options.versioning_override.pinned.version.CopyFrom(
                pb.WorkerDeploymentVersion(deployment_name=DEPLOYMENT, build_id=build))
        return await self.stub.UpdateWorkflowExecutionOptions(req, timeout=10)

    async def list_ids(self, query: str) -> set[str]:
        r = await self.stub.ListWorkflowExecutions(svc.ListWorkflowExecutionsRequest(namespace=NS, query=query),
                                                   timeout=10)
        return {e.execution.workflow_id for e in r.executions}


def complete_command() -> pb.Command:
    return pb.Command(command_type=pb.COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION,
                      complete_workflow_execution_command_attributes=pb.CompleteWorkflowExecutionCommandAttributes())


@asynccontextmanager
async def control_plane(db: Path, **cfg: Any) -> AsyncIterator[tuple[ControlPlane, Wire, str]]:
    """An in-process control plane on a SQLite file and a wire client of it."""
    cp = ControlPlane(SqliteStore(str(db)), ServerConfig(num_shards=2, **cfg))
    await cp.start()
    server, port = await serve(cp, "127.0.0.1", 0)
    address = f"127.0.0.1:{port}"
    try:
        async with grpc.aio.insecure_channel(address) as ch:
            yield cp, Wire(service_pb2_grpc.WorkflowServiceStub(ch)), address
    finally:
        await server.stop(0)
        await cp.stop()


__all__ = ["AUTO", "DEPLOYMENT", "NS", "PINNED", "QUEUE", "Wire", "complete_command", "control_plane", "options"]
