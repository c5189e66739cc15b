"""``ActivityEnvironment``: run one activity function outside any worker.

The activity sees a real activity context (``activity.info()``, ``heartbeat()``,
``is_cancelled()``, ``wait_for_cancelled()``, ``activity.logger``) built by the
same code the worker uses (:mod:`spindle._activity.context`), so a unit test exercises
what runs in production, minus the control plane. As in temporalio,
:meth:`ActivityEnvironment.run` returns an awaitable for an ``async def`` activity
and the value itself for a plain ``def`` one.
"""

from __future__ import annotations

import dataclasses
import datetime
import inspect
import threading

from collections.abc import Callable, Sequence
from typing import Any

from spindle._activity.context import ActivityContext, ActivityInfo, _current
from spindle._activity.definition import ActivityDefinition
from spindle._activity.execution import execute, prepare_sync

__all__ = ["ActivityEnvironment", "default_info"]

_UTC = datetime.timezone.utc


def default_info(activity_type: str = "test_activity") -> ActivityInfo:
    """The :class:`ActivityInfo` an :class:`ActivityEnvironment` uses unless told otherwise.

    First attempt of activity ``"test-activity"`` of workflow ``"test-workflow"``
    (run ``"test-run"``, type ``"TestWorkflow"``) in namespace ``"default"`` on queue
    ``"test-queue"``, scheduled and started now, with no timeouts and no heartbeat
    details.
    """
    now = datetime.datetime.now(_UTC)
    return ActivityInfo(
        activity_id="test-activity",
        activity_type=activity_type,
        attempt=1,
        workflow_id="test-workflow",
        workflow_run_id="test-run",
        workflow_type="TestWorkflow",
        namespace="default",
        task_queue="test-queue",
        task_token=b"test-task-token",
        heartbeat_details=(),
        scheduled_time=now,
        current_attempt_scheduled_time=now,
        started_time=now,
        start_to_close_timeout=None,
        schedule_to_close_timeout=None,
        heartbeat_timeout=None,
        deadline=None,
    )


class ActivityEnvironment:
    """Runs activity functions with a chosen :class:`ActivityInfo`, recording heartbeats.

    Example::

        env = ActivityEnvironment()
        env.on_heartbeat = lambda *details: print("progress", details)
        assert await env.run(charge, order) == "ch_123"     # async def activity
        assert env.run(resize, image) == "thumb.png"         # plain def activity
        assert env.heartbeats == [(1,), (2,)]

    Args:
        info: what ``activity.info()`` returns (default: :func:`default_info`, with the
            activity type set to the function's activity name). Replace fields with
            ``dataclasses.replace(env.info, attempt=3)`` or pass ``**info_overrides``
            to :meth:`run`.
        on_heartbeat: called with the details of every ``activity.heartbeat(*details)``
            (from the activity's thread for sync activities).

    Attributes:
        heartbeats: the details tuple of every heartbeat, in order, across runs.
    """

    def __init__(self, info: ActivityInfo | None = None,
                 on_heartbeat: Callable[..., None] | None = None) -> None:
        self.info = info
        self.on_heartbeat = on_heartbeat
        self.heartbeats: list[tuple[Any, ...]] = []
        self._lock = threading.Lock()
        self._ctx: ActivityContext | None = None
        self._cancel_reason: str | None = None

    def _record(self, details: Sequence[Any]) -> None:
        with self._lock:
            self.heartbeats.append(tuple(details))
        cb = self.on_heartbeat
        if cb is not None:
            cb(*details)

    def run(self, fn: Callable[..., Any], *args: Any, **info_overrides: Any) -> Any:
        """Run ``fn(*args)`` as one activity attempt.

        ``fn`` is an ``@activity.defn`` function (a plain function works too). An
        ``async def`` one returns an awaitable of its result (it runs as a task on
        the loop that awaits it); a plain ``def`` one runs right here, in the calling
        thread, and its result is returned (to run it beside the event loop, use
        ``await asyncio.to_thread(env.run, fn, *args)``). ``info_overrides``
        replace fields of the info for this run (e.g. ``attempt=3``). If
        :meth:`cancel` was called before, the attempt starts cancelled.

        Raises:
            asyncio.CancelledError: an async activity was cancelled by :meth:`cancel`
                and let the cancellation propagate.
            CancelledError: a sync activity heartbeated after :meth:`cancel` (see
                ``activity.heartbeat``) and let the error propagate.
            CompleteAsyncError: the activity called ``activity.raise_complete_async()``.
            Exception: whatever the activity raised.
        """
        d = ActivityDefinition.from_callable(fn)
        base = self.info or default_info(d.name if d is not None else getattr(fn, "__name__", "test_activity"))
        info = dataclasses.replace(base, **info_overrides) if info_overrides else base
        is_async = d.is_async if d is not None else _is_async(fn)
        ctx = ActivityContext(info, self._record)
        if is_async:
            return self._run_async(fn, args, ctx)
        prepare_sync(ctx, fn)
        self._start(ctx)
        token = _current.set(ctx)
        try:
            return fn(*args)
        finally:
            _current.reset(token)
            self._ctx = None

    async def _run_async(self, fn: Callable[..., Any], args: Sequence[Any], ctx: ActivityContext) -> Any:
        self._start(ctx)
        try:
            return await execute(fn, args, ctx, is_async=True)
        finally:
            self._ctx = None

    def _start(self, ctx: ActivityContext) -> None:
        self._ctx = ctx
        if self._cancel_reason is not None:
            ctx.request_cancel(self._cancel_reason)

    def cancel(self, reason: str = "cancel_requested") -> None:
        """Request cancellation of the running attempt (or of the next :meth:`run`).

        Async activities get ``asyncio.CancelledError`` at their next ``await`` (and
        ``activity.wait_for_cancelled()`` returns); sync ones see
        ``activity.is_cancelled()`` become true and their next ``activity.heartbeat()``
        raises ``CancelledError``. Thread-safe (call it from another thread while a
        sync activity runs); idempotent.
        """
        self._cancel_reason = reason
        ctx = self._ctx
        if ctx is not None:
            ctx.request_cancel(reason)

    @property
    def cancelled(self) -> bool:
        """Whether :meth:`cancel` was called."""
        return self._cancel_reason is not None


def _is_async(fn: Callable[..., Any]) -> bool:
    target = inspect.unwrap(fn)
    return inspect.iscoroutinefunction(target) or inspect.iscoroutinefunction(getattr(target, "__call__", None))  # noqa: B004 - reads the __call__ method to see if a callable object is async
