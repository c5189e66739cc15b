"""Shared helpers for the control-plane tests: a `spindle server start-dev` subprocess, raw stubs, history checks."""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import grpc

from controlplane.api import messages_pb2 as pb
from controlplane.api import service_pb2 as svc
from controlplane.api import service_pb2_grpc

SPINDLE = str(Path(sys.executable).parent / "spindle")
LISTEN_RE = re.compile(r"spindle dev server listening on ([0-9.]+):(\d+)")

ALL_EVENT_TYPES = frozenset(v for v in pb.EventType.values() if v != pb.EVENT_TYPE_UNSPECIFIED)


class DevServer:
    """`spindle server start-dev --db FILE --port 0` as a child process."""

    def __init__(self, db: str | os.PathLike[str], *extra: str) -> None:
        self.db = str(db)
        self.extra = list(extra)
        self.proc: subprocess.Popen[str] | None = None
        self.port = 0
        self.log_path = self.db + ".server.log"

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0, *, port: int = 0) -> "DevServer":
        """Start (or restart) the server; ``port=0`` picks a free port, else listen on ``port``."""
        assert self.proc is None or self.proc.poll() is not None, "already running"
        log = open(self.log_path, "a")
        self.proc = subprocess.Popen(
            [SPINDLE, "server", "start-dev", "--db", self.db, "--port", str(port), *self.extra],
            stdout=subprocess.PIPE, stderr=log, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        log.close()
        found: dict[str, Any] = {}

        def read() -> None:
            assert self.proc is not None and self.proc.stdout is not None
            for line in self.proc.stdout:
                m = LISTEN_RE.search(line)
                if m:
                    found["port"] = int(m.group(2))
                    return

        t = threading.Thread(target=read, daemon=True)
        t.start()
        t.join(timeout)
        if "port" not in found:
            self.kill()
            raise RuntimeError(f"server did not start; log:\n{Path(self.log_path).read_text()}")
        self.port = found["port"]
        return self

    def kill(self) -> None:
        """SIGKILL: no shutdown code runs."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def stop(self, timeout: float = 15.0) -> int:
        """SIGTERM and wait for a clean exit; returns the exit status."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
                raise
        return self.proc.returncode

    def log(self) -> str:
        try:
            return Path(self.log_path).read_text()
        except OSError:
            return ""


def raw_stub(address: str) -> tuple[grpc.aio.Channel, service_pb2_grpc.WorkflowServiceStub]:
    ch = grpc.aio.insecure_channel(address)
    return ch, service_pb2_grpc.WorkflowServiceStub(ch)


async def raw_history(stub: Any, workflow_id: str, run_id: str = "", namespace: str = "default") -> list[pb.HistoryEvent]:
    events: list[pb.HistoryEvent] = []
    token = b""
    while True:
        resp = await stub.GetWorkflowExecutionHistory(svc.GetWorkflowExecutionHistoryRequest(
            namespace=namespace, execution=pb.WorkflowExecution(workflow_id=workflow_id, run_id=run_id),
            next_page_token=token))
        events.extend(resp.history.events)
        token = resp.next_page_token
        if not token or not resp.history.events:
            return events


def assert_gapless(events: list[pb.HistoryEvent]) -> None:
    ids = [e.event_id for e in events]
    assert ids == list(range(1, len(ids) + 1)), f"event ids not 1..N: {ids}"


def db_counts(db: str) -> dict[str, int]:
    """Row counts of the durable tables, read through a read-only connection."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        out = {}
        for table in ("executions", "current_executions", "events", "buffered_events", "namespaces", "visibility"):
            out[table] = conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
        return out
    finally:
        conn.close()


def type_names(events: list[pb.HistoryEvent]) -> list[str]:
    return [pb.EventType.Name(e.event_type) for e in events]


def wait_sync(pred: Any, timeout: float = 10.0, interval: float = 0.05) -> None:
    end = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > end:
            raise AssertionError("condition not met in time")
        time.sleep(interval)
