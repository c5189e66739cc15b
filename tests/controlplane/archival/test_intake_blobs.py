"""Issue 16, payloads and blobs: checks before any blob is written, blob references made only by the
server, blobs collected with their runs (retention, namespace deletion)."""

from __future__ import annotations

import asyncio
import dataclasses
import json

from datetime import timedelta
from pathlib import Path
from typing import Any

import grpc
import pytest

from spindle import workflow
from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.common._enums import ParentClosePolicy
from spindle.controlplane.archival import BLOB_REF_ENCODING
from spindle.controlplane.archival._visitor import PAYLOAD_TYPE
from spindle.controlplane.config import ServerConfig
from spindle.controlplane.frontend.service import RPC_NAMES
from spindle.testing import WorkflowEnvironment
from spindle.worker import Worker

pytestmark = pytest.mark.timeout(180)

MB = 1_000_000


def cfg(blob_uri: str, **kw: Any) -> ServerConfig:
    return dataclasses.replace(ServerConfig(), num_shards=1, blob_store_uri=blob_uri, archival_retry_interval=5.0,
                               object_store_timeout=2.0, **kw)


def blob_files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and not p.name.startswith(".tmp-")]


def json_payload(n: int, fill: str = "x") -> pb.Payload:
    return pb.Payload(metadata={"encoding": b"json/plain"}, data=json.dumps(fill * n).encode())


@workflow.defn
class Echo:
    @workflow.run
    async def run(self, text: str) -> int:
        return len(text)


@workflow.defn
class WaitsForSignal:
    def __init__(self) -> None:
        self.got: list[str] = []

    @workflow.signal
    async def poke(self, text: str) -> None:
        self.got.append(text)

    @workflow.run
    async def run(self) -> int:
        await workflow.wait_condition(lambda: bool(self.got))
        return len(self.got[0])


@workflow.defn
class Child:
    def __init__(self) -> None:
        self.done = False

    @workflow.signal
    async def finish(self) -> None:
        self.done = True

    @workflow.run
    async def run(self, text: str) -> int:
        await workflow.wait_condition(lambda: self.done)
        return len(text)


@workflow.defn
class Parent:
    @workflow.run
    async def run(self, text: str) -> str:
        h = await workflow.start_child_workflow(Child.run, text, id="child",
                                                parent_close_policy=ParentClosePolicy.ABANDON)
        return h.id


async def expect_code(coro: Any, code: grpc.StatusCode, *needles: str) -> str:
    with pytest.raises(grpc.aio.AioRpcError) as e:
        await coro
    assert e.value.code() == code, (e.value.code(), e.value.details())
    for n in needles:
        assert n in (e.value.details() or ""), e.value.details()
    return e.value.details() or ""


# ---------------------------------------------------------------------------------------------- 1. checks first
async def test_refused_requests_write_no_blob(tmp_path: Path) -> None:
    """The issue's inputs: 60 MB to a namespace that does not exist, or with an empty workflow id, wrote the blob
    before refusing. Refusals by the engine (no such workflow, id already started) delete what was written."""
    blobs = tmp_path / "blobs"
    async with await WorkflowEnvironment.start_local(config=cfg(f"file://{blobs}")) as env:
        stub = env.client.stub
        huge = pb.Payloads(payloads=[json_payload(60 * MB)])
        await expect_code(stub.StartWorkflowExecution(svc.StartWorkflowExecutionRequest(
            namespace="does-not-exist", workflow_id="w", workflow_type="Echo", task_queue="q", input=huge)),
            grpc.StatusCode.NOT_FOUND, "does-not-exist")
        await expect_code(stub.StartWorkflowExecution(svc.StartWorkflowExecutionRequest(
            namespace="default", workflow_id="", workflow_type="Echo", task_queue="q", input=huge)),
            grpc.StatusCode.INVALID_ARGUMENT, "workflow_id")
        del huge
        assert blob_files(tmp_path) == []
        big = pb.Payloads(payloads=[json_payload(MB)])
        # refused by the engine after the offload: the blob is deleted again
        await expect_code(stub.SignalWorkflowExecution(svc.SignalWorkflowExecutionRequest(
            namespace="default", workflow_execution=pb.WorkflowExecution(workflow_id="nobody"), signal_name="s",
            input=big)), grpc.StatusCode.NOT_FOUND)
        assert blob_files(tmp_path) == []
        async with Worker(env.client, task_queue="q", workflows=[Echo, WaitsForSignal]):
            # the good workflow completes; its offloaded input stays (its run refers to it)
            assert await env.client.execute_workflow(Echo.run, "y" * MB, id="good", task_queue="q") == MB
            assert len(blob_files(tmp_path)) == 1
            # a start refused because the id is taken keeps nothing of its own
            await expect_code(stub.StartWorkflowExecution(svc.StartWorkflowExecutionRequest(
                namespace="default", workflow_id="good", workflow_type="Echo", task_queue="q", input=big,
                workflow_id_reuse_policy=pb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE)),
                grpc.StatusCode.ALREADY_EXISTS)
            # a signal deduplicated by its request id stores nothing the second time
            h = await env.client.start_workflow(WaitsForSignal.run, id="sig", task_queue="q")
            sig = svc.SignalWorkflowExecutionRequest(namespace="default", workflow_execution=pb.WorkflowExecution(
                workflow_id="sig"), signal_name="poke", input=big, request_id="once")
            await stub.SignalWorkflowExecution(sig)
            assert await h.result() == MB
            assert len(blob_files(tmp_path)) == 2
        assert len(blob_files(tmp_path)) == 2


# ---------------------------------------------------------------------------------------------- 2. server-made refs
def forged_ref(key: str = "blobs/00/" + "0" * 64) -> pb.Payload:
    return pb.Payload(metadata={"encoding": BLOB_REF_ENCODING},
                      data=json.dumps({"key": key, "sha256": "0" * 64, "size": 10}).encode())


async def test_a_signal_carrying_a_hand_made_blob_reference_is_refused(tmp_path: Path) -> None:
    """The issue's input: the forged reference was stored, the history read failed with UNAVAILABLE for good and
    worker polls failed (stuck). Now: INVALID_ARGUMENT naming the field, and the workflow goes on."""
    async with await WorkflowEnvironment.start_local(config=cfg(f"file://{tmp_path}/blobs")) as env:
        async with Worker(env.client, task_queue="q", workflows=[WaitsForSignal]):
            h = await env.client.start_workflow(WaitsForSignal.run, id="w", task_queue="q")
            details = await expect_code(env.client.stub.SignalWorkflowExecution(svc.SignalWorkflowExecutionRequest(
                namespace="default", workflow_execution=pb.WorkflowExecution(workflow_id="w"), signal_name="poke",
                input=pb.Payloads(payloads=[forged_ref()]))), grpc.StatusCode.INVALID_ARGUMENT,
                "input.payloads[0]", "spindle/blob-ref")
            assert "only the server" in details
            # also in places that are never offloaded (header, memo)
            req = svc.SignalWorkflowExecutionRequest(namespace="default", workflow_execution=pb.WorkflowExecution(
                workflow_id="w"), signal_name="poke")
            req.header.fields["x"].CopyFrom(forged_ref())
            await expect_code(env.client.stub.SignalWorkflowExecution(req), grpc.StatusCode.INVALID_ARGUMENT,
                              "header.fields['x']")
            await h.signal(WaitsForSignal.poke, "hello")
            assert await h.result() == 5
            history = await h.fetch_history()
            assert len(history.events_of_type("WorkflowExecutionSignaled")) == 1


def _payload_path(d: Any, seen: frozenset[str] = frozenset()) -> list[Any] | None:
    """Field descriptors leading from message type ``d`` to a Payload (first found), or None."""
    for fd in d.fields:
        mt = fd.message_type
        if mt is None or mt.full_name in seen:
            continue
        if mt.GetOptions().map_entry:
            continue
        if mt.full_name == PAYLOAD_TYPE:
            return [fd]
        sub = _payload_path(mt, seen | {d.full_name})
        if sub is not None:
            return [fd, *sub]
    return None


def _with_ref(req: Any, path: list[Any]) -> str:
    """Put a forged reference at ``path`` inside ``req``; returns the field path the error must name."""
    msg, names = req, []
    for fd in path:
        if fd.is_repeated:
            msg = getattr(msg, fd.name).add()
            names.append(f"{fd.name}[0]")
        else:
            msg = getattr(msg, fd.name)
            names.append(fd.name)
    msg.CopyFrom(forged_ref())
    return ".".join(names)


async def test_every_rpc_refuses_a_client_made_blob_reference(tmp_path: Path) -> None:
    """Every request type that can hold a Payload refuses a reference in it, naming the field (signal, start input,
    memo, activity results, workflow task commands, query answers, update input, heartbeat details, ...)."""
    fill = {"namespace": "default", "workflow_id": "w", "workflow_type": "T", "task_queue": "q", "signal_name": "s",
            "identity": "me"}
    checked = []
    async with await WorkflowEnvironment.start_local(config=cfg(f"file://{tmp_path}/blobs")) as env:
        for rpc in RPC_NAMES:
            method = svc.DESCRIPTOR.services_by_name["WorkflowService"].methods_by_name[rpc]
            req_type = getattr(svc, method.input_type.name)
            path = _payload_path(req_type.DESCRIPTOR)
            if path is None:
                continue
            req = req_type()
            for f in req_type.DESCRIPTOR.fields:
                if f.name in fill and f.type == f.TYPE_STRING and not f.is_repeated:
                    setattr(req, f.name, fill[f.name])
            for sub in ("workflow_execution", "execution", "start"):
                if sub in req_type.DESCRIPTOR.fields_by_name:
                    m = getattr(req, sub)
                    for f in m.DESCRIPTOR.fields:
                        if f.name in fill and f.type == f.TYPE_STRING:
                            setattr(m, f.name, fill[f.name])
            if "query" in req_type.DESCRIPTOR.fields_by_name:
                req.query.query_type = "q"
            if "request" in req_type.DESCRIPTOR.fields_by_name and rpc == "UpdateWorkflowExecution":
                req.request.name = "u"
            if "task_token" in req_type.DESCRIPTOR.fields_by_name:
                req.task_token = b"not-a-token"
            where = _with_ref(req, path)
            await expect_code(getattr(env.client.stub, rpc)(req), grpc.StatusCode.INVALID_ARGUMENT, where,
                              "spindle/blob-ref")
            checked.append(rpc)
    assert {"StartWorkflowExecution", "SignalWorkflowExecution", "SignalWithStartWorkflowExecution", "QueryWorkflow",
            "UpdateWorkflowExecution", "TerminateWorkflowExecution", "RespondWorkflowTaskCompleted",
            "RespondWorkflowTaskFailed", "RespondQueryTaskCompleted", "RespondActivityTaskCompleted",
            "RespondActivityTaskFailed", "RespondActivityTaskCanceled", "RecordActivityTaskHeartbeat"} <= set(checked)


# ---------------------------------------------------------------------------------------------- 3. collection
async def _retention_collects(env: WorkflowEnvironment, list_blobs: Any) -> None:
    async with Worker(env.client, task_queue="q", workflows=[Echo, Parent, Child]):
        assert await env.client.execute_workflow(Echo.run, "e" * MB, id="echo", task_queue="q") == MB
        # the parent's child-start command is offloaded once; the child's start event holds the same reference
        assert await env.client.execute_workflow(Parent.run, "p" * MB, id="parent", task_queue="q") == "child"
        child = env.client.get_workflow_handle("child")
        assert len(await list_blobs()) == 3  # the inputs of echo and parent, the child input (parent and child)
        await env.sleep(timedelta(days=1, hours=1))  # past the retention of echo and parent
        loop = asyncio.get_running_loop()
        end = loop.time() + 20
        while len(await list_blobs()) != 1:
            assert loop.time() < end, await list_blobs()
            await asyncio.sleep(0.05)
        # the shared blob stays while the running child refers to it: it still replays its input
        await child.signal(Child.finish)
        assert await child.result() == MB
        await env.sleep(timedelta(days=1, hours=1))
        end = loop.time() + 20
        while await list_blobs():
            assert loop.time() < end, await list_blobs()
            await asyncio.sleep(0.05)
        # server still serving: a new workflow with a large input
        assert await env.client.execute_workflow(Echo.run, "n" * MB, id="after", task_queue="q") == MB


async def test_retention_deletes_the_blobs_of_the_runs_it_deletes(tmp_path: Path) -> None:
    """file:// store, with an archive: the archive keeps the values, the blobs go; a blob shared with a run
    still in the store (parent -> child input) stays until that run is deleted too."""
    blobs = tmp_path / "blobs"
    config = cfg(f"file://{blobs}", archive_uri=f"file://{tmp_path}/archive")
    async with await WorkflowEnvironment.start_time_skipping(config=config) as env:
        await env.client.update_namespace(retention=timedelta(days=1))

        async def list_blobs() -> list[Path]:
            return blob_files(blobs)

        await _retention_collects(env, list_blobs)
        # the archived history reads back with its value (no reference to a deleted blob)
        history = await env.client.get_workflow_handle("echo").fetch_history()
        started = history.events[0].attributes["input"]["payloads"][0]
        import base64

        assert json.loads(base64.b64decode(started["data"])) == "e" * MB


async def test_retention_deletes_blobs_on_gcs(fake_gcs: Any, gcs_bucket: str) -> None:
    from google.cloud import storage

    config = cfg(f"gs://{gcs_bucket}/blobs")
    async with await WorkflowEnvironment.start_time_skipping(config=config) as env:
        await env.client.update_namespace(retention=timedelta(days=1))

        async def list_blobs() -> list[str]:
            return await asyncio.to_thread(
                lambda: [b.name for b in storage.Client(project="spindle").list_blobs(gcs_bucket, prefix="blobs/")])

        await _retention_collects(env, list_blobs)


async def test_deleting_a_namespace_deletes_its_blobs(tmp_path: Path) -> None:
    blobs = tmp_path / "blobs"
    async with await WorkflowEnvironment.start_local(config=cfg(f"file://{blobs}")) as env:
        await env.client.create_namespace("doomed")
        stub = env.client.stub
        await stub.StartWorkflowExecution(svc.StartWorkflowExecutionRequest(
            namespace="doomed", workflow_id="w", workflow_type="Echo", task_queue="nobody",
            input=pb.Payloads(payloads=[json_payload(MB)])))
        await stub.StartWorkflowExecution(svc.StartWorkflowExecutionRequest(
            namespace="default", workflow_id="w", workflow_type="Echo", task_queue="nobody",
            input=pb.Payloads(payloads=[json_payload(MB, "k")])))
        assert len(blob_files(blobs)) == 2
        await stub.DeleteNamespace(svc.DeleteNamespaceRequest(name="doomed", force=True))
        left = blob_files(blobs)
        ns = env.control_plane.namespaces.get("default").id
        assert len(left) == 1 and left[0].relative_to(blobs).parts[:2] == ("blobs", ns)
