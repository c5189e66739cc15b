"""``spindle.runtime``: a Runtime with Prometheus metrics, custom metrics from activities and workflows
(``activity.metric_meter()``, ``workflow.metric_meter()``), as the custom_metric / prometheus samples use them."""

from __future__ import annotations

import datetime
import re
import urllib.request
import uuid

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from spindle import activity, workflow
from spindle.client import Client
from spindle.runtime import OpenTelemetryConfig, PrometheusConfig, Runtime, TelemetryConfig
from spindle.testing import Replayer
from spindle.worker import ActivityInboundInterceptor, ExecuteActivityInput, Interceptor, Worker


@activity.defn
async def compose_greeting(name: str) -> str:
    return f"Hello, {name}!"


@workflow.defn
class MeteredGreeting:
    @workflow.run
    async def run(self, name: str) -> str:
        workflow.metric_meter().create_counter("greetings_started", "greetings begun").add(1, {"lang": "en"})
        return await workflow.execute_activity(compose_greeting, name,
                                               start_to_close_timeout=datetime.timedelta(seconds=10))


class ScheduleToStartInterceptor(ActivityInboundInterceptor):
    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        info = activity.info()
        latency = info.started_time - info.current_attempt_scheduled_time
        meter = activity.metric_meter()
        meter.create_histogram_timedelta("custom_activity_schedule_to_start_latency",
                                         description="Time between activity scheduling and start",
                                         unit="duration").record(latency, {"workflow_type": info.workflow_type or ""})
        return await self.next.execute_activity(input)


class SimpleWorkerInterceptor(Interceptor):
    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return ScheduleToStartInterceptor(next)


@pytest.fixture
def runtime() -> Any:
    rt = Runtime(telemetry=TelemetryConfig(metrics=PrometheusConfig(bind_address="127.0.0.1:0")))
    yield rt
    rt.close()


@pytest.fixture
async def client(tmp_path: Path, runtime: Runtime) -> AsyncIterator[Client]:
    c = await Client.connect(f"embedded:{tmp_path / 'rt.db'}", runtime=runtime)
    yield c
    await c.close()


def _scrape(rt: Runtime) -> str:
    with urllib.request.urlopen(f"http://{rt.prometheus_address}/metrics", timeout=5) as r:
        return r.read().decode()


def _value(text: str, pattern: str) -> float:
    m = re.search(pattern + r" ([0-9.e+]+)$", text, re.M)
    assert m, f"{pattern!r} not in the scrape:\n{text}"
    return float(m.group(1))


async def test_prometheus_scrape_has_custom_and_worker_metrics_and_replay_records_nothing(
        client: Client, runtime: Runtime) -> None:
    tq = f"rt-{uuid.uuid4().hex[:6]}"
    async with Worker(client, task_queue=tq, workflows=[MeteredGreeting], activities=[compose_greeting],
                      interceptors=[SimpleWorkerInterceptor()]):
        handle = await client.start_workflow(MeteredGreeting.run, "World", id=f"g-{tq}", task_queue=tq)
        assert await handle.result() == "Hello, World!"
    text = _scrape(runtime)
    assert _value(text, r'custom_activity_schedule_to_start_latency_count\{activity_type="compose_greeting",'
                        r'namespace="default",task_queue="' + tq + r'",workflow_type="MeteredGreeting"\}') == 1
    started = (r'greetings_started_total\{lang="en",namespace="default",task_queue="' + tq
               + r'",workflow_type="MeteredGreeting"\}')
    assert _value(text, started) == 1
    assert "spindle_worker_" in text  # the worker recorded its own metrics into the runtime's registry
    # replaying the history runs the workflow code again: the counter is not incremented
    await Replayer(workflows=[MeteredGreeting]).replay_workflow(await handle.fetch_history())
    assert _value(_scrape(runtime), started) == 1


def test_runtime_metric_meter_with_attributes_prefix_and_global_tags() -> None:
    rt = Runtime(telemetry=TelemetryConfig(metrics=PrometheusConfig(bind_address="127.0.0.1:0"),
                                           global_tags={"service": "billing"}, metric_prefix="app_"))
    try:
        meter = rt.metric_meter.with_additional_attributes({"region": "eu"})
        meter.create_gauge("queue_depth").set(7)
        counter = meter.create_counter("jobs").with_additional_attributes({"kind": "a"})
        counter.add(2)
        counter.add(3, {"kind": "b"})
        text = _scrape(rt)
        assert _value(text, r'app_queue_depth\{region="eu",service="billing"\}') == 7
        assert _value(text, r'app_jobs_total\{kind="a",region="eu",service="billing"\}') == 2
        assert _value(text, r'app_jobs_total\{kind="b",region="eu",service="billing"\}') == 3
        with pytest.raises(ValueError, match=r"counter 'jobs': add\(-1\) is negative"):
            counter.add(-1)
        with pytest.raises(ValueError, match=r"metric 'app_jobs' is already a counter, not a gauge"):
            meter.create_gauge("jobs")
    finally:
        rt.close()


def test_default_runtime_and_set_default() -> None:
    rt = Runtime.default()
    assert Runtime.default() is rt
    with pytest.raises(RuntimeError, match="Runtime default already set"):
        Runtime.set_default(Runtime(telemetry=TelemetryConfig()))
    other = Runtime(telemetry=TelemetryConfig())
    Runtime.set_default(other, error_if_already_set=False)
    try:
        assert Runtime.default() is other
    finally:
        Runtime.set_default(rt, error_if_already_set=False)


def test_bad_prometheus_address_is_refused() -> None:
    with pytest.raises(ValueError, match=r"PrometheusConfig\(bind_address='localhost'\): expected host:port"):
        Runtime(telemetry=TelemetryConfig(metrics=PrometheusConfig(bind_address="localhost")))


def test_open_telemetry_without_the_exporter_says_what_to_install() -> None:
    try:
        import opentelemetry.exporter.otlp.proto.grpc.metric_exporter  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("the OTLP exporter is installed")
    with pytest.raises(ImportError, match=r"pip install opentelemetry-sdk opentelemetry-exporter-otlp-proto-grpc"):
        Runtime(telemetry=TelemetryConfig(metrics=OpenTelemetryConfig(url="http://localhost:4317")))
