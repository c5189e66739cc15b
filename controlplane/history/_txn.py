"""A state change in the making: events, tasks and timers written in one transaction."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from spindle.api import messages_pb2 as pb

from ._event_kinds import wakes_workflow
from ._mutable_state import MutableState
from ._tasks import Task

if TYPE_CHECKING:
    from spindle.controlplane.store import VisibilityRow


_OUTCOME_ATTR = {
    pb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED: "activity_task_completed_event_attributes",
    pb.EVENT_TYPE_ACTIVITY_TASK_FAILED: "activity_task_failed_event_attributes",
    pb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT: "activity_task_timed_out_event_attributes",
    pb.EVENT_TYPE_ACTIVITY_TASK_CANCELED: "activity_task_canceled_event_attributes",
}


class Txn:
    """Collects what one state change writes. Events are applied to the state as added.

    If the commit fails, the engine evicts the state from its cache, so the half-applied
    in-memory state is never used again.
    """

    def __init__(self, state: MutableState, now_ms: int) -> None:
        self.state = state
        self.now_ms = now_ms
        self.events: list[pb.HistoryEvent] = []
        self.buffered: list[pb.HistoryEvent] = []
        self.clear_buffered = False
        #: The execution row must be written although no event is (a retried activity attempt).
        self.row_changed = False
        self.transfer: list[Task] = []
        self.timers: list[Task] = []
        self.timer_delete: list[tuple[int, int]] = []
        self.transfer_delete: list[int] = []
        self.visibility: list["VisibilityRow"] = []
        self.after_commit: list[Callable[[], Any]] = []
        self.wake = False
        self.new_run: tuple[MutableState, list[pb.HistoryEvent], list[Task], list[Task]] | None = None
        #: The request id that starts ``new_run`` (kept on its current-run row for start idempotency).
        self.new_run_request_id = ""
        self.current_status: int | None = None
        self.eager_activities: list[int] = []
        self._started_ids: dict[int, int] = {}
        self.start_request_id = ""
        #: Start the next workflow task in memory and hand it back in the response (no dispatch).
        self.inline_workflow_task = False

    def event(self, event_type: pb.EventType, attr: str, attrs: Any, *, time_ms: int | None = None, wake: bool = True) -> pb.HistoryEvent:
        """Append a numbered event to the history (not buffered) and fold it into the state.

        ``wake=False`` for events the workflow code already knows about (results of its own commands).
        """
        e = pb.HistoryEvent(event_id=self.state.next_event_id, event_time_ms=time_ms or self.now_ms, event_type=event_type)
        getattr(e, attr).CopyFrom(attrs)
        self._link(e)
        self.state.apply(e)
        self.events.append(e)
        if wake and wakes_workflow(e):
            self.wake = True
        return e

    def append_numbered(self, e: pb.HistoryEvent) -> None:
        """Append an event built elsewhere (a flushed buffered event); renumbers it."""
        e.event_id = self.state.next_event_id
        self._link(e)
        self.state.apply(e)
        self.events.append(e)
        if wakes_workflow(e):
            self.wake = True

    def delete_timer(self, t: Task) -> None:
        """Delete a timer's row with this transaction (if it was ever written)."""
        if t.task_id:
            self.timer_delete.append((t.fire_time_ms, t.task_id))
        elif t in self.timers:
            self.timers.remove(t)

    def _link(self, e: pb.HistoryEvent) -> None:
        """Point an activity attempt's outcome at its Started event (ids are known only when numbered)."""
        t = e.event_type
        if t == pb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            self._started_ids[e.activity_task_started_event_attributes.scheduled_event_id] = e.event_id
            return
        attr = _OUTCOME_ATTR.get(t)
        if attr is not None:
            a = getattr(e, attr)
            if not a.started_event_id:
                a.started_event_id = self._started_ids.get(a.scheduled_event_id, 0)

    def external(self, event_type: pb.EventType, attr: str, attrs: Any) -> pb.HistoryEvent | None:
        """An event from outside the workflow code: buffered while a workflow task runs."""
        wt = self.state.workflow_task
        if wt is not None and wt.started:
            e = pb.HistoryEvent(event_id=0, event_time_ms=self.now_ms, event_type=event_type)
            getattr(e, attr).CopyFrom(attrs)
            self.state.buffered.append(e)
            self.buffered.append(e)
            return None
        return self.event(event_type, attr, attrs)
