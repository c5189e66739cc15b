"""Security issue 26, finding 2: the starts the server makes count against the namespace's budgets.

A schedule's actions (backfills included) and child workflows take their tokens from the
namespace's ``rps_limit`` bucket and are PACED, never dropped; schedule actions also go
through start admission. A namespace's schedules and waiting actions are limited
(``namespace_max_schedules``, ``namespace_max_buffered_actions``). Batch operations and
reset are client RPCs and pay the rate limit like any call. Wall-time tests at a small
scale; the large backfill in virtual time is ``schedules/test_schedule_pacing.py``.
"""

from __future__ import annotations

import asyncio
import sqlite3
import sys
import time

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import grpc
import pytest

from spindle import workflow
from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.api import service_pb2_grpc
from spindle.client import Client
from spindle.controlplane.config import ServerConfig
from spindle.controlplane.errors import ResourceExhausted
from spindle.controlplane.frontend._rate_limit import NamespaceRateLimiter
from spindle.controlplane.frontend.service import FrontendService
from spindle.controlplane.server import ControlPlane, serve
from spindle.controlplane.store.sqlite import SqliteStore
from spindle.worker import Worker

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from spindle_procs import DevServer  # noqa: E402

SECOND_MS = 1000
T_BASE_MS = 1_700_000_000_000  # backfilled range: nominal times long past (the action ids are pinned to them)


@workflow.defn
class Quick:
    @workflow.run
    async def run(self) -> str:
        return "ok"


@workflow.defn
class FanOut:
    @workflow.run
    async def run(self, n: int) -> int:
        handles = [await workflow.start_child_workflow(Quick.run, id=f"{workflow.info().workflow_id}-c{i}")
                   for i in range(n)]
        for h in handles:
            await h
        return n


@asynccontextmanager
async def plane(db: Path, **cfg: Any) -> AsyncIterator[tuple[ControlPlane, Any, str]]:
    cp = ControlPlane(SqliteStore(str(db)), ServerConfig(num_shards=2, **cfg))
    await cp.start()
    server, port = await serve(cp, "127.0.0.1", 0)
    address = f"127.0.0.1:{port}"
    try:
        async with grpc.aio.insecure_channel(address) as ch:
            yield cp, service_pb2_grpc.WorkflowServiceStub(ch), address
    finally:
        await server.stop(0)
        await cp.stop()


def every_second(prefix: str) -> pb.Schedule:
    return pb.Schedule(
        spec=pb.ScheduleSpec(intervals=[pb.ScheduleIntervalSpec(every_ms=SECOND_MS)]),
        action=pb.ScheduleActionStartWorkflow(workflow_id=prefix, workflow_type="Quick", task_queue="q"),
        policies=pb.SchedulePolicies(overlap_policy=pb.SCHEDULE_OVERLAP_POLICY_ALLOW_ALL),
        state=pb.ScheduleState(paused=True))  # only the backfill acts


def backfill(ns: str, sid: str, n: int, start_ms: int = T_BASE_MS) -> svc.PatchScheduleRequest:
    req = svc.PatchScheduleRequest(namespace=ns, schedule_id=sid)
    req.patch.backfill_request.add(start_time_ms=start_ms, end_time_ms=start_ms + (n - 1) * SECOND_MS,
                                   overlap_policy=pb.SCHEDULE_OVERLAP_POLICY_ALLOW_ALL)
    return req


def runs(db: Path, ns_id: str, prefix: str) -> list[tuple[str, int]]:
    """(workflow id, start time ms) of every run whose id starts with ``prefix``, read from the store."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return sorted(conn.execute("SELECT workflow_id, start_time_ms FROM executions WHERE namespace_id=? "
                                   "AND workflow_id LIKE ?", (ns_id, prefix + "%")).fetchall())
    finally:
        conn.close()


async def paying(call: Any, *args: Any) -> Any:
    """``call(*args)``, again while the namespace is over its rps_limit (the schedule takes the same tokens)."""
    while True:
        try:
            return await call(*args)
        except grpc.aio.AioRpcError as e:
            if e.code() != grpc.StatusCode.RESOURCE_EXHAUSTED or "(rps_limit)" not in (e.details() or ""):
                raise
            await asyncio.sleep(0.2)


async def wait_for(fn: Any, timeout: float) -> Any:
    end = time.monotonic() + timeout
    while True:
        got = fn()
        if got or time.monotonic() > end:
            return got
        await asyncio.sleep(0.1)


# ---------------------------------------------------------------------- the rule
def test_take_paces_where_check_refuses() -> None:
    now = [100.0]
    limiter = NamespaceRateLimiter(lambda: now[0])

    class Ns:
        id, name, rps_limit = "n", "ns", 5.0

    assert [limiter.take(Ns) for _ in range(5)] == [0.0] * 5  # a second's worth
    assert limiter.take(Ns) == pytest.approx(0.2)  # the next token, a place in the virtual queue
    with pytest.raises(ResourceExhausted) as ei:
        limiter.check(Ns)  # the same bucket
    assert "rps_limit" in str(ei.value) and ei.value.retry_after == pytest.approx(0.4)
    now[0] += 0.2
    assert limiter.take(Ns) == 0.0
    Ns.rps_limit = 0  # unlimited: every take succeeds
    assert all(limiter.take(Ns) == 0.0 for _ in range(100))


def test_reset_and_the_batch_calls_are_counted() -> None:
    """Batch operations run in the client as these ordinary RPCs, so each of their calls pays ``rps_limit``."""
    table = {name: row.counted for name, row in _table().items()}
    for rpc in ("ResetWorkflowExecution", "TerminateWorkflowExecution", "RequestCancelWorkflowExecution",
                "SignalWorkflowExecution", "UpdateWorkflowExecutionOptions", "StartWorkflowExecution",
                "CreateSchedule", "PatchSchedule", "ListWorkflowExecutions"):
        assert table[rpc], rpc


def _table() -> dict[str, Any]:
    """The frontend's table of RPCs (its handlers stand-ins: only the rows' flags are read)."""
    from unittest.mock import MagicMock

    svc_ = FrontendService.__new__(FrontendService)
    for name in ("_namespace_calls", "_workflow_calls", "_visibility_calls", "_worker_calls", "_schedule_calls",
                 "_deployment_calls", "_erasure_calls", "_nexus_calls"):
        setattr(svc_, name, MagicMock())
    return svc_.rpcs()


# ---------------------------------------------------------------------- schedules: paced, once each, durable
async def test_a_backfill_of_20_at_rps_limit_5_takes_about_4_s_and_starts_each_once(tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    async with plane(db) as (cp, stub, address):
        await stub.CreateNamespace(svc.CreateNamespaceRequest(name="nsa", rps_limit=5))
        ns_id = cp.namespaces.get("nsa").id
        client = await Client.connect(address, namespace="nsa")
        try:
            async with Worker(client, task_queue="q", workflows=[Quick]):
                await stub.CreateSchedule(svc.CreateScheduleRequest(namespace="nsa", schedule_id="s",
                                                                    schedule=every_second("bf")))
                await asyncio.sleep(1.1)  # a full bucket again (the two calls above took two tokens)
                t0 = time.monotonic()
                await stub.PatchSchedule(backfill("nsa", "s", 20))  # one token; 20 actions wait
                got = await wait_for(lambda: len(runs(db, ns_id, "bf-")) >= 20 and runs(db, ns_id, "bf-"), 15)
                took = time.monotonic() - t0
        finally:
            await client.close()
    assert len(got) == 20 and len({w for w, _ in got}) == 20, got
    # 4 tokens left in the bucket, then one every 0.2 s: the 20th start about (20 - 4) / 5 = 3.2 s after the patch
    assert 2.8 <= took <= 6.0, took
    spread = (max(t for _, t in got) - min(t for _, t in got)) / 1000
    assert 2.6 <= spread <= 5.5, spread


async def test_schedule_starts_wait_for_start_admission(tmp_path: Path) -> None:
    """No worker: a namespace's starts hold at most its admission budget of unfinished workflow tasks."""
    db = tmp_path / "adm.db"
    async with plane(db, start_admission_max_pending=4, start_admission_wait=30) as (cp, stub, _):
        await stub.CreateNamespace(svc.CreateNamespaceRequest(name="nsa"))
        ns_id = cp.namespaces.get("nsa").id
        await stub.CreateSchedule(svc.CreateScheduleRequest(namespace="nsa", schedule_id="s", schedule=every_second("ad")))
        await stub.PatchSchedule(backfill("nsa", "s", 30))
        await asyncio.sleep(1.5)
        assert len(runs(db, ns_id, "ad-")) == 4, "the schedule's starts beyond the admission budget must wait"
        # and the schedule is not stuck behind them: a pause goes through at once
        await asyncio.wait_for(stub.PatchSchedule(svc.PatchScheduleRequest(
            namespace="nsa", schedule_id="s", patch=svc.SchedulePatch(pause="stop"))), 10)


@pytest.mark.serial
async def test_a_crash_in_a_paced_backfill_loses_no_action_and_starts_none_twice(tmp_path: Path) -> None:
    db = tmp_path / "crash.db"
    cfg = tmp_path / "server.yaml"
    cfg.write_text('{"start_admission_max_pending": 100}')  # no worker here: only the rate limit paces
    server = DevServer(db, "--config", str(cfg)).start()
    try:
        client = await Client.connect(server.address)
        await client.create_namespace("nsa", rps_limit=5)
        await client.close()
        async with grpc.aio.insecure_channel(server.address) as ch:
            stub = service_pb2_grpc.WorkflowServiceStub(ch)
            await stub.CreateSchedule(svc.CreateScheduleRequest(namespace="nsa", schedule_id="s",
                                                                schedule=every_second("cr")))
            await asyncio.sleep(1.1)
            await stub.PatchSchedule(backfill("nsa", "s", 30))
            await asyncio.sleep(2.5)  # about 5 + 12 started, the rest waiting in the record
        server.kill()  # SIGKILL in the middle of the paced backfill
        ns_id = sqlite3.connect(f"file:{db}?mode=ro", uri=True).execute(
            "SELECT id FROM namespaces WHERE name='nsa'").fetchone()[0]
        before = len(runs(db, ns_id, "cr-"))
        assert 5 <= before < 30, before
        server.start()
        got = await wait_for(lambda: len(runs(db, ns_id, "cr-")) >= 30 and runs(db, ns_id, "cr-"), 20)
    finally:
        server.stop()
    ids = [w for w, _ in got]
    assert len(ids) == 30 and len(set(ids)) == 30, ids  # every action once: none lost, none doubled


# ---------------------------------------------------------------------- limits on schedules
async def test_schedule_count_and_waiting_actions_are_limited_per_namespace(tmp_path: Path) -> None:
    async with plane(tmp_path / "lim.db", namespace_max_schedules=3, namespace_max_buffered_actions=50) as (cp, stub, _):
        for ns in ("nsa", "nsb"):
            await stub.CreateNamespace(svc.CreateNamespaceRequest(name=ns, rps_limit=2))  # slow: actions keep waiting

        def create(ns: str, sid: str) -> Any:
            return stub.CreateSchedule(svc.CreateScheduleRequest(namespace=ns, schedule_id=sid, schedule=every_second(sid)))

        for i in range(3):
            await paying(create, "nsa", f"s{i}")
        with pytest.raises(grpc.aio.AioRpcError) as ei:
            await paying(create, "nsa", "s3")
        assert ei.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "namespace_max_schedules" in ei.value.details() and "3" in ei.value.details()
        await paying(create, "nsb", "s3")  # another namespace has its own
        await paying(stub.PatchSchedule, backfill("nsa", "s0", 30))
        with pytest.raises(grpc.aio.AioRpcError) as ei:  # 30 (less the few started) + 30 > 50 across the namespace
            await paying(stub.PatchSchedule, backfill("nsa", "s1", 30))
        assert ei.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "namespace_max_buffered_actions" in ei.value.details() and "50" in ei.value.details()
        d = await paying(stub.DescribeSchedule, svc.DescribeScheduleRequest(namespace="nsa", schedule_id="s1"))
        assert d.info.action_count == 0 and not d.info.recent_actions, "a refused backfill changes nothing"
        await paying(stub.PatchSchedule, backfill("nsa", "s1", 10))  # what fits is taken


# ---------------------------------------------------------------------- child workflows and batch operations
async def test_child_starts_are_paced_by_the_namespace_rps_limit_and_the_parent_completes(tmp_path: Path) -> None:
    db = tmp_path / "child.db"
    async with plane(db) as (cp, stub, address):
        await stub.CreateNamespace(svc.CreateNamespaceRequest(name="nsa", rps_limit=5))
        ns_id = cp.namespaces.get("nsa").id
        client = await Client.connect(address, namespace="nsa")
        try:
            async with Worker(client, task_queue="q", workflows=[FanOut, Quick]):
                await asyncio.sleep(1.1)
                assert await asyncio.wait_for(client.execute_workflow(FanOut.run, 15, id="fan", task_queue="q"),
                                              30) == 15
        finally:
            await client.close()
    children = runs(db, ns_id, "fan-c")
    assert len(children) == 15
    spread = (max(t for _, t in children) - min(t for _, t in children)) / 1000
    assert spread >= 1.4, f"15 child starts at 5 per second (a few tokens left after the parent's calls): {spread}"


async def test_a_batch_operation_pays_the_rate_limit(tmp_path: Path) -> None:
    async with plane(tmp_path / "batch.db", start_admission_max_pending=100) as (cp, stub, address):
        await stub.CreateNamespace(svc.CreateNamespaceRequest(name="nsa"))
        client = await Client.connect(address, namespace="nsa")
        try:
            for i in range(15):
                await client.start_workflow(Quick.run, id=f"b{i}", task_queue="nobody")
            await asyncio.sleep(0.5)  # visibility
            await stub.UpdateNamespace(svc.UpdateNamespaceRequest(name="nsa", update_mask=["rps_limit"], rps_limit=5))
            await asyncio.sleep(1.1)  # a full bucket: 5 calls, then one every 0.2 s
            first = await client.batch_terminate("ExecutionStatus = 'Running'", reason="done")
            # the namespace's limit held: what the bucket allowed was done, the rest refused by the rate limit
            assert 0 < len(first.done) < 15 and len(first.done) + len(first.failed) == 15
            assert all("RESOURCE_EXHAUSTED" in f.reason and "rps_limit" in f.reason for f in first.failed)
            # paced below the limit (rps=), the same batch again finishes the rest
            t0 = time.monotonic()
            second = await client.batch_terminate("ExecutionStatus = 'Running'", reason="done", rps=4)
            took = time.monotonic() - t0
        finally:
            await client.close()
    assert len(second.done) == len(first.failed) and not second.failed
    assert took >= (len(second.done) - 1) / 4 * 0.9
