"""The ``spindle`` command line as a whole (``spindle.cli``): every command's help, usage errors and
their exit status, what a command loads, and command groups from the ``spindle.cli`` entry points.

The commands themselves are tested where their subject is (tests/sdk/client_worker/test_cli_*.py,
tests/sdk/dsl, tests/sdk/testing/test_cli_replay.py, tests/controlplane, tests/terraform).
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap

from importlib.metadata import EntryPoint
from pathlib import Path

import click
import pytest

from spindle_procs import SPINDLE

import spindle.cli

from spindle.cli import cli, main


def _walk(command: click.Command, path: tuple[str, ...]) -> list[tuple[tuple[str, ...], click.Command]]:
    found = [(path, command)]
    if isinstance(command, click.Group):
        for name in command.list_commands(click.Context(command)):
            sub = command.get_command(click.Context(command), name)
            assert sub is not None, (path, name)
            found += _walk(sub, (*path, name))
    return found


COMMANDS = _walk(cli, ())
LEAVES = [path for path, command in COMMANDS if not isinstance(command, click.Group)]


def test_the_walk_finds_every_command_group_and_verb() -> None:
    paths = {" ".join(path) for path, _ in COMMANDS}
    assert {"server start-dev", "server start", "workflow start", "workflow reset", "workflow list",
            "namespace create", "namespace delete", "schedule create", "schedule backfill", "dsl validate",
            "dsl schedule", "replay", "admin setup-schema", "admin api-key create", "admin api-key new-secret",
            "terraform install-provider", "deployment describe", "deployment set-ramping",
            "workflow update-options"} <= paths
    assert len(LEAVES) >= 35, LEAVES


@pytest.mark.parametrize("path", [path for path, _ in COMMANDS], ids=lambda p: " ".join(p) or "spindle")
def test_every_command_has_help(path: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> None:
    for flag in ("--help", "-h"):
        assert main([*path, flag]) == 0
        shown = capsys.readouterr()
        assert shown.out.startswith(f"Usage: {' '.join(('spindle', *path))} "), shown.out
        assert "-h, --help" in shown.out and not shown.err


#: click's message for an unknown flag: "No such option '--x'." since click 8.4, "No such option: --x" before
#: (pyproject allows click>=8.0); either way the flag is named.
def no_such_option(flag: str) -> re.Pattern[str]:
    return re.compile(rf"Error: No such option(: {flag}\b|( '{flag}'\.))")


@pytest.mark.parametrize("path", LEAVES, ids=" ".join)
def test_an_unknown_flag_exits_2_naming_it(path: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*path, "--no-such-flag"]) == 2
    err = capsys.readouterr().err
    assert no_such_option("--no-such-flag").search(err), err
    assert err.startswith(f"Usage: {' '.join(('spindle', *path))} "), err


@pytest.mark.parametrize(("argv", "says"), [
    (["workflow", "list", "--limit", "many"], "Error: Invalid value for '--limit': 'many' is not a valid integer."),
    (["workflow", "show", "-w", "x", "--output", "yaml"],
     "Error: Invalid value for '--output' / '-o': 'yaml' is not one of 'table', 'json'."),
    (["workflow", "start", "-w", "x", "--type", "T"], "Error: Missing option '--task-queue' / '-t'."),
    (["workflow", "terminate", "--rps", "0", "-q", "x"], "Error: Invalid value for '--rps': must be a positive number"),
    (["namespace", "update", "ns", "--rps-limit", "lots"], "Error: Invalid value for '--rps-limit': 'lots' is not a number"),
    (["namespace", "describe"], "Error: Missing argument 'NAME'."),
    (["server", "start-dev", "--log-level", "loud"], "Error: Invalid value for '--log-level': 'loud' is not one of"),
    (["server", "start"], "Error: Missing option '--config'."),
    (["replay", "histories/"], "Error: Missing option '--workflows' / '-w'."),
    (["workflow"], "Error: Missing command."),
    (["admin", "api-key"], "Error: Missing command."),
    (["flow"], "Error: No such command 'flow'."),
])
def test_usage_errors_exit_2_naming_the_flag(argv: list[str], says: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert says in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "says"), [
    (["server", "start-dev", "--port", "70000"], "spindle: error: --port: 70000 is not a port number (0-65535)\n"),
    (["server", "start-dev", "--shards", "0"], "spindle: error: --shards: must be at least 1, got 0\n"),
    (["server", "start-dev", "--archive-uri", "s3://b"],
     "spindle: error: --archive-uri: 's3://b' must be file:///abs/dir or gs://bucket/prefix\n"),
    (["workflow", "start", "-w", "x", "--type", "T", "-t", "q", "--run-timeout", "soon"],
     "spindle: error: --run-timeout: 'soon' is not a duration (examples: 90s, 5m, 2h, 14d)\n"),
    (["workflow", "start", "-w", "x", "--type", "T", "-t", "q", "--input", "{"],
     "spindle: error: --input: not valid JSON (Expecting property name enclosed in double quotes at position 1): "
     "'{'\n"),
    (["admin", "api-key", "create", "k", "--grant", "default"],
     "spindle: error: --grant: expected NAMESPACE=ROLE (reader, worker, writer, admin), got 'default'\n"),
    (["workflow", "list", "--codec", "nocolon"],
     "spindle: error: --codec 'nocolon': expected MODULE:FACTORY, e.g. myapp.codecs:make_codec\n"),
])
def test_bad_values_the_commands_check_exit_2_before_connecting(argv: list[str], says: str,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    # --address points nowhere: reaching for a server would be a different error (exit 1)
    client = argv[0] in ("workflow", "admin")
    assert main([*argv, *(["--address", "127.0.0.1:1"] if client else [])]) == 2
    assert capsys.readouterr().err == says


def test_the_console_script_exits_2_for_a_bad_flag_and_0_for_help() -> None:
    bad = subprocess.run([SPINDLE, "workflow", "list", "--limmit", "3"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and no_such_option("--limmit").search(bad.stderr), bad.stderr
    assert not bad.stdout
    shown = subprocess.run([SPINDLE, "--help"], capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    for group in ("server", "workflow", "namespace", "schedule", "deployment", "dsl", "replay", "admin", "terraform"):
        assert f"\n  {group} " in shown.stdout, shown.stdout
    assert not shown.stderr  # no warning (e.g. a command group that failed to load)


def _loaded_after(code: str) -> list[str]:
    probe = f"{code}\nimport sys\nprint(sorted(m for m in sys.modules if m.startswith('spindle')))\n"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return eval(done.stdout.strip().splitlines()[-1])  # a list literal printed by the probe


def test_a_client_command_loads_no_control_plane() -> None:
    loaded = _loaded_after("from spindle.cli import main\nmain(['workflow', 'list', '--help'])")
    assert "spindle.cli.workflow" in loaded
    assert not [m for m in loaded if m.startswith("spindle.controlplane")], loaded
    assert "spindle.cli.server" not in loaded and "spindle.cli.dsl" not in loaded


def test_the_server_commands_load_the_control_plane_only_when_run() -> None:
    loaded = _loaded_after("from spindle.cli import main\nmain(['server', 'start-dev', '--help'])")
    assert "spindle.cli.server" in loaded
    assert not [m for m in loaded if m.startswith(("spindle.controlplane", "spindle.client", "spindle.worker"))], loaded


def test_command_groups_from_the_entry_points(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "spindle_cli_plugin_probe.py").write_text(textwrap.dedent("""\
        import click

        @click.group("hello", help="a third-party command group")
        def hello():
            pass

        @hello.command("say")
        @click.option("--name", required=True)
        def say(name):
            click.echo(f"hello, {name}")
            return 3

        NOT_A_COMMAND = 42
        """))
    monkeypatch.syspath_prepend(str(tmp_path))
    points = [EntryPoint("hello", "spindle_cli_plugin_probe:hello", "spindle.cli"),
              EntryPoint("broken", "spindle_cli_plugin_probe_missing:command", "spindle.cli"),
              EntryPoint("number", "spindle_cli_plugin_probe:NOT_A_COMMAND", "spindle.cli"),
              EntryPoint("workflow", "spindle_cli_plugin_probe:hello", "spindle.cli")]
    monkeypatch.setattr(spindle.cli, "entry_points", lambda group: [p for p in points if p.group == group])
    assert main(["hello", "say", "--name", "ada"]) == 3
    assert capsys.readouterr().out == "hello, ada\n"
    assert main(["hello", "say"]) == 2
    assert "Error: Missing option '--name'." in capsys.readouterr().err
    assert main(["--help"]) == 0
    shown = capsys.readouterr()
    assert "a third-party command group" in shown.out and "start, signal, query" in shown.out  # workflow: the built-in
    assert "command group 'broken' failed to load: No module named 'spindle_cli_plugin_probe_missing'" in shown.err
    assert "command group 'number' (spindle_cli_plugin_probe:NOT_A_COMMAND) is a int, not a click command" in shown.err
    assert main(["broken"]) == 2
    assert "Error: No such command 'broken'." in capsys.readouterr().err
