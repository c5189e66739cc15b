"""YAML workflows end to end: embedded control plane, Worker, Python activities, replay."""

from __future__ import annotations

import asyncio
import json
import os
import textwrap
import uuid

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("spindle.controlplane.embedded")

from examples.reports.activities import ACTIVITIES  # noqa: E402
from spindle import (
    activity,  # noqa: E402
    dsl,  # noqa: E402
)
from spindle._workflow.replay import replay  # noqa: E402
from spindle.client import Client
from spindle.exceptions import ApplicationError, WorkflowFailureError  # noqa: E402
from spindle.worker import Worker

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "reports" / "daily_sales.yaml"
RESULT_TIMEOUT = 60


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[Client]:
    connected = await Client.connect("embedded:" + str(tmp_path / "spindle.db"))
    try:
        yield connected
    finally:
        await connected.close()


def _queue() -> str:
    return f"dsl-{uuid.uuid4().hex[:8]}"


async def _result(handle: Any) -> Any:
    return await asyncio.wait_for(handle.result(), RESULT_TIMEOUT)


def _load(text: str) -> dsl.DslWorkflow:
    return dsl.load(textwrap.dedent(text).strip("\n") + "\n")


# --------------------------------------------------------------------- activities

_journal: list[str] = []


@activity.defn(name="record")
async def record(label: str) -> str:
    _journal.append(label)
    return label


@activity.defn(name="explode")
async def explode(message: str) -> None:
    raise ApplicationError(message, type="Exploded", non_retryable=True)


@activity.defn(name="inc")
async def inc(n: int) -> int:
    return n + 1


TEST_ACTIVITIES: list[Callable[..., Any]] = [record, explode, inc]


def _expected_daily_sales(date: str, regions: list[str]) -> dict[str, Any]:
    from examples.reports.activities import RegionRequest, clean_sales, extract_sales, summarise_region

    rows = clean_sales(extract_sales(date))
    per_region = [summarise_region(RegionRequest(region, rows)) for region in regions]
    return {
        "revenue": round(sum(r["revenue"] for r in per_region), 2),
        "orders": sum(r["orders"] for r in per_region),
        "regions": per_region,
    }


async def test_daily_sales_end_to_end(client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPINDLE_REPORT_DIR", str(tmp_path / "reports"))
    report = dsl.load(EXAMPLE)
    async with Worker(client, task_queue="analytics", workflows=[report], activities=ACTIVITIES):
        handle = await client.start_workflow(
            report, report.start_input({"date": "2024-05-01"}), id="sales-2024-05-01", task_queue="analytics"
        )
        result = await _result(handle)
        history = await handle.fetch_history()
    expected = _expected_daily_sales("2024-05-01", ["eu", "us", "apac"])
    assert result == {"report": str(tmp_path / "reports" / "daily_sales_2024-05-01.json"), **expected}
    written = json.loads(Path(result["report"]).read_text())
    assert written["totals"] == {"revenue": expected["revenue"], "orders": expected["orders"], "regions": 3}
    scheduled = [e.attributes["activity_id"] for e in history.events if e.event_type == "ActivityTaskScheduled"]
    assert scheduled == ["extract", "clean", "per_region[0]", "per_region[1]", "per_region[2]", "publish"]
    started = history.to_proto_events()[0].workflow_execution_started_event_attributes
    (recorded,) = client.data_converter.from_payloads(started.input)
    assert recorded == report.start_input({"date": "2024-05-01"})  # the DAG travels in the input
    replay(report, history.to_proto_events())


async def test_bare_inputs_and_when_skip(client: Client) -> None:
    report = dsl.load(EXAMPLE)
    async with Worker(client, task_queue="analytics", workflows=[report], activities=ACTIVITIES):
        handle = await client.start_workflow(  # by type name: the bare inputs are sent
            report.name, {"date": "2024-05-02", "regions": ["eu"], "publish": False}, id="sales-bare",
            task_queue="analytics"
        )
        result = await _result(handle)
        history = await handle.fetch_history()
    assert result == {"report": None, **_expected_daily_sales("2024-05-02", ["eu"])}
    assert any(e.event_type == "MarkerRecorded" for e in history.events)  # the DAG, pinned in history
    replay(report, history.to_proto_events())


async def test_wrong_input_types_fail_naming_the_input(client: Client) -> None:
    report = dsl.load(EXAMPLE)
    with pytest.raises(dsl.DslError, match=r"daily_sales.yaml:14:3: input 'date' must be of type string, got integer 5$"):
        report.start_input({"date": 5})
    with pytest.raises(dsl.DslError, match="input 'date' must be of type string"):  # checked before starting
        await client.start_workflow(report, {"date": 5}, id="sales-bad", task_queue="analytics")
    assert await client.count_workflows("WorkflowId = 'sales-bad'") == 0
    async with Worker(client, task_queue="analytics", workflows=[report], activities=ACTIVITIES):
        # started by type name, the bare inputs are checked by the interpreter
        handle = await client.start_workflow(report.name, {"date": 5}, id="sales-bad", task_queue="analytics")
        with pytest.raises(WorkflowFailureError) as caught:
            await _result(handle)
    cause = caught.value.cause
    assert isinstance(cause, ApplicationError)
    assert cause.type == "DslInputError"
    assert str(cause).endswith("daily_sales.yaml:14:3: input 'date' must be of type string, got integer 5")


async def test_two_hundred_steps_and_a_thousand_item_fan_out_complete_and_replay(client: Client) -> None:
    lines = ["name: big_dag", "steps:", "  - {id: s0, activity: inc, args: [0]}"]
    for i in range(1, 200):
        lines.append(
            f"  - {{id: s{i}, activity: inc, depends_on: [s{i - 1}], args: ['${{{{ steps.s{i - 1}.result }}}}']}}"
        )
    big = dsl.load("\n".join(lines + ["outputs: {last: '${{ steps.s199.result }}'}"]) + "\n")
    fan = _load(
        """
        name: fan_out
        inputs:
          n: {type: integer, default: 1000}
        steps:
          - id: each
            activity: inc
            for_each: "${{ range(inputs.n) | list }}"
            max_parallel: 250
            args: ["${{ item }}"]
        outputs:
          count: "${{ steps.each.result | length }}"
          total: "${{ steps.each.result | sum }}"
          first: "${{ steps.each.result[0] }}"
          last: "${{ steps.each.result[-1] }}"
        """
    )
    queue = _queue()
    async with Worker(client, task_queue=queue, workflows=[big, fan], activities=TEST_ACTIVITIES):
        big_handle = await client.start_workflow(big, big.start_input({}), id="big", task_queue=queue)
        fan_handle = await client.start_workflow(fan, fan.start_input({}), id="fan", task_queue=queue)
        assert await asyncio.wait_for(big_handle.result(), 240) == {"last": 200}
        assert await asyncio.wait_for(fan_handle.result(), 240) == {
            "count": 1000, "total": sum(range(1, 1001)), "first": 1, "last": 1000,
        }
        big_history = await big_handle.fetch_history()
        fan_history = await fan_handle.fetch_history()
    replay(big, big_history.to_proto_events())
    replay(fan, fan_history.to_proto_events())


async def test_editing_the_yaml_keeps_the_running_execution_on_its_dag(client: Client, tmp_path: Path) -> None:
    path = tmp_path / "approval.yaml"
    template = textwrap.dedent(
        """
        name: approval_flow
        steps:
          - {id: before, activity: record, args: ["VERSION before"]}
          - {id: approval, wait_for_signal: approve, timeout: 1h, depends_on: [before]}
          - {id: after, activity: record, depends_on: [approval], args: ["VERSION after ${{ steps.approval.result }}"]}
        outputs: {after: "${{ steps.after.result }}"}
        """
    ).lstrip()
    path.write_text(template.replace("VERSION", "v1"))
    old = dsl.load(path)
    queue = _queue()
    async with Worker(client, task_queue=queue, workflows=[old], activities=TEST_ACTIVITIES, max_cached_workflows=0):
        running = await client.start_workflow(old, old.start_input({}), id="approval-old", task_queue=queue)
        await _until_waiting(running)
    path.write_text(template.replace("VERSION", "v2"))
    new = dsl.load(path)
    # A worker that only knows the edited file finishes the old execution on its old DAG
    # (no sticky cache: the whole history replays through the new worker's definition).
    async with Worker(client, task_queue=queue, workflows=[new], activities=TEST_ACTIVITIES, max_cached_workflows=0):
        await running.signal("approve", "yes")
        assert await _result(running) == {"after": "v1 after yes"}
        fresh = await client.start_workflow(new, new.start_input({}), id="approval-new", task_queue=queue)
        await _until_waiting(fresh)
        await fresh.signal("approve", "ok")
        assert await _result(fresh) == {"after": "v2 after ok"}
        old_history = await running.fetch_history()
    replay(new, old_history.to_proto_events())  # replays under the edited file too


async def _until_waiting(handle: Any) -> None:
    """Wait until the workflow has recorded the `before` step (and so waits on the signal)."""
    for _ in range(200):
        history = await handle.fetch_history()
        if any(e.event_type == "ActivityTaskCompleted" for e in history.events):
            types = [e.event_type for e in history.events]
            if types[-1] in ("WorkflowTaskCompleted", "TimerStarted"):
                return
        await asyncio.sleep(0.05)
    raise AssertionError("the workflow never reached its signal wait")


async def test_a_late_failure_compensates_in_reverse_order(client: Client) -> None:
    _journal.clear()
    saga = _load(
        """
        name: saga
        steps:
          - {id: reserve, activity: record, args: [reserve]}
          - {id: charge, activity: record, args: [charge], depends_on: [reserve]}
          - {id: notify, activity: record, args: [notify], depends_on: [reserve]}
          - {id: ship, activity: explode, args: [no truck], depends_on: [charge, notify]}
          - {id: never, activity: record, args: [never], depends_on: [ship]}
        compensate:
          - {step: reserve, activity: record, args: ["undo ${{ steps.reserve.result }}"]}
          - {step: charge, activity: record, args: ["undo ${{ steps.charge.result }}"]}
          - {step: never, activity: record, args: [undo never]}
        """
    )
    queue = _queue()
    async with Worker(client, task_queue=queue, workflows=[saga], activities=TEST_ACTIVITIES):
        handle = await client.start_workflow(saga, saga.start_input({}), id="saga", task_queue=queue)
        with pytest.raises(WorkflowFailureError) as caught:
            await _result(handle)
        history = await handle.fetch_history()
    cause = caught.value.cause
    assert isinstance(cause, ApplicationError)
    assert cause.type == "DslStepFailed"
    assert str(cause) == "step 'ship' failed: activity 'explode' (id ship) failed: no truck (compensated: charge, reserve)"
    assert _journal[:3] in (["reserve", "charge", "notify"], ["reserve", "notify", "charge"])
    assert _journal[3:] == ["undo charge", "undo reserve"]
    ids = [e.attributes["activity_id"] for e in history.events if e.event_type == "ActivityTaskScheduled"]
    assert ids[-2:] == ["compensate.charge", "compensate.reserve"]
    replay(saga, history.to_proto_events())


async def test_for_each_over_a_non_list_fails_clearly_in_history(client: Client) -> None:
    wf = _load(
        """
        name: bad_fan
        inputs:
          regions: {type: string, default: eu}
        steps:
          - {id: each, activity: record, for_each: "${{ inputs.regions }}", args: ["${{ item }}"]}
        """
    )
    queue = _queue()
    async with Worker(client, task_queue=queue, workflows=[wf], activities=TEST_ACTIVITIES):
        handle = await client.start_workflow(wf, wf.start_input({}), id="bad-fan", task_queue=queue)
        with pytest.raises(WorkflowFailureError) as caught:
            await _result(handle)
        history = await handle.fetch_history()
    message = "step 'each' failed: for_each must evaluate to a list, got str 'eu'"
    assert str(caught.value.cause) == message
    assert history.events[-1].event_type == "WorkflowExecutionFailed"
    assert message in json.dumps(history.events[-1].attributes)


async def test_yaml_child_workflow_signal_timeout_and_continue(client: Client) -> None:
    child = _load(
        """
        name: child_flow
        inputs:
          n: {type: integer, required: true}
        steps:
          - {id: bump, activity: inc, args: ["${{ inputs.n }}"]}
        outputs: {n: "${{ steps.bump.result }}"}
        """
    )
    parent = _load(
        """
        name: parent_flow
        steps:
          - {id: kid, workflow: child_flow, args: {n: 41}}
          - {id: wait, wait_for_signal: never_sent, timeout: 2s, on_failure: continue}
          - id: report
            depends_on: [kid, wait]
            set:
              child: "${{ steps.kid.result.n }}"
              wait: "${{ steps.wait.status }}: ${{ steps.wait.error }}"
        outputs: {report: "${{ steps.report.result }}"}
        """
    )
    queue = _queue()
    async with Worker(client, task_queue=queue, workflows=[parent, child], activities=TEST_ACTIVITIES):
        handle = await client.start_workflow(parent, parent.start_input({}), id="parent", task_queue=queue)
        result = await _result(handle)
    assert result == {
        "report": {"child": 42, "wait": "failed: timed out after 2s waiting for signal 'never_sent'"}
    }


def test_cli_run_embedded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from spindle.cli import main

    monkeypatch.setenv("SPINDLE_REPORT_DIR", str(tmp_path / "reports"))
    code = main([
        "dsl", "run", str(EXAMPLE), "--input", json.dumps({"date": "2024-05-03", "regions": ["us"]}),
        "--embedded", str(tmp_path / "cli.db"), "--activities", "examples.reports.activities",
    ])
    out = capsys.readouterr().out
    assert code == 0, out
    assert json.loads(out) == {
        "report": str(tmp_path / "reports" / "daily_sales_2024-05-03.json"),
        **_expected_daily_sales("2024-05-03", ["us"]),
    }


def _console_script_env() -> dict[str, str]:

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSAFEPATH")}
    return env


def test_console_script_run_finds_activities_from_the_working_directory(tmp_path: Path) -> None:
    """The command the DSL README gives works from the repository root with the `spindle` console script
    (which, unlike `python -m`, does not put the working directory on the import path by itself)."""
    import subprocess
    import sys

    spindle = Path(sys.executable).parent / "spindle"
    repo = Path(__file__).resolve().parents[3]
    env = {**_console_script_env(), "SPINDLE_REPORT_DIR": str(tmp_path / "reports")}
    done = subprocess.run(
        [str(spindle), "dsl", "run", "examples/reports/daily_sales.yaml",
         "--input", json.dumps({"date": "2024-05-03", "regions": ["us"]}),
         "--embedded", str(tmp_path / "cli.db"), "--activities", "examples.reports.activities"],
        cwd=repo, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["report"] == str(tmp_path / "reports" / "daily_sales_2024-05-03.json")


def test_console_script_run_reports_an_activities_import_error_before_starting(tmp_path: Path) -> None:
    """A module that cannot be imported is a usage error (exit 2) naming the option, not a workflow failure,
    and nothing is started (the database is never created)."""
    import subprocess
    import sys

    spindle = Path(sys.executable).parent / "spindle"
    repo = Path(__file__).resolve().parents[3]
    db = tmp_path / "cli.db"
    done = subprocess.run(
        [str(spindle), "dsl", "run", "examples/reports/daily_sales.yaml", "--input", '{"date": "2024-05-03"}',
         "--embedded", str(db), "--activities", "examples.reports.no_such_module"],
        cwd=repo, env=_console_script_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "--activities 'examples.reports.no_such_module': cannot import module 'examples.reports.no_such_module'" \
        in done.stderr
    assert "workflow failed" not in done.stderr
    assert not db.exists()
