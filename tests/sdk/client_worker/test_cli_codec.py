"""``spindle workflow ... --codec MODULE:FACTORY``: the CLI encodes inputs and shows payloads as the workers do.

Before: the CLI had no codec, so with encrypting workers ``start --input`` sent plaintext the
workers could not (or, strict, would not) accept, and ``show``/``describe``/``query``
printed opaque ciphertext.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import textwrap
import uuid

from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from spindle_procs import DevServer, raw_history

from spindle import workflow
from spindle.cli import CliError
from spindle.cli._connection import load_codecs
from spindle.client import Client
from spindle.converter import EncryptionCodec, ZlibCodec
from spindle.worker import Worker

pytest.importorskip("cryptography")

KEY_HEX = os.urandom(32).hex()
CODEC_MODULE = textwrap.dedent(f"""
    from spindle.converter import EncryptionCodec, ZlibCodec

    KEY = bytes.fromhex("{KEY_HEX}")

    def make_codec():
        return EncryptionCodec(KEY, strict=True)

    def make_chain():
        return [ZlibCodec(), EncryptionCodec(KEY)]

    NOT_A_CODEC = 42

    def broken():
        raise RuntimeError("no key service")
""")


@workflow.defn
class Greeter:
    def __init__(self) -> None:
        self.greeting = "hello"

    @workflow.run
    async def run(self, name: str) -> str:
        await workflow.wait_condition(lambda: self.greeting == "bye")
        return f"{self.greeting}, {name}"

    @workflow.signal
    def set_greeting(self, greeting: str) -> None:
        self.greeting = greeting

    @workflow.query
    def greeting_for(self, name: str) -> str:
        return f"{self.greeting}, {name}"


@pytest.fixture
def codec_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    folder = tmp_path / "codecs"
    folder.mkdir()
    name = "cli_codecs_" + uuid.uuid4().hex[:8]
    (folder / f"{name}.py").write_text(CODEC_MODULE)
    monkeypatch.chdir(folder)
    monkeypatch.setattr(sys, "path", [*sys.path])
    yield folder / name


def test_codec_option_loads_factories_and_reports_bad_values(codec_dir: Path) -> None:
    module = codec_dir.name
    [codec] = load_codecs([f"{module}:make_codec"])
    assert isinstance(codec, EncryptionCodec) and codec.strict
    chain = load_codecs([f"{module}:make_chain"])
    assert [type(c) for c in chain] == [ZlibCodec, EncryptionCodec]
    for spec, message in [
        ("nocolon", "expected MODULE:FACTORY"),
        (f"{module}:missing", f"{module!r} has no attribute 'missing'"),
        (f"{module}:NOT_A_CODEC", "'NOT_A_CODEC' is a int, not a PayloadCodec or a factory"),
        (f"{module}:broken", "calling broken() failed: RuntimeError: no key service"),
        ("no_such_module_x:make", "cannot import module 'no_such_module_x'"),
    ]:
        with pytest.raises(CliError) as info:
            load_codecs([spec])
        assert str(info.value).startswith(f"--codec {spec!r}: ") and message in str(info.value)


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[DevServer]:
    srv = DevServer(tmp_path / "cli.db").start()
    try:
        yield srv
    finally:
        srv.stop()


async def cli(cwd: Path, *args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "spindle.cli", *args, cwd=str(cwd),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await proc.communicate()
    return proc.returncode or 0, out.decode(), err.decode()


async def test_workflow_commands_encode_and_decode_with_the_codec(server: DevServer, codec_dir: Path) -> None:
    folder, module = codec_dir.parent, codec_dir.name
    key = bytes.fromhex(KEY_HEX)
    client = await Client.connect(server.address, codecs=[EncryptionCodec(key, strict=True)])
    common = ["--address", server.address, "--codec", f"{module}:make_codec", "--workflow-id", "greet"]
    async with Worker(client, task_queue="cli", workflows=[Greeter], graceful_shutdown_timeout=timedelta(seconds=1)):
        code, out, err = await cli(folder, "workflow", "start", *common, "--type", "Greeter", "--task-queue", "cli",
                                   "--input", '"4111 ada"')
        assert code == 0, err
        code, out, err = await cli(folder, "workflow", "query", *common, "--name", "greeting_for", "--input", '"bob"')
        assert (code, out.strip()) == (0, '"hello, bob"'), err
        code, out, err = await cli(folder, "workflow", "signal", *common, "--name", "set_greeting",
                                   "--input", '"bye"')
        assert code == 0, err
        code, out, err = await cli(folder, "workflow", "result", *common)
        assert (code, out.strip()) == (0, '"bye, 4111 ada"'), err
        code, out, err = await cli(folder, "workflow", "show", *common, "--output", "json")
        assert code == 0, err
        events = json.loads(out)["events"]
        started = events[0]["attributes"]["input"]["payloads"][0]
        assert started["metadata"]["encoding"] == "anNvbi9wbGFpbg=="  # json/plain: decoded
        code, out, err = await cli(folder, "workflow", "describe", *common)
        assert code == 0 and json.loads(out)["status"] == "COMPLETED", err
        # Without the codec: the server holds only ciphertext, and a strict worker would refuse plaintext.
        code, out, err = await cli(folder, "workflow", "show", "--address", server.address, "--workflow-id", "greet",
                                   "--output", "json")
        assert code == 0 and "4111" not in out
    stored = await raw_history(client.stub, "greet")
    assert b"4111" not in b"".join(e.SerializeToString() for e in stored)
    await client.close()


async def test_show_reports_an_undecodable_event_and_shows_the_rest(server: DevServer, codec_dir: Path) -> None:
    folder, module = codec_dir.parent, codec_dir.name
    plain = await Client.connect(server.address)
    await plain.start_workflow("Greeter", "plaintext", id="poisoned", task_queue="nobody")
    code, out, err = await cli(folder, "workflow", "show", "--address", server.address, "--codec",
                               f"{module}:make_codec", "--workflow-id", "poisoned")
    assert code == 0
    assert "WorkflowExecutionStarted" in out and "WorkflowTaskScheduled" in out
    assert "spindle: warning: event 1 (WorkflowExecutionStarted): cannot decode: ValueError: " \
           "EncryptionCodec(strict=True) refuses an unencrypted payload" in err
    code, out, err = await cli(folder, "workflow", "show", "--address", server.address, "--codec", "nope:x",
                               "--workflow-id", "poisoned")
    assert code == 2 and "--codec 'nope:x': cannot import module 'nope'" in err
    await plain.close()
