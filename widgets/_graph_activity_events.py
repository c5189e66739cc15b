"""Activities in the history graph: one ``activity:`` node per scheduled activity, with its attempts.

A retried failure ends an :class:`Attempt` but not the activity (status ``retrying``);
only the final outcome becomes the node's status, failure or result. Histories that
record only an activity's final attempt still show the attempt before it, known by
``ActivityTaskStarted.last_failure``.
"""

from __future__ import annotations

from typing import Any

from spindle.client import HistoryEvent
from spindle.widgets._graph_builder_state import BuilderState, EventHandler, duration_text
from spindle.widgets._graph_nodes import Attempt, GraphNode
from spindle.widgets._payloads import decode_payloads

__all__ = ["RETRY_IN_PROGRESS", "ActivityEvents"]

RETRY_IN_PROGRESS = "RETRY_STATE_IN_PROGRESS"


class ActivityEvents:
    """Adds and updates the ``activity:`` nodes and their attempts."""

    def __init__(self, state: BuilderState) -> None:
        self._state = state

    def handlers(self) -> dict[str, EventHandler]:
        return {
            "ActivityTaskScheduled": self._scheduled,
            "ActivityTaskStarted": self._started,
            "ActivityTaskCompleted": self._completed,
            "ActivityTaskFailed": self._failed,
            "ActivityTaskTimedOut": self._failed,
            "ActivityTaskCancelRequested": self._cancel_requested,
            "ActivityTaskCanceled": self._canceled,
        }

    def _scheduled(self, event: HistoryEvent) -> None:
        s = self._state
        a = event.attributes
        node_id = f"activity:{event.event_id}"
        details: dict[str, Any] = {k: a[k] for k in ("activity_id", "activity_type", "task_queue", "retry_policy")
                                   if k in a}
        for key in ("schedule_to_close_timeout_ms", "schedule_to_start_timeout_ms", "start_to_close_timeout_ms",
                    "heartbeat_timeout_ms"):
            if a.get(key):
                details[key.removesuffix("_ms")] = duration_text(a[key])
        s.add(event, node_id, "activity", str(a.get("activity_type", "activity")), "scheduled",
              input=decode_payloads(a.get("input")), details=details)
        s.by_ref[("activity", event.event_id)] = node_id
        s.from_wft(event, node_id)

    def _attempt(self, node: GraphNode, event: HistoryEvent) -> Attempt:
        started = event.attributes.get("started_event_id")
        for attempt in reversed(node.attempts):
            if started and attempt.started_event_id == started:
                return attempt
        number = int(event.attributes.get("attempt") or len(node.attempts) + 1)
        attempt = Attempt(number=number)
        node.attempts.append(attempt)
        return attempt

    def _started(self, event: HistoryEvent) -> None:
        s = self._state
        node = s.update(s.ref("activity", event, "scheduled_event_id"), event, status="running")
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

    def _completed(self, event: HistoryEvent) -> None:
        s = self._state
        node_id = s.ref("activity", event, "scheduled_event_id")
        node = s.update(node_id, event, status="completed")
        if node is not None and node_id is not None:
            self._end_attempt(node, event, "completed")
            node.result = decode_payloads(event.attributes.get("result"))
            s.pending.append(node_id)

    def _failed(self, event: HistoryEvent) -> None:
        s = self._state
        a = event.attributes
        node_id = s.ref("activity", event, "scheduled_event_id")
        outcome = "failed" if event.event_type == "ActivityTaskFailed" else "timed_out"
        retrying = a.get("retry_state") == RETRY_IN_PROGRESS
        node = s.update(node_id, event, status="retrying" if retrying else outcome)
        if node is None or node_id is None:
            return
        attempt = self._end_attempt(node, event, outcome)
        attempt.failure, attempt.retry_state = a.get("failure"), a.get("retry_state")
        attempt.next_backoff_ms = a.get("next_attempt_backoff_ms")
        if not retrying:
            node.failure = a.get("failure")
            node.details["retry_state"] = a.get("retry_state", "")
            s.pending.append(node_id)

    def _cancel_requested(self, event: HistoryEvent) -> None:
        s = self._state
        node_id = s.ref("activity", event, "scheduled_event_id")
        node = s.update(node_id, event)
        if node is not None and node_id is not None:
            if not node.final:
                node.status = s.graph.nodes[node_id]["status"] = "cancel_requested"
            s.from_wft(event, node_id, "cancels")

    def _canceled(self, event: HistoryEvent) -> None:
        s = self._state
        node_id = s.ref("activity", event, "scheduled_event_id")
        node = s.update(node_id, event, status="canceled")
        if node is not None and node_id is not None:
            if node.attempts and node.attempts[-1].outcome == "running":
                self._end_attempt(node, event, "canceled")
            node.result = decode_payloads(event.attributes.get("details"))
            s.pending.append(node_id)
