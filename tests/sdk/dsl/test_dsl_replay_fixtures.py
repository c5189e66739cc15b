"""Histories recorded by older interpreters still replay under the current one.

``fixtures/pre_markers_*.json`` were recorded (by ``make_fixtures.py``) before the
interpreter recorded ``DslStep`` markers; the markers are guarded by
``workflow.patched("dsl-step-markers")``, so replaying these histories must issue
exactly the commands they recorded.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from spindle import History, dsl
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
