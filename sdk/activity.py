"""The activity API: ``@activity.defn`` and the calls an activity makes while it runs.

Example::

    @activity.defn
    async def charge(order: Order) -> str:
        for step in range(10):
            activity.heartbeat(step)          # progress; also how cancellation arrives
            activity.logger.info("step %d", step)
            ...
        return "ch_123"

Plain ``def`` activities run in the worker's thread pool (or its
``activity_executor``); when cancelled, :func:`is_cancelled` becomes true and their
next :func:`heartbeat` raises :class:`~spindle.exceptions.CancelledError`. Async
ones get ``asyncio.CancelledError`` at their next ``await``.
"""

from spindle._activity.context import (
    ActivityInfo,
    CompleteAsyncError,
    heartbeat,
    in_activity,
    info,
    is_cancelled,
    raise_complete_async,
    shield_thread_cancel_exception,
    wait_for_cancelled,
    wait_for_cancelled_sync,
)
from spindle._activity.definition import ActivityDefinition, defn
from spindle._activity.logger import LoggerAdapter, logger
from spindle._runtime._context import activity_meter as metric_meter

#: temporalio's name for :class:`ActivityInfo` (``activity.Info``).
Info = ActivityInfo

__all__ = [
    "defn",
    "info",
    "heartbeat",
    "is_cancelled",
    "in_activity",
    "logger",
    "raise_complete_async",
    "shield_thread_cancel_exception",
    "wait_for_cancelled",
    "wait_for_cancelled_sync",
    "ActivityInfo",
    "Info",
    "ActivityDefinition",
    "CompleteAsyncError",
    "LoggerAdapter",
    "metric_meter",
]
