"""``ActivityEnvironment``: run one activity function outside any worker.

The activity sees a real activity context (``activity.info()``, ``heartbeat()``,
``is_cancelled()``, ``wait_for_cancelled()``) built by the same code the worker
uses (:func:`spindle._activity.execute`), so a unit test exercises exactly what runs in
production, minus the control plane.
"""

from __future__ import annotations

import dataclasses
import datetime
import inspect
import threading

from collections.abc import Callable, Sequence
from typing import Any

from spindle._activity import ActivityContext, ActivityDefinition, ActivityInfo, execute

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
        assert await env.run(charge, order) == "ch_123"
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

    async def run(self, fn: Callable[..., Any], *args: Any, **info_overrides: Any) -> Any:
        """Run ``fn(*args)`` as one activity attempt and return its result.

        ``fn`` is an ``@activity.defn`` function (a plain function works too); async
        functions run on the current loop, sync ones in the loop's default thread
        pool. ``info_overrides`` replace fields of the info for this run (e.g.
        ``attempt=3``). If :meth:`cancel` was called before, the attempt starts
        cancelled.

        Raises:
            asyncio.CancelledError: an async activity was cancelled by :meth:`cancel`
                and let the cancellation propagate.
            CompleteAsyncError: the activity called ``activity.raise_complete_async()``.
            Exception: whatever the activity raised.
        """
        d = ActivityDefinition.from_callable(fn)
        base = self.info or default_info(d.name if d is not None else getattr(fn, "__name__", "test_activity"))
        info = dataclasses.replace(base, **info_overrides) if info_overrides else base
        is_async = d.is_async if d is not None else _is_async(fn)
        ctx = ActivityContext(info, self._record)
        self._ctx = ctx
        if self._cancel_reason is not None:
            ctx.request_cancel(self._cancel_reason)
        try:
            return await execute(fn, args, ctx, is_async=is_async)
        finally:
            self._ctx = None

    def cancel(self, reason: str = "cancel_requested") -> None:
        """Request cancellation of the running attempt (or of the next :meth:`run`).

        Async activities get ``asyncio.CancelledError`` at their next ``await`` (and
        ``activity.wait_for_cancelled()`` returns); sync ones see
        ``activity.is_cancelled()`` become true. Thread-safe; idempotent.
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
    return inspect.iscoroutinefunction(target) or inspect.iscoroutinefunction(getattr(target, "__call__", None))
