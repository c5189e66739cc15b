"""Every step leaves an exact trace: ``DslStep`` markers (guarded by ``patched("dsl-step-markers")``)."""

from __future__ import annotations

import asyncio

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import make_fixtures as mf
import pytest

from spindle.client import Client, History, HistoryEvent
from spindle.converter import DataConverter
from spindle.testing import Replayer
from spindle.worker import Worker

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def step_markers(history: History) -> list[tuple[str, str, dict[str, Any]]]:
    """(step, status, other details) of each DslStep marker, in history order."""
    out = []
    for event in history.events:
        if event.event_type == "MarkerRecorded" and event.attributes.get("marker_name") == "DslStep":
            wire = HistoryEvent.to_proto(event).marker_recorded_event_attributes.details
            details = {k: DataConverter.default.from_payloads(wire[k])[0] for k in wire}
            out.append((details.pop("step"), details.pop("status"), details))
    return out


def patches(history: History) -> list[str]:
    """The change ids of the Version markers (``workflow.patched``), in history order."""
    found = []
    for event in history.events:
        if event.event_type == "MarkerRecorded" and event.attributes.get("marker_name") == "Version":
            wire = HistoryEvent.to_proto(event).marker_recorded_event_attributes.details
            found.append(DataConverter.default.from_payloads(wire["change_id"])[0])
    return found


def _by_step(markers: list[tuple[str, str, dict[str, Any]]]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for step, status, _ in markers:
        found.setdefault(step, []).append(status)
    return found


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[Client]:
    c = await Client.connect("embedded:" + str(tmp_path / "markers.db"))
    try:
        yield c
    finally:
        await c.close()


async def test_every_step_kind_records_its_start_and_end(client: Client) -> None:
    wfs = mf.workflows()
    async with Worker(client, task_queue=mf.QUEUE, workflows=list(wfs.values()),
                      activities=[mf.inc, mf.record, mf.explode]):
        handle = await client.start_workflow(wfs["every_kind"], {"n": 1}, id="every", task_queue=mf.QUEUE)
        await handle.signal("approve", "yes")
        result = await asyncio.wait_for(handle.result(), 60)
        history = await handle.fetch_history()
    assert result == {"total": 9, "child": {"value": 3}, "approval": "yes", "fallback": 42}
    markers = step_markers(history)
    assert _by_step(markers) == {
        "first": ["completed"],                      # activities: the activity id says it started
        "fan": ["completed"],
        "child": ["started", "completed"],           # a child's id may be anything: announced
        "nap": ["started", "completed"],
        "approve": ["started", "completed"],
        "too_late": ["started", "failed"],
        "calc": ["completed"],                       # set: starts and ends at once
        "calc_skipped": ["skipped"],
        "guard": ["skipped"],
        "after_skip": ["skipped"],
        "risky": ["failed"],
        "join": ["completed"],
    }
    details = {(step, status): d for step, status, d in markers}
    assert details[("calc_skipped", "skipped")] == {"reason": "when"}
    assert details[("after_skip", "skipped")] == {"reason": "trigger_rule"}
    assert details[("too_late", "failed")] == {"error": "timed out after 0.1s waiting for signal 'never'"}
    assert details[("risky", "failed")]["handled"] is True
    # each patch once: the definition check (the DAG came in the start input) and the markers
    every = wfs["every_kind"]
    assert patches(history) == [f"dsl-definition/{every.definition_hash}", "dsl-step-markers"]
    await Replayer(workflows=list(wfs.values())).replay_workflow(history)


async def test_a_failed_run_names_its_failed_step_in_a_marker(client: Client) -> None:
    wfs = mf.workflows()
    async with Worker(client, task_queue=mf.QUEUE, workflows=list(wfs.values()),
                      activities=[mf.inc, mf.record, mf.explode]):
        handle = await client.start_workflow(wfs["saga"], {}, id="saga", task_queue=mf.QUEUE)
        with pytest.raises(Exception):  # noqa: B017 - the saga fails; the test checks its history
            await asyncio.wait_for(handle.result(), 60)
        history = await handle.fetch_history()
    assert [(s, st) for s, st, _ in step_markers(history)] == [
        ("reserve", "completed"), ("charge", "completed"), ("ship", "failed")]
