"""History -> causal graph, on histories recorded from real runs (``make_fixtures.py``)."""

from __future__ import annotations

import collections
import gzip
import re

from widget_fixtures import FIXTURES, load

from spindle.client import History
from spindle.widgets._graph_activity_events import ActivityEvents
from spindle.widgets._graph_builder_state import BuilderState
from spindle.widgets._graph_command_events import CommandEvents
from spindle.widgets._graph_message_events import MessageEvents
from spindle.widgets._graph_model import HistoryGraphBuilder, build_graph
from spindle.widgets._graph_workflow_events import WorkflowEvents
from spindle.widgets._history_render import collapse_workflow_tasks, history_svg
from spindle.widgets._payloads import decode_payload, failure_text
from spindle.widgets._timeline import timeline_svg

NODE = re.compile(r'class="spindle-node(?: selected)?"')


def _kinds(builder: HistoryGraphBuilder) -> dict[str, int]:
    return dict(collections.Counter(n.kind for n in builder.nodes()))


def test_kitchen_nodes_edges_and_statuses(kitchen: History) -> None:
    b = build_graph(kitchen)
    assert b.status == "completed" and b.workflow_type == "Kitchen"
    assert b.graph.number_of_nodes() == 22
    assert b.graph.number_of_edges() == 20
    assert _kinds(b) == {"workflow_start": 1, "workflow_task": 10, "marker": 2, "activity": 4, "timer": 1,
                         "child": 1, "update": 1, "signal": 1, "workflow_close": 1}
    statuses = {n.id: n.status for n in b.nodes() if n.kind != "workflow_task"}
    assert statuses == {
        "start": "completed", "marker:5": "recorded", "marker:6": "recorded", "activity:7": "completed",
        "activity:17": "failed", "activity:23": "completed", "activity:24": "completed", "timer:35": "fired",
        "child:40": "completed", "update:52": "completed", "signal:54": "received", "close": "completed",
    }
    assert b.node("marker:5").label == "version discount-v2=2"
    assert b.node("marker:6").label == "side effect #1"


def test_retried_activity_carries_its_attempts(kitchen: History) -> None:
    flaky = build_graph(kitchen).node("activity:7")
    assert [a.number for a in flaky.attempts] == [1, 2, 3]
    assert [a.outcome for a in flaky.attempts] == ["failed", "failed", "completed"]
    assert [a.retry_state for a in flaky.attempts[:2]] == ["RETRY_STATE_IN_PROGRESS"] * 2
    assert flaky.retries == 2
    assert flaky.input == ["order-7"] and flaky.result == ["ok order-7 after 3 attempts"]
    assert "transient failure on attempt 1" in failure_text(flaky.attempts[0].failure)
    assert flaky.failure is None  # retried failures are not the activity's outcome


def test_final_failure_and_failed_workflow() -> None:
    b = build_graph(load("doomed.json"))
    activity = b.node("activity:5")
    assert activity.status == "failed" and len(activity.attempts) == 2
    assert activity.details["retry_state"] == "RETRY_STATE_MAXIMUM_ATTEMPTS_REACHED"
    assert b.status == "failed" and b.node("close").status == "failed"
    assert "transient failure on attempt 2" in failure_text(b.node("close").failure)


def test_non_retryable_failure_details_are_decoded(kitchen: History) -> None:
    declined = build_graph(kitchen).node("activity:17")
    text = failure_text(declined.failure)
    assert text.startswith("CardDeclined: card declined")
    assert '{"code": 402}' in text and "non-retryable" in text


def test_causal_edges(kitchen: History) -> None:
    g = build_graph(kitchen).graph
    edge = lambda u, v: g.edges[u, v]["kind"]  # noqa: E731
    assert edge("start", "wft:2") == "triggers"
    assert edge("wft:2", "activity:7") == "schedules"
    assert edge("activity:7", "wft:14") == "triggers"  # the completion woke the next workflow task
    assert edge("wft:20", "activity:23") == edge("wft:20", "activity:24") == "schedules"
    assert edge("timer:35", "wft:37") == "triggers"
    assert edge("child:40", "wft:42") == edge("child:40", "wft:46") == "triggers"  # started, then completed
    assert edge("wft:46", "wft:49") == "next"  # the update's task: nothing in history woke it
    assert edge("wft:49", "update:52") == "schedules"
    assert edge("signal:54", "wft:55") == "triggers"
    assert edge("wft:55", "close") == "closes"


def test_child_expansion_from_recorded_histories(kitchen: History, kitchen_child: History) -> None:
    from spindle.widgets import HistoryGraph

    graph = HistoryGraph(kitchen, child_histories=[kitchen_child])
    child_node = graph.node("child:40")
    assert child_node.child == ("kitchen-1-child", kitchen_child.run_id)
    child = graph.expand_child("child:40")
    assert child.model.workflow_type == "Child" and child.status == "completed"
    assert child.graph.number_of_nodes() == 5
    assert child.node("activity:5").result == [42]
    assert graph.expand_child("child:40") is child
    assert child in graph.expanded.children[0].children
    graph.close()


def test_incremental_feeding_matches_whole_history(kitchen: History) -> None:
    whole = build_graph(kitchen)
    step = HistoryGraphBuilder(kitchen.workflow_id, kitchen.run_id)
    for end in range(5, len(kitchen.events) + 5, 7):
        step.add_events(kitchen.events[:end])  # overlapping re-feeds are ignored
    assert set(step.graph.nodes) == set(whole.graph.nodes)
    assert set(step.graph.edges) == set(whole.graph.edges)
    assert [n.status for n in step.nodes()] == [n.status for n in whole.nodes()]


def test_each_event_type_has_one_handler_group() -> None:
    # The builder merges the groups' tables: an event type claimed twice would silently go to the last group.
    state = BuilderState("w", "r")
    tables = [group(state).handlers() for group in (WorkflowEvents, ActivityEvents, MessageEvents, CommandEvents)]
    names = [name for table in tables for name in table]
    assert len(names) == len(set(names)) == 42


def test_running_dsl_history_has_open_nodes() -> None:
    b = build_graph(load("dsl_running.json"))
    assert b.status == "running" and "close" not in b.graph
    assert b.node("start").status == "running"


def test_collapsed_workflow_tasks(kitchen: History) -> None:
    g = collapse_workflow_tasks(build_graph(kitchen).graph)
    assert not [n for n, d in g.nodes(data=True) if d["kind"] == "workflow_task"]
    assert g.has_edge("activity:7", "activity:17") and g.has_edge("signal:54", "close")
    assert g.has_edge("start", "activity:7")


def test_svg_and_timeline(kitchen: History) -> None:
    b = build_graph(kitchen)
    svg = history_svg(b, selected="activity:7")
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    assert len(NODE.findall(svg)) == 22
    assert 'data-node-id="activity:7"' in svg and 'class="spindle-node selected"' in svg
    assert 'class="spindle-legend"' in svg and ">failed</text>" in svg
    timeline = timeline_svg(b)
    assert timeline.count('class="spindle-bar"') == 1 + 3 + 1 + 1 + 1 + 1 + 1  # run, flaky x3, others, timer, child
    assert 'data-node-id="timer:35"' in timeline


def test_five_thousand_event_history_renders() -> None:
    history = History.from_json(gzip.decompress((FIXTURES / "big.json.gz").read_bytes()))
    assert len(history.events) >= 5000
    b = build_graph(history)
    assert b.status == "completed"
    assert _kinds(b)["activity"] == 25 * 66
    svg = history_svg(b)
    assert len(NODE.findall(svg)) == b.graph.number_of_nodes()
    assert timeline_svg(b).count("more rows not shown") == 1


def test_payload_decoding() -> None:
    assert decode_payload({"metadata": {"encoding": "anNvbi9wbGFpbg=="}, "data": "eyJhIjogMX0="}) == {"a": 1}
    assert decode_payload({"metadata": {"encoding": "YmluYXJ5L251bGw="}}) is None
    opaque = decode_payload({"metadata": {"encoding": "YmluYXJ5L2VuY3J5cHRlZA=="}, "data": "AAEC"})
    assert repr(opaque) == "<binary/encrypted, 3 bytes>"
