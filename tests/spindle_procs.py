"""Test helpers shared by every test folder: a `spindle server start-dev` child process and raw history reads.

(Importable from any test module: ``tests`` is on pytest's ``pythonpath``. Named uniquely
because test folders have no ``__init__.py`` and share one module namespace.)
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time

from pathlib import Path
from typing import Any

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc

SPINDLE = str(Path(sys.executable).parent / "spindle")
LISTEN_RE = re.compile(r"spindle dev server listening on ([0-9.]+):(\d+)")


def read_line(proc: subprocess.Popen[str], pattern: re.Pattern[str] | str, timeout: float) -> re.Match[str] | None:
    """The first match of ``pattern`` in ``proc``'s stdout within ``timeout`` seconds (None if none came)."""
    found: dict[str, Any] = {}
    rx = re.compile(pattern) if isinstance(pattern, str) else pattern

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            m = rx.search(line)
            if m:
                found["m"] = m
                return

    t = threading.Thread(target=read, daemon=True)
    t.start()
    t.join(timeout)
    return found.get("m")


class AuthDevServer:
    """``spindle server start-dev --auth [EXTRA...]`` as a child process: its ``address``, the admin ``key`` it printed
    once, and its ``metrics_url`` (with ``--metrics-port``).

    Use as a context manager (the process is stopped on exit).
    """

    KEY_RE = re.compile(r"(spk_[0-9a-f]{16}_[A-Za-z0-9_-]{43})")

    def __init__(self, db: Path, *extra: str) -> None:
        self.proc = subprocess.Popen([SPINDLE, "server", "start-dev", "--db", str(db), "--port", "0", "--auth", *extra],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                     env={**os.environ, "PYTHONUNBUFFERED": "1"})
        key = read_line(self.proc, self.KEY_RE, 60)
        port = read_line(self.proc, re.compile(r"listening on [0-9.]+:(\d+)(?:.*metrics at (http://\S+/metrics))?"), 60)
        if key is None or port is None:
            self.stop()
            raise RuntimeError("start-dev --auth did not print its admin key and address")
        self.key = key.group(1)
        self.address = f"127.0.0.1:{port.group(1)}"
        #: ``http://IP:PORT/metrics`` when started with ``--metrics-port``, else None.
        self.metrics_url: str | None = port.group(2)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)

    def __enter__(self) -> "AuthDevServer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class DevServer:
    """``spindle server start-dev --db FILE`` as a child process; a restart listens on the same port when it can.

    ``extra`` arguments are passed on the command line; the server's stderr goes to
    ``log_path`` (``FILE.server.log``), one marker line per start.
    """

    def __init__(self, db: str | os.PathLike[str], *extra: str) -> None:
        self.db = str(db)
        self.extra = list(extra)
        self.proc: subprocess.Popen[str] | None = None
        self.port = 0
        self.log_path = self.db + ".server.log"
        self.starts = 0

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self, timeout: float = 30.0, *, port: int | None = None) -> "DevServer":
        """Start (or restart) the server: on ``port`` if given, else on the previous port or a free one."""
        assert not self.alive(), "already running"
        ports = [port] if port is not None else ([self.port, 0] if self.port else [0])
        for p in ports:
            with open(self.log_path, "a") as log:
                log.write(f"---- {time.strftime('%H:%M:%S')} start {self.starts} (port {p})\n")
                log.flush()
                self.proc = subprocess.Popen(
                    [SPINDLE, "server", "start-dev", "--db", self.db, "--port", str(p), *self.extra],
                    stdout=subprocess.PIPE, stderr=log, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
            m = read_line(self.proc, LISTEN_RE, timeout)
            if m is not None:
                self.port = int(m.group(2))
                self.starts += 1
                return self
            self.kill()
        raise RuntimeError(f"server did not start; log:\n{self.log()[-5000:]}")

    def kill(self) -> None:
        """SIGKILL: no shutdown code runs."""
        if self.alive():
            assert self.proc is not None
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def stop(self, timeout: float = 15.0) -> int:
        """SIGTERM and wait for a clean exit; returns the exit status (SIGKILL if it does not exit in time)."""
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


async def raw_history(stub: Any, workflow_id: str, run_id: str = "", namespace: str = "default",
                      timeout: float | None = 30.0) -> list[pb.HistoryEvent]:
    """Every event of a run through a raw WorkflowService stub (all pages)."""
    events: list[pb.HistoryEvent] = []
    token = b""
    while True:
        resp = await stub.GetWorkflowExecutionHistory(svc.GetWorkflowExecutionHistoryRequest(
            namespace=namespace, execution=pb.WorkflowExecution(workflow_id=workflow_id, run_id=run_id),
            next_page_token=token), timeout=timeout)
        events.extend(resp.history.events)
        token = resp.next_page_token
        if not token or not resp.history.events:
            return events
