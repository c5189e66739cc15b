"""A control plane with API keys on (SQLite file, served over gRPC in this process), two tenants and their keys.

Namespaces ``ns-a`` and ``ns-b`` each hold one running workflow. ``ns-a``'s run has an
activity task and a workflow task that a worker polled and still holds (both with hour
long timeouts), so their genuine task tokens are at hand: a call that got through with
them would change the store.

Keys (:attr:`World.keys`): ``admin`` (system_admin), ``a:reader``, ``a:worker``,
``a:writer``, ``a:admin`` (one role each on ``ns-a``), ``b:writer``, ``b:admin`` (on
``ns-b``), and two system_admin keys that must not work: ``expired`` and ``revoked``.
"""

from __future__ import annotations

import asyncio
import sqlite3
import uuid

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.api import service_pb2_grpc
from spindle.controlplane.auth import AuthSettings, Role
from spindle.controlplane.config import ServerConfig
from spindle.controlplane.history._tokens import NEXUS, QUERY, TaskToken
from spindle.controlplane.server import ControlPlane, serve
from spindle.controlplane.store.sqlite import SqliteStore

HOUR_MS = 3_600_000
QA, QB = "qa", "qb"


def bearer(secret: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {secret}"),)


def snapshot(db: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table of the SQLite file, read through a read-only connection."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        return {t: sorted(conn.execute(f'SELECT * FROM "{t}"').fetchall(), key=repr) for t in tables}
    finally:
        conn.close()


@dataclass
class World:
    cp: ControlPlane
    server: grpc.aio.Server
    channel: grpc.aio.Channel
    stub: Any
    db: str
    address: str
    keys: dict[str, str] = field(default_factory=dict)
    key_ids: dict[str, str] = field(default_factory=dict)
    ns_ids: dict[str, str] = field(default_factory=dict)
    runs: dict[str, str] = field(default_factory=dict)
    activity_token: bytes = b""
    workflow_token: bytes = b""
    query_token: bytes = b""
    nexus_token: bytes = b""
    endpoint_id: str = ""
    closed: bool = False

    def snapshot(self) -> dict[str, list[tuple[Any, ...]]]:
        return snapshot(self.db)

    async def settle(self, timeout: float = 30.0) -> None:
        """Wait until the server's background work (transfer tasks: visibility, dispatch) is done."""
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        last = None
        while True:
            snap = self.snapshot()
            if not snap.get("transfer_tasks") and snap == last:
                return
            if loop.time() > end:
                raise AssertionError(f"the store did not settle; pending transfer tasks: {snap.get('transfer_tasks')}")
            last = snap
            await asyncio.sleep(0.1)

    async def call(self, rpc: str, request: Any, metadata: Sequence[tuple[str, str]] = (), timeout: float = 10.0
                   ) -> tuple[grpc.StatusCode, Any]:
        """(status, response or error details) of one raw call."""
        try:
            resp = await getattr(self.stub, rpc)(request, metadata=tuple(metadata) or None, timeout=timeout)
            return grpc.StatusCode.OK, resp
        except grpc.aio.AioRpcError as e:
            return e.code(), e.details() or ""

    async def ok(self, rpc: str, request: Any, who: str = "admin", timeout: float = 30.0) -> Any:
        status, resp = await self.call(rpc, request, bearer(self.keys[who]), timeout)
        assert status == grpc.StatusCode.OK, (rpc, who, status, resp)
        return resp

    async def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        await self.channel.close()
        await self.server.stop(grace=0.5)
        await self.cp.stop()


async def make_world(tmp_path: Path) -> World:
    db = str(tmp_path / "auth.db")
    cp = ControlPlane(SqliteStore(db), ServerConfig(num_shards=2, archival_allowed_roots=(f"file://{tmp_path}/archive",)), auth=AuthSettings(mode="api_keys"))
    await cp.start()
    server, port = await serve(cp, "127.0.0.1", 0)
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    w = World(cp, server, channel, service_pb2_grpc.WorkflowServiceStub(channel), db, f"127.0.0.1:{port}")
    keys = cp.api_keys

    async def key(label: str, grants: dict[str, Role], system_admin: bool = False, ttl_ms: int = 0) -> None:
        row, secret = await keys.create(label, grants, system_admin=system_admin, ttl_ms=ttl_ms, created_by="test")
        w.keys[label], w.key_ids[label] = secret, row.key_id

    await key("admin", {}, system_admin=True)
    for name in ("ns-a", "ns-b"):
        await w.ok("CreateNamespace", svc.CreateNamespaceRequest(name=name))
        w.ns_ids[name] = (await w.ok("DescribeNamespace", svc.DescribeNamespaceRequest(name=name))).namespace_info.id
    for role in Role:
        await key(f"a:{role.value}", {"ns-a": role})
    await key("b:writer", {"ns-b": Role.WRITER})
    await key("b:admin", {"ns-b": Role.ADMIN})
    await key("expired", {}, system_admin=True, ttl_ms=1)
    await key("revoked", {}, system_admin=True)
    await keys.revoke(w.key_ids["revoked"])
    await asyncio.sleep(0.01)  # "expired" is past its expiry from here on

    for ns, q in (("ns-a", QA), ("ns-b", QB)):
        wid = f"{ns}-wf"
        run = await w.ok("StartWorkflowExecution", svc.StartWorkflowExecutionRequest(
            namespace=ns, workflow_id=wid, workflow_type="W", task_queue=q, task_timeout_ms=HOUR_MS,
            request_id=uuid.uuid4().hex, input=pb.Payloads(payloads=[pb.Payload(
                metadata={"encoding": b"json/plain"}, data=b'"card 4111 1111 1111 1111"')])))
        w.runs[ns] = run.run_id
    # ns-a: a schedule (issue 17) that acts once a year, for the schedule RPCs to aim at
    await w.ok("CreateSchedule", svc.CreateScheduleRequest(namespace="ns-a", schedule_id="ns-a-sched", schedule=pb.Schedule(
        spec=pb.ScheduleSpec(cron_expressions=["0 0 1 1 *"]),
        action=pb.ScheduleActionStartWorkflow(workflow_id="ns-a-yearly", workflow_type="W", task_queue=QA))))
    # ns-a: the first workflow task schedules an activity; a worker holds the activity task and,
    # after a signal, a second workflow task.
    worker = bearer(w.keys["a:worker"])
    wt = await w.stub.PollWorkflowTaskQueue(svc.PollWorkflowTaskQueueRequest(namespace="ns-a", task_queue=QA),
                                            metadata=worker, timeout=30)
    cmd = pb.Command(command_type=pb.COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK,
                     schedule_activity_task_command_attributes=pb.ScheduleActivityTaskCommandAttributes(
                         activity_id="act", activity_type="Charge", task_queue=QA, start_to_close_timeout_ms=HOUR_MS,
                         schedule_to_close_timeout_ms=HOUR_MS))
    await w.stub.RespondWorkflowTaskCompleted(svc.RespondWorkflowTaskCompletedRequest(
        task_token=wt.task_token, commands=[cmd], namespace="ns-a"), metadata=worker, timeout=30)
    act = await w.stub.PollActivityTaskQueue(svc.PollActivityTaskQueueRequest(namespace="ns-a", task_queue=QA),
                                             metadata=worker, timeout=30)
    assert act.activity_id == "act"
    w.activity_token = act.task_token
    await w.ok("SignalWorkflowExecution", svc.SignalWorkflowExecutionRequest(
        namespace="ns-a", workflow_execution=pb.WorkflowExecution(workflow_id="ns-a-wf"), signal_name="go",
        request_id=uuid.uuid4().hex))
    wt2 = await w.stub.PollWorkflowTaskQueue(svc.PollWorkflowTaskQueueRequest(namespace="ns-a", task_queue=QA),
                                             metadata=worker, timeout=30)
    assert wt2.workflow_execution.workflow_id == "ns-a-wf"
    w.workflow_token = wt2.task_token
    # a query task token, signed as the server signs them (no query is pending: the call would answer NOT_FOUND)
    w.query_token = cp.engine.tokens.encode(TaskToken(QUERY, w.ns_ids["ns-a"], "ns-a-wf", w.runs["ns-a"], 0, 0, "q1"))
    # a Nexus task token for a task of ns-a's queue, signed as the server signs them (no such task is pending)
    w.nexus_token = cp.engine.tokens.encode(TaskToken(NEXUS, w.ns_ids["ns-a"], "ns-a-wf", w.runs["ns-a"], 5, 1,
                                                      w.ns_ids["ns-a"], QA))
    # a Nexus endpoint targeting ns-a (made by ns-a's admin)
    ep = await w.stub.CreateNexusEndpoint(svc.CreateNexusEndpointRequest(spec=pb.EndpointSpec(
        name="a_endpoint", target=pb.EndpointTarget(worker=pb.EndpointTarget.Worker(namespace="ns-a", task_queue=QA)))),
        metadata=bearer(w.keys["a:admin"]), timeout=30)
    w.endpoint_id = ep.endpoint.id
    await w.settle()
    return w


__all__ = ["HOUR_MS", "QA", "QB", "World", "bearer", "make_world", "snapshot"]
