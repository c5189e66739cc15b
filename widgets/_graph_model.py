"""A workflow run's history as a causal graph (a networkx ``DiGraph``).

Nodes (``graph.nodes[node_id]["node"]`` is a :class:`GraphNode`):

- ``start`` and ``close``: the run's first and closing events;
- ``wft:<scheduled id>``: a workflow task (a decision point of the workflow code);
- ``activity:<scheduled id>``: an activity with all its attempts (retries included);
- ``timer:<started id>``, ``signal:<id>``, ``update:<accepted id>``,
  ``marker:<id>`` (Version / SideEffect / DslStep / ``workflow.record_marker``), ``child:<initiated id>``,
  ``external_signal:<id>``, ``external_cancel:<id>``, ``cancel_request:<id>``,
  ``search_attributes:<id>``.

Edges carry ``kind``: ``schedules`` (a completed workflow task -> the commands it
issued), ``triggers`` (an event that woke the workflow -> the workflow task that
first saw it), ``next`` (a workflow task nothing in history triggered, e.g. one for
an update, -> from the previous workflow task), ``closes``, ``cancels`` and
``completes`` (a workflow task that completed an update accepted earlier).

:class:`HistoryGraphBuilder` consumes events incrementally, so a live widget can
feed it only the new events of each batch (see ``spindle.widgets._live``).
"""

from __future__ import annotations

import dataclasses
import datetime

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import networkx as nx

from spindle.client import History, HistoryEvent
from spindle.widgets._payloads import decode_payload, decode_payloads

__all__ = [
    "Attempt",
    "GraphNode",
    "HistoryGraphBuilder",
    "KINDS",
    "STATUSES",
    "build_graph",
    "workflow_status",
]

#: Node kinds, in legend order.
KINDS: tuple[str, ...] = (
    "workflow_start", "workflow_task", "activity", "timer", "signal", "update", "marker", "child",
    "external_signal", "external_cancel", "cancel_request", "search_attributes", "workflow_close",
)
#: Node statuses, in legend order.
STATUSES: tuple[str, ...] = (
    "scheduled", "running", "retrying", "completed", "fired", "received", "recorded", "failed",
    "timed_out", "cancel_requested", "canceled", "terminated", "continued_as_new",
)
FINAL_STATUSES = frozenset({"completed", "fired", "received", "recorded", "failed", "timed_out", "canceled",
                            "terminated", "continued_as_new"})
_CLOSE_STATUS = {
    "WorkflowExecutionCompleted": "completed",
    "WorkflowExecutionFailed": "failed",
    "WorkflowExecutionCanceled": "canceled",
    "WorkflowExecutionTerminated": "terminated",
    "WorkflowExecutionTimedOut": "timed_out",
    "WorkflowExecutionContinuedAsNew": "continued_as_new",
}
_CHILD_STATUS = {
    "ChildWorkflowExecutionCompleted": "completed",
    "ChildWorkflowExecutionFailed": "failed",
    "ChildWorkflowExecutionCanceled": "canceled",
    "ChildWorkflowExecutionTimedOut": "timed_out",
    "ChildWorkflowExecutionTerminated": "terminated",
}
RETRY_IN_PROGRESS = "RETRY_STATE_IN_PROGRESS"


@dataclasses.dataclass
class Attempt:
    """One attempt of an activity: when it ran and how it ended."""

    number: int
    started_event_id: int | None = None
    started_time: datetime.datetime | None = None
    end_event_id: int | None = None
    end_time: datetime.datetime | None = None
    outcome: str = "running"
    failure: Mapping[str, Any] | None = None
    retry_state: str | None = None
    next_backoff_ms: int | None = None


@dataclasses.dataclass
class GraphNode:
    """One node of the history graph (see the module docstring for the kinds)."""

    id: str
    kind: str
    label: str
    status: str
    first_event_id: int
    start_time: datetime.datetime
    end_time: datetime.datetime | None = None
    #: Event id at which the node entered the causal order (workflow tasks: started).
    order_key: int = 0
    event_ids: list[int] = dataclasses.field(default_factory=list)
    attempts: list[Attempt] = dataclasses.field(default_factory=list)
    input: list[Any] | None = None
    result: list[Any] | None = None
    failure: Mapping[str, Any] | None = None
    details: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: ``(workflow_id, run_id)`` of a child workflow node.
    child: tuple[str, str] | None = None

    @property
    def attempt_count(self) -> int:
        """How many attempts the activity made: the highest attempt number seen.

        Histories written since only an activity's final attempt is recorded carry the
        count on ``ActivityTaskStarted.attempt``; older ones have one Started/Failed pair
        per attempt. Both give the same number.
        """
        return max((a.number for a in self.attempts), default=0)

    @property
    def retries(self) -> int:
        """How many times the activity was retried (attempts - 1)."""
        return max(0, self.attempt_count - 1)

    @property
    def final(self) -> bool:
        """True once the node can no longer change status."""
        return self.status in FINAL_STATUSES


def _ms(value: Any) -> str:
    ms = int(value or 0)
    if ms and ms % 1000 == 0:
        seconds = ms // 1000
        for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
            if seconds % size == 0:
                return f"{seconds // size}{unit}"
        return f"{seconds}s"
    return f"{ms}ms"


def _first(values: list[Any]) -> Any:
    return values[0] if values else None


class HistoryGraphBuilder:
    """Builds the causal graph of one run; feed it events in order with :meth:`add_events`."""

    def __init__(self, workflow_id: str = "", run_id: str = "") -> None:
        self.graph: nx.DiGraph = nx.DiGraph(workflow_id=workflow_id, run_id=run_id)
        self.workflow_id = workflow_id
        self.run_id = run_id
        self.workflow_type = ""
        self.status = "running"
        self.last_event_id = 0
        self.start_time: datetime.datetime | None = None
        self.last_time: datetime.datetime | None = None
        self._pending: list[str] = []
        self._wft_by_sched: dict[int, str] = {}
        self._wft_by_completed: dict[int, str] = {}
        self._last_wft: str | None = None
        self._by_ref: dict[tuple[str, int], str] = {}
        self._handlers: dict[str, Callable[[HistoryEvent], None]] = self._dispatch()

    # ------------------------------------------------------------------ public

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
            self._touched = touched
            handler = self._handlers.get(event.event_type)
            if handler is not None:
                handler(event)
        return list(touched)

    def node(self, node_id: str) -> GraphNode:
        """The :class:`GraphNode` of ``node_id`` (``KeyError`` if absent)."""
        node: GraphNode = self.graph.nodes[node_id]["node"]
        return node

    def nodes(self) -> list[GraphNode]:
        """Every node, in causal order."""
        return sorted((d["node"] for _, d in self.graph.nodes(data=True)),
                      key=lambda n: (n.order_key, n.first_event_id))

    # ------------------------------------------------------------------ helpers

    def _add(self, event: HistoryEvent, node_id: str, kind: str, label: str, status: str, **fields: Any) -> GraphNode:
        node = GraphNode(id=node_id, kind=kind, label=label, status=status, first_event_id=event.event_id,
                         start_time=event.event_time, order_key=event.event_id, event_ids=[event.event_id], **fields)
        self.graph.add_node(node_id, node=node, kind=kind, status=status)
        self._touched[node_id] = None
        return node

    def _update(self, node_id: str | None, event: HistoryEvent, *, status: str | None = None) -> GraphNode | None:
        if node_id is None or node_id not in self.graph:
            return None
        node = self.node(node_id)
        node.event_ids.append(event.event_id)
        if status is not None:
            node.status = status
            self.graph.nodes[node_id]["status"] = status
            if status in FINAL_STATUSES:
                node.end_time = event.event_time
        self._touched[node_id] = None
        return node

    def _edge(self, source: str | None, target: str, kind: str) -> None:
        if source is None or source not in self.graph or source == target or self.graph.has_edge(source, target):
            return
        self.graph.add_edge(source, target, kind=kind)

    def _from_wft(self, event: HistoryEvent, target: str, kind: str = "schedules") -> None:
        completed = int(event.attributes.get("workflow_task_completed_event_id") or 0)
        self._edge(self._wft_by_completed.get(completed), target, kind)

    def _ref(self, group: str, event: HistoryEvent, key: str) -> str | None:
        return self._by_ref.get((group, int(event.attributes.get(key) or 0)))

    def _dispatch(self) -> dict[str, Callable[[HistoryEvent], None]]:
        table: dict[str, Callable[[HistoryEvent], None]] = {
            "WorkflowExecutionStarted": self._started,
            "WorkflowTaskScheduled": self._wft_scheduled,
            "WorkflowTaskStarted": self._wft_started,
            "WorkflowTaskCompleted": self._wft_completed,
            "WorkflowTaskFailed": self._wft_failed,
            "WorkflowTaskTimedOut": self._wft_failed,
            "ActivityTaskScheduled": self._activity_scheduled,
            "ActivityTaskStarted": self._activity_started,
            "ActivityTaskCompleted": self._activity_completed,
            "ActivityTaskFailed": self._activity_failed,
            "ActivityTaskTimedOut": self._activity_failed,
            "ActivityTaskCancelRequested": self._activity_cancel_requested,
            "ActivityTaskCanceled": self._activity_canceled,
            "TimerStarted": self._timer_started,
            "TimerFired": self._timer_fired,
            "TimerCanceled": self._timer_canceled,
            "MarkerRecorded": self._marker,
            "WorkflowExecutionSignaled": self._signaled,
            "WorkflowExecutionCancelRequested": self._cancel_requested,
            "WorkflowExecutionUpdateAccepted": self._update_accepted,
            "WorkflowExecutionUpdateCompleted": self._update_completed,
            "StartChildWorkflowExecutionInitiated": self._child_initiated,
            "StartChildWorkflowExecutionFailed": self._child_start_failed,
            "ChildWorkflowExecutionStarted": self._child_started,
            "SignalExternalWorkflowExecutionInitiated": self._external_initiated,
            "RequestCancelExternalWorkflowExecutionInitiated": self._external_initiated,
            "ExternalWorkflowExecutionSignaled": self._external_done,
            "ExternalWorkflowExecutionCancelRequested": self._external_done,
            "SignalExternalWorkflowExecutionFailed": self._external_failed,
            "RequestCancelExternalWorkflowExecutionFailed": self._external_failed,
            "UpsertWorkflowSearchAttributes": self._search_attributes,
        }
        for name in _CHILD_STATUS:
            table[name] = self._child_closed
        for name in _CLOSE_STATUS:
            table[name] = self._closed
        return table

    # ------------------------------------------------------------------ workflow

    def _started(self, event: HistoryEvent) -> None:
        a = event.attributes
        self.workflow_type = str(a.get("workflow_type", ""))
        details = {k: a[k] for k in ("workflow_type", "task_queue", "attempt", "continued_execution_run_id",
                                     "first_execution_run_id", "parent", "identity") if k in a}
        self._add(event, "start", "workflow_start", f"start {self.workflow_type}", "running",
                  input=decode_payloads(a.get("input")), details=details)
        self._pending.append("start")

    def _closed(self, event: HistoryEvent) -> None:
        a = event.attributes
        status = _CLOSE_STATUS[event.event_type]
        self.status = status
        label = status.replace("_", " ")
        node = self._add(event, "close", "workflow_close", label, status, end_time=event.event_time)
        node.result = decode_payloads(a.get("result")) if "result" in a else None
        node.failure = a.get("failure")
        if event.event_type == "WorkflowExecutionTerminated":
            node.details["reason"] = a.get("reason", "")
        if event.event_type == "WorkflowExecutionContinuedAsNew":
            node.details["new_execution_run_id"] = a.get("new_execution_run_id", "")
            node.input = decode_payloads(a.get("input"))
        if "workflow_task_completed_event_id" in a:
            self._from_wft(event, "close", "closes")
        else:
            self._edge(self._last_wft or "start", "close", "closes")
        start = self._update("start", event, status=status)
        if start is not None:
            start.result, start.failure = node.result, node.failure

    def _cancel_requested(self, event: HistoryEvent) -> None:
        a = event.attributes
        node_id = f"cancel_request:{event.event_id}"
        self._add(event, node_id, "cancel_request", "cancel requested", "received", end_time=event.event_time,
                  details={k: a[k] for k in ("cause", "identity") if k in a})
        self._pending.append(node_id)

    # ------------------------------------------------------------------ workflow tasks

    def _wft_scheduled(self, event: HistoryEvent) -> None:
        node_id = f"wft:{event.event_id}"
        attempt = int(event.attributes.get("attempt") or 1)
        self._add(event, node_id, "workflow_task", "workflow task", "scheduled", details={"attempt": attempt})
        self._wft_by_sched[event.event_id] = node_id

    def _wft_started(self, event: HistoryEvent) -> None:
        node_id = self._wft_by_sched.get(int(event.attributes.get("scheduled_event_id") or 0))
        node = self._update(node_id, event, status="running")
        if node is None or node_id is None:
            return
        node.order_key = event.event_id
        node.details["identity"] = event.attributes.get("identity", "")
        if self._pending:
            for source in self._pending:
                self._edge(source, node_id, "triggers")
            self._pending.clear()
        elif self._last_wft is not None:
            self._edge(self._last_wft, node_id, "next")
        self._last_wft = node_id

    def _wft_completed(self, event: HistoryEvent) -> None:
        node_id = self._wft_by_sched.get(int(event.attributes.get("scheduled_event_id") or 0))
        if self._update(node_id, event, status="completed") is not None and node_id is not None:
            self._wft_by_completed[event.event_id] = node_id

    def _wft_failed(self, event: HistoryEvent) -> None:
        status = "failed" if event.event_type == "WorkflowTaskFailed" else "timed_out"
        node_id = self._wft_by_sched.get(int(event.attributes.get("scheduled_event_id") or 0))
        node = self._update(node_id, event, status=status)
        if node is not None and node_id is not None:
            node.failure = event.attributes.get("failure")
            node.details["cause"] = event.attributes.get("cause") or event.attributes.get("timeout_type", "")
            self._pending.append(node_id)

    # ------------------------------------------------------------------ activities

    def _activity_scheduled(self, event: HistoryEvent) -> None:
        a = event.attributes
        node_id = f"activity:{event.event_id}"
        details: dict[str, Any] = {k: a[k] for k in ("activity_id", "activity_type", "task_queue", "retry_policy")
                                   if k in a}
        for key in ("schedule_to_close_timeout_ms", "schedule_to_start_timeout_ms", "start_to_close_timeout_ms",
                    "heartbeat_timeout_ms"):
            if a.get(key):
                details[key.removesuffix("_ms")] = _ms(a[key])
        self._add(event, node_id, "activity", str(a.get("activity_type", "activity")), "scheduled",
                  input=decode_payloads(a.get("input")), details=details)
        self._by_ref[("activity", event.event_id)] = node_id
        self._from_wft(event, node_id)

    def _attempt(self, node: GraphNode, event: HistoryEvent) -> Attempt:
        started = event.attributes.get("started_event_id")
        for attempt in reversed(node.attempts):
            if started and attempt.started_event_id == started:
                return attempt
        number = int(event.attributes.get("attempt") or len(node.attempts) + 1)
        attempt = Attempt(number=number)
        node.attempts.append(attempt)
        return attempt

    def _activity_started(self, event: HistoryEvent) -> None:
        node = self._update(self._ref("activity", event, "scheduled_event_id"), event, status="running")
        if node is not None:
            number = int(event.attributes.get("attempt") or len(node.attempts) + 1)
            last_failure = event.attributes.get("last_failure")
            if number > 1 and last_failure and not any(a.number == number - 1 for a in node.attempts):
                # Only the final attempt is in the history: the one before it is known by its failure.
                node.attempts.append(Attempt(number=number - 1, outcome="failed", failure=last_failure,
                                             retry_state=RETRY_IN_PROGRESS))
            node.attempts.append(Attempt(number=number, started_event_id=event.event_id,
                                         started_time=event.event_time))

    def _end_attempt(self, node: GraphNode, event: HistoryEvent, outcome: str) -> Attempt:
        attempt = self._attempt(node, event)
        attempt.end_event_id, attempt.end_time, attempt.outcome = event.event_id, event.event_time, outcome
        return attempt

    def _activity_completed(self, event: HistoryEvent) -> None:
        node_id = self._ref("activity", event, "scheduled_event_id")
        node = self._update(node_id, event, status="completed")
        if node is not None and node_id is not None:
            self._end_attempt(node, event, "completed")
            node.result = decode_payloads(event.attributes.get("result"))
            self._pending.append(node_id)

    def _activity_failed(self, event: HistoryEvent) -> None:
        a = event.attributes
        node_id = self._ref("activity", event, "scheduled_event_id")
        outcome = "failed" if event.event_type == "ActivityTaskFailed" else "timed_out"
        retrying = a.get("retry_state") == RETRY_IN_PROGRESS
        node = self._update(node_id, event, status="retrying" if retrying else outcome)
        if node is None or node_id is None:
            return
        attempt = self._end_attempt(node, event, outcome)
        attempt.failure, attempt.retry_state = a.get("failure"), a.get("retry_state")
        attempt.next_backoff_ms = a.get("next_attempt_backoff_ms")
        if not retrying:
            node.failure = a.get("failure")
            node.details["retry_state"] = a.get("retry_state", "")
            self._pending.append(node_id)

    def _activity_cancel_requested(self, event: HistoryEvent) -> None:
        node_id = self._ref("activity", event, "scheduled_event_id")
        node = self._update(node_id, event)
        if node is not None and node_id is not None:
            if not node.final:
                node.status = self.graph.nodes[node_id]["status"] = "cancel_requested"
            self._from_wft(event, node_id, "cancels")

    def _activity_canceled(self, event: HistoryEvent) -> None:
        node_id = self._ref("activity", event, "scheduled_event_id")
        node = self._update(node_id, event, status="canceled")
        if node is not None and node_id is not None:
            if node.attempts and node.attempts[-1].outcome == "running":
                self._end_attempt(node, event, "canceled")
            node.result = decode_payloads(event.attributes.get("details"))
            self._pending.append(node_id)

    # ------------------------------------------------------------------ timers, markers, signals, updates

    def _timer_started(self, event: HistoryEvent) -> None:
        a = event.attributes
        node_id = f"timer:{event.event_id}"
        duration = _ms(a.get("start_to_fire_timeout_ms"))
        self._add(event, node_id, "timer", f"timer {duration}", "running",
                  details={"timer_id": a.get("timer_id", ""), "duration": duration,
                           "duration_ms": int(a.get("start_to_fire_timeout_ms") or 0)})
        self._by_ref[("timer", event.event_id)] = node_id
        self._from_wft(event, node_id)

    def _timer_fired(self, event: HistoryEvent) -> None:
        node_id = self._ref("timer", event, "started_event_id")
        if self._update(node_id, event, status="fired") is not None and node_id is not None:
            self._pending.append(node_id)

    def _timer_canceled(self, event: HistoryEvent) -> None:
        node_id = self._ref("timer", event, "started_event_id")
        if self._update(node_id, event, status="canceled") is not None and node_id is not None:
            self._from_wft(event, node_id, "cancels")

    def _marker(self, event: HistoryEvent) -> None:
        a = event.attributes
        name = str(a.get("marker_name", "marker"))
        details = {key: (_first(decode_payloads(value)) if key != "data" else decode_payloads(value))
                   for key, value in (a.get("details") or {}).items()}
        if name == "Version":
            label = f"version {details.get('change_id', '?')}={details.get('version', '?')}"
        elif name == "SideEffect":
            label = f"side effect #{details.get('id', '?')}"
        elif name == "DslStep":  # spindle.dsl's step start/end markers
            label = f"step {details.get('step', '?')} {details.get('status', '')}".rstrip()
        else:
            label = name
        failure = a.get("failure") or None
        node_id = f"marker:{event.event_id}"
        self._add(event, node_id, "marker", label, "failed" if failure else "recorded", end_time=event.event_time,
                  failure=failure, details={"marker_name": name, **details},
                  result=details.get("data") if name == "SideEffect" else None)
        self._from_wft(event, node_id)

    def _signaled(self, event: HistoryEvent) -> None:
        a = event.attributes
        node_id = f"signal:{event.event_id}"
        details = {k: a[k] for k in ("signal_name", "identity", "external_workflow_execution") if k in a}
        self._add(event, node_id, "signal", f"signal {a.get('signal_name', '')}", "received",
                  end_time=event.event_time, input=decode_payloads(a.get("input")), details=details)
        self._pending.append(node_id)

    def _update_accepted(self, event: HistoryEvent) -> None:
        a = event.attributes
        node_id = f"update:{event.event_id}"
        self._add(event, node_id, "update", f"update {a.get('name', '')}", "running",
                  input=decode_payloads(a.get("input")),
                  details={k: a[k] for k in ("update_id", "name", "identity") if k in a})
        self._by_ref[("update", event.event_id)] = node_id
        self._from_wft(event, node_id)

    def _update_completed(self, event: HistoryEvent) -> None:
        a = event.attributes
        node_id = self._ref("update", event, "accepted_event_id")
        node = self._update(node_id, event, status="failed" if "failure" in a else "completed")
        if node is not None and node_id is not None:
            node.result = decode_payloads(a.get("success")) if "success" in a else None
            node.failure = a.get("failure")
            self._from_wft(event, node_id, "completes")

    def _search_attributes(self, event: HistoryEvent) -> None:
        fields = ((event.attributes.get("search_attributes") or {}).get("indexed_fields") or {})
        node_id = f"search_attributes:{event.event_id}"
        self._add(event, node_id, "search_attributes", "search attributes", "recorded", end_time=event.event_time,
                  details={k: decode_payload(v) for k, v in fields.items()})
        self._from_wft(event, node_id)

    # ------------------------------------------------------------------ children and external workflows

    def _child_initiated(self, event: HistoryEvent) -> None:
        a = event.attributes
        node_id = f"child:{event.event_id}"
        workflow_id = str(a.get("workflow_id", ""))
        self._add(event, node_id, "child", f"child {a.get('workflow_type', '')}", "scheduled",
                  input=decode_payloads(a.get("input")), child=(workflow_id, ""),
                  details={k: a[k] for k in ("workflow_id", "workflow_type", "task_queue", "namespace",
                                             "parent_close_policy") if k in a})
        self._by_ref[("child", event.event_id)] = node_id
        self._from_wft(event, node_id)

    def _child_start_failed(self, event: HistoryEvent) -> None:
        node_id = self._ref("child", event, "initiated_event_id")
        node = self._update(node_id, event, status="failed")
        if node is not None and node_id is not None:
            node.failure = {"message": f"child not started: {event.attributes.get('cause', '')}"}
            self._pending.append(node_id)

    def _child_started(self, event: HistoryEvent) -> None:
        node_id = self._ref("child", event, "initiated_event_id")
        node = self._update(node_id, event, status="running")
        if node is not None and node_id is not None:
            execution = event.attributes.get("workflow_execution") or {}
            node.child = (str(execution.get("workflow_id", node.child[0] if node.child else "")),
                          str(execution.get("run_id", "")))
            node.details["run_id"] = node.child[1]
            self._pending.append(node_id)

    def _child_closed(self, event: HistoryEvent) -> None:
        node_id = self._ref("child", event, "initiated_event_id")
        node = self._update(node_id, event, status=_CHILD_STATUS[event.event_type])
        if node is not None and node_id is not None:
            a = event.attributes
            node.result = decode_payloads(a.get("result")) if "result" in a else None
            node.failure = a.get("failure") or (
                {"message": f"terminated: {a.get('reason', '')}"} if event.event_type.endswith("Terminated") else None)
            self._pending.append(node_id)

    def _external_initiated(self, event: HistoryEvent) -> None:
        a = event.attributes
        signal = event.event_type.startswith("Signal")
        kind = "external_signal" if signal else "external_cancel"
        target = str((a.get("workflow_execution") or {}).get("workflow_id", ""))
        label = f"signal {a.get('signal_name', '')} → {target}" if signal else f"cancel {target}"
        node_id = f"{kind}:{event.event_id}"
        self._add(event, node_id, kind, label, "scheduled", input=decode_payloads(a.get("input")) if signal else None,
                  details={k: a[k] for k in ("signal_name", "workflow_execution", "reason", "namespace") if k in a})
        self._by_ref[("external", event.event_id)] = node_id
        self._from_wft(event, node_id)

    def _external_done(self, event: HistoryEvent) -> None:
        node_id = self._ref("external", event, "initiated_event_id")
        if self._update(node_id, event, status="completed") is not None and node_id is not None:
            self._pending.append(node_id)

    def _external_failed(self, event: HistoryEvent) -> None:
        node_id = self._ref("external", event, "initiated_event_id")
        node = self._update(node_id, event, status="failed")
        if node is not None and node_id is not None:
            node.failure = {"message": str(event.attributes.get("cause", "failed"))}
            self._pending.append(node_id)


def build_graph(history: History) -> HistoryGraphBuilder:
    """Build the causal graph of a whole history (``.graph`` is the networkx DiGraph)."""
    builder = HistoryGraphBuilder(history.workflow_id, history.run_id)
    builder.add_events(history.events)
    return builder


def workflow_status(history: History) -> str:
    """``running`` or the closing status (``completed``, ``failed``, ...) of a history."""
    for event in reversed(history.events):
        if event.event_type in _CLOSE_STATUS:
            return _CLOSE_STATUS[event.event_type]
    return "running"
