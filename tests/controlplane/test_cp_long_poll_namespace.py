"""Security issue 26, finding 1: one tenant cannot take every long-poll slot of the process.

A worker key of ``nsa`` that declares many identities, or many keys of ``nsa``, used to be
able to hold all of ``max_long_polls``; ``nsb``'s worker poll and ``nsb``'s ``handle.result()``
(GetWorkflowExecutionHistory waiting for the close event) then got RESOURCE_EXHAUSTED.
"""

from __future__ import annotations

import asyncio
import uuid

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.api import service_pb2_grpc
from spindle.client._retry_delay import retry_delay
from spindle.controlplane.auth import AuthSettings, Role
from spindle.controlplane.config import ServerConfig
from spindle.controlplane.server import ControlPlane, serve
from spindle.controlplane.store.sqlite import SqliteStore

TOTAL, PER_CLIENT = 200, 20


def bearer(secret: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {secret}"),)


@dataclass
class Tenants:
    stub: Any
    keys: dict[str, str] = field(default_factory=dict)

    def md(self, who: str) -> tuple[tuple[str, str], ...]:
        return bearer(self.keys[who])


@pytest.fixture
async def tenants(tmp_path: Path) -> AsyncIterator[Tenants]:
    cp = ControlPlane(SqliteStore(str(tmp_path / "lp.db")),
                      ServerConfig(num_shards=1, max_long_polls=TOTAL, max_long_polls_per_client=PER_CLIENT),
                      auth=AuthSettings(mode="api_keys"))
    await cp.start()
    server, port = await serve(cp, "127.0.0.1", 0)
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    t = Tenants(service_pb2_grpc.WorkflowServiceStub(channel))
    try:
        _, t.keys["admin"] = await cp.api_keys.create("admin", {}, system_admin=True, created_by="test")
        for ns in ("nsa", "nsb"):
            await t.stub.CreateNamespace(svc.CreateNamespaceRequest(name=ns), metadata=t.md("admin"), timeout=10)
            _, t.keys[f"{ns}:writer"] = await cp.api_keys.create(f"{ns}-w", {ns: Role.WRITER}, created_by="test")
            for i in range(10):
                _, t.keys[f"{ns}:worker{i}"] = await cp.api_keys.create(f"{ns}-k{i}", {ns: Role.WORKER},
                                                                        created_by="test")
        yield t
    finally:
        await channel.close()
        await server.stop(0)
        await cp.stop()


def flood(t: Tenants, polls: list[tuple[str, str]]) -> list[asyncio.Future[Any]]:
    """One idle activity poll of nsa per (key, identity)."""
    return [asyncio.ensure_future(t.stub.PollActivityTaskQueue(svc.PollActivityTaskQueueRequest(
        namespace="nsa", task_queue="idle", identity=identity), metadata=t.md(key), timeout=60))
        for key, identity in polls]


async def settle(polls: list[asyncio.Future[Any]]) -> tuple[int, list[grpc.aio.AioRpcError]]:
    """(polls still held, errors of the refused ones) once the refusals have come back."""
    await asyncio.sleep(1.5)
    refused = [p.exception() for p in polls if p.done()]
    assert all(isinstance(e, grpc.aio.AioRpcError) and e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
               for e in refused), refused
    return sum(not p.done() for p in polls), refused


async def nsb_still_served(t: Tenants) -> None:
    """nsb's worker poll gets its task and nsb's result wait (history long poll) is held, then answered."""
    wid = f"b-{uuid.uuid4().hex[:6]}"
    await t.stub.StartWorkflowExecution(svc.StartWorkflowExecutionRequest(
        namespace="nsb", workflow_id=wid, workflow_type="W", task_queue="qb", request_id=wid),
        metadata=t.md("nsb:writer"), timeout=10)
    task = await t.stub.PollWorkflowTaskQueue(svc.PollWorkflowTaskQueueRequest(
        namespace="nsb", task_queue="qb", identity="b-worker"), metadata=t.md("nsb:worker0"), timeout=10)
    assert task.workflow_execution.workflow_id == wid
    result = asyncio.ensure_future(t.stub.GetWorkflowExecutionHistory(svc.GetWorkflowExecutionHistoryRequest(
        namespace="nsb", execution=pb.WorkflowExecution(workflow_id=wid), wait_new_event=True,
        close_event_only=True), metadata=t.md("nsb:writer"), timeout=30))
    await asyncio.sleep(0.5)
    assert not result.done(), result.exception() if result.done() else None  # held, not refused
    await t.stub.TerminateWorkflowExecution(svc.TerminateWorkflowExecutionRequest(
        namespace="nsb", workflow_execution=pb.WorkflowExecution(workflow_id=wid), reason="test"),
        metadata=t.md("nsb:writer"), timeout=10)
    page = await result
    assert page.history.events[-1].event_type == pb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED


async def test_one_key_with_ten_identities_holds_only_its_own_allowance(tenants: Tenants) -> None:
    polls = flood(tenants, [("nsa:worker0", f"id-{i}") for i in range(10) for _ in range(PER_CLIENT)])
    try:
        held, refused = await settle(polls)
        assert held == PER_CLIENT  # the identity it declares does not multiply a key's allowance
        assert f"max_long_polls_per_client = {PER_CLIENT}" in (refused[0].details() or "")
        assert retry_delay(refused[0]) == pytest.approx(1.0)
        await nsb_still_served(tenants)
    finally:
        for p in polls:
            p.cancel()


async def test_one_namespace_with_many_keys_leaves_room_for_another(tenants: Tenants) -> None:
    polls = flood(tenants, [(f"nsa:worker{k}", f"id-{k}") for k in range(10) for _ in range(PER_CLIENT)])
    try:
        held, refused = await settle(polls)
        assert held == TOTAL // 2  # long_poll_namespace_share 0.5 of the slots other namespaces leave
        assert refused and all("long_poll_namespace_share = 0.5" in (e.details() or "") for e in refused)
        assert "namespace 'nsa'" in (refused[0].details() or "")
        assert retry_delay(refused[0]) == pytest.approx(1.0)
        await nsb_still_served(tenants)
    finally:
        for p in polls:
            p.cancel()
