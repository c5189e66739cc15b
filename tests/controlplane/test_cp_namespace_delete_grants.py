"""Grants die with their namespace (issue 26, finding 6).

A key granted on namespace X kept its grant when X was deleted; once X was created
again (for another tenant) the old tenant's writer key started a run in it. Deleting a
namespace now removes every grant on it (and the key's task-queue confinement there) and
revokes the keys left with no grant (not system_admin ones), in the store transaction
that deletes the namespace; this process forgets the old grants at once (its key cache
is refreshed), however long ``auth.key_cache_ttl`` is.
"""

from __future__ import annotations

import uuid

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest

from spindle.api import service_pb2 as svc
from spindle.api import service_pb2_grpc
from spindle.controlplane.auth import AuthSettings, Role
from spindle.controlplane.config import ServerConfig
from spindle.controlplane.server import ControlPlane, serve
from spindle.controlplane.store.sqlite import SqliteStore

pytestmark = pytest.mark.timeout(60)


def bearer(secret: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {secret}"),)


@dataclass
class Server:
    cp: ControlPlane
    server: Any
    channel: Any
    stub: Any
    keys: dict[str, str] = field(default_factory=dict)
    ids: dict[str, str] = field(default_factory=dict)

    async def call(self, rpc: str, req: Any, who: str) -> tuple[grpc.StatusCode, Any]:
        try:
            return grpc.StatusCode.OK, await getattr(self.stub, rpc)(req, metadata=bearer(self.keys[who]), timeout=10)
        except grpc.aio.AioRpcError as e:
            return e.code(), e.details() or ""

    async def ok(self, rpc: str, req: Any, who: str = "root") -> Any:
        status, resp = await self.call(rpc, req, who)
        assert status == grpc.StatusCode.OK, (rpc, who, status, resp)
        return resp

    async def key(self, label: str, grants: dict[str, Role], system_admin: bool = False,
                  task_queues: dict[str, list[str]] | None = None) -> None:
        row, secret = await self.cp.api_keys.create(label, grants, system_admin=system_admin, created_by="test",
                                                    task_queues=task_queues)
        self.keys[label], self.ids[label] = secret, row.key_id


@pytest.fixture
async def srv(tmp_path: Path) -> AsyncIterator[Server]:
    # a key cache far longer than the test: only the refresh on delete can make the old grant go away in time
    cp = ControlPlane(SqliteStore(str(tmp_path / "auth.db")), ServerConfig(num_shards=2),
                      auth=AuthSettings(mode="api_keys", key_cache_ttl=300.0))
    await cp.start()
    server, port = await serve(cp, "127.0.0.1", 0)
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    s = Server(cp, server, channel, service_pb2_grpc.WorkflowServiceStub(channel))
    await s.key("root", {}, system_admin=True)
    try:
        yield s
    finally:
        await channel.close()
        await server.stop(grace=0.5)
        await cp.stop()


def start(ns: str) -> svc.StartWorkflowExecutionRequest:
    return svc.StartWorkflowExecutionRequest(namespace=ns, workflow_id=f"w-{uuid.uuid4().hex[:8]}", workflow_type="W",
                                             task_queue="q", request_id=uuid.uuid4().hex)


async def test_a_writer_of_a_deleted_namespace_cannot_start_runs_in_its_namesake(srv: Server) -> None:
    await srv.ok("CreateNamespace", svc.CreateNamespaceRequest(name="x"))
    await srv.key("old tenant", {"x": Role.WRITER})
    await srv.ok("StartWorkflowExecution", start("x"), "old tenant")  # works, and the key is now in the cache
    await srv.ok("DeleteNamespace", svc.DeleteNamespaceRequest(name="x", force=True))
    await srv.ok("CreateNamespace", svc.CreateNamespaceRequest(name="x"))  # the new tenant's namespace
    status, details = await srv.call("StartWorkflowExecution", start("x"), "old tenant")
    assert status in (grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.UNAUTHENTICATED), (status, details)
    listed = {k.id: k for k in (await srv.ok("ListApiKeys", svc.ListApiKeysRequest())).keys}
    old = listed[srv.ids["old tenant"]]
    assert dict(old.grants) == {} and old.revoke_time_ms > 0  # its only grant went: the key is revoked
    assert "revoked" in details


async def test_other_grants_stay_and_system_admin_keys_are_not_revoked(srv: Server) -> None:
    for ns in ("x", "y"):
        await srv.ok("CreateNamespace", svc.CreateNamespaceRequest(name=ns))
    await srv.key("both", {"x": Role.WORKER, "y": Role.WRITER}, task_queues={"x": ["qx"]})
    await srv.key("x admin", {"x": Role.ADMIN})
    await srv.key("root with x", {"x": Role.READER}, system_admin=True)
    await srv.key("y only", {"y": Role.READER})
    await srv.ok("StartWorkflowExecution", start("y"), "both")
    await srv.ok("DeleteNamespace", svc.DeleteNamespaceRequest(name="x", force=True), "x admin")
    listed = {k.id: k for k in (await srv.ok("ListApiKeys", svc.ListApiKeysRequest())).keys}
    both = listed[srv.ids["both"]]
    assert dict(both.grants) == {"y": "writer"} and not both.revoke_time_ms and dict(both.task_queues) == {}
    assert listed[srv.ids["x admin"]].revoke_time_ms > 0  # its own key went with the namespace it deleted
    root = listed[srv.ids["root with x"]]
    assert dict(root.grants) == {} and root.system_admin and not root.revoke_time_ms
    assert dict(listed[srv.ids["y only"]].grants) == {"y": "reader"} and not listed[srv.ids["y only"]].revoke_time_ms
    assert listed[srv.ids["root"]].revoke_time_ms == 0
    await srv.ok("StartWorkflowExecution", start("y"), "both")  # what it holds elsewhere still works
    await srv.ok("CreateNamespace", svc.CreateNamespaceRequest(name="x"))
    status, details = await srv.call("DescribeNamespace", svc.DescribeNamespaceRequest(name="x"), "both")
    assert status == grpc.StatusCode.PERMISSION_DENIED and "has no grant on it" in details, details
    status, _ = await srv.call("DescribeNamespace", svc.DescribeNamespaceRequest(name="x"), "x admin")
    assert status == grpc.StatusCode.UNAUTHENTICATED
