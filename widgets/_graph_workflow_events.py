"""The run's own events in the history graph: its start and close, and its workflow tasks.

Workflow tasks are where the graph's causal order comes from: a workflow task started
is triggered by the events pending since the previous one (``triggers``), or follows
it (``next``); the commands a completed workflow task issued hang off it
(:meth:`BuilderState.from_wft`).

Worker build versioning: a workflow task run by a versioned worker records its build in
``details["build"]`` (``DEPLOYMENT.BUILD``, from the ``deployment_version`` of
WorkflowTaskStarted, then of WorkflowTaskCompleted) and the behavior the completion
declared in ``details["versioning_behavior"]`` (``pinned`` / ``auto upgrade``); tasks of
unversioned workers have neither.
"""

from __future__ import annotations

from typing import Any

from spindle.client import HistoryEvent
from spindle.widgets._graph_builder_state import BuilderState, EventHandler
from spindle.widgets._payloads import decode_payloads

__all__ = ["CLOSE_STATUS", "WorkflowEvents", "build_of"]

#: Closing event type -> the run's final status.
CLOSE_STATUS = {
    "WorkflowExecutionCompleted": "completed",
    "WorkflowExecutionFailed": "failed",
    "WorkflowExecutionCanceled": "canceled",
    "WorkflowExecutionTerminated": "terminated",
    "WorkflowExecutionTimedOut": "timed_out",
    "WorkflowExecutionContinuedAsNew": "continued_as_new",
}


def build_of(attributes: dict[str, Any]) -> str:
    """``DEPLOYMENT.BUILD`` of a workflow task event's ``deployment_version`` ("" for an unversioned worker)."""
    version = attributes.get("deployment_version")
    if not isinstance(version, dict) or not version.get("deployment_name"):
        return ""
    return f"{version['deployment_name']}.{version.get('build_id', '')}"


def _set_versioning(details: dict[str, Any], attributes: dict[str, Any]) -> None:
    build = build_of(attributes)
    if build:
        details["build"] = build
    behavior = str(attributes.get("versioning_behavior", "")).removeprefix("VERSIONING_BEHAVIOR_")
    if build and behavior and behavior != "UNSPECIFIED":
        details["versioning_behavior"] = behavior.lower().replace("_", " ")


class WorkflowEvents:
    """Adds the ``start``, ``close`` and ``wft:`` nodes, and sets the run's type and status."""

    def __init__(self, state: BuilderState) -> None:
        self._state = state

    def handlers(self) -> dict[str, EventHandler]:
        table: dict[str, EventHandler] = {
            "WorkflowExecutionStarted": self._started,
            "WorkflowTaskScheduled": self._wft_scheduled,
            "WorkflowTaskStarted": self._wft_started,
            "WorkflowTaskCompleted": self._wft_completed,
            "WorkflowTaskFailed": self._wft_failed,
            "WorkflowTaskTimedOut": self._wft_failed,
        }
        for name in CLOSE_STATUS:
            table[name] = self._closed
        return table

    # ------------------------------------------------------------------ start and close

    def _started(self, event: HistoryEvent) -> None:
        s = self._state
        a = event.attributes
        s.workflow_type = str(a.get("workflow_type", ""))
        details = {k: a[k] for k in ("workflow_type", "task_queue", "attempt", "continued_execution_run_id",
                                     "first_execution_run_id", "parent", "identity") if k in a}
        s.add(event, "start", "workflow_start", f"start {s.workflow_type}", "running",
              input=decode_payloads(a.get("input")), details=details)
        s.pending.append("start")

    def _closed(self, event: HistoryEvent) -> None:
        s = self._state
        a = event.attributes
        status = CLOSE_STATUS[event.event_type]
        s.status = status
        label = status.replace("_", " ")
        node = s.add(event, "close", "workflow_close", label, status, end_time=event.event_time)
        node.result = decode_payloads(a.get("result")) if "result" in a else None
        node.failure = a.get("failure")
        if event.event_type == "WorkflowExecutionTerminated":
            node.details["reason"] = a.get("reason", "")
        if event.event_type == "WorkflowExecutionContinuedAsNew":
            node.details["new_execution_run_id"] = a.get("new_execution_run_id", "")
            node.input = decode_payloads(a.get("input"))
        if "workflow_task_completed_event_id" in a:
            s.from_wft(event, "close", "closes")
        else:
            s.edge(s.last_wft or "start", "close", "closes")
        start = s.update("start", event, status=status)
        if start is not None:
            start.result, start.failure = node.result, node.failure

    # ------------------------------------------------------------------ workflow tasks

    def _wft_scheduled(self, event: HistoryEvent) -> None:
        node_id = f"wft:{event.event_id}"
        attempt = int(event.attributes.get("attempt") or 1)
        self._state.add(event, node_id, "workflow_task", "workflow task", "scheduled", details={"attempt": attempt})
        self._state.wft_by_sched[event.event_id] = node_id

    def _wft_started(self, event: HistoryEvent) -> None:
        s = self._state
        node_id = s.wft_by_sched.get(int(event.attributes.get("scheduled_event_id") or 0))
        node = s.update(node_id, event, status="running")
        if node is None or node_id is None:
            return
        node.order_key = event.event_id
        node.details["identity"] = event.attributes.get("identity", "")
        _set_versioning(node.details, event.attributes)
        if s.pending:
            for source in s.pending:
                s.edge(source, node_id, "triggers")
            s.pending.clear()
        elif s.last_wft is not None:
            s.edge(s.last_wft, node_id, "next")
        s.last_wft = node_id

    def _wft_completed(self, event: HistoryEvent) -> None:
        s = self._state
        node_id = s.wft_by_sched.get(int(event.attributes.get("scheduled_event_id") or 0))
        node = s.update(node_id, event, status="completed")
        if node is not None and node_id is not None:
            s.wft_by_completed[event.event_id] = node_id
            _set_versioning(node.details, event.attributes)

    def _wft_failed(self, event: HistoryEvent) -> None:
        s = self._state
        status = "failed" if event.event_type == "WorkflowTaskFailed" else "timed_out"
        node_id = s.wft_by_sched.get(int(event.attributes.get("scheduled_event_id") or 0))
        node = s.update(node_id, event, status=status)
        if node is not None and node_id is not None:
            node.failure = event.attributes.get("failure")
            node.details["cause"] = event.attributes.get("cause") or event.attributes.get("timeout_type", "")
            s.pending.append(node_id)
