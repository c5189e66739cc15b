"""``HistoryGraph``: a workflow run's history as a causal graph, a timeline and node details."""

from __future__ import annotations

import asyncio
import os

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import ipywidgets as w
import networkx as nx

from spindle.client import History
from spindle.widgets._background import Runner
from spindle.widgets._export import export_html
from spindle.widgets._graph_model import HistoryGraphBuilder
from spindle.widgets._graph_nodes import GraphNode
from spindle.widgets._history_render import describe_node, history_svg
from spindle.widgets._live import FollowsExecution, HistoryFeed
from spindle.widgets._sources import codecs_for, is_handle, load_history
from spindle.widgets._svg import escape, status_badge
from spindle.widgets._timeline import timeline_svg

__all__ = ["HistoryGraph"]

_SCROLL = "<div style='overflow:auto;max-height:{h};border:1px solid #eceff1'>{svg}</div>"


class HistoryGraph(FollowsExecution, w.VBox):
    """A run's history drawn as a graph of what caused what, with a timeline tab and a detail panel.

    Args:
        source: a ``WorkflowHandle`` (fetched, and followed while running when
            ``live``), a ``History``, History JSON (text, dict) or a path to a
            ``.json`` / ``.json.gz`` file of it.
        live: follow a running execution until it closes (handles only), with
            ``handle.watch_history()``: the server long-polls for new events,
            so an idle run costs nothing.
        client: the ``Client`` used to open child workflows' graphs; optional,
            the default is the handle's own (``handle.client``). A recorded history
            is decoded with its codecs (payloads as the server stores them).
        codecs: payload codecs to decode a recorded history with (default: the
            client's); a handle's history is decoded by its client.
        child_histories: recorded histories of child runs, for expanding
            children of a recorded history without a client.
        show_workflow_tasks: draw workflow tasks as small dots; when False a
            waking event links straight to the commands that followed.
        poll_interval: (fastest, slowest) seconds between polls, for handle-like
            objects without ``watch_history``; the slowest is also the pause
            before a live view retries after an error.
        text_limit: characters of input/result/failure shown before "full text".
        loop: the event loop the handle belongs to (default: the loop running
            in this thread, else the widgets' background loop).

    ``model`` is the :class:`~spindle.widgets._graph_model.HistoryGraphBuilder` (``graph``
    its networkx DiGraph); it is updated in place, so a live widget gains nodes
    without being re-created. Nothing here blocks the kernel's event loop: with a
    handle the first fetch is scheduled, or awaited with ``await graph.refresh()``.
    """

    def __init__(
        self,
        source: Any,
        *,
        live: bool = True,
        client: Any = None,
        codecs: Sequence[Any] | None = None,
        child_histories: Iterable[History] = (),
        show_workflow_tasks: bool = True,
        poll_interval: tuple[float, float] = (0.5, 2.0),
        text_limit: int = 400,
        loop: asyncio.AbstractEventLoop | None = None,
        max_height: str = "480px",
    ) -> None:
        super().__init__(layout=w.Layout(width="100%"))
        self._handle = source if is_handle(source) else None
        self._client = client if client is not None else getattr(source, "client", None)
        self._codecs, self._namespace = codecs_for(self._client, codecs)
        history = None if self._handle is not None else load_history(source, codecs=self._codecs,
                                                                     namespace=self._namespace)
        self._child_histories: dict[str, History] = {h.workflow_id: h for h in child_histories}
        self.show_workflow_tasks = show_workflow_tasks
        self.text_limit = text_limit
        self._max_height = max_height
        self._runner = Runner(loop) if self._handle is not None else None
        workflow_id = history.workflow_id if history else str(getattr(source, "id", ""))
        run_id = history.run_id if history else str(getattr(source, "run_id", "") or "")
        self.model = HistoryGraphBuilder(workflow_id, run_id)
        self.child_graphs: dict[str, HistoryGraph] = {}
        self._build_widgets()
        self._feed: HistoryFeed | None = None
        if history is not None:
            self.model.add_events(history.events)
            self._render()
        else:
            assert self._runner is not None
            self._feed = HistoryFeed(self._handle, self._runner, self.model, self._changed, self._state_changed,
                                     interval=poll_interval)
            self._render()
            self._feed.start(live=live)

    # ------------------------------------------------------------------ public API

    @property
    def graph(self) -> nx.DiGraph:
        """The causal graph (networkx); node data ``node`` is a ``GraphNode``."""
        return self.model.graph

    @property
    def status(self) -> str:
        """``running`` or how the run closed."""
        return self.model.status

    @property
    def selected(self) -> str | None:
        """The id of the node shown in the detail panel."""
        value = self.node_picker.value
        return str(value) if value else None

    def node(self, node_id: str) -> GraphNode:
        """The ``GraphNode`` with this id."""
        return self.model.node(node_id)

    def select(self, node_id: str | None) -> None:
        """Show ``node_id`` in the detail panel and highlight it."""
        self.node_picker.value = node_id

    def stop(self) -> None:
        """Stop following the execution and every expanded child's (the drawings stay)."""
        super().stop()
        for child in getattr(self, "child_graphs", {}).values():
            child.stop()

    def close(self) -> None:
        """Stop following the execution and close the widget and its children."""
        self.stop()
        for child in getattr(self, "child_graphs", {}).values():
            child.close()
        if hasattr(self, "expanded"):
            for box in self.expanded.children:
                box.close()
        super().close()

    def expand_child(self, node_id: str) -> HistoryGraph:
        """Open the graph of the child workflow of node ``node_id`` below this one.

        Raises:
            ValueError: the node is not a child workflow, or its history is
                unavailable (no ``client`` and no matching ``child_histories``).
        """
        if node_id in self.child_graphs:
            return self.child_graphs[node_id]
        node = self.model.node(node_id)
        if node.child is None:
            raise ValueError(f"node {node_id!r} is not a child workflow")
        workflow_id, run_id = node.child
        if workflow_id in self._child_histories:
            child = HistoryGraph(self._child_histories[workflow_id], show_workflow_tasks=self.show_workflow_tasks,
                                 child_histories=self._child_histories.values(), text_limit=self.text_limit,
                                 client=self._client, codecs=self._codecs)
        elif self._client is not None:
            handle = self._client.get_workflow_handle(workflow_id, run_id=run_id or None)
            child = HistoryGraph(handle, client=self._client, live=self._feed is not None and self._feed.live,
                                 show_workflow_tasks=self.show_workflow_tasks, text_limit=self.text_limit,
                                 loop=self._runner.loop if self._runner else None)
        else:
            raise ValueError(f"no history for child {workflow_id!r}: pass client= or child_histories=")
        self.child_graphs[node_id] = child
        close = w.Button(description="close child", layout=w.Layout(width="110px"))
        box = w.VBox([w.HTML(f"<b>child workflow {escape(workflow_id)}</b> (from {escape(node_id)})"), close, child],
                     layout=w.Layout(border="1px solid #cfd8dc", padding="4px", margin="6px 0 0 24px"))
        close.on_click(lambda _b: self._collapse_child(node_id, box))
        self.expanded.children = (*self.expanded.children, box)
        return child

    def to_svg(self, view: str = "graph") -> str:
        """The graph (``view="graph"``) or the timeline (``view="timeline"``) as standalone SVG."""
        if view == "timeline":
            return timeline_svg(self.model)
        if view != "graph":
            raise ValueError(f"view must be 'graph' or 'timeline', not {view!r}")
        return history_svg(self.model, selected=self.selected, show_workflow_tasks=self.show_workflow_tasks)

    def to_html(self, path: str | os.PathLike[str], *, self_contained: bool = False) -> Path:
        """Write the widget as an HTML page that renders offline (see ``spindle.widgets._export``)."""
        return export_html(self, path, title=f"history {self.model.workflow_id}", self_contained=self_contained)

    # ------------------------------------------------------------------ widgets

    def _build_widgets(self) -> None:
        self.header = w.HTML()
        self.graph_view = w.HTML()
        self.timeline_view = w.HTML()
        self.node_picker = w.Dropdown(options=[("—", None)], value=None, description="node",
                                      layout=w.Layout(width="98%"))
        self.full_text = w.Checkbox(value=False, description="full text", indent=False)
        self.child_button = w.Button(description="open child graph", disabled=True)
        self.detail = w.HTML("<i>pick a node</i>")
        panel = w.VBox([self.node_picker, w.HBox([self.full_text, self.child_button]), self.detail],
                       layout=w.Layout(width="34%", min_width="260px", padding="0 0 0 8px"))
        graph_pane = w.HBox([w.Box([self.graph_view], layout=w.Layout(width="66%")), panel])
        self.tabs = w.Tab(children=[graph_pane, self.timeline_view])
        self.tabs.set_title(0, "Graph")
        self.tabs.set_title(1, "Timeline")
        self.expanded = w.VBox()
        self.children = [self.header, self.tabs, self.expanded]
        self.node_picker.observe(self._picked, names="value")
        self.full_text.observe(lambda _c: self._show_detail(), names="value")
        self.child_button.on_click(lambda _b: self._open_selected_child())

    def _collapse_child(self, node_id: str, box: w.Widget) -> None:
        child = self.child_graphs.pop(node_id, None)
        if child is not None:
            child.close()
        self.expanded.children = tuple(c for c in self.expanded.children if c is not box)
        box.close()

    def _open_selected_child(self) -> None:
        if self.selected:
            try:
                self.expand_child(self.selected)
            except ValueError as error:
                self.detail.value += f"<p style='color:#c62828'>{escape(error)}</p>"

    def _picked(self, _change: Mapping[str, Any]) -> None:
        self._show_detail()
        self._render_graph()

    def _show_detail(self) -> None:
        node_id = self.selected
        if not node_id or node_id not in self.model.graph:
            self.detail.value = "<i>pick a node</i>"
            self.child_button.disabled = True
            return
        node = self.model.node(node_id)
        self.detail.value = describe_node(node, limit=0 if self.full_text.value else self.text_limit)
        self.child_button.disabled = node.child is None

    # ------------------------------------------------------------------ rendering

    def _changed(self, changed: list[str]) -> None:
        self._render()
        if self.selected in changed:
            self._show_detail()

    def _state_changed(self) -> None:
        self._render_header()

    def _render(self) -> None:
        self._render_header()
        self._render_picker()
        self._render_graph()
        self.timeline_view.value = _SCROLL.format(h=self._max_height, svg=timeline_svg(self.model))

    def _render_graph(self) -> None:
        self.graph_view.value = _SCROLL.format(h=self._max_height, svg=self.to_svg())

    def _render_picker(self) -> None:
        nodes = [n for n in self.model.nodes() if self.show_workflow_tasks or n.kind != "workflow_task"]
        options = [("—", None)] + [(f"{n.label} · {n.status.replace('_', ' ')} · #{n.first_event_id}", n.id)
                                   for n in nodes]
        if list(self.node_picker.options) != options:
            selected = self.selected
            with self.node_picker.hold_trait_notifications():
                self.node_picker.options = options
                self.node_picker.value = selected if selected in self.model.graph else None

    def _render_header(self) -> None:
        m = self.model
        feed = self._feed
        if feed is not None and m.last_event_id == 0 and feed.error is None:
            state = "<i>loading…</i>"
        elif feed is not None and feed.polling and feed.live:
            state = "<span style='color:#1565c0'>● live</span>"
        else:
            state = ""
        error = f" <span style='color:#c62828'>{escape(feed.error)}</span>" if feed and feed.error else ""
        self.header.value = (f"<div style='font:13px sans-serif'>{status_badge(m.status)} "
                             f"<b>{escape(m.workflow_type or 'workflow')}</b> {escape(m.workflow_id)} "
                             f"<span style='color:#78909c'>run {escape(m.run_id or '—')} · {m.last_event_id} events · "
                             f"{m.graph.number_of_nodes()} nodes</span> {state}{error}</div>")
