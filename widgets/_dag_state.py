"""Which state each step of a YAML DAG is in, read from an execution's history.

Since ``spindle.dsl`` records ``DslStep`` markers (runs whose first workflow task
recorded the ``dsl-step-markers`` patch), every step's state is exact:

- a step's end marker says ``completed`` (``done``), ``failed`` (with the error)
  or ``skipped`` (with the reason: its ``when`` was false, or its trigger rule
  said no);
- a step that started but has no end marker yet is ``running``: its start
  marker (``workflow:``, ``sleep:``, ``wait_for_signal:`` steps) or its own
  activity (whose activity id is the step id) says it started;
- nothing about a step means ``pending`` (or, once the run closed, that it
  never started: ``skipped``), and a started step without an end in a closed
  run was cancelled with the run (``failed``).

Histories of older runs have no markers; for them the state is inferred as
before: activity ids (``step``, ``step[i]`` per ``for_each`` item,
``step.on_failure``) and child workflow ids (``<parent>/<step>``) are exact,
timers and signals are matched by duration and signal name, and ``set`` /
``fail`` steps and skips are inferred from their neighbours:

- a step whose descendants ran has finished (``done``);
- a step whose upstream steps have all finished, yet no later workflow task
  scheduled it, was ``skipped`` (its ``when`` was false or its trigger rule said no);
- a failed run names its failed step in the failure details (``{"step": ...}``).

States: ``pending``, ``running``, ``done``, ``failed``, ``skipped``.
"""

from __future__ import annotations

import dataclasses

from collections.abc import Mapping, Sequence
from typing import Any

import networkx as nx

from spindle.widgets._graph_model import HistoryGraphBuilder
from spindle.widgets._graph_nodes import GraphNode
from spindle.widgets._payloads import decode_payloads

__all__ = ["StepState", "dag_graph", "dag_json_from_history", "records_step_markers", "step_states", "STEP_STATES"]

STEP_STATES: tuple[str, ...] = ("pending", "running", "done", "failed", "skipped")
_BAD = frozenset({"failed", "timed_out", "canceled", "terminated"})
_DSL_FORMAT_PREFIX = "spindle.dsl/"
#: What ``spindle.dsl`` records (``spindle.dsl._runtime.STEP_MARKER`` / ``STEP_MARKERS_PATCH``);
#: the names are part of the history format, so they are spelled out here.
STEP_MARKER = "DslStep"
STEP_MARKERS_PATCH = "dsl-step-markers"
_END_STATES = {"completed": "done", "failed": "failed", "skipped": "skipped"}
_SKIP_REASONS = {"when": "its when condition was false", "trigger_rule": "its trigger rule said no"}


@dataclasses.dataclass
class StepState:
    """A step's state, the history nodes it was read from, and how it was decided."""

    step_id: str
    status: str = "pending"
    nodes: list[str] = dataclasses.field(default_factory=list)
    note: str = ""
    finished_at: int = 0


def dag_graph(dag: Mapping[str, Any]) -> nx.DiGraph:
    """The step graph of a DAG in its JSON form: an edge from each dependency to its dependant."""
    graph = nx.DiGraph(name=dag.get("name", ""))
    for index, step in enumerate(dag.get("steps") or ()):
        graph.add_node(step["id"], step=step, order=index)
    for step in dag.get("steps") or ():
        for dep in step.get("depends_on") or ():
            if dep in graph:
                graph.add_edge(dep, step["id"], kind="depends")
    return graph


def _is_dag(value: Any) -> bool:
    return isinstance(value, Mapping) and str(value.get("format", "")).startswith(_DSL_FORMAT_PREFIX)


def dag_json_from_history(builder: HistoryGraphBuilder) -> dict[str, Any] | None:
    """The DAG a DSL run executes: from its input (``{"dag": ..., "inputs": ...}``) or its SideEffect marker."""
    if "start" in builder.graph:
        for value in builder.node("start").input or ():
            if isinstance(value, Mapping) and _is_dag(value.get("dag")):
                return dict(value["dag"])
    for node in builder.nodes():
        if node.kind == "marker" and node.details.get("marker_name") == "SideEffect":
            for value in node.details.get("data") or ():
                if _is_dag(value):
                    return dict(value)
    return None


def _last_event(nodes: Sequence[GraphNode]) -> int:
    return max((n.event_ids[-1] for n in nodes), default=0)


def _from_nodes(state: StepState, nodes: Sequence[GraphNode], handlers: Sequence[GraphNode]) -> None:
    state.nodes = [n.id for n in (*nodes, *handlers)]
    if any(not n.final for n in nodes):
        state.status = "running"
    elif handlers or any(n.status in _BAD for n in nodes):
        state.status = "failed"
        state.finished_at = _last_event([*nodes, *handlers]) if all(h.final for h in handlers) else 0
        if handlers and any(not h.final for h in handlers):
            state.status = "running"
    else:
        state.status = "done"
        state.finished_at = _last_event(nodes)


def _failed_step(builder: HistoryGraphBuilder) -> str | None:
    if "close" not in builder.graph:
        return None
    failure = builder.node("close").failure
    while isinstance(failure, Mapping):
        info = failure.get("application_failure_info")
        if isinstance(info, Mapping):
            for value in decode_payloads(info.get("details")):
                if isinstance(value, Mapping) and "step" in value:
                    return str(value["step"])
        failure = failure.get("cause")
    return None


class _Evidence:
    """Indexes of a history's nodes by what the DSL records."""

    def __init__(self, builder: HistoryGraphBuilder) -> None:
        nodes = builder.nodes()
        self.activities = [n for n in nodes if n.kind == "activity"]
        self.children = [n for n in nodes if n.kind == "child"]
        self.timers = [n for n in nodes if n.kind == "timer"]
        self.signals = [n for n in nodes if n.kind == "signal"]
        self.used: set[str] = set()
        self.task_completions = sorted(n.event_ids[-1] for n in nodes
                                       if n.kind == "workflow_task" and n.status == "completed")

    def activity(self, step_id: str) -> tuple[list[GraphNode], list[GraphNode]]:
        own = [n for n in self.activities
               if n.details.get("activity_id") in (step_id,) or str(n.details.get("activity_id", "")).startswith(
                   step_id + "[")]
        handlers = [n for n in self.activities if n.details.get("activity_id") == f"{step_id}.on_failure"]
        return own, handlers

    def child(self, step_id: str, workflow_id: Any) -> list[GraphNode]:
        found = []
        for n in self.children:
            wid = str(n.details.get("workflow_id", ""))
            if wid.endswith("/" + step_id) or f"/{step_id}[" in wid or (isinstance(workflow_id, str)
                                                                        and "${{" not in workflow_id
                                                                        and wid == workflow_id):
                found.append(n)
        return found

    def timer(self, seconds: float) -> GraphNode | None:
        want = round(seconds * 1000)
        for n in self.timers:
            if n.id not in self.used and n.details.get("duration_ms") == want:
                self.used.add(n.id)
                return n
        return None

    def signal(self, name: str) -> GraphNode | None:
        for n in self.signals:
            if n.id not in self.used and n.details.get("signal_name") == name:
                self.used.add(n.id)
                return n
        return None

    def task_completed_after(self, event_id: int) -> bool:
        return bool(self.task_completions) and self.task_completions[-1] > event_id


def _direct(state: StepState, step: Mapping[str, Any], ev: _Evidence) -> None:
    kind = step.get("kind") or {}
    kind_type = kind.get("type")
    step_id = step["id"]
    if kind_type == "activity":
        own, handlers = ev.activity(step_id)
        if own or handlers:
            _from_nodes(state, own, handlers)
            state.note = f"activity id {step_id!r}"
    elif kind_type == "workflow":
        children = ev.child(step_id, kind.get("workflow_id"))
        if children:
            _from_nodes(state, children, [])
            state.note = "child workflow id"
    elif kind_type == "sleep":
        timer = ev.timer(float(kind.get("seconds") or 0))
        if timer is not None:
            _from_nodes(state, [timer], [])
            state.note = "timer of the same duration"
    elif kind_type == "wait_for_signal":
        signal = ev.signal(str(kind.get("signal", "")))
        if signal is not None:
            state.status, state.nodes, state.finished_at = "done", [signal.id], signal.first_event_id
            state.note = f"signal {kind.get('signal')!r} received"
        if kind.get("timeout"):
            ev.timer(float(kind["timeout"]))  # its timeout timer is not a sleep step's


def records_step_markers(builder: HistoryGraphBuilder) -> bool:
    """True if the run records ``DslStep`` markers (its ``dsl-step-markers`` patch marker is in history)."""
    return any(n.kind == "marker" and (n.details.get("marker_name") == STEP_MARKER
                                       or (n.details.get("marker_name") == "Version"
                                           and n.details.get("change_id") == STEP_MARKERS_PATCH))
               for n in builder.nodes())


def _exact_states(graph: nx.DiGraph, order: Sequence[str], builder: HistoryGraphBuilder) -> dict[str, StepState]:
    """States read from ``DslStep`` markers (see the module docstring)."""
    ev = _Evidence(builder)
    by_id = {n.first_event_id: n for n in builder.nodes()}
    started: dict[str, GraphNode] = {}
    ended: dict[str, GraphNode] = {}
    for node in builder.nodes():
        if node.kind == "marker" and node.details.get("marker_name") == STEP_MARKER:
            step_id = str(node.details.get("step"))
            (ended if node.details.get("status") in _END_STATES else started)[step_id] = node
    run_status = builder.status
    states: dict[str, StepState] = {}
    for step_id in order:
        step = graph.nodes[step_id]["step"]
        kind = step.get("kind") or {}
        state = states[step_id] = StepState(step_id)
        own: list[GraphNode] = []
        handlers: list[GraphNode] = []
        if kind.get("type") == "activity":
            own, handlers = ev.activity(step_id)
        elif kind.get("type") == "workflow":
            own = ev.child(step_id, kind.get("workflow_id"))
        if step_id in started:  # the step's timers follow its start marker (sleep, wait_for_signal timeout)
            next_id = started[step_id].first_event_id + 1
            while next_id in by_id and by_id[next_id].kind == "timer":
                own.append(by_id[next_id])
                next_id += 1
        markers = [m for m in (started.get(step_id), ended.get(step_id)) if m is not None]
        state.nodes = [n.id for n in (*own, *handlers, *markers)]
        end = ended.get(step_id)
        if end is not None:
            status = str(end.details.get("status"))
            state.status = _END_STATES[status]
            state.finished_at = end.first_event_id
            if status == "skipped":
                reason = str(end.details.get("reason", ""))
                state.note = _SKIP_REASONS.get(reason, reason or "skipped")
            elif status == "failed":
                state.note = str(end.details.get("error", ""))
                if end.details.get("handled"):
                    state.note += " (handled by on_failure; the run went on)"
            else:
                state.note = "DslStep marker"
        elif step_id in started or own:
            if run_status == "running":
                state.status, state.note = "running", "started (DslStep marker)" if step_id in started else \
                    "its activity or child is scheduled"
            else:
                state.status, state.note = "failed", f"the run {run_status.replace('_', ' ')} while the step ran"
        elif run_status != "running":
            state.status, state.note = "skipped", "the run closed before the step started"
        else:
            state.status = "pending"
    return states


def step_states(dag: Mapping[str, Any], builder: HistoryGraphBuilder) -> dict[str, StepState]:
    """The state of every step of ``dag`` (JSON form) in the run ``builder`` was fed.

    Exact for runs that record ``DslStep`` markers, inferred for older runs
    (see the module docstring).
    """
    graph = dag_graph(dag)
    order = list(nx.topological_sort(graph)) if nx.is_directed_acyclic_graph(graph) else list(graph)
    if records_step_markers(builder):
        return _exact_states(graph, order, builder)
    return _inferred_states(graph, order, builder)


def _inferred_states(graph: nx.DiGraph, order: Sequence[str], builder: HistoryGraphBuilder) -> dict[str, StepState]:
    """States of a run from before step markers, inferred from ids, durations and neighbours."""
    ev = _Evidence(builder)
    states = {step_id: StepState(step_id) for step_id in order}
    known: set[str] = set()
    for step_id in order:
        _direct(states[step_id], graph.nodes[step_id]["step"], ev)
        if states[step_id].nodes:
            known.add(step_id)
    run_status = builder.status
    failed_step = _failed_step(builder)
    for step_id in order:
        state = states[step_id]
        if step_id in known:
            continue
        step = graph.nodes[step_id]["step"]
        deps = [states[d] for d in graph.predecessors(step_id)]
        ready_at = max((d.finished_at for d in deps), default=0)
        deps_finished = all(d.status in ("done", "failed", "skipped") for d in deps)
        kind_type = (step.get("kind") or {}).get("type")
        if failed_step == step_id:
            state.status, state.note = "failed", "named by the run's failure"
        elif any(states[d].status != "pending" and d in known for d in nx.descendants(graph, step_id)):
            state.status, state.note = "done", "inferred: a later step ran"
        elif not deps_finished:
            state.status = "skipped" if run_status != "running" else "pending"
            state.note = "the run closed before it could start" if run_status != "running" else ""
        elif kind_type in ("set", "fail"):
            if run_status == "running" and not ev.task_completed_after(ready_at):
                state.status, state.note = "pending", ""
            else:
                state.status, state.note = "done", "inferred: set/fail steps leave no event"
        elif run_status == "running" and kind_type in ("sleep", "wait_for_signal"):
            state.status, state.note = "running", "waiting"
        elif run_status != "running" or ev.task_completed_after(ready_at):
            state.status, state.note = "skipped", "inferred: upstream finished and it was not scheduled"
        else:
            state.status = "pending"
        if state.status in ("done", "skipped", "failed"):
            state.finished_at = ready_at
    return states

