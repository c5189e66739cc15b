"""The activity context: what ``spindle.activity``'s calls read while an activity runs.

The context is a ``contextvars`` value, so it follows an activity into the tasks it
creates and into the thread that runs a synchronous activity; a synchronous
activity in a process pool gets a context rebuilt in the child process. The worker
and the test helper ``ActivityEnvironment`` both run activities with an
:class:`ActivityContext` they build (the worker through
:func:`~spindle._activity.execution.execute`).

Cancellation reaches an async activity as ``asyncio.CancelledError`` at its next
``await``. A sync one sees :func:`is_cancelled` become true, and its next
:func:`heartbeat` (or the end of a :func:`shield_thread_cancel_exception` block)
raises :class:`~spindle.exceptions.CancelledError`, once; never if the activity
was defined with ``no_thread_cancel_exception=True``.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import datetime
import logging
import threading
import typing

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from spindle.exceptions import CancelledError, WorkflowContextError

if TYPE_CHECKING:
    from spindle._activity.shared_state import CancelEvent

__all__ = [
    "ActivityInfo",
    "ActivityContext",
    "CompleteAsyncError",
    "info",
    "heartbeat",
    "is_cancelled",
    "in_activity",
    "raise_complete_async",
    "shield_thread_cancel_exception",
    "wait_for_cancelled",
    "wait_for_cancelled_sync",
]


@dataclasses.dataclass(frozen=True)
class ActivityInfo:
    """Facts about the running activity attempt (``activity.info()``).

    ``heartbeat_details`` holds the details of the last heartbeat recorded by an
    earlier attempt (empty on the first attempt), decoded as plain JSON values, so
    an attempt can resume where the previous one stopped.
    """

    activity_id: str
    activity_type: str
    attempt: int
    workflow_id: str | None
    """ID of the workflow that scheduled the activity; ``None`` for a standalone activity (started by a client)."""
    workflow_run_id: str | None
    """Run ID of that workflow; ``None`` for a standalone activity."""
    workflow_type: str | None
    """Type of that workflow; ``None`` for a standalone activity."""
    namespace: str
    task_queue: str
    task_token: bytes
    heartbeat_details: Sequence[Any]
    scheduled_time: datetime.datetime
    current_attempt_scheduled_time: datetime.datetime
    started_time: datetime.datetime
    start_to_close_timeout: datetime.timedelta | None
    schedule_to_close_timeout: datetime.timedelta | None
    heartbeat_timeout: datetime.timedelta | None
    deadline: datetime.datetime | None
    """When this attempt times out (start-to-close, capped by schedule-to-close), if bounded."""
    activity_run_id: str | None = None
    """Run ID of a standalone activity; ``None`` for an activity scheduled by a workflow."""

    @property
    def in_workflow(self) -> bool:
        """Whether a workflow scheduled this activity (``False`` for a standalone activity)."""
        return self.workflow_id is not None

    @property
    def start_to_close_deadline(self) -> datetime.datetime | None:
        """Alias of ``deadline``."""
        return self.deadline


class CompleteAsyncError(BaseException):
    """Raised by :func:`raise_complete_async`; tells the worker not to report a result.

    A ``BaseException`` so that ``except Exception`` in user code does not swallow it.
    """


class ActivityContext:
    """The per-attempt state behind ``activity.*`` calls.

    Args:
        info: the attempt's :class:`ActivityInfo`.
        heartbeat: called with the details tuple on every ``activity.heartbeat``;
            may be called from a worker thread (sync activities), so it must be
            thread-safe. The worker's implementation throttles and sends.
        cancel_event: the cancellation flag (default: a new ``threading.Event``);
            a process-pool activity's context reads one shared with the worker.

    Attributes:
        raise_on_cancel: :meth:`heartbeat` raises :class:`~spindle.exceptions.CancelledError`
            once cancellation was requested (set for sync activities that did not opt out).
    """

    def __init__(self, info: ActivityInfo, heartbeat: Callable[[Sequence[Any]], None], *,
                 cancel_event: CancelEvent | None = None) -> None:
        self.info = info
        self._heartbeat = heartbeat
        self._cancelled: CancelEvent = cancel_event if cancel_event is not None else threading.Event()
        self.cancel_reason: str = ""
        self._task: asyncio.Task[Any] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._async_waiters: list[asyncio.Future[None]] = []
        self._linked: list[CancelEvent] = []
        self.raise_on_cancel = False
        self._shield_depth = 0
        self._cancel_raised = False

    def heartbeat(self, details: Sequence[Any]) -> None:
        """Record a heartbeat (see :func:`heartbeat`).

        Raises:
            CancelledError: cancellation was requested and ``raise_on_cancel`` is set
                (raised once; held back while a :meth:`shield` is active).
        """
        self._heartbeat(details)
        self._deliver_cancel()

    def _deliver_cancel(self) -> None:
        """Raise :class:`~spindle.exceptions.CancelledError` if cancellation was requested, ``raise_on_cancel``
        is set, no shield is active and it was not raised before (it is raised once)."""
        if self.raise_on_cancel and not self._cancel_raised and not self._shield_depth and self._cancelled.is_set():
            self._cancel_raised = True
            reason = f" ({self.cancel_reason})" if self.cancel_reason else ""
            raise CancelledError(f"activity cancelled{reason}")

    @contextlib.contextmanager
    def shield(self) -> Iterator[None]:
        """See :func:`shield_thread_cancel_exception`."""
        self._shield_depth += 1
        try:
            yield
        finally:
            self._shield_depth -= 1
            self._deliver_cancel()

    def link_cancel_event(self, event: CancelEvent) -> None:
        """Also set ``event`` when cancellation is requested (at once if it already was)."""
        self._linked.append(event)
        if self._cancelled.is_set():
            event.set()

    @property
    def cancelled(self) -> bool:
        """Whether cancellation was requested."""
        return self._cancelled.is_set()

    def request_cancel(self, reason: str) -> None:
        """Ask the activity to stop: sets the flag and, for an async activity, cancels its task.

        Thread-safe; idempotent. ``reason`` is e.g. ``"cancel_requested"``,
        ``"not_found"`` or ``"worker_shutdown"``.
        """
        if self._cancelled.is_set():
            return
        self.cancel_reason = reason
        self._cancelled.set()
        for ev in self._linked:
            try:
                ev.set()
            except Exception as e:  # a shared event whose manager is gone: the child cannot be told
                logging.getLogger("spindle.worker").warning("telling a process-pool activity it is cancelled "
                                                            "failed: %s", e)
        loop = self._loop
        if loop is None:
            return

        def _wake() -> None:
            if self._task is not None and not self._task.done():
                self._task.cancel(f"activity cancelled: {reason}")
            for w in self._async_waiters:
                if not w.done():
                    w.set_result(None)

        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            _wake()
        else:
            loop.call_soon_threadsafe(_wake)

    async def wait_cancelled(self) -> None:
        if self._cancelled.is_set():
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._async_waiters.append(fut)
        try:
            await fut
        finally:
            self._async_waiters.remove(fut)


_current: contextvars.ContextVar[ActivityContext] = contextvars.ContextVar("spindle_activity")


def _ctx() -> ActivityContext:
    try:
        return _current.get()
    except LookupError:
        raise WorkflowContextError("not in an activity: activity.* functions work only inside a running activity") from None


def in_activity() -> bool:
    """Whether the caller runs inside an activity."""
    return _current.get(None) is not None


def info() -> ActivityInfo:
    """The running attempt's :class:`ActivityInfo`.

    Raises:
        WorkflowContextError: called outside an activity.
    """
    return _ctx().info


def heartbeat(*details: Any) -> None:
    """Tell the server the activity is alive, with optional progress ``details``.

    Cheap to call often: sends are throttled to one per 0.8 x ``heartbeat_timeout``
    (at most every 30 s), and the latest details are always sent at the end of the
    throttle window. A retried attempt sees the last recorded details in
    ``activity.info().heartbeat_details``. If the server answers that cancellation
    was requested, the activity is cancelled (see :func:`is_cancelled`).

    Raises:
        CancelledError: (sync activities) cancellation was requested: the first
            heartbeat after the request raises it (once), so a loop of
            ``heartbeat(); work()`` stops; not raised inside
            :func:`shield_thread_cancel_exception` (it is raised when the block
            ends) nor for activities defined with ``no_thread_cancel_exception=True``.
        WorkflowContextError: called outside an activity.
    """
    _ctx().heartbeat(details)


def is_cancelled() -> bool:
    """Whether cancellation of this activity was requested (poll it in sync activities).

    Async activities get ``asyncio.CancelledError`` raised at their next ``await``
    instead; sync activities see this flag, and their next :func:`heartbeat` raises.

    Raises:
        WorkflowContextError: called outside an activity.
    """
    return _ctx().cancelled


def shield_thread_cancel_exception() -> contextlib.AbstractContextManager[None]:
    """Hold back the cancellation a sync activity's ``heartbeat()`` would raise until the block ends.

    Inside ``with activity.shield_thread_cancel_exception():`` a heartbeat after a
    cancellation request does not raise. When the outermost such block ends and
    cancellation was requested (before or during the block) and not raised yet,
    :class:`~spindle.exceptions.CancelledError` is raised there, even if the block
    returned or raised something else. Use it around work that must not be
    interrupted halfway. No effect on async activities or on activities defined
    with ``no_thread_cancel_exception=True``.

    Raises:
        WorkflowContextError: called outside an activity.
    """
    return _ctx().shield()


async def wait_for_cancelled() -> None:
    """Wait until cancellation is requested (async activities)."""
    await _ctx().wait_cancelled()


def wait_for_cancelled_sync(timeout: datetime.timedelta | float | None = None) -> bool:
    """Block until cancellation is requested or ``timeout`` passes; return whether it was.

    For sync activities (in a thread); never call it on the event loop.
    """
    t = timeout.total_seconds() if isinstance(timeout, datetime.timedelta) else timeout
    return _ctx()._cancelled.wait(t)


def raise_complete_async() -> typing.NoReturn:
    """End the activity function without completing the activity.

    The attempt stays open until someone calls ``complete``/``fail`` on
    ``client.get_async_activity_handle(activity.info().task_token)`` (or it times out).

    Raises:
        CompleteAsyncError: always (the worker catches it).
    """
    _ctx()  # validate we are in an activity
    raise CompleteAsyncError()
