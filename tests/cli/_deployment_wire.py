"""A versioned worker at the wire level for the CLI's deployment tests, through the SDK's ``client.workflow_service``.

A poll naming deployment ``orders`` and a build makes the server learn the version (as
``tests/versioned_wire.py`` does for the server's own tests); a
completion naming a behavior makes a run pinned to (or auto-upgrading from) that build.
Each helper connects, does its calls and closes, so the (synchronous) CLI tests can call
it with ``asyncio.run``.
"""

from __future__ import annotations

import asyncio
import datetime

import pytest

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.cli import main
from spindle.client import Client
from spindle.exceptions import RPCError

DEPLOYMENT = "orders"
QUEUE = "orders-q"
PINNED = pb.VERSIONING_BEHAVIOR_PINNED


def options(build: str) -> pb.WorkerDeploymentOptions:
    return pb.WorkerDeploymentOptions(version=pb.WorkerDeploymentVersion(deployment_name=DEPLOYMENT, build_id=build),
                                      use_worker_versioning=True)


async def _poll(client: Client, build: str, wait: float) -> svc.PollWorkflowTaskQueueResponse:
    req = svc.PollWorkflowTaskQueueRequest(namespace=client.namespace, task_queue=QUEUE, identity=f"worker-{build}")
    req.deployment_options.CopyFrom(options(build))
    try:
        resp: svc.PollWorkflowTaskQueueResponse = await client.workflow_service.poll_workflow_task_queue(
            req, timeout=datetime.timedelta(seconds=wait))
        return resp
    except RPCError as e:
        if e.status != "DEADLINE_EXCEEDED":
            raise
        return svc.PollWorkflowTaskQueueResponse()


async def _announce(address: str, api_key: str | None, builds: tuple[str, ...]) -> None:
    async with await Client.connect(address, api_key=api_key) as client:
        for build in builds:
            task = await _poll(client, build, 0.5)
            assert not task.task_token, f"build {build} got a task of {task.workflow_execution.workflow_id}"


def announce(address: str, *builds: str, api_key: str | None = None) -> None:
    """Workers of ``builds`` poll once each (nothing is waiting): the server learns those versions."""
    asyncio.run(_announce(address, api_key, builds))


async def _start_on(address: str, api_key: str | None, workflow_id: str, build: str, behavior: int) -> None:
    async with await Client.connect(address, api_key=api_key) as client:
        await client.workflow_service.start_workflow_execution(svc.StartWorkflowExecutionRequest(
            namespace=client.namespace, workflow_id=workflow_id, workflow_type="Order", task_queue=QUEUE,
            request_id=workflow_id))
        task = await _poll(client, build, 5.0)
        assert task.workflow_execution.workflow_id == workflow_id, f"build {build} did not get {workflow_id}'s task"
        req = svc.RespondWorkflowTaskCompletedRequest(task_token=task.task_token, identity=f"worker-{build}",
                                                      namespace=client.namespace,
                                                      versioning_behavior=behavior)  # type: ignore[arg-type]
        req.deployment_options.CopyFrom(options(build))
        await client.workflow_service.respond_workflow_task_completed(req)  # no command: the run stays open


def start_on(address: str, workflow_id: str, build: str, behavior: int = PINNED, *, api_key: str | None = None) -> None:
    """Start ``workflow_id`` and run its first workflow task on ``build`` (the run stays open, pinned by default)."""
    asyncio.run(_start_on(address, api_key, workflow_id, build, behavior))




def run(capsys: pytest.CaptureFixture[str], address: str, *argv: str) -> tuple[int, str, str]:
    """``spindle ARGV --address ADDRESS`` in this process: (exit code, stdout, stderr)."""
    code = main([*argv, "--address", address])
    shown = capsys.readouterr()
    return code, shown.out, shown.err


__all__ = ["DEPLOYMENT", "PINNED", "QUEUE", "announce", "options", "run", "start_on"]
