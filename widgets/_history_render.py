"""From a :class:`HistoryGraphBuilder` to shapes, an SVG, and node descriptions."""

from __future__ import annotations

import datetime

from typing import Any

import networkx as nx

from spindle.widgets._graph_model import HistoryGraphBuilder
from spindle.widgets._graph_nodes import GraphNode
from spindle.widgets._payloads import failure_text, format_value, truncate
from spindle.widgets._svg import Shape, escape, render_graph

__all__ = ["build_line", "collapse_workflow_tasks", "describe_node", "history_svg", "node_shape", "node_tooltip"]

_FORMS = {
    "workflow_start": "pill", "workflow_close": "pill", "workflow_task": "dot", "marker": "tag",
    "signal": "tag", "update": "tag", "cancel_request": "tag", "search_attributes": "tag", "child": "double",
}


def _sublabel(node: GraphNode) -> str:
    if node.kind == "activity":
        tries = node.attempt_count
        attempts = f"{tries} attempts" if tries > 1 else node.status.replace("_", " ")
        return f"{node.details.get('activity_id', '')} · {attempts}"
    if node.kind == "child" and node.child:
        return node.child[0]
    if node.kind in ("workflow_start", "workflow_close"):
        return ""
    if node.kind == "workflow_task" and node.details.get("build"):
        return f"{node.status.replace('_', ' ')} · {node.details['build']}"
    return node.status.replace("_", " ")


def build_line(node: GraphNode) -> str:
    """``build orders.1.0 (pinned)`` for a workflow task a versioned worker ran ("" otherwise)."""
    build = node.details.get("build") if node.kind == "workflow_task" else None
    if not build:
        return ""
    behavior = node.details.get("versioning_behavior")
    return f"build {build}" + (f" ({behavior})" if behavior else "")


def _duration(node: GraphNode) -> str:
    if node.end_time is None:
        return ""
    seconds = (node.end_time - node.start_time).total_seconds()
    return f"{seconds * 1000:.0f} ms" if seconds < 10 else f"{seconds:.1f} s"


def node_tooltip(node: GraphNode) -> str:
    """One or more lines shown when hovering a node."""
    lines = [f"{node.label} ({node.kind.replace('_', ' ')}): {node.status.replace('_', ' ')}",
             f"events {node.event_ids[0]}–{node.event_ids[-1]}" if len(node.event_ids) > 1
             else f"event {node.first_event_id}"]
    if build_line(node):
        lines.append(build_line(node))
    if node.attempts:
        lines.append("attempts: " + ", ".join(f"#{a.number} {a.outcome}" for a in node.attempts))
    if _duration(node):
        lines.append(f"took {_duration(node)}")
    if node.failure:
        lines.append(truncate(failure_text(node.failure).splitlines()[0], 160)[0])
    return "\n".join(lines)


def node_shape(node: GraphNode) -> Shape:
    """The drawing of one history node."""
    return Shape(id=node.id, label=node.label, sublabel=_sublabel(node), status=node.status,
                 form=_FORMS.get(node.kind, "box"), tooltip=node_tooltip(node))


def collapse_workflow_tasks(graph: nx.DiGraph) -> nx.DiGraph:
    """The graph without workflow-task nodes: what woke a task links straight to what the task did."""
    out = nx.DiGraph(**graph.graph)
    keep = [n for n, d in graph.nodes(data=True) if d.get("kind") != "workflow_task"]
    out.add_nodes_from((n, graph.nodes[n]) for n in keep)
    for u, v, data in graph.edges(data=True):
        if u in out and v in out:
            out.add_edge(u, v, **data)
    for wft, data in graph.nodes(data=True):
        if data.get("kind") != "workflow_task":
            continue
        sources = _non_wft_ancestors(graph, wft)
        for _, target, edge in graph.out_edges(wft, data=True):
            if target in out:
                for source in sources:
                    if source != target and not out.has_edge(source, target):
                        out.add_edge(source, target, kind=edge.get("kind", "schedules"))
    return out


def _non_wft_ancestors(graph: nx.DiGraph, wft: str) -> list[str]:
    """The nearest non-workflow-task predecessors of ``wft`` (through chains of workflow tasks)."""
    found: list[str] = []
    seen = {wft}
    stack = [wft]
    while stack:
        for pred in graph.predecessors(stack.pop()):
            if pred in seen:
                continue
            seen.add(pred)
            if graph.nodes[pred].get("kind") == "workflow_task":
                stack.append(pred)
            else:
                found.append(pred)
    return found


def history_svg(builder: HistoryGraphBuilder, *, selected: str | None = None, show_workflow_tasks: bool = True,
                title: str | None = None) -> str:
    """The whole history graph as a standalone SVG document."""
    nodes = builder.nodes()
    graph = builder.graph
    if not show_workflow_tasks:
        graph = collapse_workflow_tasks(graph)
        nodes = [n for n in nodes if n.kind != "workflow_task"]
    if title is None:
        title = (f"{builder.workflow_type or 'workflow'} · {builder.workflow_id} · "
                 f"{builder.status.replace('_', ' ')} · {builder.last_event_id} events")
    return render_graph(graph, [node_shape(n) for n in nodes], title=title, selected=selected)


def _fmt_time(when: datetime.datetime | None) -> str:
    return when.isoformat(timespec="milliseconds") if when else "—"


def _section(name: str, text: str, limit: int) -> str:
    shown, cut = truncate(text, limit)
    more = f' <i style="color:#78909c">({len(text)} chars, truncated: tick "full text")</i>' if cut else ""
    return (f'<div><b>{escape(name)}</b>{more}<pre style="white-space:pre-wrap;line-height:1.3;max-height:24em;overflow:auto;'
            f'background:#f7f9fa;border:1px solid #e0e0e0;padding:4px;margin:2px 0">{escape(shown)}</pre></div>')


def _unwrap(values: list[Any]) -> Any:
    """A one-value payload list shows as the value itself."""
    return values[0] if len(values) == 1 else values


def describe_node(node: GraphNode, *, limit: int = 400) -> str:
    """HTML for the detail panel: facts, attempts, input, result and failure (cut to ``limit`` chars; 0 = all)."""
    rows = [("kind", node.kind.replace("_", " ")), ("status", node.status.replace("_", " ")),
            ("events", ", ".join(map(str, node.event_ids))), ("started", _fmt_time(node.start_time)),
            ("ended", _fmt_time(node.end_time))]
    rows += [(key, value if isinstance(value, str) else format_value(value)) for key, value in node.details.items()
             if key != "retry_policy"]
    if node.child:
        rows.append(("child run", f"{node.child[0]} / {node.child[1] or '—'}"))
    table = "".join(f"<tr><td style='color:#546e7a;padding-right:8px;vertical-align:top'>{escape(k)}</td>"
                    f"<td style='word-break:break-all'>{escape(v)}</td></tr>" for k, v in rows)
    parts = [f"<div class='spindle-detail'><h4 style='margin:4px 0'>{escape(node.label)}</h4>"
             f"<table style='font-size:12px'>{table}</table>"]
    if node.attempts:
        items = []
        for attempt in node.attempts:
            took = ""
            if attempt.started_time and attempt.end_time:
                took = f" in {(attempt.end_time - attempt.started_time).total_seconds() * 1000:.0f} ms"
            line = f"#{attempt.number}: {attempt.outcome}{took}"
            if attempt.failure:
                line += " — " + failure_text(attempt.failure).splitlines()[0]
            if attempt.retry_state:
                line += f" [{attempt.retry_state.removeprefix('RETRY_STATE_').lower()}]"
            items.append(f"<li>{escape(line)}</li>")
        parts.append(f"<div><b>attempts ({node.attempt_count}, {node.retries} retries)</b>"
                     f"<ul style='margin:2px 0'>{''.join(items)}</ul></div>")
    if node.input is not None:
        parts.append(_section("input", format_value(_unwrap(node.input)), limit))
    if node.result is not None:
        parts.append(_section("result", format_value(_unwrap(node.result)), limit))
    if node.failure:
        parts.append(_section("failure", failure_text(node.failure, with_stack=True), limit))
    parts.append("</div>")
    return "".join(parts)
