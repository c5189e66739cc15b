"""A layered left-to-right layout for causal graphs and DAGs.

Layers come from the longest path along edges that go forward in the given
order (so edges drawn backwards, such as ``cancels``, never create cycles);
a node nothing leads to (a signal) joins the right-most layer reached so far;
inside a layer nodes are ordered by the mean row of their predecessors, then by
the order key. Each layer is as wide as its widest node, so layers of small
nodes (workflow tasks) take little room. O(nodes + edges).
"""

from __future__ import annotations

import dataclasses

from collections.abc import Callable, Hashable, Sequence

import networkx as nx

__all__ = ["Box", "Layout", "layered_layout"]


@dataclasses.dataclass(frozen=True)
class Box:
    """A node's rectangle (top-left corner, width, height), in SVG pixels."""

    x: float
    y: float
    w: float
    h: float

    @property
    def cx(self) -> float:
        """Horizontal centre."""
        return self.x + self.w / 2

    @property
    def cy(self) -> float:
        """Vertical centre."""
        return self.y + self.h / 2


@dataclasses.dataclass
class Layout:
    """Where every node goes, and the size of the drawing."""

    boxes: dict[Hashable, Box]
    layers: list[list[Hashable]]
    width: float
    height: float


def layered_layout(
    graph: nx.DiGraph,
    order: Sequence[Hashable],
    size: Callable[[Hashable], tuple[float, float]],
    *,
    layer_gap: float = 36.0,
    row_gap: float = 14.0,
    margin: float = 12.0,
    top: float = 0.0,
    sources_follow_time: bool = True,
) -> Layout:
    """Lay ``graph`` out in layers, left to right.

    Args:
        graph: the graph; only nodes listed in ``order`` are placed.
        order: the nodes in causal (or topological) order.
        size: a node's (width, height).
        layer_gap: horizontal space between layers.
        row_gap: vertical space between nodes of a layer.
        margin: space around the drawing.
        top: extra space above the drawing (for a title or legend).
        sources_follow_time: put a node without predecessors (a signal) in the
            right-most layer reached so far rather than in the first layer, so
            that the drawing reads left to right in time.
    """
    rank = {node: index for index, node in enumerate(order)}
    layer_of: dict[Hashable, int] = {}
    reached = 0  # the right-most layer so far: where a node nothing leads to (a signal) arrives
    for node in order:
        best = -1
        for pred in graph.predecessors(node):
            if pred in layer_of and rank[pred] < rank[node]:
                best = max(best, layer_of[pred] + 1)
        layer_of[node] = best if best >= 0 else (reached if sources_follow_time else 0)
        reached = max(reached, layer_of[node])
    count = max(layer_of.values(), default=-1) + 1
    layers: list[list[Hashable]] = [[] for _ in range(count)]
    for node in order:
        layers[layer_of[node]].append(node)

    row_of: dict[Hashable, float] = {}
    for members in layers:
        def weight(node: Hashable) -> tuple[float, int]:
            rows = [row_of[p] for p in graph.predecessors(node) if p in row_of]
            return (sum(rows) / len(rows) if rows else float(rank[node]) * 1e-6, rank[node])

        members.sort(key=weight)
        for index, node in enumerate(members):
            row_of[node] = float(index)

    sizes = {node: size(node) for node in order}
    heights = [sum(sizes[n][1] for n in members) + row_gap * max(0, len(members) - 1) for members in layers]
    tallest = max(heights, default=0.0)
    boxes: dict[Hashable, Box] = {}
    x = margin
    for members, height in zip(layers, heights):
        width = max(sizes[n][0] for n in members)
        y = margin + top + (tallest - height) / 2
        for node in members:
            w, h = sizes[node]
            boxes[node] = Box(x + (width - w) / 2, y, w, h)
            y += h + row_gap
        x += width + layer_gap
    total_width = max(x - layer_gap + margin, 2 * margin)
    return Layout(boxes=boxes, layers=layers, width=total_width, height=tallest + 2 * margin + top)
