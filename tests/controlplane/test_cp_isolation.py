"""Tenant isolation over real gRPC: per-namespace start admission and request rate limits, the SDK's
retries on RESOURCE_EXHAUSTED, the bounds of a task queue's dispatch rate and the roots archival URIs
must be under.

Behaviour only: no assertion depends on how fast anything is (figures live in bench/flood.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import sqlite3
import subprocess
import uuid

from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
import pytest

from _cp_server import SPINDLE, DevServer
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from spindle import activity, workflow
from spindle.api import RETRY_AFTER_KEY, service_pb2_grpc
from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.client import Client
from spindle.controlplane.matching import KIND_ACTIVITY, Matching
from spindle.exceptions import RPCError
from spindle.worker import Worker

pytestmark = pytest.mark.timeout(120)


# ---------------------------------------------------------------------- workflows
@activity.defn
async def iso_double(x: int) -> int:
    return 2 * x


@workflow.defn(name="IsoEcho")
class IsoEcho:
    @workflow.run
    async def run(self, x: int) -> int:
        return x


@workflow.defn(name="IsoActivities")
class IsoActivities:
    @workflow.run
    async def run(self, n: int) -> int:
        total = 0
        for i in range(n):
            total += await workflow.execute_activity(iso_double, i, start_to_close_timeout=timedelta(seconds=30))
        return total


# ---------------------------------------------------------------------- one server for the module
#: The server's namespace_rps_limit, which is also the cap of rps_limit (namespace_rps_limit_max is unset).
CAP = 1234


@pytest.fixture(scope="module")
def roots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("iso-roots")
    (base / "allowed" / "team-a").mkdir(parents=True)
    (base / "outside").mkdir()
    os.symlink(base / "outside", base / "allowed" / "escape")  # a link inside the root that points out of it
    return base


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, roots: Path) -> Iterator[DevServer]:
    d = tmp_path_factory.mktemp("iso")
    cfg = d / "server.yaml"
    cfg.write_text(json.dumps({  # JSON is YAML
        "start_admission_wait": 60,  # a start held back stays held for the whole test
        "start_admission_max_pending": 8,
        "namespace_rps_limit": CAP,  # what a namespace created without rps_limit gets, and the most it may get
        "task_queue_min_rate": 5,
        "task_queue_max_rate": 50,
        "archival_allowed_roots": [f"file://{roots / 'allowed'}", "gs://iso-bucket/tenants"],
    }))
    s = DevServer(d / "spindle.db", "--config", str(cfg)).start()
    yield s
    s.stop()


@pytest.fixture
async def admin(server: DevServer) -> AsyncIterator[Client]:
    c = await Client.connect(server.address)
    try:
        yield c
    finally:
        await c.close()


@contextlib.asynccontextmanager
async def raw(address: str) -> AsyncIterator[Any]:
    ch = grpc.aio.insecure_channel(address)
    try:
        yield service_pb2_grpc.WorkflowServiceStub(ch)
    finally:
        await ch.close()


def uid(p: str) -> str:
    return f"{p}-{uuid.uuid4().hex[:8]}"


def start_req(ns: str, wid: str, queue: str = "q-none") -> svc.StartWorkflowExecutionRequest:
    return svc.StartWorkflowExecutionRequest(namespace=ns, workflow_id=wid, workflow_type="IsoEcho", task_queue=queue,
                                             request_id=uuid.uuid4().hex)


class CountingStub:
    """A WorkflowService stub that counts the RESOURCE_EXHAUSTED answers it sees (the client retries them)."""

    def __init__(self, stub: Any) -> None:
        self._stub = stub
        self.throttled = 0

    def __getattr__(self, name: str) -> Any:
        fn = getattr(self._stub, name)

        async def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return await fn(*args, **kwargs)
            except grpc.aio.AioRpcError as e:
                if e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED:
                    self.throttled += 1
                raise

        return call


@contextlib.asynccontextmanager
async def counting_client(address: str, namespace: str) -> AsyncIterator[tuple[Client, CountingStub]]:
    ch = grpc.aio.insecure_channel(address)
    stub = CountingStub(service_pb2_grpc.WorkflowServiceStub(ch))
    client = Client(stub, namespace=namespace, channel=ch)
    try:
        yield client, stub
    finally:
        await client.close()


async def settled_count(address: str, ns: str, expected: int) -> int:
    """The number of executions of ``ns`` once visibility has caught up with ``expected`` (or after 15 s)."""
    c = await Client.connect(address, namespace=ns)
    try:
        for _ in range(150):
            got = await c.count_workflows()
            if got >= expected:
                break
            await asyncio.sleep(0.1)
        await asyncio.sleep(0.3)
        return await c.count_workflows()
    finally:
        await c.close()


def retry_info(e: grpc.aio.AioRpcError) -> error_details_pb2.RetryInfo | None:
    """The google.rpc.RetryInfo of a status, read the standard way (grpcio-status)."""
    status = rpc_status.from_call(e)  # type: ignore[arg-type]
    if status is None:
        return None
    for detail in status.details:
        info = error_details_pb2.RetryInfo()
        if detail.Is(info.DESCRIPTOR):
            detail.Unpack(info)
            return info
    return None


# ---------------------------------------------------------------------- start admission per namespace
async def test_a_start_flood_held_by_admission_does_not_hold_back_another_namespace(
        server: DevServer, admin: Client) -> None:
    a, b = uid("iso-adm-a"), uid("iso-adm-b")
    await admin.create_namespace(a, rps_limit=CAP)  # no rate limit to speak of: admission alone must keep B apart
    await admin.create_namespace(b, rps_limit=CAP)
    async with raw(server.address) as stub:
        # A: nobody polls its queue, so its workflow tasks never finish; after 8 (the admission budget)
        # its further starts wait in A's admission queue (start_admission_wait is 60 s here)
        flood = [asyncio.ensure_future(stub.StartWorkflowExecution(start_req(a, f"a-{i}"), timeout=110))
                 for i in range(20)]
        for _ in range(600):
            if sum(f.done() for f in flood) >= 8:
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)
        held = [f for f in flood if not f.done()]
        assert len(held) >= 10, "A's starts beyond its admission budget should be held back"
        assert all(f.result().started for f in flood if f.done())

        # B is served at once: its start and its workflow complete while A's starts are still held
        bc = await Client.connect(server.address, namespace=b)
        try:
            async with Worker(bc, task_queue="q-b", workflows=[IsoEcho]):
                results = await asyncio.wait_for(
                    asyncio.gather(*(bc.execute_workflow(IsoEcho.run, i, id=f"b-{i}", task_queue="q-b")
                                     for i in range(5))), 50)
        finally:
            await bc.close()
        assert results == list(range(5))
        assert [f for f in held if f.done()] == [], "B went ahead while A's starts were held (not behind them)"
        for f in flood:
            f.cancel()
        await asyncio.gather(*flood, return_exceptions=True)


# ---------------------------------------------------------------------- request rate limit per namespace
async def test_over_its_rps_limit_a_namespace_gets_resource_exhausted_with_retry_info_and_nothing_changes(
        server: DevServer, admin: Client) -> None:
    a = uid("iso-rl")
    await admin.create_namespace(a, rps_limit=0.01)  # one call, then one every 100 s
    async with raw(server.address) as stub:
        outcomes = await asyncio.gather(*(stub.StartWorkflowExecution(start_req(a, f"r-{i}")) for i in range(6)),
                                        return_exceptions=True)
        refused = [e for e in outcomes if isinstance(e, grpc.aio.AioRpcError)]
        started = [r for r in outcomes if isinstance(r, svc.StartWorkflowExecutionResponse)]
        assert len(started) <= 1 and len(refused) >= 5
        for e in refused:
            assert e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert "rps_limit" in e.details() and a in e.details()
            info = retry_info(e)
            assert info is not None, "RESOURCE_EXHAUSTED must carry a google.rpc.RetryInfo"
            delay = info.retry_delay.seconds + info.retry_delay.nanos / 1e9
            assert 0 < delay <= 600
            assert dict(e.trailing_metadata())[RETRY_AFTER_KEY] == str(math.ceil(delay * 1000))
    # raise the limit (namespace administration is not throttled; in force at once) and look: only the
    # accepted start exists
    assert (await admin.update_namespace(a, rps_limit=CAP)).rps_limit == CAP
    assert await settled_count(server.address, a, len(started)) == len(started)


async def test_the_sdk_waits_out_the_retry_delay_and_starts_each_workflow_once(server: DevServer,
                                                                                admin: Client) -> None:
    a = uid("iso-retry")
    await admin.create_namespace(a, rps_limit=4)
    async with counting_client(server.address, a) as (client, stub):
        # (a worker, so that start admission does not hold these starts back: only the rate limit does)
        async with Worker(client, task_queue="q-retry", workflows=[IsoEcho]):
            handles = await asyncio.gather(*(client.start_workflow(IsoEcho.run, i, id=f"s-{i}",
                                                                   task_queue="q-retry") for i in range(12)))
            assert stub.throttled > 0, "the namespace should have throttled some of these starts"
            descriptions = await asyncio.gather(*(h.describe() for h in handles))
    assert sorted(d.id for d in descriptions) == sorted(f"s-{i}" for i in range(12))
    assert len({d.run_id for d in descriptions}) == 12


async def test_b_is_served_while_a_is_throttled(server: DevServer, admin: Client) -> None:
    a, b = uid("iso-flood-a"), uid("iso-flood-b")
    await admin.create_namespace(a, rps_limit=5)
    await admin.create_namespace(b)
    async with counting_client(server.address, a) as (ac, a_stub), \
            Worker(ac, task_queue="q-flood-a", workflows=[IsoEcho]):  # only the rate limit holds A back
        async def one(i: int) -> str:
            try:
                await ac.start_workflow(IsoEcho.run, i, id=f"f-{i}", task_queue="q-flood-a")
                return "started"
            except RPCError as e:
                return e.status

        flood = asyncio.ensure_future(asyncio.gather(*(one(i) for i in range(400))))
        for _ in range(600):
            if a_stub.throttled:
                break
            await asyncio.sleep(0.02)
        assert a_stub.throttled, "A should be throttled by now"

        async with counting_client(server.address, b) as (bc, b_stub):
            async with Worker(bc, task_queue="q-flood-b", workflows=[IsoEcho]):
                results = await asyncio.gather(*(bc.execute_workflow(IsoEcho.run, i, id=f"b-{i}",
                                                                     task_queue="q-flood-b") for i in range(10)))
            assert results == list(range(10))
            assert b_stub.throttled == 0, "B's calls must not be throttled for A's flood"
            assert not flood.done(), "B was served while A's flood was still being throttled"
        outcomes = await flood
    assert set(outcomes) <= {"started", "RESOURCE_EXHAUSTED"}
    # the retry delays spread 400 callers over 80 s: those told to come back after the client's retry budget
    # give up at once, the others were retried and started
    assert 0 < outcomes.count("started") < 400 and outcomes.count("RESOURCE_EXHAUSTED") > 0
    await admin.update_namespace(a, rps_limit=CAP)
    assert await settled_count(server.address, a, outcomes.count("started")) == outcomes.count("started")


async def test_worker_polls_are_not_counted_against_the_rps_limit(server: DevServer, admin: Client) -> None:
    a = uid("iso-polls")
    await admin.create_namespace(a, rps_limit=1000)
    ac = await Client.connect(server.address, namespace=a)
    try:
        async with Worker(ac, task_queue="q-polls", workflows=[IsoEcho]):
            h = await ac.start_workflow(IsoEcho.run, 7, id="p", task_queue="q-polls")
            await admin.update_namespace(a, rps_limit=0.01)  # from now on: one client call per 100 s
            await asyncio.sleep(0.2)
            # the worker keeps polling and completing; only a client call about workflows would be refused
            async with raw(server.address) as stub:
                with pytest.raises(grpc.aio.AioRpcError) as ei:
                    for _ in range(3):
                        await stub.CountWorkflowExecutions(svc.CountWorkflowExecutionsRequest(namespace=a))
                assert ei.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            await admin.update_namespace(a, rps_limit=CAP)
            assert await asyncio.wait_for(h.result(), 50) == 7
    finally:
        await ac.close()


# ---------------------------------------------------------------------- schedules and backfills in the flood
def every_second(prefix: str) -> pb.Schedule:
    return pb.Schedule(spec=pb.ScheduleSpec(intervals=[pb.ScheduleIntervalSpec(every_ms=1000)]),
                       action=pb.ScheduleActionStartWorkflow(workflow_id=prefix, workflow_type="IsoEcho",
                                                             task_queue="q-none"),
                       policies=pb.SchedulePolicies(overlap_policy=pb.SCHEDULE_OVERLAP_POLICY_ALLOW_ALL))


async def paying(call: Any, req: Any) -> Any:
    """One call, again while its namespace is over its rps_limit (nothing else is retried)."""
    for _ in range(300):
        try:
            return await call(req, timeout=10)
        except grpc.aio.AioRpcError as e:
            if e.code() != grpc.StatusCode.RESOURCE_EXHAUSTED or "(rps_limit)" not in (e.details() or ""):
                raise
            await asyncio.sleep(0.2)
    raise AssertionError(f"{req} never got a token")


@pytest.mark.serial  # measures latency under load
async def test_b_start_latency_holds_while_a_floods_with_starts_schedules_and_backfills(
        server: DevServer, admin: Client) -> None:
    """Security issue 26, finding 2: A (rps_limit 5) floods through client starts and three 1-second
    ALLOW_ALL schedules backfilled with 2,000 actions each; A's starts are held to its budget and B's start
    latency stays low (before, schedules started 800 runs a second past A's limit and B's p99 rose)."""
    a, b = uid("iso-sf-a"), uid("iso-sf-b")
    await admin.create_namespace(a, rps_limit=5)
    await admin.create_namespace(b)
    bc = await Client.connect(server.address, namespace=b)
    async with raw(server.address) as stub, Worker(bc, task_queue="q-b", workflows=[IsoEcho]):
        for i in range(3):
            await paying(stub.CreateSchedule, svc.CreateScheduleRequest(namespace=a, schedule_id=f"s{i}",
                                                                        schedule=every_second(f"sf{i}")))
        for i in range(3):
            patch = svc.PatchScheduleRequest(namespace=a, schedule_id=f"s{i}")
            patch.patch.backfill_request.add(start_time_ms=1_700_000_000_000, end_time_ms=1_700_000_000_000 + 1_999_000)
            await paying(stub.PatchSchedule, patch)
        await bc.execute_workflow(IsoEcho.run, 0, id="b-warm", task_queue="q-b")
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        flood = [asyncio.ensure_future(stub.StartWorkflowExecution(start_req(a, f"fl-{i}"), timeout=30))
                 for i in range(300)]
        latencies = []
        for i in range(100):
            s = loop.time()
            await stub.StartWorkflowExecution(start_req(b, f"b-{i}", "q-b"), timeout=10)
            latencies.append(loop.time() - s)
            await asyncio.sleep(0.02)
        elapsed = loop.time() - t0
        await asyncio.gather(*flood, return_exceptions=True)
        for i in range(3):  # the rest of the backfills would keep this server busy for the other tests
            await paying(stub.DeleteSchedule, svc.DeleteScheduleRequest(namespace=a, schedule_id=f"s{i}"))
    await bc.close()
    latencies.sort()
    assert latencies[98] < 0.05, f"B's p99 start latency {latencies[98] * 1000:.0f} ms (max {latencies[-1] * 1000:.0f})"
    conn = sqlite3.connect(f"file:{server.db}?mode=ro", uri=True)
    try:
        a_id = conn.execute("SELECT id FROM namespaces WHERE name=?", (a,)).fetchone()[0]
        started = conn.execute("SELECT count(*) FROM executions WHERE namespace_id=?", (a_id,)).fetchone()[0]
    finally:
        conn.close()
    # a bucket's worth, then 5 a second (the calls above paid some of them): never 800 a second
    assert started <= 5 + 5 * (elapsed + 3), (started, elapsed)


# ---------------------------------------------------------------------- rps_limit on the namespace
async def test_rps_limit_through_the_client(server: DevServer, admin: Client) -> None:
    n = uid("iso-ns")
    assert (await admin.create_namespace(n)).rps_limit == 1234  # the server's namespace_rps_limit
    assert (await admin.update_namespace(n, rps_limit=7.5)).rps_limit == 7.5
    assert (await admin.describe_namespace(n)).rps_limit == 7.5
    assert (await admin.update_namespace(n, description="kept")).rps_limit == 7.5  # other updates keep it
    for bad in (-1.0, math.inf, math.nan):
        with pytest.raises(RPCError) as ei:
            await admin.update_namespace(n, rps_limit=bad)
        assert ei.value.status == "INVALID_ARGUMENT" and "rps_limit" in ei.value.message
    assert (await admin.describe_namespace(n)).rps_limit == 7.5
    with pytest.raises(RPCError) as ei:
        await admin.create_namespace(uid("iso-bad"), rps_limit=-2)
    assert ei.value.status == "INVALID_ARGUMENT" and "rps_limit" in ei.value.message
    # the cap is the server's namespace_rps_limit (namespace_rps_limit_max unset): up to it, not over, not unlimited
    assert (await admin.create_namespace(uid("iso-cap"), rps_limit=CAP)).rps_limit == CAP
    for over in (CAP + 1, 0):
        with pytest.raises(RPCError) as ei:
            await admin.update_namespace(n, rps_limit=over)
        assert ei.value.status == "INVALID_ARGUMENT" and "namespace_rps_limit" in ei.value.message
    assert (await admin.describe_namespace(n)).rps_limit == 7.5


def test_rps_limit_through_the_cli(server: DevServer) -> None:
    n = uid("iso-cli")

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([SPINDLE, "namespace", *args, "--address", server.address], capture_output=True,
                              text=True, timeout=60)

    out = cli("create", n, "--rps-limit", "3")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["rps_limit"] == 3
    out = cli("update", n, "--rps-limit", "9.5")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["rps_limit"] == 9.5
    out = cli("update", n, "--rps-limit", "-1")
    assert out.returncode != 0 and "--rps-limit" in out.stderr and "-1" in out.stderr


# ---------------------------------------------------------------------- dispatch rate bounds
async def test_a_tiny_dispatch_rate_is_raised_to_the_floor_and_cannot_freeze_the_queue(
        server: DevServer, admin: Client) -> None:
    n = uid("iso-rate")
    await admin.create_namespace(n)
    async with raw(server.address) as stub:
        # a rogue poll asks the queue for one task every 30 years (and gets nothing: no task yet)
        with contextlib.suppress(grpc.aio.AioRpcError):
            resp = await stub.PollActivityTaskQueue(svc.PollActivityTaskQueueRequest(
                namespace=n, task_queue="q-rate", identity="rogue", max_tasks_per_second=1e-9), timeout=1.0)
            assert not resp.task_token
        for bad in (-1.0, math.inf, math.nan):
            with pytest.raises(grpc.aio.AioRpcError) as ei:
                await stub.PollActivityTaskQueue(svc.PollActivityTaskQueueRequest(
                    namespace=n, task_queue="q-rate", max_tasks_per_second=bad), timeout=5)
            assert ei.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert "max_tasks_per_second" in ei.value.details()
    # every worker of the queue still gets its activities (at the floor of 5 per second at worst); the
    # activities run on another worker than the workflow, so that they go through the queue (not eagerly)
    c = await Client.connect(server.address, namespace=n)
    try:
        async with Worker(c, task_queue="q-rate", workflows=[IsoActivities]), \
                Worker(c, task_queue="q-rate", activities=[iso_double]):
            got = await asyncio.wait_for(c.execute_workflow(IsoActivities.run, 4, id="r", task_queue="q-rate"), 60)
    finally:
        await c.close()
    assert got == 2 * sum(range(4))


async def test_matching_clamps_a_rate_to_its_floor_and_ceiling() -> None:
    m = Matching(min_rate=5, max_rate=50)
    assert await m.poll("ns", "low", KIND_ACTIVITY, 0.0, rate=1e-9) is None
    assert m.queue("ns", "low", KIND_ACTIVITY).rate == 5
    assert await m.poll("ns", "high", KIND_ACTIVITY, 0.0, rate=1e9) is None
    assert m.queue("ns", "high", KIND_ACTIVITY).rate == 50
    assert await m.poll("ns", "mid", KIND_ACTIVITY, 0.0, rate=7) is None
    assert m.queue("ns", "mid", KIND_ACTIVITY).rate == 7
    assert await m.poll("ns", "nan", KIND_ACTIVITY, 0.0, rate=math.nan) is None
    assert m.queue("ns", "nan", KIND_ACTIVITY).rate == 0  # not a rate: asks for none


# ---------------------------------------------------------------------- archival roots
async def test_archival_uri_only_under_the_allowed_roots(server: DevServer, admin: Client, roots: Path) -> None:
    n = uid("iso-arch")
    ok = f"file://{roots / 'allowed' / 'team-a'}"
    assert (await admin.create_namespace(n, archival_uri=ok)).archival_uri == ok
    refused = [
        f"file://{roots / 'outside'}",
        f"file://{roots / 'allowed'}/../outside",
        f"file://{roots / 'allowed' / 'escape'}",  # a symbolic link out of the root
        f"file://{roots / 'allowed'}-sibling",
        "file:///etc",
        "gs://iso-bucket/tenants-other",
        "gs://other-bucket/tenants",
    ]
    for uri in refused:
        with pytest.raises(RPCError) as ei:
            await admin.update_namespace(n, archival_uri=uri)
        assert ei.value.status == "INVALID_ARGUMENT", uri
        assert "archival_uri" in ei.value.message and "not under a root" in ei.value.message, ei.value.message
        assert (await admin.describe_namespace(n)).archival_uri == ok, "a refused update must change nothing"
        created = uid("iso-arch-new")
        with pytest.raises(RPCError) as ei:
            await admin.create_namespace(created, archival_uri=uri)
        assert ei.value.status == "INVALID_ARGUMENT"
        assert created not in {x.name for x in await admin.list_namespaces()}
    for uri in (f"file://{roots / 'allowed'}", "gs://iso-bucket/tenants/team-b"):
        assert (await admin.update_namespace(n, archival_uri=uri)).archival_uri == uri


async def test_admission_keeps_each_namespace_s_budget_and_queue() -> None:
    from spindle.controlplane.config import ServerConfig
    from spindle.controlplane.history._admission import StartAdmission

    adm = StartAdmission(ServerConfig(start_admission_wait=60, start_admission_max_pending=2))
    for i in range(2):
        adm.workflow_task_scheduled(("A", f"w{i}", "r", 2))

    async def start(ns: str) -> str:
        async with adm.admit(ns):
            return ns

    held = asyncio.ensure_future(start("A"))
    await asyncio.sleep(0.05)
    assert not held.done() and adm.waiting("A") == 1 and adm.pending("A") == 2
    assert await asyncio.wait_for(start("B"), 5) == "B"  # B's budget is its own, and its queue is empty
    assert not held.done()
    adm.workflow_task_done(("B", "w0", "r", 2))  # B's work does not admit A's starts
    await asyncio.sleep(0.05)
    assert not held.done()
    adm.workflow_task_done(("A", "w0", "r", 2))  # A's does
    assert await asyncio.wait_for(held, 5) == "A"
    adm.workflow_task_done(("A", "w1", "r", 2))
    assert list(adm.namespaces()) == [], "state of namespaces with nothing pending is dropped"


@pytest.mark.parametrize("settings, needle", [
    ({"task_queue_min_rate": 0}, "task_queue_min_rate (0) must be positive"),
    ({"task_queue_min_rate": 10, "task_queue_max_rate": 5}, "at most task_queue_max_rate"),
    ({"task_queue_max_rate": math.inf}, "task_queue_max_rate must be a finite number"),
    ({"namespace_rps_limit": -1}, "namespace_rps_limit must not be negative"),
    ({"namespace_rps_limit": math.nan}, "namespace_rps_limit must not be negative"),
    ({"namespace_rps_limit": 0, "namespace_rps_limit_max": 100}, "must be positive and at most namespace_rps_limit_max"),
    ({"archival_allowed_roots": "file:///x"}, "archival_allowed_roots must be a list"),
    ({"archival_allowed_roots": ["s3://b"]}, "archival_allowed_roots: 's3://b': unsupported URI"),
])
def test_isolation_settings_are_checked(settings: dict[str, object], needle: str) -> None:
    from spindle.controlplane.config import ServerConfig

    with pytest.raises(ValueError) as ei:
        ServerConfig(**settings)  # type: ignore[arg-type]
    assert needle in str(ei.value)
