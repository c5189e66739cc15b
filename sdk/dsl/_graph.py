"""The step graph: networkx DiGraph, cycles, ancestry, and text / DOT / SVG renderings.

SVG is drawn here with a small layered layout (layers = topological generations,
order inside a layer by the mean position of the parents), because no graphviz
binary is available and the picture should not depend on one.
"""

from __future__ import annotations

import json

from collections.abc import Iterable
from xml.sax.saxutils import escape

import networkx as nx

from spindle.dsl._model import Step, WorkflowDag

__all__ = [
    "ancestors",
    "iter_edges",
    "build_graph", "find_cycles", "layers", "step_label", "to_dot", "to_svg", "to_text"]


def build_graph(dag: WorkflowDag) -> nx.DiGraph:
    """A DiGraph with one node per step (document order) and an edge dep -> step.

    Edges to unknown steps are left out (validation reports them).
    """
    graph = nx.DiGraph(name=dag.name)
    for index, step in enumerate(dag.steps):
        graph.add_node(step.id, step=step, order=index)
    for step in dag.steps:
        for dep in step.depends_on:
            if dep in graph:
                graph.add_edge(dep, step.id)
    return graph


def find_cycles(graph: nx.DiGraph) -> list[list[str]]:
    """One cycle per strongly connected component, as step ids in dependency order.

    Each cycle starts at its step that comes first in the document, and lists the
    steps so that each depends on the one before it (and the first on the last).
    Cycles are sorted by their first step's position in the document.
    """
    order = nx.get_node_attributes(graph, "order")
    cycles: list[list[str]] = []
    for component in nx.strongly_connected_components(graph):
        if len(component) == 1:
            (node,) = component
            if graph.has_edge(node, node):
                cycles.append([node])
            continue
        start = min(component, key=order.__getitem__)
        sub = graph.subgraph(component)
        edges = nx.find_cycle(sub, source=start)
        cycle = [edge[0] for edge in edges]
        pivot = min(range(len(cycle)), key=lambda i: order[cycle[i]])
        cycles.append(cycle[pivot:] + cycle[:pivot])
    cycles.sort(key=lambda cycle: order[cycle[0]])
    return cycles


def layers(dag: WorkflowDag) -> list[list[Step]]:
    """Steps grouped by topological generation, document order inside each group."""
    graph = build_graph(dag)
    by_id = {step.id: step for step in dag.steps}
    return [
        sorted((by_id[node] for node in generation), key=lambda s: graph.nodes[s.id]["order"])
        for generation in nx.topological_generations(graph)
    ]


def step_label(step: Step) -> str:
    """A short description of what a step does, e.g. ``activity extract_sales``."""
    kind = step.kind
    value = {
        "activity": getattr(kind, "activity", ""),
        "workflow": getattr(kind, "workflow", ""),
        "sleep": f"{getattr(kind, 'seconds', 0):g}s",
        "wait_for_signal": getattr(kind, "signal", ""),
        "set": ", ".join(getattr(kind, "values", {})),
        "fail": "",
    }[kind.KIND]
    return f"{kind.KIND} {value}".strip()


def _annotations(step: Step) -> list[str]:
    notes: list[str] = []
    if step.for_each is not None:
        source = step.for_each if isinstance(step.for_each, str) else json.dumps(step.for_each)
        limit = f" (max {step.max_parallel})" if step.max_parallel else ""
        notes.append(f"for_each {source}{limit}")
    if step.when is not None:
        notes.append(f"when {step.when}")
    if step.trigger_rule != "none_skipped":
        notes.append(f"trigger_rule {step.trigger_rule}")
    if step.on_failure.action != "fail":
        handler = step.on_failure.handler
        notes.append(
            "on_failure " + (step.on_failure.action if handler is None else step_label(handler))
        )
    return notes


def to_text(dag: WorkflowDag) -> str:
    """A plain-text listing: steps in topological order with their upstream steps."""
    version = f" (version {dag.version})" if dag.version is not None else ""
    lines = [f"{dag.name}{version}: {len(dag.steps)} steps"]
    ordered = [step for layer in layers(dag) for step in layer]
    width = max(len(step.id) for step in ordered)
    kind_width = max(len(step_label(step)) for step in ordered)
    for step in ordered:
        line = f"  {step.id:<{width}}  {step_label(step):<{kind_width}}"
        if step.depends_on:
            line += "  <- " + ", ".join(step.depends_on)
        notes = _annotations(step)
        if notes:
            line += "  [" + "; ".join(notes) + "]"
        lines.append(line.rstrip())
    if dag.compensate:
        lines.append("compensate (reverse order of completion):")
        for comp in dag.compensate:
            lines.append(f"  {comp.step}: {step_label(comp.body)}")
    if dag.outputs:
        lines.append("outputs: " + ", ".join(dag.outputs))
    return "\n".join(lines) + "\n"


def _dot_id(text: str) -> str:
    return json.dumps(text)  # a double-quoted string with escapes, valid DOT


def to_dot(dag: WorkflowDag) -> str:
    """Graphviz DOT source (left to right, one box per step)."""
    lines = [
        f"digraph {_dot_id(dag.name)} {{",
        "  rankdir=LR;",
        '  node [shape=box, style="rounded,filled", fillcolor="#eef3fb", fontname="Helvetica"];',
    ]
    for step in dag.steps:
        label = "\n".join([step.id, step_label(step), *_annotations(step)])
        shape = ', shape=box3d' if step.for_each is not None else ""
        lines.append(f"  {_dot_id(step.id)} [label={_dot_id(label)}{shape}];")
    for step in dag.steps:
        for dep in step.depends_on:
            style = ' [style=dashed]' if step.when is not None else ""
            lines.append(f"  {_dot_id(dep)} -> {_dot_id(step.id)}{style};")
    lines.append("}")
    return "\n".join(lines) + "\n"


# --- SVG ---------------------------------------------------------------------

_BOX_W, _BOX_H, _GAP_X, _GAP_Y, _MARGIN = 180, 46, 60, 18, 20
_KIND_COLOURS = {
    "activity": "#dbe8fb",
    "workflow": "#e4dcf7",
    "sleep": "#f3f0d7",
    "wait_for_signal": "#fbe6d4",
    "set": "#e0f2e2",
    "fail": "#f8d7d7",
}


def _order_layers(dag: WorkflowDag) -> list[list[str]]:
    """Order nodes in each layer by the mean row of their parents (barycentre)."""
    rows: dict[str, float] = {}
    result: list[list[str]] = []
    for layer in layers(dag):
        def key(step: Step) -> tuple[float, int]:
            parents = [rows[d] for d in step.depends_on if d in rows]
            centre = sum(parents) / len(parents) if parents else float("inf")
            return (centre, dag.steps.index(step))

        ordered = sorted(layer, key=key)
        for row, step in enumerate(ordered):
            rows[step.id] = row
        result.append([step.id for step in ordered])
    return result


def _truncate(text: str, limit: int = 26) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def to_svg(dag: WorkflowDag) -> str:
    """A standalone SVG picture of the DAG (left to right, layered)."""
    columns = _order_layers(dag)
    tallest = max(len(column) for column in columns)
    height = 2 * _MARGIN + tallest * _BOX_H + (tallest - 1) * _GAP_Y + 20
    width = 2 * _MARGIN + len(columns) * _BOX_W + (len(columns) - 1) * _GAP_X
    at: dict[str, tuple[float, float]] = {}
    for col, column in enumerate(columns):
        offset = (tallest - len(column)) * (_BOX_H + _GAP_Y) / 2
        for row, step_id in enumerate(column):
            at[step_id] = (
                float(_MARGIN + col * (_BOX_W + _GAP_X)),
                _MARGIN + 20 + offset + row * (_BOX_H + _GAP_Y),
            )
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="Helvetica, Arial, sans-serif" font-size="12">',
        "<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"7\" "
        "markerHeight=\"7\" orient=\"auto-start-reverse\"><path d=\"M 0 0 L 10 5 L 0 10 z\" "
        "fill=\"#555\"/></marker></defs>",
        f'<text x="{_MARGIN}" y="{_MARGIN + 4}" font-weight="bold">{escape(dag.name)}</text>',
    ]
    for step in dag.steps:
        x2, y2 = at[step.id]
        for dep in step.depends_on:
            x1, y1 = at[dep]
            sx, sy, ex, ey = x1 + _BOX_W, y1 + _BOX_H / 2, x2, y2 + _BOX_H / 2
            mid = (sx + ex) / 2
            dash = ' stroke-dasharray="5,3"' if step.when is not None else ""
            parts.append(
                f'<path d="M {sx:g} {sy:g} C {mid:g} {sy:g}, {mid:g} {ey:g}, {ex:g} {ey:g}" '
                f'fill="none" stroke="#555"{dash} marker-end="url(#arrow)"/>'
            )
    for step in dag.steps:
        x, y = at[step.id]
        colour = _KIND_COLOURS.get(step.kind.KIND, "#eeeeee")
        notes = _annotations(step)
        title = escape("\n".join([step.id, step_label(step), *notes]))
        stack = ""
        if step.for_each is not None:  # a shadow box: this step fans out
            stack = (
                f'<rect x="{x + 4:g}" y="{y + 4:g}" width="{_BOX_W}" height="{_BOX_H}" rx="6" '
                f'fill="{colour}" stroke="#777"/>'
            )
        parts.append(
            f'<g class="step" data-step="{escape(step.id)}"><title>{title}</title>{stack}'
            f'<rect x="{x:g}" y="{y:g}" width="{_BOX_W}" height="{_BOX_H}" rx="6" fill="{colour}" '
            f'stroke="#333"/>'
            f'<text x="{x + 10:g}" y="{y + 19:g}" font-weight="bold">{escape(_truncate(step.id))}</text>'
            f'<text x="{x + 10:g}" y="{y + 36:g}" fill="#444">{escape(_truncate(step_label(step), 28))}'
            "</text></g>"
        )
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def ancestors(graph: nx.DiGraph, step_id: str) -> set[str]:
    """Every step that ``step_id`` depends on, directly or transitively."""
    return set(nx.ancestors(graph, step_id)) if step_id in graph else set()


def iter_edges(dag: WorkflowDag) -> Iterable[tuple[str, str]]:
    """``(dependency, dependant)`` pairs in document order."""
    for step in dag.steps:
        for dep in step.depends_on:
            yield dep, step.id
