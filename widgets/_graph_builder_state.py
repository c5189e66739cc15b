"""What the event handlers of a history graph share while they build it.

:class:`BuilderState` holds the graph under construction, the run's type and status, and
the indexes that let a later event find the node of an earlier one (a workflow task by
its scheduled or completed event, an activity / timer / update / child / external
workflow by the event that created it), plus the events waiting for the next workflow
task to see them. Its methods add and update nodes and edges; each group of event
handlers (``spindle.widgets._graph_*_events``) holds one and writes through it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import networkx as nx

from spindle.client import HistoryEvent
from spindle.widgets._graph_nodes import FINAL_STATUSES, GraphNode

__all__ = ["BuilderState", "EventHandler", "duration_text"]

#: Handles one history event of the types it is registered for.
EventHandler = Callable[[HistoryEvent], None]


def duration_text(value: Any) -> str:
    """A duration in milliseconds as the largest whole unit: ``1d``, ``5m``, ``90s``, ``250ms``."""
    ms = int(value or 0)
    if ms and ms % 1000 == 0:
        seconds = ms // 1000
        for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
            if seconds % size == 0:
                return f"{seconds // size}{unit}"
        return f"{seconds}s"
    return f"{ms}ms"


class BuilderState:
    """The graph of one run being built from its events, and how events find their nodes."""

    def __init__(self, workflow_id: str, run_id: str) -> None:
        self.graph: nx.DiGraph = nx.DiGraph(workflow_id=workflow_id, run_id=run_id)
        self.workflow_type = ""
        self.status = "running"
        #: Ids of the nodes added or changed by the current batch of events (an ordered set).
        self.touched: dict[str, None] = {}
        #: Nodes whose event will wake the workflow: the next workflow task started is triggered by them.
        self.pending: list[str] = []
        self.wft_by_sched: dict[int, str] = {}
        self.wft_by_completed: dict[int, str] = {}
        self.last_wft: str | None = None
        #: ``(group, id of the event that created the node)`` -> node id.
        self.by_ref: dict[tuple[str, int], str] = {}

    def node(self, node_id: str) -> GraphNode:
        """The :class:`GraphNode` of ``node_id`` (``KeyError`` if absent)."""
        node: GraphNode = self.graph.nodes[node_id]["node"]
        return node

    def add(self, event: HistoryEvent, node_id: str, kind: str, label: str, status: str, **fields: Any) -> GraphNode:
        node = GraphNode(id=node_id, kind=kind, label=label, status=status, first_event_id=event.event_id,
                         start_time=event.event_time, order_key=event.event_id, event_ids=[event.event_id], **fields)
        self.graph.add_node(node_id, node=node, kind=kind, status=status)
        self.touched[node_id] = None
        return node

    def update(self, node_id: str | None, event: HistoryEvent, *, status: str | None = None) -> GraphNode | None:
        if node_id is None or node_id not in self.graph:
            return None
        node = self.node(node_id)
        node.event_ids.append(event.event_id)
        if status is not None:
            node.status = status
            self.graph.nodes[node_id]["status"] = status
            if status in FINAL_STATUSES:
                node.end_time = event.event_time
        self.touched[node_id] = None
        return node

    def edge(self, source: str | None, target: str, kind: str) -> None:
        if source is None or source not in self.graph or source == target or self.graph.has_edge(source, target):
            return
        self.graph.add_edge(source, target, kind=kind)

    def from_wft(self, event: HistoryEvent, target: str, kind: str = "schedules") -> None:
        """An edge from the workflow task whose completion issued ``event``'s command."""
        completed = int(event.attributes.get("workflow_task_completed_event_id") or 0)
        self.edge(self.wft_by_completed.get(completed), target, kind)

    def ref(self, group: str, event: HistoryEvent, key: str) -> str | None:
        """The node of ``group`` created by the event whose id ``event`` carries in ``key``."""
        return self.by_ref.get((group, int(event.attributes.get(key) or 0)))
