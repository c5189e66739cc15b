"""DagView: the YAML DAG as a graph, step states derived from recorded DSL histories."""

from __future__ import annotations

import re

import pytest

from widget_fixtures import FIXTURES, load

from spindle import dsl
from spindle.widgets import DagView

NODE = re.compile(r'class="spindle-node(?: selected)?" data-node-id="([^"]+)" data-status="([^"]*)"')


def _states(view: DagView) -> dict[str, str]:
    return {step: state.status for step, state in view.states.items()}


def test_bare_dag_from_yaml_file() -> None:
    view = DagView(FIXTURES / "dsl.yaml")
    assert sorted(view.graph.edges) == sorted([
        ("extract", "per_region"), ("extract", "risky"), ("per_region", "totals"), ("totals", "pause"),
        ("pause", "approval"), ("approval", "publish"), ("approval", "archive")])
    assert view.states == {}
    nodes = dict(NODE.findall(view.to_svg()))
    assert set(nodes) == {"extract", "per_region", "risky", "totals", "pause", "approval", "publish", "archive"}
    assert set(nodes.values()) == {""}
    view.close()


def test_states_of_a_running_execution() -> None:
    view = DagView(dsl.load(FIXTURES / "dsl.yaml"), load("dsl_running.json"))
    assert _states(view) == {"extract": "done", "per_region": "done", "risky": "failed", "totals": "done",
                             "pause": "done", "approval": "running", "publish": "pending", "archive": "pending"}
    assert view.states["per_region"].nodes == ["activity:13", "activity:14"]  # one per for_each item
    assert view.states["totals"].note.startswith("inferred")
    svg_states = dict(NODE.findall(view.to_svg()))
    assert svg_states["approval"] == "running" and svg_states["risky"] == "failed"
    view.close()


def test_states_of_a_finished_execution_with_the_dag_read_from_history() -> None:
    view = DagView(None, load("dsl_done.json"))  # the run recorded its DAG in a SideEffect marker
    assert view.dag is not None and view.dag["name"] == "sales_report"
    assert _states(view) == {"extract": "done", "per_region": "done", "risky": "failed", "totals": "done",
                             "pause": "done", "approval": "done", "publish": "done", "archive": "skipped"}
    view.select("publish")
    assert "publish_report" in view.detail.value and "activity id" in view.detail.value
    view.close()


def test_dag_view_needs_something() -> None:
    with pytest.raises(ValueError):
        DagView()
