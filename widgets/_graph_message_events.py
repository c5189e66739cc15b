"""Messages sent to the run in the history graph: signals, updates and cancel requests.

A signal or a cancel request wakes the workflow: it triggers the next workflow task.
An update is accepted and later completed by workflow tasks (``schedules``, then
``completes``).
"""

from __future__ import annotations

from spindle.client import HistoryEvent
from spindle.widgets._graph_builder_state import BuilderState, EventHandler
from spindle.widgets._payloads import decode_payloads

__all__ = ["MessageEvents"]


class MessageEvents:
    """Adds the ``signal:``, ``update:`` and ``cancel_request:`` nodes."""

    def __init__(self, state: BuilderState) -> None:
        self._state = state

    def handlers(self) -> dict[str, EventHandler]:
        return {
            "WorkflowExecutionSignaled": self._signaled,
            "WorkflowExecutionCancelRequested": self._cancel_requested,
            "WorkflowExecutionUpdateAccepted": self._update_accepted,
            "WorkflowExecutionUpdateCompleted": self._update_completed,
        }

    def _signaled(self, event: HistoryEvent) -> None:
        a = event.attributes
        node_id = f"signal:{event.event_id}"
        details = {k: a[k] for k in ("signal_name", "identity", "external_workflow_execution") if k in a}
        self._state.add(event, node_id, "signal", f"signal {a.get('signal_name', '')}", "received",
                        end_time=event.event_time, input=decode_payloads(a.get("input")), details=details)
        self._state.pending.append(node_id)

    def _cancel_requested(self, event: HistoryEvent) -> None:
        a = event.attributes
        node_id = f"cancel_request:{event.event_id}"
        self._state.add(event, node_id, "cancel_request", "cancel requested", "received", end_time=event.event_time,
                        details={k: a[k] for k in ("cause", "identity") if k in a})
        self._state.pending.append(node_id)

    def _update_accepted(self, event: HistoryEvent) -> None:
        s = self._state
        a = event.attributes
        node_id = f"update:{event.event_id}"
        s.add(event, node_id, "update", f"update {a.get('name', '')}", "running",
              input=decode_payloads(a.get("input")),
              details={k: a[k] for k in ("update_id", "name", "identity") if k in a})
        s.by_ref[("update", event.event_id)] = node_id
        s.from_wft(event, node_id)

    def _update_completed(self, event: HistoryEvent) -> None:
        s = self._state
        a = event.attributes
        node_id = s.ref("update", event, "accepted_event_id")
        node = s.update(node_id, event, status="failed" if "failure" in a else "completed")
        if node is not None and node_id is not None:
            node.result = decode_payloads(a.get("success")) if "success" in a else None
            node.failure = a.get("failure")
            s.from_wft(event, node_id, "completes")
