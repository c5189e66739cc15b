"""Histories recorded by older interpreters still replay under the current one.

``fixtures/pre_markers_*.json`` were recorded (by ``make_fixtures.py``) before the
interpreter recorded ``DslStep`` markers; the markers are guarded by
``workflow.patched("dsl-step-markers")``, so replaying these histories must issue
exactly the commands they recorded.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from spindle import dsl
from spindle.client import History
from spindle.testing import Replayer

FIXTURES = Path(__file__).resolve().parent / "fixtures"
PRE_MARKERS = sorted(FIXTURES.glob("pre_markers_*.json"))
WITH_MARKERS = sorted(FIXTURES.glob("markers_*.json"))


def _replayer() -> Replayer:
    return Replayer(workflows=[dsl.load(FIXTURES / f"{n}.yaml") for n in ("every_kind", "child_flow", "saga")])


def test_the_pre_marker_fixtures_exist() -> None:
    assert {p.name for p in PRE_MARKERS} == {
        "pre_markers_every_kind_bare.json", "pre_markers_every_kind_pinned.json",
        "pre_markers_child_flow.json", "pre_markers_saga.json"}


@pytest.mark.parametrize("path", PRE_MARKERS, ids=lambda p: p.stem)
async def test_histories_recorded_before_step_markers_replay(path: Path) -> None:
    history = History.from_json(path.read_text())
    assert not [e for e in history.events if e.attributes.get("marker_name") == "DslStep"]
    await _replayer().replay_workflow(history)


async def test_all_pre_marker_histories_replay_in_one_report() -> None:
    report = await _replayer().replay_workflows([History.from_json(p.read_text()) for p in PRE_MARKERS])
    assert report.ok, report.format()


@pytest.mark.parametrize("path", WITH_MARKERS, ids=lambda p: p.stem)
async def test_histories_with_step_markers_replay(path: Path) -> None:
    history = History.from_json(path.read_text())
    assert [e for e in history.events if e.attributes.get("marker_name") == "DslStep"]
    await _replayer().replay_workflow(history)


CHECKED = FIXTURES / "checked_every_kind_pinned.json"


def _patches(history: History) -> list[str]:
    from spindle.client import HistoryEvent
    from spindle.converter import DataConverter

    found = []
    for event in history.events:
        if event.event_type == "MarkerRecorded" and event.attributes.get("marker_name") == "Version":
            wire = HistoryEvent.to_proto(event).marker_recorded_event_attributes.details
            found.append(DataConverter.default.from_payloads(wire["change_id"])[0])
    return found


async def test_a_history_with_the_definition_check_replays_whatever_the_replayer_loaded(tmp_path: Path) -> None:
    """``checked_every_kind_pinned.json`` (``make_fixtures.py checked``): the verdict is read from history."""
    history = History.from_json(CHECKED.read_text())
    (accepted,) = [p for p in _patches(history) if p.startswith("dsl-definition/")]
    assert accepted == "dsl-definition/" + dsl.load(FIXTURES / "every_kind.yaml").definition_hash
    await _replayer().replay_workflow(history)
    edited = tmp_path / "every_kind.yaml"  # a newer version of the file: another hash
    edited.write_text((FIXTURES / "every_kind.yaml").read_text().replace("version: 1", "version: 99", 1))
    newer = dsl.load(edited)
    assert "dsl-definition/" + newer.definition_hash != accepted
    await Replayer(workflows=[newer, dsl.load(FIXTURES / "child_flow.yaml")]).replay_workflow(history)
