"""``spindle schedule ...`` against ``spindle server start-dev`` (a child process), and its flag errors.

Each verb runs as the user would run it (``spindle schedule create ...`` in a subprocess);
the flag checks run in-process through the same command line (``spindle.cli.main``: a usage error exits 2).
"""

from __future__ import annotations

import json
import os
import subprocess
import time

from collections.abc import Iterator
from pathlib import Path

import pytest

from spindle_procs import SPINDLE, DevServer

from spindle.cli import main


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    s = DevServer(tmp_path_factory.mktemp("cli-schedule") / "dev.db").start()
    try:
        yield s
    finally:
        s.stop()


def cli(server: DevServer, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SPINDLE, "schedule", *args, "--address", server.address], capture_output=True, text=True,
                          timeout=60)


def ok(server: DevServer, *args: str) -> str:
    r = cli(server, *args)
    assert r.returncode == 0, r.stderr
    return r.stdout


def describe(server: DevServer, sid: str) -> dict:
    return json.loads(ok(server, "describe", "--schedule-id", sid))


def test_create_describe_pause_unpause_trigger_list_delete(server: DevServer) -> None:
    out = json.loads(ok(server, "create", "--schedule-id", "cli-hourly", "--interval", "1h/15m", "--tz", "Europe/Berlin",
                        "--cron", "0 6 * * MON", "--overlap", "allow_all", "--type", "Report", "--task-queue", "reports",
                        "--workflow-id", "report", "--input", '{"region": "eu"}', "--input", "3",
                        "--jitter", "30s", "--catchup-window", "1h", "--pause-on-failure", "--memo", 'owner="bi"',
                        "--execution-timeout", "2h"))
    assert out["schedule_id"] == "cli-hourly" and len(out["next_action_times"]) == 3
    d = describe(server, "cli-hourly")
    assert d["spec"]["cron_expressions"] == ["0 6 * * MON"]
    assert d["spec"]["intervals"] == [{"every_seconds": 3600.0, "offset_seconds": 900.0}]
    assert d["spec"]["time_zone_name"] == "Europe/Berlin" and d["spec"]["jitter_seconds"] == 30.0
    assert d["action"] == {"workflow_type": "Report", "workflow_id": "report", "task_queue": "reports",
                           "input": [{"region": "eu"}, 3], "memo": {"owner": "bi"},
                           "execution_timeout_seconds": 7200.0, "run_timeout_seconds": None,
                           "task_timeout_seconds": None}
    assert d["policy"] == {"overlap": "ALLOW_ALL", "catchup_window_seconds": 3600.0, "pause_on_failure": True}

    assert "paused" in ok(server, "pause", "--schedule-id", "cli-hourly", "--note", "maintenance")
    d = describe(server, "cli-hourly")
    assert d["state"] == {"paused": True, "note": "maintenance", "remaining_actions": None}
    assert d["info"]["next_action_times"] == []
    ok(server, "unpause", "--schedule-id", "cli-hourly", "--note", "back")
    assert describe(server, "cli-hourly")["state"]["paused"] is False

    ok(server, "trigger", "--schedule-id", "cli-hourly")
    deadline = time.monotonic() + 20
    while not (d := describe(server, "cli-hourly"))["info"]["recent_actions"] and time.monotonic() < deadline:
        time.sleep(0.2)
    [action] = d["info"]["recent_actions"]
    assert action["workflow_id"].startswith("report-20") and action["workflow_id"].endswith("Z") and action["run_id"]

    table = ok(server, "list")
    assert "SCHEDULE ID" in table and "cli-hourly" in table and "Report" in table
    [entry] = [e for e in json.loads(ok(server, "list", "--output", "json")) if e["schedule_id"] == "cli-hourly"]
    assert entry["paused"] is False and entry["note"] == "back"

    assert "deleted" in ok(server, "delete", "--schedule-id", "cli-hourly")
    r = cli(server, "describe", "--schedule-id", "cli-hourly")
    assert r.returncode == 1 and "no schedule 'cli-hourly'" in r.stderr


def test_backfill_takes_the_actions_of_a_past_range(server: DevServer) -> None:
    ok(server, "create", "--schedule-id", "cli-daily", "--cron", "0 6 * * *", "--paused", "--type", "Report",
       "--task-queue", "reports")
    out = ok(server, "backfill", "--schedule-id", "cli-daily", "--start-time", "2026-01-01",
             "--end-time", "2026-01-03T23:00:00Z", "--overlap", "ALLOW_ALL")
    assert "backfill" in out
    deadline = time.monotonic() + 20
    while (d := describe(server, "cli-daily"))["info"]["num_actions"] < 3 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert [a["workflow_id"] for a in d["info"]["recent_actions"]] == [
        "cli-daily-2026-01-01T06:00:00Z", "cli-daily-2026-01-02T06:00:00Z", "cli-daily-2026-01-03T06:00:00Z"]
    r = cli(server, "backfill", "--schedule-id", "cli-daily", "--start-time", "2026-01-03", "--end-time", "2026-01-01")
    assert r.returncode == 2 and "--end-time" in r.stderr


def test_create_with_a_taken_id_exits_1_and_names_the_id(server: DevServer) -> None:
    ok(server, "create", "--schedule-id", "cli-taken", "--cron", "@daily", "--type", "T", "--task-queue", "q")
    r = cli(server, "create", "--schedule-id", "cli-taken", "--cron", "@hourly", "--type", "T", "--task-queue", "q")
    assert r.returncode == 1 and "cli-taken" in r.stderr and "already exists" in r.stderr


BASE = ["schedule", "create", "--address", "127.0.0.1:1", "--schedule-id", "s", "--type", "T", "--task-queue", "q"]


@pytest.mark.parametrize(("extra", "flag", "says"), [
    (["--cron", "61 * * * *"], "--cron", "field 1 (minute) '61' at column 1"),
    (["--cron", "@every 5m"], "--cron", "unknown alias"),
    (["--interval", "1x"], "--interval", "not a duration"),
    (["--interval", "1h/2h"], "--interval", "must be shorter than every"),
    (["--interval", "0s"], "--interval", "at least 1 second"),
    (["--cron", "@daily", "--tz", "Europe/berlin"], "--tz", "did you mean 'Europe/Berlin'"),
    (["--cron", "@daily", "--overlap", "sometimes"], "--overlap", "BUFFER_ONE"),
    (["--cron", "@daily", "--jitter", "soon"], "--jitter", "not a duration"),
    (["--cron", "@daily", "--start-at", "yesterday"], "--start-at", "ISO 8601"),
    (["--cron", "@daily", "--remaining-actions", "-1"], "--remaining-actions", "whole number"),
])
def test_bad_flag_values_are_usage_errors_naming_the_flag(extra: list[str], flag: str, says: str,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*BASE, *extra]) == 2
    err = capsys.readouterr().err
    assert f"Error: Invalid value for '{flag}': " in err and says in err, err


@pytest.mark.parametrize(("extra", "says"), [
    ([], "give --cron or --interval"),
    (["--cron", "@daily", "--phase", "5m"], "--phase: applies to --interval"),
    (["--interval", "1h/5m", "--phase", "5m"], "--phase: an --interval already has a phase"),
    (["--interval", "1h", "--phase", "2h"], "--phase: offset"),
    (["--cron", "@daily", "--start-at", "2026-02-01", "--end-at", "2026-01-01"], "--end-at"),
    (["--cron", "@daily", "--input", "{bad"], "--input: not valid JSON"),
    (["--cron", "@daily", "--memo", "novalue"], "--memo: expected KEY=JSON"),
])
def test_inconsistent_flags_exit_2_before_connecting(extra: list[str], says: str,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    # the address is unreachable: reaching the server would be a different error (exit 1)
    assert main([*BASE, *extra]) == 2
    assert says in capsys.readouterr().err


def test_schedule_is_a_command_group_of_the_spindle_cli(tmp_path: Path) -> None:
    r = subprocess.run([SPINDLE, "schedule", "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0
    for verb in ("create", "describe", "list", "pause", "unpause", "trigger", "backfill", "delete"):
        assert verb in r.stdout


def test_schedule_commands_follow_the_roles_of_the_api_key(tmp_path: Path) -> None:
    """writer creates and pauses; reader describes and lists but is refused a change (PERMISSION_DENIED)."""
    from spindle_procs import AuthDevServer

    with AuthDevServer(tmp_path / "auth.db") as server:
        def run(key: str, *args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run([SPINDLE, *args, "--address", server.address, "--api-key", key],
                                  capture_output=True, text=True, timeout=60)

        keys = {}
        for role in ("reader", "writer"):
            made = run(server.key, "admin", "api-key", "create", f"{role} key", "--grant", f"default={role}")
            assert made.returncode == 0, made.stderr
            keys[role] = json.loads(made.stdout)["secret"]
        created = run(keys["writer"], "schedule", "create", "-s", "auth-s", "--cron", "@daily", "--type", "T",
                      "--task-queue", "q")
        assert created.returncode == 0, created.stderr
        assert run(keys["reader"], "schedule", "describe", "-s", "auth-s").returncode == 0
        assert "auth-s" in run(keys["reader"], "schedule", "list").stdout
        refused = run(keys["reader"], "schedule", "pause", "-s", "auth-s")
        assert refused.returncode == 1, refused.stderr
        assert "PatchSchedule requires role 'writer' on namespace 'default'" in refused.stderr
        refused = run(keys["reader"], "schedule", "create", "-s", "auth-2", "--cron", "@daily", "--type", "T",
                      "--task-queue", "q")
        assert refused.returncode == 1, refused.stderr
        assert "CreateSchedule requires role 'writer' on namespace 'default'" in refused.stderr
        nokey = subprocess.run([SPINDLE, "schedule", "list", "--address", server.address], capture_output=True,
                               text=True, timeout=60, env={k: v for k, v in os.environ.items() if k != "SPINDLE_API_KEY"})
        assert nokey.returncode == 1 and "this server requires an API key" in nokey.stderr, nokey.stderr
