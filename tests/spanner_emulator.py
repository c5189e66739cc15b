"""Running the Cloud Spanner emulator for tests (independent of any conftest).

``emulator_main --host_port 127.0.0.1:0`` binds a free port and prints it on stderr
("Server address: 127.0.0.1:PORT"), so there is no port race. The binary is
``$SPANNER_EMULATOR_BIN`` or the gcloud SDK's ``bin/cloud_spanner_emulator/emulator_main``.
When it is missing, or ``google-cloud-spanner`` is not installed, ``require_emulator``
skips the test with the reason (CI sets ``SPINDLE_REQUIRE_SPANNER=1`` to turn the
skip into a failure).

Use::

    from spanner_emulator import spanner_instance_fixture   # tests/ is on pytest's pythonpath
    spanner_instance = spanner_instance_fixture()   # a session-scoped pytest fixture
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
import signal
import subprocess
import threading
import time
import uuid

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

MULTIPLEXED_ENV = ("GOOGLE_CLOUD_SPANNER_MULTIPLEXED_SESSIONS", "GOOGLE_CLOUD_SPANNER_MULTIPLEXED_SESSIONS_FOR_RW",
                   "GOOGLE_CLOUD_SPANNER_MULTIPLEXED_SESSIONS_PARTITIONED_OPS")
PROJECT = "test-project"
INSTANCE = "spindle-test"


@functools.lru_cache(maxsize=1)
def emulator_binary() -> str | None:
    """Path of ``emulator_main``, or None when it is not installed."""
    explicit = os.environ.get("SPANNER_EMULATOR_BIN")
    if explicit:
        return explicit if Path(explicit).exists() else None
    gcloud = shutil.which("gcloud")
    if gcloud is None:
        return None
    try:
        root = subprocess.run([gcloud, "info", "--format=value(installation.sdk_root)"], capture_output=True,
                              text=True, timeout=60, check=True).stdout.strip()
    except (subprocess.SubprocessError, OSError):
        return None
    path = Path(root) / "bin" / "cloud_spanner_emulator" / "emulator_main"
    return str(path) if path.exists() else None


def skip_reason() -> str | None:
    """Why Spanner tests cannot run here, or None."""
    try:
        import google.cloud.spanner  # noqa: F401
    except ImportError:
        return "google-cloud-spanner is not installed (pip install 'spindle[spanner]')"
    if emulator_binary() is None:
        return ("Cloud Spanner emulator not found (install the Debian package google-cloud-cli-spanner-emulator "
                "or set SPANNER_EMULATOR_BIN)")
    return None


def require_emulator() -> None:
    """Skip (or fail, when ``SPINDLE_REQUIRE_SPANNER=1``) if the emulator cannot run."""
    reason = skip_reason()
    if reason is None:
        return
    if os.environ.get("SPINDLE_REQUIRE_SPANNER") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


def set_client_env(host: str) -> None:
    """Point the Spanner client at the emulator, with multiplexed sessions off (required by emulator 1.5.x)."""
    os.environ["SPANNER_EMULATOR_HOST"] = host
    for var in MULTIPLEXED_ENV:
        os.environ[var] = "false"


@dataclass
class Emulator:
    """A running emulator."""

    host: str
    process: subprocess.Popen[str]

    def client_env(self) -> dict[str, str]:
        """Environment variables a child process needs to use this emulator."""
        return {"SPANNER_EMULATOR_HOST": self.host, **{v: "false" for v in MULTIPLEXED_ENV}}


@contextlib.contextmanager
def spanner_emulator(timeout: float = 30.0) -> Iterator[Emulator]:
    """Start ``emulator_main`` on a kernel-chosen port; set the client env vars while it runs."""
    binary = emulator_binary()
    if binary is None:
        raise RuntimeError(skip_reason() or "no emulator")
    proc = subprocess.Popen([binary, "--host_port", "127.0.0.1:0"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    assert proc.stderr is not None
    addr, lines, deadline = None, [], time.monotonic() + timeout
    while addr is None and time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            if proc.poll() is not None:
                break
            continue
        lines.append(line)
        m = re.search(r"Server address: (\S+)", line)
        addr = m.group(1) if m else None
    if addr is None:
        proc.kill()
        raise RuntimeError("spanner emulator did not start:\n" + "".join(lines))
    stderr = proc.stderr
    threading.Thread(target=lambda: [None for _ in stderr], daemon=True).start()  # keep draining stderr
    saved = {k: os.environ.get(k) for k in ("SPANNER_EMULATOR_HOST", *MULTIPLEXED_ENV)}
    set_client_env(addr)
    try:
        yield Emulator(addr, proc)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@dataclass
class SpannerTestInstance:
    """An emulator with one instance, ready for databases."""

    emulator: Emulator
    client: Any
    instance: Any
    project: str = PROJECT
    instance_id: str = INSTANCE

    def new_database_id(self) -> str:
        """A fresh database name (created by the store's ``open``)."""
        return "t" + uuid.uuid4().hex[:20]


@contextlib.contextmanager
def spanner_test_instance() -> Iterator[SpannerTestInstance]:
    """An emulator plus an instance ``spindle-test`` in project ``test-project``."""
    with spanner_emulator() as emu:
        from google.cloud import spanner

        client = spanner.Client(project=PROJECT)
        inst = client.instance(INSTANCE, configuration_name=f"projects/{PROJECT}/instanceConfigs/emulator-config",
                               node_count=1)
        inst.create().result(30)
        yield SpannerTestInstance(emu, client, inst)


def spanner_instance_fixture() -> Any:
    """A session-scoped pytest fixture yielding a ``SpannerTestInstance`` (skips when the emulator is absent)."""

    @pytest.fixture(scope="session")
    def spanner_instance() -> Iterator[SpannerTestInstance]:
        require_emulator()
        with spanner_test_instance() as inst:
            yield inst

    return spanner_instance


__all__ = ["Emulator", "SpannerTestInstance", "emulator_binary", "require_emulator", "set_client_env", "skip_reason",
           "spanner_emulator", "spanner_instance_fixture", "spanner_test_instance"]
