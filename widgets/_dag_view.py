"""``DagView``: a YAML workflow's step graph, coloured by each step's state in an execution."""

from __future__ import annotations

import asyncio
import json
import os

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import ipywidgets as w
import networkx as nx

from spindle import dsl
from spindle.widgets._background import Runner
from spindle.widgets._dag_state import StepState, dag_graph, dag_json_from_history, step_states
from spindle.widgets._export import export_html
from spindle.widgets._graph_model import HistoryGraphBuilder
from spindle.widgets._history_render import describe_node
from spindle.widgets._live import FollowsExecution, HistoryFeed
from spindle.widgets._sources import codecs_for, is_handle, load_history
from spindle.widgets._svg import Shape, escape, render_graph, status_badge

__all__ = ["DagView"]

_FORMS = {"workflow": "double", "wait_for_signal": "tag", "sleep": "pill", "set": "box", "fail": "box"}


def _workflow(definition: Any) -> dsl.DslWorkflow | None:
    """A ``DslWorkflow`` from a ``DslWorkflow``, a YAML path or text, or a compiled DAG (dict or JSON text)."""
    if definition is None or isinstance(definition, dsl.DslWorkflow):
        return definition
    if isinstance(definition, Mapping):
        return dsl.from_json(definition)
    if isinstance(definition, str) and definition.lstrip().startswith("{"):
        return dsl.from_json(definition)
    if isinstance(definition, (str, os.PathLike)):
        return dsl.load(definition)
    raise TypeError(f"expected a DslWorkflow, YAML path or text, or a compiled DAG, got {type(definition).__name__}")


def _step_summary(step: Mapping[str, Any]) -> str:
    kind = step.get("kind") or {}
    kind_type = str(kind.get("type", "?"))
    seconds = float(kind.get("seconds") or 0)
    value = {"activity": kind.get("activity"), "workflow": kind.get("workflow"),
             "sleep": f"{seconds * 1000:g}ms" if seconds < 1 else f"{seconds:g}s",
             "wait_for_signal": kind.get("signal"), "set": ", ".join(kind.get("values") or {}),
             "fail": "fail"}.get(kind_type, "")
    text = f"{kind_type.replace('_', ' ')} {value}" if kind_type != "fail" else "fail"
    if step.get("for_each") is not None:
        text += " ×each"
    if step.get("when") is not None:
        text += " ?when"
    return text


def _compact(value: Any) -> Any:
    """``value`` without null / empty entries (for showing a step's definition)."""
    if isinstance(value, Mapping):
        return {k: _compact(v) for k, v in value.items() if v not in (None, [], {}, "")}
    if isinstance(value, list):
        return [_compact(v) for v in value]
    return value


class DagView(FollowsExecution, w.VBox):
    """A YAML DAG drawn as its step graph; with an execution, each step coloured by its state.

    Args:
        dsl_definition: a ``DslWorkflow`` (``spindle.dsl.load(...)``), a YAML path or
            text, or the compiled DAG (``DslWorkflow.dag_json``, loaded with
            ``spindle.dsl.from_json``); ``None`` reads the DAG the execution itself
            carries (in its input or its first SideEffect marker).
        execution: a ``WorkflowHandle`` (followed while running when ``live``,
            through ``handle.watch_history()``), a ``History`` or History JSON,
            or ``None`` for the bare DAG.
        live, poll_interval, text_limit, loop: as for ``HistoryGraph``.
        client, codecs: decode a recorded history's payloads with these codecs (default:
            the client's), as for ``HistoryGraph``; a handle's client decodes its own.

    ``states`` maps each step id to a ``StepState`` (``pending``, ``running``,
    ``done``, ``failed`` or ``skipped``, with the history nodes it was read from
    and a note saying why). For runs that record ``DslStep`` markers every
    step's state is exact, whatever its kind (``set`` steps and ``when`` skips
    included); older runs' states are inferred (see ``spindle.widgets._dag_state``).
    """

    def __init__(
        self,
        dsl_definition: Any = None,
        execution: Any = None,
        *,
        live: bool = True,
        poll_interval: tuple[float, float] = (0.5, 2.0),
        text_limit: int = 400,
        loop: asyncio.AbstractEventLoop | None = None,
        max_height: str = "480px",
        client: Any = None,
        codecs: Sequence[Any] | None = None,
    ) -> None:
        super().__init__(layout=w.Layout(width="100%"))
        self._codecs, self._namespace = codecs_for(client, codecs)
        self._workflow = _workflow(dsl_definition)
        self._dag: dict[str, Any] | None = dict(self._workflow.dag_json) if self._workflow is not None else None
        self._dag_error: str | None = None
        if self._dag is None and execution is None:
            raise ValueError("DagView needs a DSL definition, an execution, or both")
        self.text_limit = text_limit
        self._max_height = max_height
        self.model: HistoryGraphBuilder | None = None
        self.states: dict[str, StepState] = {}
        self._feed: HistoryFeed | None = None
        self._build_widgets()
        if execution is None:
            self._render()
        elif is_handle(execution):
            self.model = HistoryGraphBuilder(str(getattr(execution, "id", "")), "")
            self._feed = HistoryFeed(execution, Runner(loop), self.model, lambda _c: self._render(),
                                     self._render_header, interval=poll_interval)
            self._render()
            self._feed.start(live=live)
        else:
            history = load_history(execution, codecs=self._codecs, namespace=self._namespace)
            self.model = HistoryGraphBuilder(history.workflow_id, history.run_id)
            self.model.add_events(history.events)
            self._render()

    # ------------------------------------------------------------------ public API

    @property
    def dag(self) -> dict[str, Any] | None:
        """The DAG in its JSON form (from the definition, else from the execution once read)."""
        if self._dag is None and self.model is not None:
            found = dag_json_from_history(self.model)
            if found is not None:
                try:
                    self._workflow = dsl.from_json(found)
                except ValueError as error:  # e.g. a DAG format of a newer SDK: draw it as it is
                    self._dag_error = f"the execution's DAG does not load: {error}"
                self._dag = found
        return self._dag

    @property
    def workflow(self) -> dsl.DslWorkflow | None:
        """The DAG as a ``DslWorkflow`` (the definition, or the DAG the execution carries rebuilt with
        ``spindle.dsl.from_json``); ``None`` until known."""
        _ = self.dag
        return self._workflow

    @property
    def graph(self) -> nx.DiGraph:
        """The step graph (an edge from each dependency to its dependant)."""
        return dag_graph(self.dag or {})

    def select(self, step_id: str | None) -> None:
        """Show ``step_id`` in the detail panel."""
        self.step_picker.value = step_id

    def close(self) -> None:
        """Stop following the execution and close the widget."""
        self.stop()
        super().close()

    def to_svg(self) -> str:
        """The step graph as standalone SVG (steps coloured by state when there is an execution)."""
        dag = self.dag
        if dag is None:
            return ('<svg xmlns="http://www.w3.org/2000/svg" width="320" height="30"><text x="8" y="20" '
                    'font-family="sans-serif" font-size="12">waiting for the execution\'s DAG…</text></svg>')
        graph = dag_graph(dag)
        order = list(nx.topological_sort(graph)) if nx.is_directed_acyclic_graph(graph) else list(graph)
        shapes = []
        for step_id in order:
            step = graph.nodes[step_id]["step"]
            state = self.states.get(step_id)
            status = state.status if state else ""
            tooltip = f"{step_id}: {_step_summary(step)}" + (f"\n{status}: {state.note}" if state else "")
            shapes.append(Shape(id=step_id, label=step_id, sublabel=_step_summary(step), status=status,
                                form=_FORMS.get((step.get("kind") or {}).get("type", ""), "box"),
                                tooltip=tooltip, dashed=status in ("pending", "skipped")))
        title = f"{dag.get('name', 'dag')}" + (f" · {self.model.workflow_id} · {self.model.status}" if self.model else "")
        return render_graph(graph, shapes, title=title, selected=self.step_picker.value, sources_follow_time=False)

    def to_html(self, path: str | os.PathLike[str], *, self_contained: bool = False) -> Path:
        """Write the view as an HTML page that renders offline."""
        return export_html(self, path, title=f"dag {(self.dag or {}).get('name', '')}", self_contained=self_contained)

    # ------------------------------------------------------------------ widgets

    def _build_widgets(self) -> None:
        self.header = w.HTML()
        self.graph_view = w.HTML()
        self.step_picker = w.Dropdown(options=[("—", None)], value=None, description="step",
                                      layout=w.Layout(width="98%"))
        self.full_text = w.Checkbox(value=False, description="full text", indent=False)
        self.detail = w.HTML("<i>pick a step</i>")
        panel = w.VBox([self.step_picker, self.full_text, self.detail],
                       layout=w.Layout(width="34%", min_width="260px", padding="0 0 0 8px"))
        self.children = [self.header, w.HBox([w.Box([self.graph_view], layout=w.Layout(width="66%")), panel])]
        self.step_picker.observe(self._picked, names="value")
        self.full_text.observe(lambda _c: self._show_detail(), names="value")

    def _picked(self, _change: Mapping[str, Any]) -> None:
        self._show_detail()
        self._render_graph()

    def _render(self) -> None:
        dag = self.dag
        if dag is not None and self.model is not None and self.model.last_event_id:
            self.states = step_states(dag, self.model)
        steps = [s["id"] for s in (dag or {}).get("steps") or ()]
        options = [("—", None)] + [(f"{s} · {self.states[s].status}" if s in self.states else s, s) for s in steps]
        if list(self.step_picker.options) != options:
            selected = self.step_picker.value
            with self.step_picker.hold_trait_notifications():
                self.step_picker.options = options
                self.step_picker.value = selected if selected in steps else None
        self._render_header()
        self._render_graph()
        self._show_detail()

    def _render_graph(self) -> None:
        self.graph_view.value = (f"<div style='overflow:auto;max-height:{self._max_height};"
                                 f"border:1px solid #eceff1'>{self.to_svg()}</div>")

    def _render_header(self) -> None:
        dag = self.dag or {}
        parts = [f"<b>{escape(dag.get('name', 'DAG'))}</b>"]
        if dag.get("version") is not None:
            parts.append(f"v{escape(dag['version'])}")
        parts.append(f"<span style='color:#78909c'>{len(dag.get('steps') or ())} steps</span>")
        if self.model is not None:
            parts.insert(0, status_badge(self.model.status))
            parts.append(f"<span style='color:#78909c'>{escape(self.model.workflow_id)} · "
                         f"{self.model.last_event_id} events</span>")
            counts: dict[str, int] = {}
            for state in self.states.values():
                counts[state.status] = counts.get(state.status, 0) + 1
            parts.extend(status_badge(s, f"{s} {n}") for s, n in sorted(counts.items()))
        if self._feed is not None and self._feed.polling and self._feed.live:
            parts.append("<span style='color:#1565c0'>● live</span>")
        if self._feed is not None and self._feed.error is not None:
            parts.append(f"<span style='color:#c62828'>{escape(self._feed.error)}</span>")
        if self._dag_error is not None:
            parts.append(f"<span style='color:#c62828'>{escape(self._dag_error)}</span>")
        self.header.value = f"<div style='font:13px sans-serif'>{' '.join(parts)}</div>"

    def _show_detail(self) -> None:
        step_id = self.step_picker.value
        dag = self.dag or {}
        step = next((s for s in dag.get("steps") or () if s["id"] == step_id), None)
        if step is None:
            self.detail.value = "<i>pick a step</i>"
            return
        limit = 0 if self.full_text.value else self.text_limit
        state = self.states.get(step_id)
        parts = [f"<h4 style='margin:4px 0'>{escape(step_id)}</h4>"]
        if state is not None:
            parts.append(f"<div>{status_badge(state.status)} <i>{escape(state.note)}</i></div>")
        definition = json.dumps(_compact(step), indent=1, default=str)
        parts.append(f"<pre style='white-space:pre-wrap;font-size:11px;line-height:1.3;background:#f7f9fa;"
                     f"padding:4px;margin:2px 0'>"
                     f"{escape(definition)}</pre>")
        if state is not None and self.model is not None:
            parts.extend(describe_node(self.model.node(n), limit=limit) for n in state.nodes if n in self.model.graph)
        self.detail.value = "".join(parts)
