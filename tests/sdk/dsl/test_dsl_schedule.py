"""A YAML workflow's ``schedule:`` block and ``spindle dsl schedule FILE`` (issue 17).

The block is checked like the rest of the document (errors at FILE:LINE:COLUMN naming the
key); it is not part of the compiled DAG, so adding one does not change the definition
hash. ``dsl schedule`` builds a schedule that starts the workflow with its DAG; here it
fires in virtual time and a worker given the same document runs it.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from spindle import dsl
from spindle.cli import main
from spindle.cli.dsl import PreparedSchedule, prepare_schedule
from spindle.cli.dsl import schedule as dsl_schedule_command
from spindle.client import ScheduleOverlapPolicy, decoded_args
from spindle.testing import WorkflowEnvironment
from spindle.worker import Worker

UTC = timezone.utc

BODY = """\
name: daily_sales
task_queue: analytics
inputs:
  date: {type: string, required: true}
  top: {type: integer, default: 3}
steps:
  - id: report
    set: {line: "${{ inputs.date }} top ${{ inputs.top }}"}
outputs:
  line: "${{ steps.report.result.line }}"
"""

BLOCK = """\
schedule:
  id: sales-every-morning
  cron: "0 6 * * *"
  time_zone: Europe/Berlin
  inputs: {date: today}
  overlap: allow_all
"""


def write(tmp_path: Path, text: str, name: str = "sales.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_the_schedule_block_is_read_and_left_out_of_the_dag_and_its_hash() -> None:
    with_block = dsl.load(BODY + BLOCK)
    plain = dsl.load(BODY)
    s = with_block.schedule
    assert s is not None and plain.schedule is None
    assert (s.id, s.cron, s.intervals, s.time_zone, s.inputs, s.overlap) == (
        "sales-every-morning", ("0 6 * * *",), (), "Europe/Berlin", {"date": "today"}, "allow_all")
    assert with_block.definition_hash == plain.definition_hash
    assert "schedule" not in with_block.dag_json
    lists = dsl.load(BODY + 'schedule:\n  cron: ["@daily", "30 2 * * 1-5"]\n  interval: [1h, 1d/6h]\n  jitter: 30s\n')
    assert lists.schedule is not None
    assert lists.schedule.cron == ("@daily", "30 2 * * 1-5")
    assert lists.schedule.intervals == ((3600, 0), (86400, 21600))
    assert lists.schedule.jitter == 30


@pytest.mark.parametrize(("block", "line", "column", "says"), [
    ("schedule:\n  cron: '61 * * * *'\n", 12, 9, "'schedule.cron': cron expression '61 * * * *': field 1 (minute)"),
    ("schedule:\n  cron: ['@daily', '@every 5m']\n", 12, 20, "unknown alias"),
    ("schedule:\n  interval: 1h/2h\n", 12, 13, "'schedule.interval': '1h/2h': offset (2:00:00) must be shorter"),
    ("schedule:\n  interval: often\n", 12, 13, "'schedule.interval': bad duration 'often'"),
    ("schedule:\n  cron: '@daily'\n  time_zone: Europe/berlin\n", 13, 14, "'schedule.time_zone': 'Europe/berlin' is not a known IANA time zone; did you mean 'Europe/Berlin'"),
    ("schedule:\n  cron: '@daily'\n  inputs: {day: x}\n", 13, 12, "unknown input 'day' (declared: date, top)"),
    ("schedule:\n  cron: '@daily'\n  inputs: {top: many}\n", 13, 17, "input 'top' must be of type integer, got string"),
    ("schedule:\n  cron: '@daily'\n  overlap: sometimes\n", 13, 12, "use one of skip, buffer_one"),
    ("schedule:\n  cron: '@daily'\n  every: 1h\n", 13, 3, "unknown key 'every' in 'schedule'"),
    ("schedule:\n  time_zone: UTC\n", 12, 3, "'schedule' needs 'cron' or 'interval'"),
    ("schedule: daily\n", 11, 11, "'schedule' must be a mapping"),
])
def test_a_bad_schedule_block_names_the_key_line_and_column(block: str, line: int, column: int, says: str) -> None:
    with pytest.raises(dsl.DslError) as info:
        dsl.load(BODY + block)
    err = info.value
    assert says in err.reason, err
    assert (err.line, err.column) == (line, column), err
    assert str(err).startswith(f"<string>:{line}:{column}: ")


def prepared(*argv: str) -> PreparedSchedule:
    """What ``spindle dsl schedule ARGV`` would create (the flags parsed as the command line parses them)."""
    params = dsl_schedule_command.make_context("schedule", list(argv)).params
    return prepare_schedule(params["file"], **{k: params[k] for k in (
        "cron", "interval", "phase", "tz", "input", "schedule_id", "workflow_id", "task_queue", "overlap", "paused")})


def test_flags_override_the_block(tmp_path: Path) -> None:
    path = str(write(tmp_path, BODY + BLOCK))
    args = prepared(path)
    s = args.schedule
    assert args.schedule_id == "sales-every-morning"
    assert s.spec.cron_expressions == ("0 6 * * *",) and s.spec.time_zone_name == "Europe/Berlin"
    assert s.policy.overlap is ScheduleOverlapPolicy.ALLOW_ALL
    assert (s.action.workflow, s.action.id, s.action.task_queue) == ("daily_sales", "sales-every-morning", "analytics")
    [start] = s.action.args  # the inputs travel with the compiled DAG, as for dsl run
    assert start["inputs"] == {"date": "today", "top": 3} and start["dag"]["name"] == "daily_sales"

    args = prepared(path, "--interval", "1h/15m", "--input", '{"date": "x", "top": 9}', "--schedule-id", "other",
                    "--tz", "UTC", "--overlap", "skip", "--task-queue", "q2", "--workflow-id", "runs")
    s = args.schedule
    assert s.spec.cron_expressions == () and s.spec.intervals[0].offset == timedelta(minutes=15)
    assert s.spec.time_zone_name == "UTC" and s.policy.overlap is ScheduleOverlapPolicy.SKIP
    assert (args.schedule_id, s.action.id, s.action.task_queue) == ("other", "runs", "q2")
    assert s.action.args[0]["inputs"] == {"date": "x", "top": 9}

    args = prepared(str(write(tmp_path, BODY, "plain.yaml")), "--cron", "0 6 * * *", "--input", '{"date": "d"}')
    assert args.schedule_id == "daily_sales" and args.schedule.spec.time_zone_name == "UTC"


@pytest.mark.parametrize(("text", "argv", "says"), [
    (BODY, [], "no schedule: give --cron or --interval, or add a 'schedule:' block"),
    (BODY, ["--cron", "@daily"], "missing required input 'date' (string) (give the inputs with --input"),
    (BODY, ["--cron", "@daily", "--input", "[1]"], "--input: expected a JSON object"),
    (BODY, ["--cron", "@daily", "--input", "{no"], "--input: not valid JSON"),
    (BODY + "schedule:\n  cron: '@daily'\n", [], "missing required input 'date'"),
    (BODY, ["--cron", "@daily", "--input", '{"date": 5}'], "--input: "),
    (BODY.replace("task_queue: analytics\n", ""), ["--cron", "@daily", "--input", '{"date": "d"}'],
     "--task-queue: required"),
    (BODY + "schedule:\n  cron: nope\n", [], "sales.yaml:12:9: 'schedule.cron'"),
])
def test_dsl_schedule_refuses_what_it_cannot_schedule_with_exit_2(tmp_path: Path, text: str, argv: list[str],
                                                                   says: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(write(tmp_path, text))
    assert main(["dsl", "schedule", path, "--address", "127.0.0.1:1", *argv]) == 2
    assert says in capsys.readouterr().err


def test_dsl_schedule_creates_the_schedule(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(write(tmp_path, BODY + BLOCK))
    db = tmp_path / "cp.db"
    assert main(["dsl", "schedule", path, "--address", f"embedded:{db}"]) == 0
    out = capsys.readouterr().out
    assert '"schedule_id": "sales-every-morning"' in out and '"workflow_type": "daily_sales"' in out
    assert main(["schedule", "describe", "-s", "sales-every-morning", "--address", f"embedded:{db}"]) == 0
    assert '"time_zone_name": "Europe/Berlin"' in capsys.readouterr().out


async def test_the_scheduled_yaml_workflow_runs_at_six_in_berlin(tmp_path: Path) -> None:
    path = str(write(tmp_path, BODY + BLOCK))
    args = prepared(path)
    async with await WorkflowEnvironment.start_time_skipping(start_time=datetime(2026, 12, 1, 12, tzinfo=UTC)) as env:
        handle = await env.client.create_schedule(args.schedule_id, args.schedule)
        desc = await handle.describe()
        assert desc.info.next_action_times[0] == datetime(2026, 12, 2, 5, tzinfo=UTC)  # 06:00 CET
        assert decoded_args(desc.schedule.action)[0]["inputs"] == {"date": "today", "top": 3}
        async with Worker(env.client, task_queue="analytics", workflows=[dsl.load(path)]):
            await env.sleep(timedelta(hours=17, minutes=1))
            run = env.client.get_workflow_handle("sales-every-morning-2026-12-02T05:00:00Z")
            assert await run.result() == {"line": "today top 3"}
