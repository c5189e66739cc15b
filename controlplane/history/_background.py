"""Work the history service does on its own, outside any request, and how much of it is under way.

The time-skipping test clock moves only when nothing here is busy (``HistoryEngine.is_idle``).
"""

from __future__ import annotations

import asyncio
import logging

from collections.abc import Coroutine
from typing import Any

log = logging.getLogger("spindle.history")


class Background:
    """Tasks spawned by the service (fired timers, transfer tasks that reach other runs, background writes).

    Attributes:
        in_flight: commits and timer firings under way.
        stopping: set by ``HistoryEngine.stop``; failures after it are not logged.
    """

    __slots__ = ("_tasks", "in_flight", "stopping")

    def __init__(self) -> None:
        self._tasks: set[asyncio.Future[Any]] = set()
        self.in_flight = 0
        self.stopping = False

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        """Run ``coro`` as a task of its own; a failure is logged."""
        t = asyncio.ensure_future(coro)
        self._tasks.add(t)
        t.add_done_callback(self._done)

    def _done(self, t: asyncio.Future[Any]) -> None:
        self._tasks.discard(t)
        if not t.cancelled() and t.exception() is not None and not self.stopping:
            log.error("background task failed", exc_info=t.exception())

    @property
    def busy(self) -> bool:
        """Whether a spawned task is still running."""
        return any(not t.done() for t in self._tasks)

    def cancel_all(self) -> None:
        for t in list(self._tasks):
            t.cancel()


__all__ = ["Background"]
