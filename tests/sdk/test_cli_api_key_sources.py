"""Where the CLI takes its API key from: ``--api-key-file``, ``$SPINDLE_API_KEY``, or (with a warning) ``--api-key``.

The attack (docs/SECURITY.md, "Attack surface review"): a key given as ``--api-key KEY`` is in
the process's command line, which every user of the machine can read (``ps``,
``/proc/PID/cmdline``). The file and the variable keep it out of there; the last test proves
that on a real ``spindle`` process talking to a gRPC server that records the key it receives.
"""

from __future__ import annotations

import asyncio
import os
import sys

from pathlib import Path
from typing import Any

import grpc
import pytest

from click.testing import CliRunner
from spindle_procs import SPINDLE

from spindle.cli import cli
from spindle.exceptions import RPCError

SECRET = "spk_k1_" + "s3cr3t" * 6


@pytest.fixture
def connects(monkeypatch: pytest.MonkeyPatch) -> list[str | None]:
    """The api_key of every ``Client.connect`` the CLI makes (the connection is then refused: exit 1)."""
    from spindle.client import Client

    seen: list[str | None] = []

    async def fake_connect(target: str, **kw: Any) -> Any:
        seen.append(kw.get("api_key"))
        raise RPCError("stop here", status="UNAVAILABLE")

    monkeypatch.setattr(Client, "connect", staticmethod(fake_connect))
    monkeypatch.delenv("SPINDLE_API_KEY", raising=False)
    return seen


def run(*args: str, env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(cli, list(args), env=env)


def key_file(tmp_path: Path, text: str, mode: int = 0o600) -> str:
    path = tmp_path / "key"
    path.write_text(text)
    path.chmod(mode)
    return str(path)


def test_the_key_file_is_read_and_its_trailing_newline_stripped(tmp_path: Path, connects: list[str | None]) -> None:
    for text in (SECRET, SECRET + "\n", SECRET + "\r\n"):
        r = run("workflow", "list", "--api-key-file", key_file(tmp_path, text))
        assert r.exit_code == 1, r.output  # the fake server refused: the key got as far as connecting
        assert "warning" not in r.stderr
    assert connects == [SECRET] * 3


def test_the_variable_is_used_without_a_warning_and_a_flag_wins_over_it(tmp_path: Path,
                                                                         connects: list[str | None]) -> None:
    r = run("workflow", "list", env={"SPINDLE_API_KEY": SECRET})
    assert r.exit_code == 1 and "warning" not in r.stderr
    run("workflow", "list", "--api-key-file", key_file(tmp_path, "spk_from_file\n"), env={"SPINDLE_API_KEY": SECRET})
    run("workflow", "list", env={"SPINDLE_API_KEY": ""})  # empty counts as unset
    assert connects == [SECRET, "spk_from_file", None]


def test_a_literal_key_works_with_a_one_line_warning(connects: list[str | None]) -> None:
    r = run("workflow", "list", "--api-key", SECRET)
    assert r.exit_code == 1
    warnings = [line for line in r.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 1 and "/proc/PID/cmdline" in warnings[0] and "--api-key-file" in warnings[0]
    assert SECRET not in r.stderr  # the warning does not repeat the key
    assert connects == [SECRET]


@pytest.mark.parametrize("text, mode, error", [
    (None, 0o600, "cannot read the file: No such file or directory"),
    ("", 0o600, "the file is empty"),
    ("\n", 0o600, "the file is empty"),
    (SECRET + "\nsecond line\n", 0o600, "the file holds more than one line"),
    (SECRET, 0o000, "cannot read the file: Permission denied"),
])
def test_a_key_file_that_cannot_be_used_is_a_usage_error_naming_it(
        tmp_path: Path, connects: list[str | None], text: str | None, mode: int, error: str) -> None:
    if mode == 0 and os.geteuid() == 0:
        pytest.skip("root reads any file")
    path = key_file(tmp_path, text, mode) if text is not None else str(tmp_path / "missing")
    r = run("workflow", "list", "--api-key-file", path)
    assert r.exit_code == 2, r.output
    assert f"--api-key-file {path}: {error}" in r.stderr
    assert connects == []  # nothing was attempted


def test_a_directory_is_not_a_key_file(tmp_path: Path, connects: list[str | None]) -> None:
    r = run("workflow", "list", "--api-key-file", str(tmp_path))
    assert r.exit_code == 2 and f"--api-key-file {tmp_path}: cannot read the file: Is a directory" in r.stderr
    assert connects == []


def test_a_key_file_others_may_read_works_with_a_warning(tmp_path: Path, connects: list[str | None]) -> None:
    r = run("workflow", "list", "--api-key-file", key_file(tmp_path, SECRET, 0o644))
    assert r.exit_code == 1
    assert "may be read by other users (mode 644); chmod 600 it" in r.stderr
    assert connects == [SECRET]


def test_both_sources_on_the_command_line_are_refused(tmp_path: Path, connects: list[str | None]) -> None:
    r = run("workflow", "list", "--api-key", SECRET, "--api-key-file", key_file(tmp_path, SECRET))
    assert r.exit_code == 2 and "--api-key and --api-key-file exclude each other" in r.stderr
    assert connects == []


def test_dsl_run_reads_the_key_file_too(tmp_path: Path, connects: list[str | None]) -> None:
    doc = tmp_path / "wf.yaml"
    doc.write_text("name: w\ntask_queue: q\nsteps:\n  - id: a\n    activity: noop\n")
    run("dsl", "run", str(doc), "--api-key-file", key_file(tmp_path, SECRET + "\n"))
    assert connects == [SECRET]


# ---------------------------------------------------------------------------------------------- a real process
class KeyRecorder(grpc.GenericRpcHandler):
    """Answers nothing: records each call's ``authorization`` metadata and holds the call until released."""

    def __init__(self) -> None:
        self.keys: list[str] = []
        self.arrived = asyncio.Event()
        self.release = asyncio.Event()

    def service(self, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler:
        async def hold(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
            self.keys += [v for k, v in context.invocation_metadata() if k == "authorization"]
            self.arrived.set()
            await self.release.wait()
            return b""

        return grpc.unary_unary_rpc_method_handler(hold)


def cmdline(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("source", ["file", "env", "literal"])
async def test_a_running_cli_shows_the_key_in_its_command_line_only_when_given_literally(
        tmp_path: Path, source: str) -> None:
    recorder = KeyRecorder()
    server = grpc.aio.server()
    server.add_generic_rpc_handlers((recorder,))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    env = {k: v for k, v in os.environ.items() if k != "SPINDLE_API_KEY"}
    args = [SPINDLE, "workflow", "list", "--address", f"127.0.0.1:{port}"]
    if source == "file":
        args += ["--api-key-file", key_file(tmp_path, SECRET + "\n")]
    elif source == "env":
        env["SPINDLE_API_KEY"] = SECRET
    else:
        args += ["--api-key", SECRET]
    proc = await asyncio.create_subprocess_exec(*args, env=env, stdout=asyncio.subprocess.DEVNULL,
                                                stderr=asyncio.subprocess.PIPE)
    try:
        await asyncio.wait_for(recorder.arrived.wait(), 20)
        assert recorder.keys == [f"Bearer {SECRET}"]  # the key reached the server
        assert (SECRET in cmdline(proc.pid)) == (source == "literal")
    finally:
        proc.kill()
        await proc.wait()
        recorder.release.set()
        await server.stop(None)
    assert proc.stderr is not None
    assert ("--api-key puts the key on the command line" in (await proc.stderr.read()).decode()) == (source == "literal")
