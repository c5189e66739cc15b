"""Tracing across a worker process killed with SIGKILL (docs/OBSERVABILITY.md, issue 18's tracing test).

One workflow with an activity and a child runs on a worker *process*; the process is killed
(kill -9) while the run waits for a signal, and a new process takes over, so the run replays
its history there. Each worker process writes its finished spans to a file (OpenTelemetry
SDK, one JSON object per line, exported as each span ends); the client's spans are kept in
memory. Exactly one ``RunWorkflow`` span per run, one ``RunActivity`` per attempt, and every
span in the client's trace.
"""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import sys
import uuid

from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

from spindle.client import Client  # noqa: E402
from spindle.contrib.opentelemetry import TracingInterceptor  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from spindle_procs import DevServer, read_line  # noqa: E402

pytestmark = pytest.mark.timeout(180)


class WorkerProcess:
    def __init__(self, address: str, task_queue: str, span_file: Path, log: Path) -> None:
        with open(log, "a") as err:
            self.proc = subprocess.Popen([sys.executable, str(HERE / "_tracing_worker.py"), address, task_queue,
                                          str(span_file)], stdout=subprocess.PIPE, stderr=err, text=True,
                                         env={**os.environ, "PYTHONUNBUFFERED": "1"})
        if read_line(self.proc, "worker ready", 60) is None:
            self.kill()
            raise AssertionError(f"worker did not start:\n{log.read_text()[-4000:]}")

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()


def read_spans(path: Path) -> list[dict]:
    """The spans a worker process exported (one JSON object per line; a torn last line is dropped)."""
    out = []
    if path.exists():
        for line in path.read_text().splitlines():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    return out


async def test_killed_worker_process_replays_without_duplicate_spans(tmp_path: Path) -> None:
    exp = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exp))
    tracing = TracingInterceptor(provider.get_tracer("client"))
    server = DevServer(tmp_path / "t.db").start()
    first = second = None
    try:
        client = await Client.connect(server.address, interceptors=[tracing])
        tq = f"trace-{uuid.uuid4().hex[:8]}"
        first = WorkerProcess(server.address, tq, tmp_path / "spans-1.jsonl", tmp_path / "worker.log")
        handle = await client.start_workflow("TracedParent", "k", id=f"wf-{uuid.uuid4().hex[:8]}", task_queue=tq)
        # run until the workflow waits for the signal (its first activity done, that task completed)
        async for event in handle.watch_history():
            if event.event_type == "WorkflowTaskCompleted" and event.event_id > 4:
                break
        first.kill()  # SIGKILL: no clean shutdown, its sticky queue is left behind
        second = WorkerProcess(server.address, tq, tmp_path / "spans-2.jsonl", tmp_path / "worker.log")
        await handle.signal("proceed")
        assert await handle.result() == ["hello a", "ok", "hello child"]
        history = await handle.fetch_history()
        await client.close()
    finally:
        for w in (first, second):
            if w is not None:
                w.stop()
        server.stop()

    # the run replayed on the second process: its history was rebuilt there, not continued from a cache
    assert any(e.event_type == "WorkflowExecutionSignaled" for e in history.events)
    spans_1, spans_2 = read_spans(tmp_path / "spans-1.jsonl"), read_spans(tmp_path / "spans-2.jsonl")
    assert spans_1 and spans_2, "both worker processes exported spans"
    client_spans = [{"name": s.name, "trace_id": f"0x{s.context.trace_id:032x}", "span_id": f"0x{s.context.span_id:016x}",
                     "parent_id": f"0x{s.parent.span_id:016x}" if s.parent else None} for s in exp.get_finished_spans()]
    worker_spans = [{"name": s["name"], "trace_id": s["context"]["trace_id"], "span_id": s["context"]["span_id"],
                     "parent_id": s["parent_id"], "ok": s["status"]["status_code"] != "ERROR"}
                    for s in spans_1 + spans_2]
    everything = client_spans + worker_spans
    names = collections.Counter(s["name"] for s in everything)
    start = [s for s in client_spans if s["name"] == "StartWorkflow:TracedParent"]
    assert len(start) == 1
    trace_id = start[0]["trace_id"]
    assert {s["trace_id"] for s in everything if not s["name"].startswith("SignalWorkflow:")} == {trace_id}
    assert names["RunWorkflow:TracedParent"] == 1  # one per run, though the run was replayed
    assert names["RunWorkflow:TracedChild"] == 1
    assert names["StartActivity:greet"] == 2 and names["StartActivity:flaky"] == 1
    assert names["StartChildWorkflow:TracedChild"] == 1
    # one RunActivity per attempt: greet once in the parent (first process) and once in the child, flaky twice
    attempts = collections.Counter(e.event_type for e in history.events)
    assert names["RunActivity:greet"] == 2 and names["RunActivity:flaky"] == 2
    assert [s["ok"] for s in worker_spans if s["name"] == "RunActivity:flaky"] == [False, True]
    assert sum(1 for s in spans_1 if s["name"].startswith("RunWorkflow:")) == 1  # emitted by the first process
    assert not any(s["name"] == "RunWorkflow:TracedParent" for s in spans_2)  # the replay emitted nothing
    # parentage: RunWorkflow under the client's start; activities under their StartActivity
    by_id = {s["span_id"]: s for s in everything}
    run_parent = next(s for s in worker_spans if s["name"] == "RunWorkflow:TracedParent")
    assert by_id[run_parent["parent_id"]]["name"] == "StartWorkflow:TracedParent"
    for s in worker_spans:
        if s["name"].startswith("RunActivity:"):
            assert by_id[s["parent_id"]]["name"].startswith("StartActivity:"), s
    assert attempts["WorkflowExecutionCompleted"] == 1
