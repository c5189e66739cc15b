"""Worker metrics (``spindle_worker_*``): a workload runs, the registry is rendered in the text
format and parsed with prometheus_client's parser, and the values match what ran."""

from __future__ import annotations

import asyncio
import collections
import uuid

from datetime import timedelta
from functools import partial

import pytest

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from waiting import until

from spindle import activity, workflow
from spindle.client import Client
from spindle.common import RetryPolicy
from spindle.worker import Worker, WorkerMetrics

pytestmark = pytest.mark.timeout(120)

calls: collections.Counter[str] = collections.Counter()
release = asyncio.Event()


@activity.defn
async def double(x: int) -> int:
    calls["double"] += 1
    return 2 * x


@activity.defn
async def flaky(key: str) -> str:
    calls["flaky"] += 1
    calls[key] += 1
    if calls[key] < 2:
        raise RuntimeError("the first attempt fails")
    return "ok"


@activity.defn
async def blocker() -> str:
    calls["blocker"] += 1
    await release.wait()
    return "released"


@workflow.defn
class Pipeline:
    @workflow.run
    async def run(self, x: int) -> int:
        return await workflow.execute_activity(double, x, start_to_close_timeout=timedelta(seconds=10))


@workflow.defn
class Retrying:
    @workflow.run
    async def run(self, key: str) -> str:
        return await workflow.execute_activity(
            flaky, key, start_to_close_timeout=timedelta(seconds=10),
            retry_policy=RetryPolicy(initial_interval=timedelta(milliseconds=10), maximum_attempts=3))


@workflow.defn
class Blocking:
    @workflow.run
    async def run(self) -> str:
        return await workflow.execute_activity(blocker, start_to_close_timeout=timedelta(seconds=30))


@workflow.defn
class Waiter:
    def __init__(self) -> None:
        self.go = False

    @workflow.signal
    def proceed(self) -> None:
        self.go = True

    @workflow.run
    async def run(self) -> int:
        a = await workflow.execute_activity(double, 1, start_to_close_timeout=timedelta(seconds=10))
        await workflow.wait_condition(lambda: self.go)
        return a + await workflow.execute_activity(double, 2, start_to_close_timeout=timedelta(seconds=10))


@workflow.defn(name="Drifting")
class DriftingV1:
    @workflow.run
    async def run(self) -> None:
        await workflow.sleep(0.01)
        await workflow.wait_condition(lambda: False)


@workflow.defn(name="Drifting")
class DriftingV2:  # an incompatible change: an activity where V1 had a timer
    @workflow.run
    async def run(self) -> None:
        await workflow.execute_activity(double, 0, start_to_close_timeout=timedelta(seconds=10))
        await workflow.wait_condition(lambda: False)


Samples = dict[str, list[tuple[dict[str, str], float]]]


def parse(registry: CollectorRegistry) -> Samples:
    out: Samples = {}
    for fam in text_string_to_metric_families(generate_latest(registry).decode()):
        for s in fam.samples:
            out.setdefault(s.name, []).append((s.labels, s.value))
    return out


def value(m: Samples, name: str, **labels: str) -> float:
    return sum(v for lab, v in m.get(name, []) if all(lab.get(k) == x for k, x in labels.items()))


wait_for = partial(until, timeout=10.0)


async def completed_workflow_tasks(client: Client, handles: list) -> int:  # type: ignore[type-arg]
    n = 0
    for h in handles:
        n += sum(1 for e in (await h.fetch_history()).events if e.event_type == "WorkflowTaskCompleted")
    return n


async def test_worker_metrics_count_what_ran() -> None:
    calls.clear()
    release.clear()
    registry = CollectorRegistry()
    metrics = WorkerMetrics(registry)
    client = await Client.connect("embedded::memory:")
    tq = f"wm-{uuid.uuid4().hex[:8]}"
    kw = dict(task_queue=tq, workflows=[Pipeline, Retrying, Blocking, Waiter], activities=[double, flaky, blocker],
              metrics=metrics)
    handles = []
    try:
        async with Worker(client, **kw) as w1:  # type: ignore[arg-type]
            for i in range(3):
                h = await client.start_workflow(Pipeline.run, i, id=f"p-{i}-{uuid.uuid4().hex[:6]}", task_queue=tq)
                assert await h.result() == 2 * i
                handles.append(h)
            h = await client.start_workflow(Retrying.run, "k", id=f"r-{uuid.uuid4().hex[:6]}", task_queue=tq)
            assert await h.result() == "ok"
            handles.append(h)
            # a run holding an activity slot: the live gauges show it
            blocking = await client.start_workflow(Blocking.run, id=f"b-{uuid.uuid4().hex[:6]}", task_queue=tq)
            handles.append(blocking)

            async def blocked() -> bool:
                return calls["blocker"] == 1
            await wait_for(blocked, "the blocking activity to start")
            m = parse(registry)
            assert value(m, "spindle_worker_task_slots_used", task_queue=tq, kind="activity") == 1
            assert value(m, "spindle_worker_sticky_cache_size", task_queue=tq) == len(w1.cached_run_ids) == 1
            release.set()
            assert await blocking.result() == "released"
            # a run that waits for a signal when the worker stops
            waiter = await client.start_workflow(Waiter.run, id=f"w-{uuid.uuid4().hex[:6]}", task_queue=tq)
            handles.append(waiter)

            async def waiting() -> bool:
                return calls["double"] == 4 and any(
                    e.event_type == "WorkflowTaskCompleted" and e.event_id > 4
                    for e in (await waiter.fetch_history()).events)
            await wait_for(waiting, "the waiter to wait for its signal")
            hits_before = w1.stats["cache_hits"]
        # a new worker: the waiter is not cached, so its next task replays its history
        async with Worker(client, **kw) as w2:  # type: ignore[arg-type]
            await waiter.signal(Waiter.proceed)
            assert await waiter.result() == 6
            hits = hits_before + w2.stats["cache_hits"]

        # an incompatible code change: the replay fails with a non-determinism error
        tq2 = tq + "-drift"
        drifting = await client.start_workflow("Drifting", id=f"d-{uuid.uuid4().hex[:6]}", task_queue=tq2)
        async with Worker(client, task_queue=tq2, workflows=[DriftingV1], metrics=metrics):
            async def timer_done() -> bool:
                return any(e.event_type == "TimerFired" for e in (await drifting.fetch_history()).events) and (
                    (await drifting.fetch_history()).events[-1].event_type == "WorkflowTaskCompleted")
            await wait_for(timer_done, "the drifting run's timer")
        async with Worker(client, task_queue=tq2, workflows=[DriftingV2], activities=[double], metrics=metrics):
            await drifting.signal("anything")

            async def failed() -> bool:
                return value(parse(registry), "spindle_worker_workflow_task_failures_total", task_queue=tq2,
                             cause="non_determinism") >= 1
            await wait_for(failed, "the non-determinism failure")
        await drifting.terminate()
        wft_completed = await completed_workflow_tasks(client, handles + [drifting])
    finally:
        await client.close()

    m = parse(registry)
    assert value(m, "spindle_worker_workflow_task_failures_total", task_queue=tq2, workflow_type="Drifting",
                 cause="non_determinism") >= 1
    assert value(m, "spindle_worker_workflow_task_failures_total", task_queue=tq) == 0
    assert value(m, "spindle_worker_task_execution_latency_seconds_count", kind="workflow") == wft_completed
    assert value(m, "spindle_worker_task_execution_latency_seconds_count", task_queue=tq, kind="activity") == \
        calls["double"] + calls["flaky"] + calls["blocker"] == 3 + 2 + 1 + 2
    assert value(m, "spindle_worker_activity_failures_total", task_queue=tq, activity_type="flaky") == 1
    assert value(m, "spindle_worker_activity_failures_total", task_queue=tq) == 1
    assert value(m, "spindle_worker_sticky_cache_hits_total", task_queue=tq) == hits >= 5
    assert value(m, "spindle_worker_sticky_cache_misses_total", task_queue=tq) == 1
    assert value(m, "spindle_worker_replay_latency_seconds_count", task_queue=tq, workflow_type="Waiter") == 1
    assert value(m, "spindle_worker_replay_latency_seconds_count", task_queue=tq) == 1
    assert value(m, "spindle_worker_poll_latency_seconds_count", task_queue=tq, kind="workflow", result="task") >= 1
    assert value(m, "spindle_worker_poll_latency_seconds_count", task_queue=tq, kind="activity", result="task") >= 1
    # stopped workers no longer report live gauges
    assert value(m, "spindle_worker_task_slots_used") == 0 and "spindle_worker_sticky_cache_size" not in m
    # bounded labels: no workflow or run ids, no sticky queue names
    for samples in m.values():
        for labels, _ in samples:
            assert labels.get("task_queue", tq) in (tq, tq2), labels
            assert not any(v.startswith(("p-", "r-", "b-", "w-", "d-")) for v in labels.values()), labels


def test_two_metrics_objects_on_one_registry_share_its_instruments() -> None:
    registry = CollectorRegistry()
    a, b = WorkerMetrics(registry), WorkerMetrics(registry)
    a._bind("ns", "q").cache_hit()
    b._bind("ns", "q").cache_hit()
    assert value(parse(registry), "spindle_worker_sticky_cache_hits_total", namespace="ns", task_queue="q") == 2


async def test_worker_rejects_metrics_that_are_not_worker_metrics() -> None:
    client = await Client.connect("embedded::memory:")
    try:
        with pytest.raises(TypeError, match="WorkerMetrics"):
            Worker(client, task_queue="q", activities=[double], metrics=CollectorRegistry())  # type: ignore[arg-type]
    finally:
        await client.close()
