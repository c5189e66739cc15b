"""Tracing with ``spindle.contrib.opentelemetry.TracingInterceptor``, as temporalio's
``temporalio.contrib.opentelemetry`` is used: one trace per start, the pinned span names
(docs/OBSERVABILITY.md), and no span twice when a run replays on a new worker.
"""

from __future__ import annotations

import collections
import uuid

from collections.abc import Iterator
from datetime import timedelta

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402
from tracing_workflows import TracedChild, TracedParent, flaky, greet  # noqa: E402

from spindle import workflow  # noqa: E402
from spindle.client import Client  # noqa: E402
from spindle.contrib.opentelemetry import TracingInterceptor  # noqa: E402
from spindle.testing import Replayer  # noqa: E402
from spindle.worker import Worker  # noqa: E402


@pytest.fixture
def exporter() -> Iterator[tuple[InMemorySpanExporter, TracingInterceptor]]:
    exp = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exp))
    yield exp, TracingInterceptor(provider.get_tracer("test"))
    provider.shutdown()


def _by_name(spans: tuple[ReadableSpan, ...]) -> dict[str, list[ReadableSpan]]:
    out: dict[str, list[ReadableSpan]] = collections.defaultdict(list)
    for s in spans:
        out[s.name].append(s)
    return out


def _parent_of(span: ReadableSpan, spans: tuple[ReadableSpan, ...]) -> ReadableSpan:
    assert span.parent is not None, f"{span.name} has no parent"
    for s in spans:
        if s.context.span_id == span.parent.span_id:
            return s
    raise AssertionError(f"the parent of {span.name} was not exported")


async def test_one_trace_per_start_with_the_pinned_span_names(exporter) -> None:
    exp, tracing = exporter
    key = str(uuid.uuid4())
    client = await Client.connect("embedded::memory:", interceptors=[tracing])
    try:
        tq = f"tq-{uuid.uuid4()}"
        async with Worker(client, task_queue=tq, workflows=[TracedParent, TracedChild], activities=[greet, flaky],
                          interceptors=[tracing]):
            handle = await client.start_workflow("TracedParent", key, False, id=f"wf-{key}", task_queue=tq)
            assert await handle.result() == ["hello a", "ok", "hello child"]
        history = await handle.fetch_history()
    finally:
        await client.close()

    spans = exp.get_finished_spans()
    names = _by_name(spans)
    assert {s.context.trace_id for s in spans} == {names["StartWorkflow:TracedParent"][0].context.trace_id}
    assert [len(names[n]) for n in ("StartWorkflow:TracedParent", "RunWorkflow:TracedParent",
                                    "RunWorkflow:TracedChild", "StartChildWorkflow:TracedChild")] == [1, 1, 1, 1]
    assert len(names["StartActivity:greet"]) == 2 and len(names["StartActivity:flaky"]) == 1
    assert len(names["RunActivity:greet"]) == 2 and len(names["RunActivity:flaky"]) == 2  # one per attempt
    run_parent = names["RunWorkflow:TracedParent"][0]
    assert _parent_of(run_parent, spans).name == "StartWorkflow:TracedParent"
    for s in names["StartActivity:greet"] + names["StartActivity:flaky"] + names["StartChildWorkflow:TracedChild"]:
        assert _parent_of(s, spans).name in ("RunWorkflow:TracedParent", "RunWorkflow:TracedChild")
    assert _parent_of(names["RunWorkflow:TracedChild"][0], spans).name == "StartChildWorkflow:TracedChild"
    for s in names["RunActivity:greet"] + names["RunActivity:flaky"]:
        assert _parent_of(s, spans).name.startswith("StartActivity:")
    failed = [s for s in names["RunActivity:flaky"] if not s.status.is_ok]
    assert len(failed) == 1 and failed[0].events[0].name == "exception"

    # replaying the recorded history through the interceptor works and emits nothing
    exp.clear()
    await Replayer(workflows=[TracedParent], interceptors=[tracing]).replay_workflow(history)
    assert exp.get_finished_spans() == ()


async def test_a_worker_restart_replays_without_emitting_a_span_twice(exporter) -> None:
    exp, tracing = exporter
    key = str(uuid.uuid4())
    client = await Client.connect("embedded::memory:", interceptors=[tracing])
    try:
        tq = f"tq-{uuid.uuid4()}"
        handle = await client.start_workflow("TracedParent", key, True, id=f"wf-{key}", task_queue=tq)
        async with Worker(client, task_queue=tq, workflows=[TracedParent, TracedChild], activities=[greet, flaky],
                          interceptors=[tracing]):
            # run until the workflow waits for the signal (its first activity is done)
            async for event in handle.watch_history():
                if event.event_type == "WorkflowTaskCompleted" and event.event_id > 4:
                    break
        # a new worker: nothing cached, so the run replays from its history
        async with Worker(client, task_queue=tq, workflows=[TracedParent, TracedChild], activities=[greet, flaky],
                          interceptors=[tracing]):
            await handle.signal(TracedParent.proceed)
            assert await handle.result() == ["hello a", "ok", "hello child"]
    finally:
        await client.close()

    spans = exp.get_finished_spans()
    names = _by_name(spans)
    trace_id = names["StartWorkflow:TracedParent"][0].context.trace_id
    assert {s.context.trace_id for s in spans if not s.name.startswith("SignalWorkflow:")} == {trace_id}
    assert len(names["RunWorkflow:TracedParent"]) == 1
    assert len(names["RunWorkflow:TracedChild"]) == 1
    assert len(names["StartActivity:greet"]) == 2  # the parent's (before the restart) and the child's
    assert len(names["StartActivity:flaky"]) == 1
    assert len(names["RunActivity:greet"]) == 2
    assert len(names["RunActivity:flaky"]) == 2
    assert len(names["SignalWorkflow:proceed"]) == 1


first_task_failed: list[int] = []


@workflow.defn(check_determinism=False)
class FirstTaskFailsOnce:
    @workflow.run
    async def run(self) -> str:
        if not first_task_failed:  # the first attempt of the first workflow task fails (a bug, then fixed)
            first_task_failed.append(1)
            raise RuntimeError("the first attempt of the first workflow task fails")
        return await workflow.execute_activity(greet, "again", start_to_close_timeout=timedelta(seconds=10))


async def test_a_retried_first_workflow_task_does_not_emit_run_workflow_again(exporter) -> None:
    exp, tracing = exporter
    first_task_failed.clear()
    client = await Client.connect("embedded::memory:", interceptors=[tracing])
    try:
        tq = f"tq-{uuid.uuid4()}"
        async with Worker(client, task_queue=tq, workflows=[FirstTaskFailsOnce], activities=[greet],
                          interceptors=[tracing]):
            handle = await client.start_workflow(FirstTaskFailsOnce.run, id=f"wf-{uuid.uuid4()}", task_queue=tq)
            assert await handle.result() == "hello again"
        events = [e.event_type for e in (await handle.fetch_history()).events]
    finally:
        await client.close()
    assert events.count("WorkflowTaskFailed") == 1  # the first task ran live twice
    names = _by_name(exp.get_finished_spans())
    assert len(names["RunWorkflow:FirstTaskFailsOnce"]) == 1
    assert len(names["RunActivity:greet"]) == 1
    trace_id = names["StartWorkflow:FirstTaskFailsOnce"][0].context.trace_id
    assert {s.context.trace_id for s in exp.get_finished_spans()} == {trace_id}
