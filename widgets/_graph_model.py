"""A workflow run's history as a causal graph (a networkx ``DiGraph``): the builder.

:class:`HistoryGraphBuilder` is the graph model the widgets draw: the graph (its nodes
and edges are described in ``spindle.widgets._graph_nodes``), the run's type and status,
and the last event seen. It consumes events incrementally, so a live widget can feed it
only the new events of each batch (see ``spindle.widgets._live``). Each event type is
handled by one group of handlers, all writing to one :class:`BuilderState`:

- ``_graph_workflow_events``: the run's start and close, and its workflow tasks;
- ``_graph_activity_events``: activities and their attempts;
- ``_graph_message_events``: signals, updates and cancel requests sent to the run;
- ``_graph_command_events``: timers, markers, search attributes, child and external workflows.
"""

from __future__ import annotations

import datetime

from collections.abc import Iterable

import networkx as nx

from spindle.client import History, HistoryEvent
from spindle.widgets._graph_activity_events import ActivityEvents
from spindle.widgets._graph_builder_state import BuilderState, EventHandler
from spindle.widgets._graph_command_events import CommandEvents
from spindle.widgets._graph_message_events import MessageEvents
from spindle.widgets._graph_nodes import GraphNode
from spindle.widgets._graph_workflow_events import CLOSE_STATUS, WorkflowEvents

__all__ = ["HistoryGraphBuilder", "build_graph", "workflow_status"]


class HistoryGraphBuilder:
    """Builds the causal graph of one run; feed it events in order with :meth:`add_events`."""

    def __init__(self, workflow_id: str = "", run_id: str = "") -> None:
        self._state = BuilderState(workflow_id, run_id)
        self.graph: nx.DiGraph = self._state.graph
        self.workflow_id = workflow_id
        self.run_id = run_id
        self.last_event_id = 0
        self.start_time: datetime.datetime | None = None
        self.last_time: datetime.datetime | None = None
        self._handlers: dict[str, EventHandler] = {}
        for group in (WorkflowEvents(self._state), ActivityEvents(self._state), MessageEvents(self._state),
                      CommandEvents(self._state)):
            self._handlers.update(group.handlers())

    @property
    def workflow_type(self) -> str:
        """The workflow type, from ``WorkflowExecutionStarted`` (``""`` until then)."""
        return self._state.workflow_type

    @property
    def status(self) -> str:
        """``running`` or the run's closing status (``completed``, ``failed``, ...)."""
        return self._state.status

    def add_events(self, events: Iterable[HistoryEvent]) -> list[str]:
        """Add the events newer than :attr:`last_event_id`; return the ids of nodes added or changed."""
        touched: dict[str, None] = {}
        for event in events:
            if event.event_id <= self.last_event_id:
                continue
            self.last_event_id = event.event_id
            self.last_time = event.event_time
            if self.start_time is None:
                self.start_time = event.event_time
            self._state.touched = touched
            handler = self._handlers.get(event.event_type)
            if handler is not None:
                handler(event)
        return list(touched)

    def node(self, node_id: str) -> GraphNode:
        """The :class:`GraphNode` of ``node_id`` (``KeyError`` if absent)."""
        return self._state.node(node_id)

    def nodes(self) -> list[GraphNode]:
        """Every node, in causal order."""
        return sorted((d["node"] for _, d in self.graph.nodes(data=True)),
                      key=lambda n: (n.order_key, n.first_event_id))


def build_graph(history: History) -> HistoryGraphBuilder:
    """Build the causal graph of a whole history (``.graph`` is the networkx DiGraph)."""
    builder = HistoryGraphBuilder(history.workflow_id, history.run_id)
    builder.add_events(history.events)
    return builder


def workflow_status(history: History) -> str:
    """``running`` or the closing status (``completed``, ``failed``, ...) of a history."""
    for event in reversed(history.events):
        if event.event_type in CLOSE_STATUS:
            return CLOSE_STATUS[event.event_type]
    return "running"
