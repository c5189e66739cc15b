"""Server metrics (docs/OBSERVABILITY.md): scraped over HTTP from /metrics and parsed with prometheus_client's parser."""

from __future__ import annotations

import asyncio
import socket
import urllib.request
import uuid

from datetime import timedelta
from pathlib import Path

import pytest

from prometheus_client.parser import text_string_to_metric_families
from spindle_procs import DevServer

from spindle import activity, workflow
from spindle.client import Client
from spindle.controlplane._metrics import OTHER, ServerMetrics, serve_metrics
from spindle.controlplane.server import ControlPlane, serve
from spindle.controlplane.store.sqlite import SqliteStore
from spindle.exceptions import ApplicationError, WorkflowFailureError, WorkflowNotFoundError
from spindle.worker import Worker

pytestmark = pytest.mark.timeout(120)

#: Beyond the pinned names: what an on-call engineer needs (OPERATIONAL names always exposed once recorded).
ON_CALL = ("spindle_task_queue_backlog_age_seconds", "spindle_shard_ownership_changes_total",
           "spindle_sticky_dispatch_total")

PINNED = ("spindle_rpc_requests_total", "spindle_rpc_latency_seconds", "spindle_workflow_started_total",
          "spindle_workflow_closed_total", "spindle_task_schedule_to_start_seconds", "spindle_timer_lag_seconds",
          "spindle_task_queue_backlog", "spindle_persistence_latency_seconds", "spindle_shards_owned")


@activity.defn
async def double(x: int) -> int:
    return 2 * x


@workflow.defn
class DoubleThenSleep:
    @workflow.run
    async def run(self, x: int) -> int:
        y = await workflow.execute_activity(double, x, start_to_close_timeout=timedelta(seconds=10))
        await workflow.sleep(0.2)
        return y


@workflow.defn
class Fails:
    @workflow.run
    async def run(self) -> None:
        raise ApplicationError("no", non_retryable=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def scrape(port: int) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Every sample of http://127.0.0.1:PORT/metrics by sample name: [(labels, value)]."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        assert r.status == 200
        text = r.read().decode()
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out.setdefault(s.name, []).append((s.labels, s.value))
    return out


def value(samples: dict, name: str, **labels: str) -> float:
    """The sum of ``name``'s samples whose labels include ``labels``."""
    return sum(v for lab, v in samples.get(name, []) if all(lab.get(k) == x for k, x in labels.items()))


async def test_start_dev_metrics_count_what_ran(tmp_path: Path) -> None:
    mport = free_port()
    server = DevServer(tmp_path / "m.db", "--metrics-port", str(mport)).start()
    try:
        client = await Client.connect(server.address)
        tq = "metrics-" + uuid.uuid4().hex[:6]
        handles = []
        async with Worker(client, task_queue=tq, workflows=[DoubleThenSleep, Fails], activities=[double]):
            for i in range(3):
                handles.append(await client.start_workflow(DoubleThenSleep.run, i, id=f"ok-{i}-{uuid.uuid4().hex[:6]}",
                                                           task_queue=tq))
            handles.append(await client.start_workflow(Fails.run, id=f"fail-{uuid.uuid4().hex[:6]}", task_queue=tq))
            # two starts on a queue nobody polls: they wait in its backlog
            for i in range(2):
                handles.append(await client.start_workflow(DoubleThenSleep.run, i, id=f"idle-{i}-{uuid.uuid4().hex[:6]}",
                                                           task_queue="nobody-polls"))
            m_during = scrape(mport)  # while the workload runs
            assert [await h.result() for h in handles[:3]] == [0, 2, 4]
            with pytest.raises(WorkflowFailureError):
                await handles[3].result()
        await asyncio.sleep(0.5)
        m = scrape(mport)
        for name in PINNED + ON_CALL:
            assert any(k == name or k.startswith(name + "_") for k in m), f"{name} missing from /metrics"
            assert any(k == name or k.startswith(name + "_") for k in m_during), f"{name} missing during the workload"
        timers_fired = 0
        for h in handles:
            timers_fired += sum(1 for e in (await h.fetch_history()).events if e.event_type == "TimerFired")
        assert timers_fired == 3
        assert value(m, "spindle_workflow_started_total", namespace="default") == len(handles) == 6
        assert value(m, "spindle_workflow_closed_total", namespace="default", status="completed") == 3
        assert value(m, "spindle_workflow_closed_total", namespace="default", status="failed") == 1
        assert value(m, "spindle_timer_lag_seconds_count") == timers_fired
        assert value(m, "spindle_task_schedule_to_start_seconds_count", namespace="default", kind="activity") == 3
        assert value(m, "spindle_task_schedule_to_start_seconds_count", namespace="default", kind="workflow") >= 8
        assert value(m, "spindle_rpc_requests_total", method="StartWorkflowExecution", code="OK") == 6
        assert value(m, "spindle_rpc_latency_seconds_count", method="StartWorkflowExecution") == 6
        assert value(m, "spindle_rpc_requests_total", method="RespondActivityTaskCompleted", code="OK") == 3
        assert value(m, "spindle_task_queue_backlog", namespace="default", task_queue="nobody-polls",
                     kind="workflow") == 2
        # the oldest idle start has waited at least the 0.5 s slept above; a drained queue reports 0
        assert 0.5 <= value(m, "spindle_task_queue_backlog_age_seconds", namespace="default",
                            task_queue="nobody-polls", kind="workflow") < 120
        assert value(m, "spindle_task_queue_backlog_age_seconds", task_queue=tq) == 0
        assert value(m, "spindle_shard_ownership_changes_total", change="acquired") == 16
        assert value(m, "spindle_shard_ownership_changes_total", change="released") == 0
        # each completed run's tasks after its first went to the worker caching it (activity done, timer fired)
        assert value(m, "spindle_sticky_dispatch_total", namespace="default", result="sticky") >= 6
        assert value(m, "spindle_sticky_dispatch_total", namespace="default", result="fallback") == 0
        assert value(m, "spindle_persistence_latency_seconds_count", operation="apply") > 0
        assert value(m, "spindle_shards_owned") == 16
        # bounded labels: no workflow or run ids anywhere
        for samples in m.values():
            for labels, _ in samples:
                assert not any(v.startswith(("ok-", "fail-", "idle-")) for v in labels.values()), labels
        await client.close()
    finally:
        server.stop()


async def test_error_codes_are_counted(tmp_path: Path) -> None:
    mport = free_port()
    server = DevServer(tmp_path / "e.db", "--metrics-port", str(mport)).start()
    try:
        client = await Client.connect(server.address)
        with pytest.raises(WorkflowNotFoundError):
            await client.get_workflow_handle("does-not-exist").describe()
        # a failed call's status reaches the client as the handler aborts, just before the count is taken
        for _ in range(50):
            m = scrape(mport)
            if value(m, "spindle_rpc_requests_total", method="DescribeWorkflowExecution"):
                break
            await asyncio.sleep(0.1)
        assert value(m, "spindle_rpc_requests_total", method="DescribeWorkflowExecution", code="NOT_FOUND") == 1
        await client.close()
    finally:
        server.stop()


async def test_task_queue_labels_are_capped_with_other(tmp_path: Path) -> None:
    metrics = ServerMetrics(max_task_queue_labels=3)
    cp = ControlPlane(SqliteStore(str(tmp_path / "c.db")), metrics=metrics)
    await cp.start()
    grpc_server, port = await serve(cp, "127.0.0.1", 0)
    http, mport = serve_metrics(metrics, "127.0.0.1", 0)
    try:
        client = await Client.connect(f"127.0.0.1:{port}")
        for i in range(8):
            await client.start_workflow(DoubleThenSleep.run, i, id=f"cap-{i}", task_queue=f"q{i}")
        await asyncio.sleep(0.3)
        m = scrape(mport)
        queues = {lab["task_queue"]: v for lab, v in m["spindle_task_queue_backlog"]}
        assert len(queues) == 4 and OTHER in queues, queues
        assert queues[OTHER] == 5 and sum(queues.values()) == 8
        await client.close()
    finally:
        http.shutdown()
        await grpc_server.stop(0)
        await cp.stop()


async def test_embedded_control_plane_records_nothing_by_default(tmp_path: Path) -> None:
    cp = ControlPlane(SqliteStore(str(tmp_path / "d.db")))
    await cp.start()
    try:
        assert cp.metrics is None and cp.engine.context.metrics is None
    finally:
        await cp.stop()


class _FlakyStore:
    """A store whose ``apply`` fails with the store model's errors (what instrument_store wraps)."""

    def __init__(self, errors: list[BaseException]) -> None:
        self.errors = errors

    async def apply(self, m: object) -> str:
        if self.errors:
            raise self.errors.pop(0)
        return "applied"


async def test_persistence_errors_are_counted_by_operation_and_kind() -> None:
    from prometheus_client import generate_latest

    from spindle.controlplane._metrics import instrument_store
    from spindle.controlplane.store._model import ConditionFailedError, ShardOwnershipLostError, StoreUnavailableError

    metrics = ServerMetrics()
    store = _FlakyStore([ConditionFailedError("x"), ShardOwnershipLostError("y"), StoreUnavailableError("z"),
                         StoreUnavailableError("z"), RuntimeError("w")])
    instrument_store(store, metrics)
    for _ in range(5):
        with pytest.raises(Exception):  # noqa: B017 - any failure of the store counts; the test checks the metric
            await store.apply(None)
    assert await store.apply(None) == "applied"
    m: dict = {}
    for fam in text_string_to_metric_families(generate_latest(metrics.registry).decode()):
        for s in fam.samples:
            m.setdefault(s.name, []).append((s.labels, s.value))
    assert {lab["kind"]: v for lab, v in m["spindle_persistence_errors_total"] if lab["operation"] == "apply"} == {
        "condition_failed": 1, "shard_ownership_lost": 1, "unavailable": 2, "other": 1}
    assert value(m, "spindle_persistence_latency_seconds_count", operation="apply") == 6


@workflow.defn
class WaitsForSignal:
    def __init__(self) -> None:
        self.go = False

    @workflow.signal
    def proceed(self) -> None:
        self.go = True

    @workflow.run
    async def run(self) -> str:
        await workflow.wait_condition(lambda: self.go)
        return "done"


async def test_sticky_dispatch_counts_hits_and_fallbacks(tmp_path: Path) -> None:
    from datetime import timedelta as td

    metrics = ServerMetrics()
    cp = ControlPlane(SqliteStore(str(tmp_path / "s.db")), metrics=metrics)
    await cp.start()
    grpc_server, port = await serve(cp, "127.0.0.1", 0)
    http, mport = serve_metrics(metrics, "127.0.0.1", 0)
    try:
        client = await Client.connect(f"127.0.0.1:{port}")
        tq = "sticky-" + uuid.uuid4().hex[:6]
        handle = await client.start_workflow(WaitsForSignal.run, id="s1", task_queue=tq)
        async with Worker(client, task_queue=tq, workflows=[WaitsForSignal],
                          sticky_schedule_to_start_timeout=td(milliseconds=300)):
            for _ in range(100):  # the first task done: the run now waits in that worker's cache
                if any(e.event_type == "WorkflowTaskCompleted" for e in (await handle.fetch_history()).events):
                    break
                await asyncio.sleep(0.05)
        # that worker is gone: the signal's task waits on its sticky queue, then falls back to the normal queue
        await handle.signal(WaitsForSignal.proceed)
        async with Worker(client, task_queue=tq, workflows=[WaitsForSignal]):
            assert await handle.result() == "done"
        m = scrape(mport)
        assert value(m, "spindle_sticky_dispatch_total", namespace="default", result="fallback") == 1
        assert value(m, "spindle_sticky_dispatch_total", namespace="default", result="sticky") == 0
        await client.close()
    finally:
        http.shutdown()
        await grpc_server.stop(0)
        await cp.stop()


async def test_archival_writes_and_lag_are_recorded(tmp_path: Path) -> None:
    from datetime import timedelta as td

    archive = tmp_path / "archive"
    mport = free_port()
    server = DevServer(tmp_path / "a.db", "--metrics-port", str(mport), "--archive-uri", f"file://{archive}").start()
    try:
        client = await Client.connect(server.address)
        await client.create_namespace("short", retention=td(seconds=1))
        short = await Client.connect(server.address, namespace="short")
        async with Worker(short, task_queue="q", workflows=[Fails]):
            with pytest.raises(WorkflowFailureError):
                await short.execute_workflow(Fails.run, id="gone", task_queue="q")
        for _ in range(300):  # retention (1 s after the close) archives, then deletes the run
            m = scrape(mport)
            if value(m, "spindle_archival_writes_total"):
                break
            await asyncio.sleep(0.1)
        assert list(archive.rglob("*.history.pb.gz"))
        assert value(m, "spindle_archival_writes_total", namespace="short", result="ok") == 1
        assert value(m, "spindle_archival_writes_total", result="failed") == 0
        assert value(m, "spindle_archival_lag_seconds_count") == 1
        assert 0 <= value(m, "spindle_archival_lag_seconds_sum") < 60
        await client.close()
        await short.close()
    finally:
        server.stop()
