"""Time as the control plane sees it: the real clock, or a virtual one for tests.

Everything that fires on time (durable timers, activity and workflow timeouts, retry
backoff, start delays) reads ``now_ms()`` and waits with ``wait_until()``, so the
time-skipping test environment can move time by swapping the clock. Long polls and
network deadlines always use real time.
"""

from __future__ import annotations

import asyncio
import time


class Clock:
    """The real wall clock."""

    def now_ms(self) -> int:
        """Unix time in milliseconds."""
        return int(time.time() * 1000)

    async def wait_until(self, deadline_ms: int, wake: asyncio.Event) -> None:
        """Return when ``deadline_ms`` has passed or ``wake`` is set, whichever is first."""
        delay = (deadline_ms - self.now_ms()) / 1000.0
        if delay <= 0:
            return
        try:
            await asyncio.wait_for(wake.wait(), delay)
        except asyncio.TimeoutError:
            pass


class VirtualClock(Clock):
    """A clock that moves only when told to (``advance``/``set``).

    Waiters are woken whenever the time changes. Used by the time-skipping
    ``WorkflowEnvironment``.
    """

    def __init__(self, start_ms: int | None = None) -> None:
        self._now = int(time.time() * 1000) if start_ms is None else start_ms
        self._changed = asyncio.Event()

    def now_ms(self) -> int:
        return self._now

    def set(self, now_ms: int) -> None:
        """Move time to ``now_ms`` (never backwards)."""
        if now_ms > self._now:
            self._now = now_ms
            self._changed.set()
            self._changed = asyncio.Event()

    def advance(self, seconds: float) -> None:
        """Move time forward by ``seconds``."""
        self.set(self._now + int(seconds * 1000))

    async def wait_until(self, deadline_ms: int, wake: asyncio.Event) -> None:
        while self._now < deadline_ms and not wake.is_set():
            changed = self._changed
            waiter = asyncio.ensure_future(wake.wait())
            ticker = asyncio.ensure_future(changed.wait())
            try:
                await asyncio.wait({waiter, ticker}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                waiter.cancel()
                ticker.cancel()
