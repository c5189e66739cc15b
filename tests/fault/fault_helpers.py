"""Helpers of the fault-injection tests: server and worker subprocesses, history and database checks.

(Named uniquely: test folders have no ``__init__.py`` and share one module namespace.)
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys

from pathlib import Path
from typing import Any

import spindle_procs

from spindle_procs import raw_history, read_line  # noqa: F401 - raw_history is re-exported for the fault tests

from spindle.api import messages_pb2 as pb

HERE = Path(__file__).resolve().parent

#: Long runs: SPINDLE_FAULT_CYCLES=200 (kill -9 cycles), SPINDLE_FAULT_EXAMPLES=3000 (fuzz examples).
CYCLES = int(os.environ.get("SPINDLE_FAULT_CYCLES", "20"))
FUZZ_EXAMPLES = int(os.environ.get("SPINDLE_FAULT_EXAMPLES", "300"))


class DevServer(spindle_procs.DevServer):
    """The shared dev-server process, logging at info level (the fault reports quote its log)."""

    def __init__(self, db: str | os.PathLike[str], *extra: str) -> None:
        super().__init__(db, "--log-level", "info", *extra)


class WorkerProc:
    """``python fault_worker.py ADDRESS`` as a child process (kill -9 able)."""

    def __init__(self, address: str, log_path: str | os.PathLike[str], env: dict[str, str] | None = None) -> None:
        self.address = address
        self.log_path = str(log_path)
        self.env = env or {}
        self.proc: subprocess.Popen[str] | None = None

    def start(self, timeout: float = 30.0) -> "WorkerProc":
        with open(self.log_path, "a") as log:
            log.write(f"---- worker for {self.address}\n")
            log.flush()
            self.proc = subprocess.Popen(
                [sys.executable, str(HERE / "fault_worker.py"), self.address], stdout=subprocess.PIPE, stderr=log,
                text=True, env={**os.environ, "PYTHONUNBUFFERED": "1", **self.env})
        if read_line(self.proc, "worker ready", timeout) is None:
            self.kill()
            raise RuntimeError(f"worker did not start; log:\n{Path(self.log_path).read_text()[-5000:]}")
        return self

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        if self.alive():
            assert self.proc is not None
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def stop(self, timeout: float = 10.0) -> None:
        if self.alive():
            assert self.proc is not None
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()


# ---------------------------------------------------------------- histories

def check_history(events: list[pb.HistoryEvent], *, what: str, activity_input_plus_one: bool = True) -> list[str]:
    """Problems with one history (empty when it is sound).

    Event ids 1..N with no gap or duplicate; one WorkflowExecutionStarted; every
    ActivityTaskScheduled has exactly one final outcome and at most one ActivityTaskCompleted,
    whose result is the scheduled input + 1 (``activity_input_plus_one``); every
    ActivityTaskCompleted refers to a scheduled activity and to the Started event just before it.
    """
    problems: list[str] = []
    ids = [e.event_id for e in events]
    if ids != list(range(1, len(ids) + 1)):
        problems.append(f"{what}: event ids are not 1..N: {ids}")
    started = [e for e in events if e.event_type == pb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED]
    if len(started) != 1 or events[0].event_type != pb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
        problems.append(f"{what}: {len(started)} WorkflowExecutionStarted events")
    by_id = {e.event_id: e for e in events}
    scheduled = {e.event_id: e for e in events if e.event_type == pb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED}
    completed: dict[int, list[pb.HistoryEvent]] = {}
    for e in events:
        if e.event_type == pb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            a = e.activity_task_completed_event_attributes
            completed.setdefault(a.scheduled_event_id, []).append(e)
            if a.scheduled_event_id not in scheduled:
                problems.append(f"{what}: ActivityTaskCompleted {e.event_id} for unknown scheduled event {a.scheduled_event_id}")
            st = by_id.get(a.started_event_id)
            if st is None or st.event_type != pb.EVENT_TYPE_ACTIVITY_TASK_STARTED or a.started_event_id != e.event_id - 1:
                problems.append(f"{what}: ActivityTaskCompleted {e.event_id} started_event_id {a.started_event_id} "
                                "is not the ActivityTaskStarted just before it")
    closed = events and events[-1].event_type in (pb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,)
    for sid, ev in scheduled.items():
        done = completed.get(sid, [])
        if len(done) > 1:
            problems.append(f"{what}: activity scheduled at {sid} completed {len(done)} times")
        if closed and len(done) != 1:
            problems.append(f"{what}: activity scheduled at {sid} has {len(done)} completions in a completed run")
        if activity_input_plus_one and done:
            inp = _int_payloads(ev.activity_task_scheduled_event_attributes.input)
            res = _int_payloads(done[0].activity_task_completed_event_attributes.result)
            if not inp or res != [inp[-1] + 1]:
                problems.append(f"{what}: activity at {sid}: input {inp} gave result {res} (want input + 1)")
    return problems


def _int_payloads(p: pb.Payloads) -> list[int]:
    import json

    out = []
    for x in p.payloads:
        try:
            v = json.loads(x.data)
        except ValueError:
            return []
        if isinstance(v, int) and not isinstance(v, bool):
            out.append(v)  # other arguments (keys, flags) are skipped
    return out


def payload_value(p: pb.Payloads) -> Any:
    import json

    vals = [json.loads(x.data) for x in p.payloads]
    return vals[0] if len(vals) == 1 else vals


# ---------------------------------------------------------------- the database file

def check_db(db: str) -> list[str]:
    """Problems in a (closed or live) SQLite file: integrity, and each execution row against its events.

    For every execution: events 1..next_event_id-1 with no gap and no events without an
    execution row; the run each current_executions row points to exists.
    """
    problems: list[str] = []
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        ok = conn.execute("PRAGMA integrity_check").fetchall()
        if ok != [("ok",)]:
            problems.append(f"integrity_check: {ok[:5]}")
        rows = conn.execute("SELECT namespace_id, workflow_id, run_id, next_event_id, status FROM executions").fetchall()
        ev: dict[tuple[str, str, str], list[int]] = {}
        for ns, wid, rid, eid in conn.execute("SELECT namespace_id, workflow_id, run_id, event_id FROM events "
                                              "ORDER BY namespace_id, workflow_id, run_id, event_id"):
            ev.setdefault((ns, wid, rid), []).append(eid)
        keys = set()
        for ns, wid, rid, nxt, _status in rows:
            keys.add((ns, wid, rid))
            ids = ev.get((ns, wid, rid), [])
            if ids != list(range(1, nxt)):
                problems.append(f"execution {wid}/{rid}: next_event_id {nxt} but events {ids[:3]}..{ids[-3:]} "
                                f"({len(ids)} events)")
        for k in ev:
            if k not in keys:
                problems.append(f"events without an execution row: {k}")
        for ns, wid, rid in conn.execute("SELECT namespace_id, workflow_id, run_id FROM current_executions"):
            if (ns, wid, rid) not in keys:
                problems.append(f"current_executions points to a missing run {wid}/{rid}")
    finally:
        conn.close()
    return problems
