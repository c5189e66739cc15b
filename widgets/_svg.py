"""Standalone SVG drawing of a laid-out graph: nodes coloured by status, edges, a legend.

No JavaScript and no external resources: the output renders in a notebook, in
the static HTML export and in any browser. Each node is a
``<g class="spindle-node" data-node-id=... data-status=...>`` with a ``<title>``
tooltip, so tests (and people) can find it in the DOM.
"""

from __future__ import annotations

import dataclasses

from collections.abc import Hashable, Iterable, Sequence

import networkx as nx

from spindle.widgets._layout import Box, Layout, layered_layout

__all__ = [
    "EDGE_STYLE",
    "PALETTE",
    "Shape",
    "TOP_SPACE",
    "escape",
    "render_graph",
    "render_svg",
    "shape_size",
    "status_badge",
]

#: status -> (fill, stroke). Statuses of history nodes and of DAG steps.
PALETTE: dict[str, tuple[str, str]] = {
    "scheduled": ("#f5f7fa", "#607d8b"),
    "pending": ("#f5f5f5", "#9e9e9e"),
    "running": ("#bbdefb", "#1565c0"),
    "retrying": ("#fff3cd", "#f9a825"),
    "completed": ("#c8e6c9", "#2e7d32"),
    "done": ("#c8e6c9", "#2e7d32"),
    "fired": ("#dcedc8", "#558b2f"),
    "received": ("#e1f5fe", "#0277bd"),
    "recorded": ("#ede7f6", "#5e35b1"),
    "failed": ("#ffcdd2", "#c62828"),
    "timed_out": ("#ffe0b2", "#ef6c00"),
    "cancel_requested": ("#eceff1", "#78909c"),
    "canceled": ("#e0e0e0", "#616161"),
    "skipped": ("#fafafa", "#bdbdbd"),
    "terminated": ("#d7ccc8", "#4e342e"),
    "continued_as_new": ("#e1bee7", "#6a1b9a"),
}
_DEFAULT_COLOURS = ("#ffffff", "#455a64")
#: edge kind -> (stroke, dash array or "").
EDGE_STYLE: dict[str, tuple[str, str]] = {
    "schedules": ("#78909c", ""),
    "triggers": ("#1e88e5", ""),
    "next": ("#b0bec5", "2 3"),
    "closes": ("#455a64", ""),
    "cancels": ("#e53935", "5 3"),
    "completes": ("#8e24aa", "2 3"),
    "depends": ("#78909c", ""),
}
#: Space reserved above the graph for the title and the legend.
TOP_SPACE = 52.0
_CHAR = 6.4
_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"})


def escape(text: object) -> str:
    """``text`` escaped for SVG/HTML text and attribute values."""
    return str(text).translate(_ESCAPES)


@dataclasses.dataclass(frozen=True)
class Shape:
    """What to draw for one node.

    ``form`` is ``box``, ``pill`` (start/close), ``dot`` (workflow task, no
    label inside), ``tag`` (markers, signals, updates) or ``double`` (child
    workflows). ``dashed`` draws a dashed outline (skipped or pending steps).
    """

    id: str
    label: str
    sublabel: str = ""
    status: str = ""
    form: str = "box"
    tooltip: str = ""
    dashed: bool = False


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def shape_size(shape: Shape) -> tuple[float, float]:
    """The (width, height) of a shape's node."""
    if shape.form == "dot":
        return 16.0, 16.0
    chars = max(len(_clip(shape.label, 28)), len(_clip(shape.sublabel, 30)) * 0.9)
    width = max(64.0, min(220.0, chars * _CHAR + 20))
    return width, 40.0 if shape.sublabel else 28.0


def status_badge(status: str, text: str | None = None) -> str:
    """An inline HTML badge in the status colours (for tables and headers)."""
    fill, stroke = PALETTE.get(status, _DEFAULT_COLOURS)
    return (f'<span class="spindle-badge" style="background:{fill};border:1px solid {stroke};color:#222;'
            f'border-radius:8px;padding:0 6px;font-size:12px">{escape(text or status.replace("_", " "))}</span>')


def _node(shape: Shape, box: Box, selected: bool) -> str:
    fill, stroke = PALETTE.get(shape.status, _DEFAULT_COLOURS)
    width = 3 if selected else 1.4
    dash = ' stroke-dasharray="4 3"' if shape.dashed else ""
    paint = f'fill="{fill}" stroke="{"#000" if selected else stroke}" stroke-width="{width}"{dash}'
    parts = [f'<g class="spindle-node{" selected" if selected else ""}" data-node-id="{escape(shape.id)}" '
             f'data-status="{escape(shape.status)}" transform="translate({box.x:.1f},{box.y:.1f})">'
             f'<title>{escape(shape.tooltip or shape.label)}</title>']
    w, h = box.w, box.h
    if shape.form == "dot":
        parts.append(f'<circle cx="{w / 2:.1f}" cy="{h / 2:.1f}" r="{w / 2 - 1:.1f}" {paint}/>')
    elif shape.form == "pill":
        parts.append(f'<rect width="{w:.1f}" height="{h:.1f}" rx="{h / 2:.1f}" {paint}/>')
    elif shape.form == "tag":
        notch = 8
        parts.append(f'<path d="M0,0 H{w - notch:.1f} L{w:.1f},{h / 2:.1f} L{w - notch:.1f},{h:.1f} H0 Z" {paint}/>')
    elif shape.form == "double":
        parts.append(f'<rect width="{w:.1f}" height="{h:.1f}" rx="4" {paint}/>'
                     f'<rect x="3" y="3" width="{w - 6:.1f}" height="{h - 6:.1f}" rx="3" fill="none" '
                     f'stroke="{stroke}" stroke-width="0.8"/>')
    else:
        parts.append(f'<rect width="{w:.1f}" height="{h:.1f}" rx="4" {paint}/>')
    if shape.form != "dot":
        label_y = 17 if not shape.sublabel else 16
        parts.append(f'<text x="{w / 2:.1f}" y="{label_y}" text-anchor="middle" class="spindle-label">'
                     f'{escape(_clip(shape.label, 28))}</text>')
        if shape.sublabel:
            parts.append(f'<text x="{w / 2:.1f}" y="31" text-anchor="middle" class="spindle-sublabel">'
                         f'{escape(_clip(shape.sublabel, 30))}</text>')
    parts.append("</g>")
    return "".join(parts)


def _edge(source: Box, target: Box, kind: str) -> str:
    stroke, dash = EDGE_STYLE.get(kind, ("#90a4ae", ""))
    dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
    if target.x >= source.x + source.w - 1:
        x1, y1, x2, y2 = source.x + source.w, source.cy, target.x, target.cy
        bend = max(12.0, (x2 - x1) / 2)
        path = f"M{x1:.1f},{y1:.1f} C{x1 + bend:.1f},{y1:.1f} {x2 - bend:.1f},{y2:.1f} {x2:.1f},{y2:.1f}"
    else:  # drawn backwards (e.g. a later workflow task cancels a timer): arc over the top
        x1, y1, x2, y2 = source.cx, source.y, target.cx, target.y
        lift = 30 + abs(x1 - x2) / 8
        path = f"M{x1:.1f},{y1:.1f} C{x1:.1f},{y1 - lift:.1f} {x2:.1f},{y2 - lift:.1f} {x2:.1f},{y2:.1f}"
    return (f'<path class="spindle-edge" data-kind="{kind}" d="{path}" fill="none" stroke="{stroke}" '
            f'stroke-width="1.2"{dash_attr} marker-end="url(#spindle-arrow-{kind})"/>')


def _legend(statuses: Iterable[str], edge_kinds: Iterable[str], y: float) -> tuple[str, float]:
    parts: list[str] = []
    x = 12.0
    for status in statuses:
        fill, stroke = PALETTE.get(status, _DEFAULT_COLOURS)
        name = status.replace("_", " ")
        parts.append(f'<g class="spindle-legend-item" transform="translate({x:.1f},{y:.1f})">'
                     f'<rect width="14" height="12" rx="2" fill="{fill}" stroke="{stroke}"/>'
                     f'<text x="18" y="10" class="spindle-legend-text">{escape(name)}</text></g>')
        x += 26 + len(name) * _CHAR
    x += 12
    for kind in edge_kinds:
        stroke, dash = EDGE_STYLE.get(kind, ("#90a4ae", ""))
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        parts.append(f'<g class="spindle-legend-item" transform="translate({x:.1f},{y:.1f})">'
                     f'<line x1="0" y1="6" x2="18" y2="6" stroke="{stroke}" stroke-width="1.5"{dash_attr}/>'
                     f'<text x="22" y="10" class="spindle-legend-text">{escape(kind)}</text></g>')
        x += 30 + len(kind) * _CHAR
    return f'<g class="spindle-legend">{"".join(parts)}</g>', x


_STYLE = ("<style>.spindle-label{font:600 11px sans-serif;fill:#212121}"
          ".spindle-sublabel{font:10px sans-serif;fill:#546e7a}"
          ".spindle-legend-text{font:11px sans-serif;fill:#37474f}"
          ".spindle-title{font:600 13px sans-serif;fill:#263238}</style>")


def render_svg(shapes: Sequence[Shape], edges: Sequence[tuple[str, str, str]], layout: Layout, *,
               title: str = "", selected: str | None = None, legend: bool = True) -> str:
    """Draw ``shapes`` at ``layout``'s boxes with ``edges`` ``(source, target, kind)``.

    The layout must have been made with ``top=TOP_SPACE`` when a title or legend is drawn.
    """
    boxes = layout.boxes
    statuses = list(dict.fromkeys(s.status for s in shapes if s.status))
    kinds = list(dict.fromkeys(kind for _, _, kind in edges))
    legend_svg, legend_width = _legend(statuses, kinds, 28) if legend else ("", 0.0)
    width = max(layout.width, legend_width, 8 * len(title) + 24)
    height = layout.height
    markers = "".join(
        f'<marker id="spindle-arrow-{kind}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" '
        f'markerHeight="6" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
        f'fill="{EDGE_STYLE.get(kind, ("#90a4ae", ""))[0]}"/></marker>' for kind in kinds)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="spindle-graph" width="{width:.0f}" '
           f'height="{height:.0f}" viewBox="0 0 {width:.0f} {height:.0f}">', _STYLE, f"<defs>{markers}</defs>",
           f'<rect width="{width:.0f}" height="{height:.0f}" fill="#ffffff"/>']
    if title:
        out.append(f'<text x="12" y="18" class="spindle-title">{escape(title)}</text>')
    out.append(legend_svg)
    out.append('<g class="spindle-edges">')
    out.extend(_edge(boxes[s], boxes[t], kind) for s, t, kind in edges if s in boxes and t in boxes)
    out.append('</g><g class="spindle-nodes">')
    out.extend(_node(shape, boxes[shape.id], shape.id == selected) for shape in shapes if shape.id in boxes)
    out.append("</g></svg>")
    return "".join(out)


def render_graph(graph: nx.DiGraph, shapes: Sequence[Shape], *, title: str = "", selected: str | None = None,
                 edge_kind: str = "kind", default_kind: str = "depends", sources_follow_time: bool = True) -> str:
    """Lay out and draw ``graph`` whose nodes are ``shapes`` (given in causal/topological order).

    ``sources_follow_time`` is False for DAGs (independent roots all start in the first layer).
    """
    by_id: dict[Hashable, Shape] = {s.id: s for s in shapes}
    order = [s.id for s in shapes]
    layout = layered_layout(graph, order, lambda n: shape_size(by_id[n]), top=TOP_SPACE,
                            sources_follow_time=sources_follow_time)
    edges = [(str(u), str(v), str(d.get(edge_kind, default_kind))) for u, v, d in graph.edges(data=True)
             if u in by_id and v in by_id]
    return render_svg(shapes, edges, layout, title=title, selected=selected)
