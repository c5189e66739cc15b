"""A worker runs only the YAML workflows it was given (issue 16).

Starting ``daily_sales`` by type name with a DAG of the caller's own (holding
``${{ 9**(9**9) }}``) used to run that DAG: it froze the worker, and the timed
out task then froze the next worker too. Now the DAG of a start input must hash
to the definition the worker loaded; anything else fails the execution with a
non-retryable ``DslUnknownDefinition`` before any of it is evaluated, and the
worker goes on serving. Running executions keep their DAG: the verdict is
recorded in history, so a worker with a newer version of the file (or a
replayer that knows no version at all) finishes or replays them as started.
"""

from __future__ import annotations

import asyncio
import textwrap
import uuid

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from spindle import dsl
from spindle.dsl import DslError
from spindle.dsl._model import ChildWorkflowCall, Retry, definition_hash
from spindle.dsl._runtime import (
    DEFINITION_ACCEPTED,
    DEFINITION_REFUSED,
    UNKNOWN_DEFINITION,
    SdkExecutor,
    definition_verdict,
)
from spindle.dsl._scheduler import StepError

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "reports" / "daily_sales.yaml"

#: The caller's own DAG, under the example's name, with an expression that froze workers.
EVIL = textwrap.dedent(
    """\
    name: daily_sales
    steps:
      - id: boom
        set: {v: "${{ 9**(9**9) }}"}
    """
)


def _load(text: str, file: str = "<string>") -> dsl.DslWorkflow:
    return dsl.load_text(textwrap.dedent(text), file=file)


# --- the hash ---------------------------------------------------------------------------------


def test_the_hash_is_of_the_content_not_of_where_the_file_is(tmp_path: Path) -> None:
    text = EXAMPLE.read_text()
    copy = tmp_path / "elsewhere.yaml"
    copy.write_text("# a comment, and the steps one line lower\n\n" + text)
    here, there = dsl.load(EXAMPLE), dsl.load(copy)
    assert here.dag_json["file"] != there.dag_json["file"]
    assert here.dag_json["positions"] != there.dag_json["positions"]
    assert here.definition_hash == there.definition_hash == definition_hash(there.dag_json)
    assert here.definition_hash.startswith("sha256:") and len(here.definition_hash) == 7 + 64
    edited = dsl.load_text(text.replace("maximum_attempts: 5", "maximum_attempts: 6"))
    assert edited.definition_hash != here.definition_hash


def test_the_start_input_carries_the_dag_and_its_hash() -> None:
    report = dsl.load(EXAMPLE)
    start = report.start_input({"date": "2024-05-01"})
    assert set(start) == {"dag", "definition", "inputs"}
    assert start["dag"] == report.dag_json
    assert start["definition"] == report.definition_hash


def test_yaml_dates_become_text_in_the_compiled_dag() -> None:
    wf = _load(
        """\
        name: dated
        steps:
          - {id: a, activity: f, args: [2024-05-01, 2024-05-01T10:00:00Z]}
        """
    )
    assert wf.dag_json["steps"][0]["kind"]["args"] == ["2024-05-01", "2024-05-01T10:00:00+00:00"]
    assert dsl.from_json(wf.dag_json).definition_hash == wf.definition_hash


def test_the_verdict_names_both_definitions() -> None:
    report = dsl.load(EXAMPLE)
    evil = dsl.load_text(EVIL)
    name, loaded = report.name, report.dag_json
    assert definition_verdict(report.start_input({"date": "d"}), name, loaded, report.definition_hash) == {
        "accepted": True, "definition": report.definition_hash,
    }
    verdict = definition_verdict(evil.start_input({}), name, loaded, report.definition_hash)
    assert verdict["accepted"] is False
    assert verdict["reason"] == (
        f"YAML workflow 'daily_sales': the DAG in the start input ({evil.definition_hash}) is not the "
        f"definition this worker runs (daily_sales version 1, {report.definition_hash}, loaded from {EXAMPLE}); "
        "a worker runs only the YAML workflows it was given: start it with the DslWorkflow "
        "(client.start_workflow(wf, inputs)) or by type name with the bare inputs"
    )
    lying = {**evil.start_input({}), "definition": report.definition_hash}  # claims the right hash
    verdict = definition_verdict(lying, name, loaded, report.definition_hash)
    assert verdict["accepted"] is False
    assert verdict["reason"].startswith(
        f"YAML workflow 'daily_sales': the start input says definition '{report.definition_hash}' but its DAG "
        f"hashes to {evil.definition_hash} (daily_sales version 1, {report.definition_hash}"
    )


# --- retry on workflow steps ------------------------------------------------------------------


def test_retry_on_a_workflow_step_is_refused_when_loading() -> None:
    for body in (
        "  - {id: c, workflow: child, retry: {maximum_attempts: 3}}\n",
        "  - {id: a, activity: f, on_failure: {workflow: child, retry: {maximum_attempts: 3}}}\n",
    ):
        with pytest.raises(DslError) as caught:
            dsl.load("name: w\nsteps:\n" + body)
        assert caught.value.reason == (
            "'retry' does not apply to a workflow step: a child workflow has no retry policy; give the "
            "activities inside the child their own 'retry'"
        )
        assert caught.value.step in ("c", "a")


def test_retry_on_a_workflow_step_is_refused_in_a_dag_from_json() -> None:
    wf = _load("name: w\nsteps:\n  - {id: c, workflow: child}\n")
    data = wf.dag_json
    data["steps"][0]["kind"]["retry"] = {"maximum_attempts": 3}
    with pytest.raises(DslError, match="'retry' does not apply to a workflow step"):
        dsl.from_json(data)


def test_a_recorded_dag_with_retry_on_a_child_fails_the_step_not_the_task() -> None:
    wf = _load("name: w\nsteps:\n  - {id: c, workflow: child}\n")
    call = ChildWorkflowCall(workflow="child", retry=Retry(maximum_attempts=3))
    with pytest.raises(StepError, match="'retry' is not supported on a workflow step"):
        asyncio.run(SdkExecutor(wf.dag).run_child(call, [], workflow_id="w/c"))


# --- end to end -------------------------------------------------------------------------------

pytest.importorskip("spindle.controlplane.embedded")

from examples.reports.activities import ACTIVITIES  # noqa: E402
from spindle.client import Client, HistoryEvent  # noqa: E402
from spindle.converter import DataConverter  # noqa: E402
from spindle.exceptions import ApplicationError, WorkflowFailureError  # noqa: E402
from spindle.testing import Replayer  # noqa: E402
from spindle.worker import Worker  # noqa: E402 - helpers defined above are used by this import

INPUTS = {"date": "2024-05-02", "regions": ["eu"], "publish": False}


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[Client]:
    connected = await Client.connect("embedded:" + str(tmp_path / "spindle.db"))
    try:
        yield connected
    finally:
        await connected.close()


def _queue() -> str:
    return f"defs-{uuid.uuid4().hex[:8]}"


async def _failure(handle: Any) -> ApplicationError:
    with pytest.raises(WorkflowFailureError) as caught:
        await asyncio.wait_for(handle.result(), 60)
    cause = caught.value.cause
    assert isinstance(cause, ApplicationError)
    return cause


def _markers(history: Any, name: str) -> list[dict[str, Any]]:
    found = []
    for event in history.events:
        if event.event_type == "MarkerRecorded" and event.attributes.get("marker_name") == name:
            wire = HistoryEvent.to_proto(event).marker_recorded_event_attributes.details
            found.append({key: DataConverter.default.from_payloads(wire[key])[0] for key in wire})
    return found


def _patches(history: Any) -> list[str]:
    return [marker["change_id"] for marker in _markers(history, "Version")]


async def test_a_dag_the_worker_was_not_given_fails_the_run_and_the_worker_goes_on(client: Client) -> None:
    report = dsl.load(EXAMPLE)
    evil = dsl.load_text(EVIL)
    queue = report.task_queue  # the example's activities run on its queue
    assert queue is not None
    async with Worker(client, task_queue=queue, workflows=[report], activities=ACTIVITIES):
        # by type name, with a DAG of the caller's own
        handle = await client.start_workflow("daily_sales", evil.start_input({}), id="evil", task_queue=queue)
        cause = await _failure(handle)
        assert cause.type == UNKNOWN_DEFINITION
        assert cause.non_retryable
        assert str(cause).startswith(
            f"YAML workflow 'daily_sales': the DAG in the start input ({evil.definition_hash}) is not the "
            f"definition this worker runs (daily_sales version 1, {report.definition_hash}"
        )
        history = await handle.fetch_history()
        types = [event.event_type for event in history.events]
        assert "WorkflowTaskFailed" not in types  # one task, failed by the workflow: no retry loop
        assert "ActivityTaskScheduled" not in types
        assert types[-1] == "WorkflowExecutionFailed"
        assert _patches(history) == [DEFINITION_REFUSED]  # the verdict, for replays
        assert not _markers(history, "SideEffect")

        # a start input lying about its hash fails the same way
        lying = {**evil.start_input({}), "definition": report.definition_hash}
        handle = await client.start_workflow("daily_sales", lying, id="lying", task_queue=queue)
        assert "the start input says definition" in str(await _failure(handle))

        # the worker still serves: the real definition, as a start input and by name with bare inputs
        good = await client.start_workflow(report, INPUTS, id="good", task_queue=queue)
        bare = await client.start_workflow("daily_sales", INPUTS, id="bare", task_queue=queue)
        expected = await asyncio.wait_for(good.result(), 60)
        assert expected["report"] is None and expected["orders"] > 0
        assert await asyncio.wait_for(bare.result(), 60) == expected
        good_history = await good.fetch_history()
    assert _patches(good_history) == [DEFINITION_ACCEPTED + report.definition_hash, "dsl-step-markers"]
    assert not _markers(good_history, "SideEffect")  # the DAG travels in the input, not in a marker
    # replays: the recorded verdict decides, whatever the replayer has loaded
    await Replayer(workflows=[report]).replay_workflow(good_history)
    await Replayer(workflows=[evil]).replay_workflow(good_history)
    await Replayer(workflows=[report]).replay_workflow(history)


async def test_a_worker_with_a_newer_file_finishes_a_run_started_with_the_old_one(client: Client,
                                                                                  tmp_path: Path) -> None:
    template = textwrap.dedent(
        """\
        name: approval
        version: VERSION
        steps:
          - {id: approve, wait_for_signal: approve}
          - {id: after, depends_on: [approve], set: {v: "VERSION ${{ steps.approve.result }}"}}
        outputs: {v: "${{ steps.after.result.v }}"}
        """
    )
    old = dsl.load_text(template.replace("VERSION", "1"))
    new = dsl.load_text(template.replace("VERSION", "2"))
    assert old.definition_hash != new.definition_hash
    queue = _queue()
    async with Worker(client, task_queue=queue, workflows=[old], max_cached_workflows=0):
        running = await client.start_workflow(old, {}, id="approval-old", task_queue=queue)
        for _ in range(200):  # until its first task completed (the verdict is in history)
            if _patches(await running.fetch_history()):
                break
            await asyncio.sleep(0.05)
    async with Worker(client, task_queue=queue, workflows=[new], max_cached_workflows=0):
        await running.signal("approve", "yes")
        assert await asyncio.wait_for(running.result(), 60) == {"v": "1 yes"}
        # a new start with the old DAG is refused by this worker: it was given version 2
        stale = await client.start_workflow("approval", old.start_input({}), id="approval-stale", task_queue=queue)
        assert (await _failure(stale)).type == UNKNOWN_DEFINITION
        history = await running.fetch_history()
    assert _patches(history)[0] == DEFINITION_ACCEPTED + old.definition_hash
    await Replayer(workflows=[new]).replay_workflow(history)
