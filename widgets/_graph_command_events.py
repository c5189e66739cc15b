"""The workflow's other commands in the history graph: timers, markers, search attributes,
child workflows and signals / cancel requests sent to external workflows.

Each node hangs off the workflow task that issued it (``schedules``); a timer fired, a
child workflow started or closed, and an external request done or failed wake the
workflow, so they trigger the next workflow task. (Activities have their own module.)
"""

from __future__ import annotations

from typing import Any

from spindle.client import HistoryEvent
from spindle.widgets._graph_builder_state import BuilderState, EventHandler, duration_text
from spindle.widgets._payloads import decode_payload, decode_payloads

__all__ = ["CHILD_STATUS", "CommandEvents"]

#: Closing event type of a child workflow -> the child node's status.
CHILD_STATUS = {
    "ChildWorkflowExecutionCompleted": "completed",
    "ChildWorkflowExecutionFailed": "failed",
    "ChildWorkflowExecutionCanceled": "canceled",
    "ChildWorkflowExecutionTimedOut": "timed_out",
    "ChildWorkflowExecutionTerminated": "terminated",
}


def _first(values: list[Any]) -> Any:
    return values[0] if values else None


class CommandEvents:
    """Adds and updates the ``timer:``, ``marker:``, ``search_attributes:``, ``child:`` and ``external_*:`` nodes."""

    def __init__(self, state: BuilderState) -> None:
        self._state = state

    def handlers(self) -> dict[str, EventHandler]:
        table: dict[str, EventHandler] = {
            "TimerStarted": self._timer_started,
            "TimerFired": self._timer_fired,
            "TimerCanceled": self._timer_canceled,
            "MarkerRecorded": self._marker,
            "UpsertWorkflowSearchAttributes": self._search_attributes,
            "StartChildWorkflowExecutionInitiated": self._child_initiated,
            "StartChildWorkflowExecutionFailed": self._child_start_failed,
            "ChildWorkflowExecutionStarted": self._child_started,
            "SignalExternalWorkflowExecutionInitiated": self._external_initiated,
            "RequestCancelExternalWorkflowExecutionInitiated": self._external_initiated,
            "ExternalWorkflowExecutionSignaled": self._external_done,
            "ExternalWorkflowExecutionCancelRequested": self._external_done,
            "SignalExternalWorkflowExecutionFailed": self._external_failed,
            "RequestCancelExternalWorkflowExecutionFailed": self._external_failed,
        }
        for name in CHILD_STATUS:
            table[name] = self._child_closed
        return table

    # ------------------------------------------------------------------ timers, markers, search attributes

    def _timer_started(self, event: HistoryEvent) -> None:
        s = self._state
        a = event.attributes
        node_id = f"timer:{event.event_id}"
        duration = duration_text(a.get("start_to_fire_timeout_ms"))
        s.add(event, node_id, "timer", f"timer {duration}", "running",
              details={"timer_id": a.get("timer_id", ""), "duration": duration,
                       "duration_ms": int(a.get("start_to_fire_timeout_ms") or 0)})
        s.by_ref[("timer", event.event_id)] = node_id
        s.from_wft(event, node_id)

    def _timer_fired(self, event: HistoryEvent) -> None:
        s = self._state
        node_id = s.ref("timer", event, "started_event_id")
        if s.update(node_id, event, status="fired") is not None and node_id is not None:
            s.pending.append(node_id)

    def _timer_canceled(self, event: HistoryEvent) -> None:
        s = self._state
        node_id = s.ref("timer", event, "started_event_id")
        if s.update(node_id, event, status="canceled") is not None and node_id is not None:
            s.from_wft(event, node_id, "cancels")

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
        self._state.add(event, node_id, "marker", label, "failed" if failure else "recorded",
                        end_time=event.event_time, failure=failure, details={"marker_name": name, **details},
                        result=details.get("data") if name == "SideEffect" else None)
        self._state.from_wft(event, node_id)

    def _search_attributes(self, event: HistoryEvent) -> None:
        fields = ((event.attributes.get("search_attributes") or {}).get("indexed_fields") or {})
        node_id = f"search_attributes:{event.event_id}"
        self._state.add(event, node_id, "search_attributes", "search attributes", "recorded",
                        end_time=event.event_time, details={k: decode_payload(v) for k, v in fields.items()})
        self._state.from_wft(event, node_id)

    # ------------------------------------------------------------------ children and external workflows

    def _child_initiated(self, event: HistoryEvent) -> None:
        s = self._state
        a = event.attributes
        node_id = f"child:{event.event_id}"
        workflow_id = str(a.get("workflow_id", ""))
        s.add(event, node_id, "child", f"child {a.get('workflow_type', '')}", "scheduled",
              input=decode_payloads(a.get("input")), child=(workflow_id, ""),
              details={k: a[k] for k in ("workflow_id", "workflow_type", "task_queue", "namespace",
                                         "parent_close_policy") if k in a})
        s.by_ref[("child", event.event_id)] = node_id
        s.from_wft(event, node_id)

    def _child_start_failed(self, event: HistoryEvent) -> None:
        s = self._state
        node_id = s.ref("child", event, "initiated_event_id")
        node = s.update(node_id, event, status="failed")
        if node is not None and node_id is not None:
            node.failure = {"message": f"child not started: {event.attributes.get('cause', '')}"}
            s.pending.append(node_id)

    def _child_started(self, event: HistoryEvent) -> None:
        s = self._state
        node_id = s.ref("child", event, "initiated_event_id")
        node = s.update(node_id, event, status="running")
        if node is not None and node_id is not None:
            execution = event.attributes.get("workflow_execution") or {}
            node.child = (str(execution.get("workflow_id", node.child[0] if node.child else "")),
                          str(execution.get("run_id", "")))
            node.details["run_id"] = node.child[1]
            s.pending.append(node_id)

    def _child_closed(self, event: HistoryEvent) -> None:
        s = self._state
        node_id = s.ref("child", event, "initiated_event_id")
        node = s.update(node_id, event, status=CHILD_STATUS[event.event_type])
        if node is not None and node_id is not None:
            a = event.attributes
            node.result = decode_payloads(a.get("result")) if "result" in a else None
            node.failure = a.get("failure") or (
                {"message": f"terminated: {a.get('reason', '')}"} if event.event_type.endswith("Terminated") else None)
            s.pending.append(node_id)

    def _external_initiated(self, event: HistoryEvent) -> None:
        s = self._state
        a = event.attributes
        signal = event.event_type.startswith("Signal")
        kind = "external_signal" if signal else "external_cancel"
        target = str((a.get("workflow_execution") or {}).get("workflow_id", ""))
        label = f"signal {a.get('signal_name', '')} → {target}" if signal else f"cancel {target}"
        node_id = f"{kind}:{event.event_id}"
        s.add(event, node_id, kind, label, "scheduled", input=decode_payloads(a.get("input")) if signal else None,
              details={k: a[k] for k in ("signal_name", "workflow_execution", "reason", "namespace") if k in a})
        s.by_ref[("external", event.event_id)] = node_id
        s.from_wft(event, node_id)

    def _external_done(self, event: HistoryEvent) -> None:
        s = self._state
        node_id = s.ref("external", event, "initiated_event_id")
        if s.update(node_id, event, status="completed") is not None and node_id is not None:
            s.pending.append(node_id)

    def _external_failed(self, event: HistoryEvent) -> None:
        s = self._state
        node_id = s.ref("external", event, "initiated_event_id")
        node = s.update(node_id, event, status="failed")
        if node is not None and node_id is not None:
            node.failure = {"message": str(event.attributes.get("cause", "failed"))}
            s.pending.append(node_id)
