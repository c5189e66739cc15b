"""Secure by default (issue 15; docs/SECURITY.md), as an operator meets it on the command line.

- ``spindle server start --config`` refuses a file without ``auth:``; ``auth: {mode: none}``
  must be written out to run open.
- ``auth.bootstrap_admin_key_file`` gives the first administrator a key (generated into the
  file, mode 0600, if missing; the secret is never printed).
- ``start-dev --auth`` prints a generated system_admin key once; later starts do not.
- A server without authentication listening beyond loopback prints a clear warning.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import stat
import subprocess
import threading
import time

from collections.abc import Iterator
from pathlib import Path

import pytest

from spindle_procs import SPINDLE

from spindle.cli import main
from spindle.client import Client
from spindle.exceptions import RPCError

pytestmark = pytest.mark.timeout(120)

SECRET_RE = re.compile(r"spk_[0-9a-f]{16}_[A-Za-z0-9_-]{43}")


class Proc:
    """A ``spindle`` child process whose stdout lines are collected (until it prints ``ready``)."""

    def __init__(self, args: list[str], ready: str, tmp_path: Path) -> None:
        self.stderr_path = tmp_path / f"stderr-{time.monotonic_ns()}.log"
        with open(self.stderr_path, "w") as err:
            self.proc = subprocess.Popen([SPINDLE, *args], stdout=subprocess.PIPE, stderr=err, text=True,
                                         env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self.lines: list[str] = []
        done = threading.Event()

        def read() -> None:
            assert self.proc.stdout is not None
            for line in self.proc.stdout:
                self.lines.append(line)
                if ready in line:
                    done.set()
            done.set()

        threading.Thread(target=read, daemon=True).start()
        done.wait(60)
        if not any(ready in line for line in self.lines):
            self.stop()
            raise AssertionError(f"no {ready!r}; stdout: {self.lines}; stderr: {self.stderr}")
        m = re.search(r"listening on ([0-9.]+):(\d+)", "".join(self.lines))
        assert m is not None
        self.address = f"127.0.0.1:{m.group(2)}"

    @property
    def stdout(self) -> str:
        return "".join(self.lines)

    @property
    def stderr(self) -> str:
        return self.stderr_path.read_text()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


@pytest.fixture
def procs() -> Iterator[list[Proc]]:
    started: list[Proc] = []
    yield started
    for p in started:
        p.stop()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def config(tmp_path: Path, auth: str | None, listen: str = "127.0.0.1:0") -> str:
    path = tmp_path / "spindle.yaml"
    text = f"store: {{sqlite: {{path: '{tmp_path / 'c.db'}'}}}}\nnum_shards: 2\nlisten: '{listen}'\n"
    text += "metrics: {listen: '127.0.0.1:0'}\n"
    if auth is not None:
        text += f"auth: {auth}\n"
    path.write_text(text)
    return str(path)


async def refused_without_a_key(address: str) -> str:
    async with await Client.connect(address) as c:
        with pytest.raises(RPCError) as e:
            await c.list_namespaces()
    assert e.value.status == "UNAUTHENTICATED"
    return e.value.message


# ---------------------------------------------------------------------- server start --config

def test_server_start_refuses_a_config_without_auth(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["server", "start", "--config", config(tmp_path, None)]) == 2
    err = capsys.readouterr().err
    assert "auth: required" in err and "mode: api_keys" in err and "auth: {mode: none}" in err
    assert not (tmp_path / "c.db").exists()  # refused before anything was created


@pytest.mark.parametrize("auth, needle", [
    ("{mode: open}", "auth.mode: expected api_keys or none, got 'open'"),
    ("{}", "auth.mode: expected api_keys or none, got None"),
    ("{mode: api_keys, bootstrap_admin_key: x}", "auth: unknown key(s) bootstrap_admin_key"),
    ("{mode: none, bootstrap_admin_key_file: /x}", "auth.bootstrap_admin_key_file: only meaningful with mode: api_keys"),
    ("{mode: api_keys, key_cache_ttl: 1h}", "auth.key_cache_ttl"),
    ("{mode: api_keys, certificate_subjects: {'CN=x': {grants: {orders: boss}}}}", "unknown role 'boss'"),
    ("{mode: api_keys, task_token_keys: [{id: k1, secret_file: /no/such/file}]}",
     "auth.task_token_keys[0].secret_file: cannot read /no/such/file"),
    ("{mode: api_keys, use_store_task_token_key: false}", "needs at least one of task_token_keys"),
])
def test_a_bad_auth_section_is_refused_naming_the_key(tmp_path: Path, capsys: pytest.CaptureFixture[str], auth: str,
                                                      needle: str) -> None:
    assert main(["server", "start", "--config", config(tmp_path, auth)]) == 2
    assert needle in capsys.readouterr().err


async def test_server_start_with_api_keys_generates_the_bootstrap_admin_key_into_its_file(
        tmp_path: Path, procs: list[Proc]) -> None:
    key_file = tmp_path / "secrets" / "admin-key"
    key_file.parent.mkdir()
    cfg = config(tmp_path, f"{{mode: api_keys, bootstrap_admin_key_file: '{key_file}'}}")
    p = Proc(["server", "start", "--config", cfg], "listening on", tmp_path)
    procs.append(p)
    secret = key_file.read_text().strip()
    assert SECRET_RE.fullmatch(secret)
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert f"into {key_file}" in p.stdout and "API keys required" in p.stdout
    assert secret not in p.stdout + p.stderr  # never printed
    assert "no credentials" in await refused_without_a_key(p.address)
    async with await Client.connect(p.address, api_key=secret) as admin:
        assert "default" in [n.name for n in await admin.list_namespaces()]
        key = await admin.create_api_key("orders-writer", grants={"default": "writer"})
        keys = await admin.list_api_keys()
        assert {k.name for k in keys} == {"bootstrap admin", "orders-writer"}
        assert all(k.secret is None or k.secret == "" for k in keys)  # listings never carry a secret
        assert key.secret and SECRET_RE.fullmatch(key.secret)
        bootstrap_id = next(k.id for k in keys if k.name == "bootstrap admin")
    p.stop()
    # a restart with the same file keeps the key (the same secret works)
    p2 = Proc(["server", "start", "--config", cfg], "listening on", tmp_path)
    procs.append(p2)
    assert f"bootstrap admin key {bootstrap_id} from {key_file} present" in p2.stdout
    async with await Client.connect(p2.address, api_key=secret) as admin:
        await admin.list_namespaces()


def test_server_start_open_on_a_public_address_warns(tmp_path: Path, procs: list[Proc]) -> None:
    p = Proc(["server", "start", "--config", config(tmp_path, "{mode: none}", listen=f"0.0.0.0:{free_port()}")],
             "listening on", tmp_path)
    procs.append(p)
    assert "WARNING: authentication is OFF" in p.stdout + p.stderr
    assert "authentication OFF" in p.stdout


# ---------------------------------------------------------------------- start-dev

async def test_start_dev_auth_prints_a_generated_admin_key_once(tmp_path: Path, procs: list[Proc]) -> None:
    db = str(tmp_path / "dev.db")
    p = Proc(["server", "start-dev", "--db", db, "--port", "0", "--auth"], "listening on", tmp_path)
    procs.append(p)
    secrets = SECRET_RE.findall(p.stdout)
    assert len(secrets) == 1 and "shown this once" in p.stdout and "API keys required" in p.stdout
    assert secrets[0] not in p.stderr
    await refused_without_a_key(p.address)
    async with await Client.connect(p.address, api_key=secrets[0]) as admin:
        assert [n.name for n in await admin.list_namespaces()] == ["default"]
        key_id = (await admin.list_api_keys())[0].id
    p.stop()
    again = Proc(["server", "start-dev", "--db", db, "--port", "0", "--auth"], "listening on", tmp_path)
    procs.append(again)
    assert not SECRET_RE.search(again.stdout)  # shown once: a restart names the existing key, not its secret
    assert f"already has a system_admin key ({key_id})" in again.stdout
    async with await Client.connect(again.address, api_key=secrets[0]) as admin:
        await admin.list_namespaces()


async def test_start_dev_is_open_on_loopback_and_warns_beyond_it(tmp_path: Path, procs: list[Proc]) -> None:
    local = Proc(["server", "start-dev", "--db", str(tmp_path / "a.db"), "--port", "0"], "listening on", tmp_path)
    procs.append(local)
    assert "WARNING" not in local.stderr and not SECRET_RE.search(local.stdout)
    async with await Client.connect(local.address) as c:  # open: no key needed on 127.0.0.1
        assert [n.name for n in await c.list_namespaces()] == ["default"]
    public = Proc(["server", "start-dev", "--db", str(tmp_path / "b.db"), "--ip", "0.0.0.0", "--port", "0"],
                  "listening on", tmp_path)
    procs.append(public)
    assert "WARNING: authentication is OFF" in public.stderr and "0.0.0.0" in public.stderr
    guarded = Proc(["server", "start-dev", "--db", str(tmp_path / "c.db"), "--ip", "0.0.0.0", "--port", "0", "--auth"],
                   "listening on", tmp_path)
    procs.append(guarded)
    assert "WARNING" not in guarded.stderr
