"""A Gantt chart of a run: one row per activity (a bar per attempt), timer and child workflow.

The first row is the run itself, with a tick for every signal, update and marker.
A thin line from scheduling to the first attempt shows queueing time; the gaps
between attempt bars are the retry backoff. Rows are capped (``max_rows``) so a
long history still draws quickly.
"""

from __future__ import annotations

import datetime
import math

from collections.abc import Callable

from spindle.widgets._graph_model import HistoryGraphBuilder
from spindle.widgets._graph_nodes import GraphNode
from spindle.widgets._svg import PALETTE, escape

__all__ = ["timeline_svg"]

XOf = Callable[[datetime.datetime | None], float]

_ROW = 18.0
_LABEL_W = 200.0
_TOP = 34.0
_ROW_KINDS = ("activity", "timer", "child")
_TICK_KINDS = ("signal", "update", "marker", "cancel_request")


def _nice_step(span: float, target_ticks: int = 8) -> float:
    raw = span / max(1, target_ticks)
    if raw <= 0:
        return 1.0
    magnitude = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 5, 10):
        if raw <= factor * magnitude:
            return factor * magnitude
    return 10 * magnitude


def _fmt_offset(seconds: float) -> str:
    if seconds < 1:
        return f"{seconds * 1000:.0f}ms"
    if seconds < 120:
        return f"{seconds:g}s"
    return f"{seconds / 60:.1f}m"


def timeline_svg(builder: HistoryGraphBuilder, *, width: float = 900.0, max_rows: int = 300) -> str:
    """The run's Gantt chart as a standalone SVG document."""
    nodes = builder.nodes()
    start = builder.start_time
    if start is None:
        return ('<svg xmlns="http://www.w3.org/2000/svg" width="300" height="30"><text x="8" y="20" '
                'font-family="sans-serif" font-size="12">no events yet</text></svg>')
    end = builder.last_time or start
    span = max((end - start).total_seconds(), 1e-3)
    plot_w = width - _LABEL_W - 16

    def x_of(when: datetime.datetime | None) -> float:
        t = (when or end)
        return _LABEL_W + (t - start).total_seconds() / span * plot_w

    rows = [n for n in nodes if n.kind in _ROW_KINDS]
    hidden = max(0, len(rows) - max_rows)
    rows = rows[:max_rows]
    height = _TOP + _ROW * (len(rows) + 1) + (18 if hidden else 0) + 10
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="spindle-timeline" width="{width:.0f}" '
           f'height="{height:.0f}" font-family="sans-serif" font-size="11">',
           f'<rect width="{width:.0f}" height="{height:.0f}" fill="#fff"/>']
    step = _nice_step(span)
    tick = 0.0
    while tick <= span + 1e-9:
        x = _LABEL_W + tick / span * plot_w
        out.append(f'<line x1="{x:.1f}" y1="{_TOP - 6}" x2="{x:.1f}" y2="{height - 10:.0f}" stroke="#eceff1"/>'
                   f'<text x="{x:.1f}" y="{_TOP - 10}" text-anchor="middle" fill="#78909c">{_fmt_offset(tick)}</text>')
        tick += step
    out.append(_run_row(builder, nodes, x_of))
    for index, node in enumerate(rows, start=1):
        out.append(_row(node, _TOP + index * _ROW, x_of))
    if hidden:
        out.append(f'<text x="8" y="{_TOP + (len(rows) + 1) * _ROW + 12:.0f}" fill="#78909c">'
                   f'… {hidden} more rows not shown</text>')
    out.append("</svg>")
    return "".join(out)


def _bar(x1: float, x2: float, y: float, status: str, title: str, height: float = 12.0) -> str:
    fill, stroke = PALETTE.get(status, ("#eee", "#999"))
    return (f'<rect class="spindle-bar" data-status="{status}" x="{x1:.1f}" y="{y + (_ROW - height) / 2:.1f}" '
            f'width="{max(2.0, x2 - x1):.1f}" height="{height}" rx="2" fill="{fill}" stroke="{stroke}">'
            f'<title>{escape(title)}</title></rect>')


def _label(text: str, y: float, node_id: str) -> str:
    shown = text if len(text) <= 30 else text[:29] + "…"
    return (f'<text class="spindle-row" data-node-id="{escape(node_id)}" x="8" y="{y + 13:.1f}" '
            f'fill="#263238">{escape(shown)}</text>')


def _run_row(builder: HistoryGraphBuilder, nodes: list[GraphNode], x_of: XOf) -> str:
    y = _TOP
    parts = [_label(f"{builder.workflow_type or 'workflow'} run", y, "start"),
             _bar(x_of(builder.start_time), x_of(None), y, builder.status, f"run: {builder.status}", 8.0)]
    for node in nodes:
        if node.kind in _TICK_KINDS:
            x = x_of(node.start_time)
            fill, stroke = PALETTE.get(node.status, ("#eee", "#999"))
            parts.append(f'<path d="M{x:.1f},{y + 3:.1f} l5,6 l-5,6 l-5,-6 z" fill="{fill}" stroke="{stroke}">'
                         f'<title>{escape(node.label)}</title></path>')
    return "".join(parts)


def _row(node: GraphNode, y: float, x_of: XOf) -> str:
    label = node.label + (f" ({node.details.get('activity_id')})" if node.kind == "activity" else "")
    parts = [_label(label, y, node.id)]
    if node.kind != "activity" or not node.attempts:
        parts.append(_bar(x_of(node.start_time), x_of(node.end_time), y, node.status,
                          f"{node.label}: {node.status}"))
        return "".join(parts)
    first = node.attempts[0].started_time or node.start_time
    parts.append(f'<line x1="{x_of(node.start_time):.1f}" y1="{y + _ROW / 2:.1f}" x2="{x_of(first):.1f}" '
                 f'y2="{y + _ROW / 2:.1f}" stroke="#b0bec5" stroke-width="2"/>')
    for attempt in node.attempts:
        title = f"{node.label} attempt {attempt.number}: {attempt.outcome}"
        parts.append(_bar(x_of(attempt.started_time or node.start_time), x_of(attempt.end_time), y, attempt.outcome, title))
    return "".join(parts)
