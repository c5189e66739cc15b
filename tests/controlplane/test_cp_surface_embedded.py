"""What a notebook or a test exposes by running the control plane itself (docs/SECURITY.md, "Attack surface review").

- ``Client.connect("embedded:PATH")`` and ``WorkflowEnvironment.start_local`` /
  ``start_time_skipping`` run the control plane in the calling process and open no listening
  socket at all, even when given Temporal's ``ip="0.0.0.0"`` option (accepted and ignored): there
  is nothing for another machine, or another user of this one, to connect to.
- ``spindle server start-dev`` has no authentication by default. On a loopback address that is
  the documented development setup; on any other address it prints one warning line on stderr
  naming the risk and the fix (``--auth``). Decision: warn, do not refuse. A dev server in a
  container must bind 0.0.0.0 to be reachable through a published port, which Temporal's dev
  server allows too; refusing would push users to workarounds rather than to ``--auth``. What
  counts as loopback is decided by one function (``spindle.api._addresses.is_loopback_host``), tested here for the
  spellings an operator may use.
"""

from __future__ import annotations

import os
import sys

from pathlib import Path

import pytest

from spindle.client import Client
from spindle.controlplane.auth import open_listener_warning
from spindle.testing import WorkflowEnvironment

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def listening_sockets() -> set[str]:
    """The TCP sockets in LISTEN state that this process holds (their inodes)."""
    listening: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if fields[3] == "0A":  # TCP_LISTEN
                listening.add(fields[9])
    mine = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            mine.add(target[len("socket:["):-1])
    return listening & mine


async def test_an_embedded_control_plane_listens_nowhere(tmp_path: Path) -> None:
    before = listening_sockets()
    client = await Client.connect(f"embedded:{tmp_path / 'nb.db'}")
    try:
        await client.list_namespaces()
        assert listening_sockets() == before
    finally:
        await client.close()


async def test_a_test_environment_ignores_ip_and_listens_nowhere() -> None:
    before = listening_sockets()
    async with await WorkflowEnvironment.start_local(ip="0.0.0.0") as env:
        await env.client.list_namespaces()
        assert listening_sockets() == before
    async with await WorkflowEnvironment.start_time_skipping() as env:
        await env.client.list_namespaces()
        assert listening_sockets() == before


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "[::]", "", "10.1.2.3", "192.168.0.7", "spindle.example",
                                  "2001:db8::1"])
def test_an_open_server_beyond_loopback_warns_in_one_line(host: str) -> None:
    warning = open_listener_warning(host, 7233)
    assert warning is not None
    assert "\n" not in warning
    assert "authentication is OFF" in warning and f"{host}:7233" in warning
    assert "anyone who can reach this port" in warning and "--auth" in warning


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"])
def test_loopback_addresses_do_not_warn(host: str) -> None:
    assert open_listener_warning(host, 7233) is None


def test_the_probe_sees_a_listening_socket() -> None:
    """The control for the two tests above: a socket this process listens on is found."""
    import socket

    before = listening_sockets()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        assert len(listening_sockets() - before) == 1
    assert listening_sockets() == before


async def test_a_new_database_file_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    """The SQLite file holds every payload and history: before the fix it was created 644 (umask 022)."""
    old = os.umask(0o022)
    try:
        client = await Client.connect(f"embedded:{tmp_path / 'nb.db'}")
        try:
            await client.list_namespaces()
            modes = {p.name: p.stat().st_mode & 0o777 for p in tmp_path.iterdir() if not p.name.endswith(".lock")}
        finally:
            await client.close()
    finally:
        os.umask(old)
    assert modes and modes["nb.db"] == 0o600, modes
    assert all(mode == 0o600 for mode in modes.values()), modes  # -wal and -shm follow the database file
    existing = tmp_path / "mine.db"
    existing.touch(mode=0o640)  # an existing file keeps the mode its owner chose
    existing.chmod(0o640)
    client = await Client.connect(f"embedded:{existing}")
    await client.close()
    assert existing.stat().st_mode & 0o777 == 0o640


def test_start_dev_creates_its_database_readable_by_its_owner_only(tmp_path: Path) -> None:
    from spindle_procs import DevServer

    server = DevServer(tmp_path / "dev.db").start()
    try:
        assert (tmp_path / "dev.db").stat().st_mode & 0o777 == 0o600
    finally:
        server.stop()
