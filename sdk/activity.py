"""The activity API: ``@activity.defn`` and the calls an activity makes while it runs.

Example::

    @activity.defn
    async def charge(order: Order) -> str:
        for step in range(10):
            activity.heartbeat(step)          # progress; also how cancellation arrives
            ...
        return "ch_123"

Plain ``def`` activities run in the worker's thread pool; they see cancellation
through :func:`is_cancelled` (async ones get ``asyncio.CancelledError``).
"""

from spindle._activity import (
    ActivityDefinition,
    ActivityInfo,
    CompleteAsyncError,
    defn,
    heartbeat,
    in_activity,
    info,
    is_cancelled,
    raise_complete_async,
    wait_for_cancelled,
    wait_for_cancelled_sync,
)

__all__ = [
    "defn",
    "info",
    "heartbeat",
    "is_cancelled",
    "in_activity",
    "raise_complete_async",
    "wait_for_cancelled",
    "wait_for_cancelled_sync",
    "ActivityInfo",
    "ActivityDefinition",
    "CompleteAsyncError",
]
