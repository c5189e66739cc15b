"""A run's mutable state: pure data and the rules that fold history events into it (no I/O).

The history is the single source of truth: ``MutableState.apply(event)`` folds one
event into the state (pending activities, timers, children, the workflow task, ...),
and ``MutableState.rebuild`` replays a stored history. What is not in the history lives
only in memory on purpose (who started a task and when; pending queries and updates)
and is rebuilt conservatively after a restart (``ExecutionCache.load`` loads the rows;
the operations treat a task whose start they did not make as lost).
"""

from __future__ import annotations

import asyncio

from collections.abc import Iterable
from typing import Any

from spindle.api import messages_pb2 as pb
from spindle.controlplane.archival import BLOB_REF_ENCODING

from ._activity_retry_state import encode_retry_state, restore_retry_state
from ._event_kinds import CLOSE_STATUS
from ._pending import ActivityInfo, ChildInfo, PendingUpdate, TimerInfo, WorkflowTaskInfo
from ._versioning import fold_options_updated, fold_reset, fold_task_completed

RUNNING = pb.WORKFLOW_EXECUTION_STATUS_RUNNING


class MutableState:
    """Mutable state of one run. ``events`` holds the run's history in memory.

    Changed only under the workflow id's lock (``ExecutionCache.locked``), through a
    ``Txn`` that writes the same change to the store.
    """

    def __init__(self, namespace_id: str, namespace: str, workflow_id: str, run_id: str, shard_id: int) -> None:
        self.namespace_id = namespace_id
        self.namespace = namespace
        self.workflow_id = workflow_id
        self.run_id = run_id
        self.shard_id = shard_id
        # The history lives in one protobuf message: its events are stored in the message's
        # arena, not as one garbage-collected Python object each (a cache of 20,000 runs of
        # 25 events made every full collection walk half a million more objects: pauses of
        # 50-100 ms that every request in flight waited out). Indexing or slicing it gives
        # short-lived views; ``apply`` copies the event in.
        self._history = pb.History()
        self.events: Any = self._history.events  # RepeatedCompositeFieldContainer[pb.HistoryEvent]
        self.next_event_id = 1
        #: Serialized bytes of the history (``ServerConfig.history_max_bytes``); blob references count as stored.
        self.history_bytes = 0
        #: Whether an event may hold a large-payload reference (set by the committer and on load):
        #: history pages then count references at their expanded size.
        self.may_hold_blob_refs = False
        self._buffered_counted = 0  # how many of ``buffered`` ``_buffered_bytes`` covers
        self._buffered_bytes = 0
        self.db_version = 0
        self.status = RUNNING
        self.started: pb.WorkflowExecutionStartedEventAttributes | None = None
        self.start_time_ms = 0
        self.close_time_ms = 0
        self.close_event: pb.HistoryEvent | None = None
        self.workflow_task: WorkflowTaskInfo | None = None
        self.last_completed_started_id = 0  # started event id of the last completed workflow task
        self.activities: dict[int, ActivityInfo] = {}
        self.activity_ids: dict[str, int] = {}
        self.timers: dict[str, TimerInfo] = {}
        self.children: dict[int, ChildInfo] = {}
        self.signals_external: dict[int, pb.SignalExternalWorkflowExecutionInitiatedEventAttributes] = {}
        self.cancels_external: dict[int, pb.RequestCancelExternalWorkflowExecutionInitiatedEventAttributes] = {}
        self.cancel_requested = False
        self.search_attributes: dict[str, pb.Payload] = {}
        self.memo: dict[str, pb.Payload] = {}
        self.completed_updates: dict[str, pb.WorkflowExecutionUpdateCompletedEventAttributes] = {}
        self.accepted_updates: set[str] = set()
        # worker build versioning (``_versioning``): last build ("" = unversioned), behavior, override
        self.deployment_version = ""
        self.versioning_behavior = 0
        self.versioning_override: pb.VersioningOverride | None = None
        # in memory only
        self.buffered: list[pb.HistoryEvent] = []
        self.sticky_queue = ""
        self.sticky_timeout_ms = 0
        self.sticky_version = ""  # the build of the worker holding the run in its cache
        self.pending_updates: dict[str, PendingUpdate] = {}
        self.signal_request_ids: set[str] = set()
        self.changed = asyncio.Event()
        self.run_timer: Any = None  # the run-timeout timer Task, when known
        self.history_warned = False
        #: The request id that started this run (on its current-run row); None until read from there.
        self.start_request_id: str | None = None

    @classmethod
    def rebuild(cls, namespace_id: str, namespace: str, workflow_id: str, run_id: str, shard_id: int, *,
                events: Iterable[bytes], buffered: Iterable[bytes], activity_state: bytes,
                db_version: int) -> "MutableState":
        """The state of a stored run: its events replayed, its buffered events and retry state restored."""
        st = cls(namespace_id, namespace, workflow_id, run_id, shard_id)
        for raw in events:
            e = pb.HistoryEvent()
            e.ParseFromString(raw)
            st.apply(e)
            if BLOB_REF_ENCODING in raw:
                st.may_hold_blob_refs = True
        for raw in buffered:
            e = pb.HistoryEvent()
            e.ParseFromString(raw)
            st.buffered.append(e)
            if e.event_type == pb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED and e.workflow_execution_signaled_event_attributes.request_id:
                st.signal_request_ids.add(e.workflow_execution_signaled_event_attributes.request_id)
        st.load_activity_retry_state(activity_state)
        st.db_version = db_version
        return st

    # ------------------------------------------------------------------ helpers
    @property
    def running(self) -> bool:
        return self.status == RUNNING

    @property
    def workflow_type(self) -> str:
        return self.started.workflow_type if self.started else ""

    @property
    def task_queue(self) -> str:
        return self.started.task_queue if self.started else ""

    def notify(self) -> None:
        """Wake long polls waiting for new events."""
        self.changed.set()
        self.changed = asyncio.Event()

    # ------------------------------------------------------------------ retry state (execution row)
    def activity_retry_state(self) -> bytes:
        """The retry state of the pending activities past their first attempt, for the execution row (b"" when none).

        Retried attempts write no events (``_activity_retry_state``).
        """
        return encode_retry_state(self.activities)

    def load_activity_retry_state(self, raw: bytes) -> None:
        """Restore what ``activity_retry_state`` saved (after the events were applied)."""
        restore_retry_state(self.activities, raw)

    def buffered_bytes(self) -> int:
        """Serialized bytes of the events buffered behind the running workflow task.

        ``buffered`` only grows by appends and is emptied as a whole, so this counts each
        event once (amortized O(1) per call).
        """
        n = len(self.buffered)
        if n < self._buffered_counted:
            self._buffered_counted, self._buffered_bytes = 0, 0
        if n > self._buffered_counted:
            self._buffered_bytes += sum(e.ByteSize() for e in self.buffered[self._buffered_counted:])
            self._buffered_counted = n
        return self._buffered_bytes

    # ------------------------------------------------------------------ folding
    def apply(self, e: pb.HistoryEvent) -> None:
        """Fold one event (already numbered) into the state."""
        assert e.event_id == self.next_event_id, f"event {e.event_id} applied at {self.next_event_id}"
        self.events.append(e)
        e = self.events[-1]  # what the handlers keep refers to the stored copy, not to the caller's message
        self.next_event_id += 1
        self.history_bytes += e.ByteSize()
        t = e.event_type
        handler = _HANDLERS.get(t)
        if handler is not None:
            handler(self, e)
        status = CLOSE_STATUS.get(t)
        if status is not None:
            self.status = status
            self.close_time_ms = e.event_time_ms
            self.close_event = e
            self.workflow_task = None

    def _started(self, e: pb.HistoryEvent) -> None:
        a = e.workflow_execution_started_event_attributes
        self.started = a
        self.start_time_ms = e.event_time_ms
        self.search_attributes = dict(a.search_attributes.indexed_fields)
        self.memo = dict(a.memo.fields)

    def _wt_scheduled(self, e: pb.HistoryEvent) -> None:
        a = e.workflow_task_scheduled_event_attributes
        self.workflow_task = WorkflowTaskInfo(e.event_id, a.attempt or 1, a.task_queue, a.start_to_close_timeout_ms, e.event_time_ms)

    def _wt_started(self, e: pb.HistoryEvent) -> None:
        pass  # written together with the task's outcome; the in-memory info already says "started"

    def _wt_completed(self, e: pb.HistoryEvent) -> None:
        a = e.workflow_task_completed_event_attributes
        self.last_completed_started_id = a.started_event_id
        self.workflow_task = None
        fold_task_completed(self, a)

    def _options_updated(self, e: pb.HistoryEvent) -> None:
        fold_options_updated(self, e.workflow_execution_options_updated_event_attributes)

    def _wt_failed(self, e: pb.HistoryEvent) -> None:
        self.workflow_task = None
        if e.workflow_task_failed_event_attributes.cause == pb.WORKFLOW_TASK_FAILED_CAUSE_RESET_WORKFLOW:
            fold_reset(self)

    def _act_scheduled(self, e: pb.HistoryEvent) -> None:
        a = e.activity_task_scheduled_event_attributes
        info = ActivityInfo(
            scheduled_event_id=e.event_id,
            activity_id=a.activity_id,
            activity_type=a.activity_type,
            task_queue=a.task_queue,
            input=a.input,
            header=a.header,
            schedule_to_close_ms=a.schedule_to_close_timeout_ms,
            schedule_to_start_ms=a.schedule_to_start_timeout_ms,
            start_to_close_ms=a.start_to_close_timeout_ms,
            heartbeat_ms=a.heartbeat_timeout_ms,
            retry_policy=a.retry_policy,
            scheduled_time_ms=e.event_time_ms,
            attempt_scheduled_time_ms=e.event_time_ms,
        )
        self.activities[e.event_id] = info
        self.activity_ids[a.activity_id] = e.event_id

    def _act_closed(self, sid: int) -> None:
        info = self.activities.pop(sid, None)
        if info is not None:
            self.activity_ids.pop(info.activity_id, None)

    def _act_completed(self, e: pb.HistoryEvent) -> None:
        self._act_closed(e.activity_task_completed_event_attributes.scheduled_event_id)

    def _act_attempt_failed(self, sid: int, retry_state: int, failure: pb.Failure, event_time_ms: int, backoff_ms: int,
                            attempt: int) -> None:
        if retry_state == pb.RETRY_STATE_IN_PROGRESS:
            info = self.activities.get(sid)
            if info is not None:
                info.attempt = max(info.attempt, attempt + 1)
                info.attempt_scheduled_time_ms = event_time_ms + backoff_ms
                info.last_failure = failure
                info.started = False
                info.dispatched = False
        else:
            self._act_closed(sid)

    def _act_failed(self, e: pb.HistoryEvent) -> None:
        a = e.activity_task_failed_event_attributes
        self._act_attempt_failed(a.scheduled_event_id, a.retry_state, a.failure, e.event_time_ms, a.next_attempt_backoff_ms,
                                 a.attempt)

    def _act_timed_out(self, e: pb.HistoryEvent) -> None:
        a = e.activity_task_timed_out_event_attributes
        self._act_attempt_failed(a.scheduled_event_id, a.retry_state, a.failure, e.event_time_ms, a.next_attempt_backoff_ms,
                                 a.attempt)

    def _act_cancel_requested(self, e: pb.HistoryEvent) -> None:
        a = e.activity_task_cancel_requested_event_attributes
        info = self.activities.get(a.scheduled_event_id)
        if info is not None:
            info.cancel_requested = True
            info.cancel_requested_event_id = e.event_id

    def _act_canceled(self, e: pb.HistoryEvent) -> None:
        self._act_closed(e.activity_task_canceled_event_attributes.scheduled_event_id)

    def _timer_started(self, e: pb.HistoryEvent) -> None:
        a = e.timer_started_event_attributes
        self.timers[a.timer_id] = TimerInfo(a.timer_id, e.event_id, e.event_time_ms + a.start_to_fire_timeout_ms)

    def _timer_fired(self, e: pb.HistoryEvent) -> None:
        self._timer_ended(e.timer_fired_event_attributes)

    def _timer_canceled(self, e: pb.HistoryEvent) -> None:
        self._timer_ended(e.timer_canceled_event_attributes)

    def _timer_ended(self, a: pb.TimerFiredEventAttributes | pb.TimerCanceledEventAttributes) -> None:
        if self._names_pending_timer(a):
            del self.timers[a.timer_id]

    def _names_pending_timer(self, a: pb.TimerFiredEventAttributes | pb.TimerCanceledEventAttributes) -> bool:
        # The timer its TimerStarted names, not a later one under the same id (a task may cancel
        # a timer and start another with its id); started_event_id 0: an event that names none.
        info = self.timers.get(a.timer_id)
        return info is not None and a.started_event_id in (0, info.started_event_id)

    def ends_pending_timer(self, e: pb.HistoryEvent) -> bool:
        """Whether TimerFired ``e`` is the firing of a timer still pending (the one its TimerStarted names)."""
        return self._names_pending_timer(e.timer_fired_event_attributes)

    def _cancel_requested(self, e: pb.HistoryEvent) -> None:
        self.cancel_requested = True

    def _signaled(self, e: pb.HistoryEvent) -> None:
        rid = e.workflow_execution_signaled_event_attributes.request_id
        if rid:
            self.signal_request_ids.add(rid)  # a retried signal is not recorded twice, also after a reload

    def _upsert(self, e: pb.HistoryEvent) -> None:
        for k, v in e.upsert_workflow_search_attributes_event_attributes.search_attributes.indexed_fields.items():
            self.search_attributes[k] = v

    def _child_initiated(self, e: pb.HistoryEvent) -> None:
        a = e.start_child_workflow_execution_initiated_event_attributes
        self.children[e.event_id] = ChildInfo(e.event_id, a.namespace, a.workflow_id, a.workflow_type, a.parent_close_policy)

    def _child_start_failed(self, e: pb.HistoryEvent) -> None:
        self.children.pop(e.start_child_workflow_execution_failed_event_attributes.initiated_event_id, None)

    def _child_started(self, e: pb.HistoryEvent) -> None:
        a = e.child_workflow_execution_started_event_attributes
        c = self.children.get(a.initiated_event_id)
        if c is not None:
            c.run_id = a.workflow_execution.run_id
            c.started_event_id = e.event_id

    def _child_closed(self, e: pb.HistoryEvent) -> None:
        which = e.WhichOneof("attributes")
        assert which is not None
        self.children.pop(getattr(e, which).initiated_event_id, None)

    def _signal_ext_initiated(self, e: pb.HistoryEvent) -> None:
        self.signals_external[e.event_id] = e.signal_external_workflow_execution_initiated_event_attributes

    def _signal_ext_done(self, e: pb.HistoryEvent) -> None:
        which = e.WhichOneof("attributes")
        assert which is not None
        self.signals_external.pop(getattr(e, which).initiated_event_id, None)

    def _cancel_ext_initiated(self, e: pb.HistoryEvent) -> None:
        self.cancels_external[e.event_id] = e.request_cancel_external_workflow_execution_initiated_event_attributes

    def _cancel_ext_done(self, e: pb.HistoryEvent) -> None:
        which = e.WhichOneof("attributes")
        assert which is not None
        self.cancels_external.pop(getattr(e, which).initiated_event_id, None)

    def _update_accepted(self, e: pb.HistoryEvent) -> None:
        self.accepted_updates.add(e.workflow_execution_update_accepted_event_attributes.update_id)

    def _update_completed(self, e: pb.HistoryEvent) -> None:
        a = e.workflow_execution_update_completed_event_attributes
        self.completed_updates[a.update_id] = a


_HANDLERS: dict[int, Any] = {
    pb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED: MutableState._started,
    pb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED: MutableState._wt_scheduled,
    pb.EVENT_TYPE_WORKFLOW_TASK_STARTED: MutableState._wt_started,
    pb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED: MutableState._wt_completed,
    pb.EVENT_TYPE_WORKFLOW_EXECUTION_OPTIONS_UPDATED: MutableState._options_updated,
    pb.EVENT_TYPE_WORKFLOW_TASK_FAILED: MutableState._wt_failed,
    pb.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT: MutableState._wt_failed,
    pb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED: MutableState._act_scheduled,
    pb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED: MutableState._act_completed,
    pb.EVENT_TYPE_ACTIVITY_TASK_FAILED: MutableState._act_failed,
    pb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT: MutableState._act_timed_out,
    pb.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED: MutableState._act_cancel_requested,
    pb.EVENT_TYPE_ACTIVITY_TASK_CANCELED: MutableState._act_canceled,
    pb.EVENT_TYPE_TIMER_STARTED: MutableState._timer_started,
    pb.EVENT_TYPE_TIMER_FIRED: MutableState._timer_fired,
    pb.EVENT_TYPE_TIMER_CANCELED: MutableState._timer_canceled,
    pb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED: MutableState._cancel_requested,
    pb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED: MutableState._signaled,
    pb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES: MutableState._upsert,
    pb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED: MutableState._child_initiated,
    pb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_FAILED: MutableState._child_start_failed,
    pb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED: MutableState._child_started,
    pb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED: MutableState._child_closed,
    pb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_FAILED: MutableState._child_closed,
    pb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_CANCELED: MutableState._child_closed,
    pb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_TIMED_OUT: MutableState._child_closed,
    pb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_TERMINATED: MutableState._child_closed,
    pb.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED: MutableState._signal_ext_initiated,
    pb.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_FAILED: MutableState._signal_ext_done,
    pb.EVENT_TYPE_EXTERNAL_WORKFLOW_EXECUTION_SIGNALED: MutableState._signal_ext_done,
    pb.EVENT_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED: MutableState._cancel_ext_initiated,
    pb.EVENT_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_FAILED: MutableState._cancel_ext_done,
    pb.EVENT_TYPE_EXTERNAL_WORKFLOW_EXECUTION_CANCEL_REQUESTED: MutableState._cancel_ext_done,
    pb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED: MutableState._update_accepted,
    pb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED: MutableState._update_completed,
}

__all__ = ["MutableState", "RUNNING"]
