"""An in-process control plane for the erasure tests: SQLite file, blob store folder, the search attribute
``CustomerId``, served over gRPC, and wire-level helpers to make runs of each kind."""

from __future__ import annotations

import json
import os
import sqlite3
import uuid

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
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
QUEUE = "erasure-q"
KEYWORD = 1
#: Payloads bigger than this go to the blob store (the tests' threshold).
THRESHOLD = 1024


def payloads(value: object) -> pb.Payloads:
    return pb.Payloads(payloads=[pb.Payload(metadata={"encoding": b"json/plain"}, data=json.dumps(value).encode())])


def big(tag: str) -> str:
    """A value whose payload is offloaded to the blob store."""
    return tag + "x" * (THRESHOLD * 2)


@dataclass
class World:
    cp: ControlPlane
    stub: Any
    db: str
    blob_dir: str

    async def start(self, wid: str, customer: str = "", value: object = "small", queue: str = QUEUE) -> str:
        req = svc.StartWorkflowExecutionRequest(namespace=NS, workflow_id=wid, workflow_type="Order", task_queue=queue,
                                                request_id=uuid.uuid4().hex, input=payloads(value))
        if customer:
            req.search_attributes.indexed_fields["CustomerId"].CopyFrom(payloads(customer).payloads[0])
        return str((await self.stub.StartWorkflowExecution(req, timeout=10)).run_id)

    async def complete_next(self, commands: list[pb.Command] | None = None, queue: str = QUEUE) -> str:
        """Poll one workflow task of ``queue`` and complete it with ``commands`` (default: complete the run)."""
        task = await self.stub.PollWorkflowTaskQueue(svc.PollWorkflowTaskQueueRequest(
            namespace=NS, task_queue=queue, identity="w"), timeout=10)
        assert task.task_token, "no workflow task came"
        cmds = commands if commands is not None else [pb.Command(
            command_type=pb.COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION,
            complete_workflow_execution_command_attributes=pb.CompleteWorkflowExecutionCommandAttributes(
                result=payloads("done")))]
        await self.stub.RespondWorkflowTaskCompleted(svc.RespondWorkflowTaskCompletedRequest(
            task_token=task.task_token, commands=cmds, namespace=NS, identity="w"), timeout=10)
        return str(task.workflow_execution.workflow_id)

    async def history(self, wid: str, rid: str = "") -> list[bytes] | grpc.StatusCode:
        """The run's events (serialized) or the status code of the refusal."""
        try:
            resp = await self.stub.GetWorkflowExecutionHistory(svc.GetWorkflowExecutionHistoryRequest(
                namespace=NS, execution=pb.WorkflowExecution(workflow_id=wid, run_id=rid)), timeout=10)
        except grpc.aio.AioRpcError as e:
            return e.code()
        return [e.SerializeToString() for e in resp.history.events]

    async def listed(self, query: str = "") -> set[str]:
        resp = await self.stub.ListWorkflowExecutions(svc.ListWorkflowExecutionsRequest(
            namespace=NS, query=query, page_size=1000), timeout=10)
        return {e.execution.run_id for e in resp.executions}

    async def delete(self, wid: str, rid: str = "") -> None:
        await self.stub.DeleteWorkflowExecution(svc.DeleteWorkflowExecutionRequest(
            namespace=NS, workflow_execution=pb.WorkflowExecution(workflow_id=wid, run_id=rid), reason="gdpr",
            identity="dpo"), timeout=10)

    def rows(self, table: str, run_id: str) -> list[tuple[Any, ...]]:
        """The rows of ``table`` that belong to ``run_id`` (read-only connection)."""
        return rows_of(self.db, table, run_id)

    def blobs(self) -> set[str]:
        return blob_files(self.blob_dir)


def rows_of(db: str, table: str, run_id: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute(f"SELECT * FROM {table} WHERE run_id = ?", (run_id,)).fetchall()
    finally:
        conn.close()


def blob_files(blob_dir: str) -> set[str]:
    out = set()
    for root, _, files in os.walk(blob_dir):
        out.update(os.path.relpath(os.path.join(root, f), blob_dir) for f in files)
    return out


def config(tmp_path: Path, **cfg: Any) -> ServerConfig:
    settings: dict[str, Any] = {"num_shards": 2, "blob_store_uri": f"file://{tmp_path}/blobs",
                                "large_payload_threshold_bytes": THRESHOLD,
                                "start_admission_max_pending": 1000,  # runs nobody serves: no back-pressure on starts
                                **cfg}
    return ServerConfig(**settings)


@asynccontextmanager
async def erasure_world(tmp_path: Path, **cfg: Any) -> AsyncIterator[World]:
    db = str(tmp_path / "erasure.db")
    cp = ControlPlane(SqliteStore(db), config(tmp_path, **cfg), default_search_attributes={"CustomerId": KEYWORD})
    await cp.start()
    server, port = await serve(cp, "127.0.0.1", 0)
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as ch:
            yield World(cp, service_pb2_grpc.WorkflowServiceStub(ch), db, str(tmp_path / "blobs"))
    finally:
        await server.stop(0)
        await cp.stop()


__all__ = ["NS", "QUEUE", "THRESHOLD", "World", "big", "blob_files", "config", "erasure_world", "payloads", "rows_of"]
