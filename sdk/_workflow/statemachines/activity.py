"""Activity: SCHEDULE_ACTIVITY_TASK, its result events, and cancellation (TRY_CANCEL, WAIT, ABANDON)."""

from __future__ import annotations

import asyncio
import enum

from collections.abc import Callable
from typing import Any, Generic, TypeVar

from spindle._workflow.statemachines._command import CommandEntry, CommandSink
from spindle.api import messages_pb2 as pb
from spindle.exceptions import ActivityError, CancelledError, TimeoutError, TimeoutType

__all__ = ["ActivityCancellationType", "ActivityHandle", "ActivityMachine"]

T = TypeVar("T")
E = pb  # E.EVENT_TYPE_*: plain module constants (the EventType wrapper resolves attributes slowly)


class ActivityCancellationType(enum.IntEnum):
    """What cancelling an activity's handle does (``cancellation_type=`` when starting it), as in Temporal.

    In every case, if the schedule command has not left the worker yet it is dropped
    and the handle resolves at once with ``ActivityError(cause=CancelledError)``.
    """

    TRY_CANCEL = 0
    """Ask the server to cancel the activity and resolve the handle at once with the
    cancellation error (the default)."""
    WAIT_CANCELLATION_COMPLETED = 1
    """Ask the server to cancel the activity and resolve the handle with how the activity
    really ended: the cancellation error once it reports cancellation (it sees the
    request on its next heartbeat), or its result or failure if it finished anyway."""
    ABANDON = 2
    """Resolve the handle at once with the cancellation error and send nothing: the
    activity runs on and its outcome is ignored."""


class ActivityHandle(asyncio.Future, Generic[T]):
    """Handle of a scheduled activity: await it for the result.

    Awaiting raises :class:`~spindle.exceptions.ActivityError` (``.cause`` is the
    ``ApplicationError``, ``TimeoutError`` or ``CancelledError``) when the activity
    fails for good.

    ``cancel()`` requests cancellation as the activity's
    :class:`ActivityCancellationType` says (by default TRY_CANCEL: the handle resolves
    at once with ``ActivityError(cause=CancelledError)`` and a
    ``REQUEST_CANCEL_ACTIVITY_TASK`` command is sent, or, if the schedule command has
    not left the worker yet, it is dropped). Because the handle ends with that error
    rather than in the asyncio "cancelled" state, ``cancel()`` returns ``False``; a
    task that awaits the handle and is itself cancelled (workflow cancellation,
    ``asyncio.wait_for`` timeout) still receives ``asyncio.CancelledError``, after the
    handle resolved.
    """

    def __init__(self, *, loop: asyncio.AbstractEventLoop, machine: ActivityMachine) -> None:
        super().__init__(loop=loop)
        self._machine = machine

    @property
    def activity_id(self) -> str:
        """The activity id (sequential ``"1"``, ``"2"``, ... unless given)."""
        return self._machine.activity_id

    def cancel(self, msg: Any = None) -> bool:
        """Request cancellation (see the class docs). Always returns ``False``."""
        if not self.done():
            self._machine.request_cancel()
        return False


class ActivityMachine:
    """Drives one activity from its schedule command to its final result event."""

    def __init__(
        self,
        sink: CommandSink,
        loop: asyncio.AbstractEventLoop,
        attrs: pb.ScheduleActivityTaskCommandAttributes,
        *,
        decode_result: Callable[[pb.Payloads], Any],
        decode_failure: Callable[[pb.Failure], BaseException],
        on_scheduled: Callable[[int, ActivityMachine], None],
        cancellation_type: ActivityCancellationType = ActivityCancellationType.TRY_CANCEL,
    ) -> None:
        self._sink = sink
        self._cancellation_type = cancellation_type
        self._cancel_requested = False
        self.activity_id = attrs.activity_id
        self.activity_type = attrs.activity_type
        self.scheduled_event_id = 0
        self._decode_result = decode_result
        self._decode_failure = decode_failure
        self._on_scheduled = on_scheduled
        self.handle: ActivityHandle[Any] = ActivityHandle(loop=loop, machine=self)
        self._entry = CommandEntry(
            pb.Command(command_type=pb.COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK, schedule_activity_task_command_attributes=attrs),
            on_recorded=self._recorded,
        )
        sink.add_command(self._entry)

    def _recorded(self, event: pb.HistoryEvent) -> None:
        self.scheduled_event_id = event.event_id
        self._on_scheduled(event.event_id, self)

    def _error(self, message: str, cause: BaseException, retry_state: int = 0) -> ActivityError:
        return ActivityError(
            message,
            activity_type=self.activity_type,
            activity_id=self.activity_id,
            scheduled_event_id=self.scheduled_event_id,
            retry_state=pb.RetryState.Name(retry_state).removeprefix("RETRY_STATE_") if retry_state else "",
            cause=cause,
        )

    def request_cancel(self) -> None:
        """Cancel as the cancellation type says: drop the command, or request cancellation (unless
        ABANDON), and resolve the handle now (unless WAIT_CANCELLATION_COMPLETED and it was sent)."""
        if self.handle.done() or self._cancel_requested:
            return
        self._cancel_requested = True
        dropped = self._sink.unsend(self._entry)
        if not dropped and self._cancellation_type != ActivityCancellationType.ABANDON:
            self._sink.add_command(CommandEntry(pb.Command(
                command_type=pb.COMMAND_TYPE_REQUEST_CANCEL_ACTIVITY_TASK,
                request_cancel_activity_task_command_attributes=pb.RequestCancelActivityTaskCommandAttributes(
                    scheduled_event_id=self.scheduled_event_id),
            )))
        if not dropped and self._cancellation_type == ActivityCancellationType.WAIT_CANCELLATION_COMPLETED:
            return  # the result event (cancelled, completed, failed, timed out) resolves the handle
        self.handle.set_exception(self._error(
            f"activity {self.activity_type!r} (id {self.activity_id}) was cancelled",
            CancelledError("activity cancelled"),
        ))

    def handle_event(self, event: pb.HistoryEvent) -> None:
        """Apply a result event (completed, failed, timed out, cancelled) of this activity."""
        if self.handle.done():
            return  # already resolved (e.g. cancelled with TRY_CANCEL)
        t = event.event_type
        label = f"activity {self.activity_type!r} (id {self.activity_id})"
        if t == E.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            try:
                value = self._decode_result(event.activity_task_completed_event_attributes.result)
            except Exception as e:  # a result that does not fit the hint is the workflow's problem
                self.handle.set_exception(e)
                return
            self.handle.set_result(value)
        elif t == E.EVENT_TYPE_ACTIVITY_TASK_FAILED:
            a = event.activity_task_failed_event_attributes
            if a.retry_state == pb.RETRY_STATE_IN_PROGRESS:
                return
            cause = self._decode_failure(a.failure)
            if isinstance(cause, ActivityError):
                self.handle.set_exception(cause)
            else:
                self.handle.set_exception(self._error(f"{label} failed: {cause}", cause, a.retry_state))
        elif t == E.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
            a2 = event.activity_task_timed_out_event_attributes
            if a2.retry_state == pb.RETRY_STATE_IN_PROGRESS:
                return
            cause = (self._decode_failure(a2.failure) if a2.HasField("failure")
                     else TimeoutError("activity timed out", timeout_type=TimeoutType.START_TO_CLOSE))
            self.handle.set_exception(self._error(f"{label} timed out", cause, a2.retry_state))
        elif t == E.EVENT_TYPE_ACTIVITY_TASK_CANCELED:
            self.handle.set_exception(self._error(f"{label} was cancelled", CancelledError("activity cancelled")))
