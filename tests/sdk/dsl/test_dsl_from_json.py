"""``spindle.dsl.from_json``: a DslWorkflow rebuilt from the compiled DAG an execution carries."""

from __future__ import annotations

import copy
import json

from pathlib import Path

import pytest

from spindle import dsl
from spindle.client import History
from spindle.testing import Replayer

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.mark.parametrize("path", [ROOT / "examples" / "reports" / "daily_sales.yaml", FIXTURES / "every_kind.yaml",
                                  FIXTURES / "saga.yaml"], ids=lambda p: p.stem)
def test_round_trip(path: Path) -> None:
    wf = dsl.load(path)
    again = dsl.from_json(wf.dag_json)
    assert isinstance(again, dsl.DslWorkflow)
    assert again.dag_json == wf.dag_json
    assert (again.name, again.version, again.file) == (wf.name, wf.version, wf.file)
    assert again.to_text() == wf.to_text()
    assert dsl.from_json(json.dumps(wf.dag_json)).dag_json == wf.dag_json  # JSON text too


def test_rejects_what_is_not_a_compiled_dag() -> None:
    with pytest.raises(ValueError, match="format"):
        dsl.from_json({"format": "something/9", "steps": []})
    with pytest.raises(ValueError, match="malformed"):
        dsl.from_json({"format": "spindle.dsl/1"})
    wf = dsl.load(FIXTURES / "saga.yaml")
    edited = copy.deepcopy(wf.dag_json)
    edited["steps"][0]["depends_on"] = ["ship"]  # reserve -> ... -> ship -> reserve
    with pytest.raises(dsl.DslError, match="cycle"):
        dsl.from_json(edited)


async def test_the_dag_an_execution_carries_replays_its_history() -> None:
    """Replay a recorded execution with the DAG read from the history itself (no YAML file)."""
    history = History.from_json((FIXTURES / "pre_markers_every_kind_pinned.json").read_text())
    started = history.to_proto_events()[0].workflow_execution_started_event_attributes
    from spindle.converter import DataConverter

    (arg,) = DataConverter.default.from_payloads(started.input)
    rebuilt = dsl.from_json(arg["dag"])
    assert rebuilt.name == "every_kind"
    child = dsl.load(FIXTURES / "child_flow.yaml")
    await Replayer(workflows=[rebuilt, child]).replay_workflow(history)
