"""Moves a :class:`VirtualClock` forward the way the time-skipping environment promises.

Two ways time moves:

* :meth:`TimeSkipper.sleep` advances the clock by exactly a duration, stopping at
  every durable timer due on the way so timers fire in order and the workflow tasks
  they trigger run at the right virtual time. It never waits for an activity to
  finish: time moves while activities run (a hung activity's start-to-close timeout
  fires in virtual time).
* Auto skipping: while at least one caller is inside :meth:`TimeSkipper.awaiting_result`
  (the environment's ``handle.result()``) and auto skipping is enabled, a background
  task waits until the engine is quiet and then jumps the clock to the next due timer.

"Quiet" means ``engine.is_idle()`` (no task handed to a worker unfinished, none waiting in
a queue, no commit or timer firing in flight) holds over several turns of the event loop
and no timer at or before the current time is still waiting to be fired. The loop turns
matter: a task that matching just handed to a waiting poller becomes "outstanding" only
when the poller's coroutine resumes. For :meth:`TimeSkipper.sleep`, running activity
attempts do not count (``is_idle(count_activities=False)``); for auto skipping they do.
Tasks of closed runs never count (the engine stops counting them when the run closes).
"""

from __future__ import annotations

import asyncio
import contextlib

from collections.abc import Iterator
from typing import Any

from spindle.controlplane.embedded import VirtualClock

__all__ = ["TimeSkipper"]

# Consecutive idle observations, one event-loop turn apart, that count as "quiet".
_QUIET_TURNS = 8
# Real seconds between checks while the engine is busy (a worker runs a task).
_BUSY_POLL = 0.001
# Real seconds the auto skipper waits before re-checking when no timer exists at all.
_NOTHING_DUE_POLL = 0.005
# Real seconds ``sleep`` lets tasks sit in a queue with nothing else going on before it
# concludes that no worker polls that queue and moves time anyway.
_STALLED_BACKLOG = 0.5


class TimeSkipper:
    """Drives ``clock`` for one environment's ``engine`` (a ``HistoryEngine``).

    Args:
        engine: the control plane's history engine (``is_idle``, ``outstanding``,
            ``next_timer_ms``, ``wake_timers``, ``on_outstanding``).
        clock: the virtual clock the engine reads.
    """

    def __init__(self, engine: Any, clock: VirtualClock) -> None:
        self._engine = engine
        self._clock = clock
        self._waiting = 0
        self._disabled = 0
        self._lock = asyncio.Lock()
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        engine.on_outstanding(lambda _n: self._changed.set())

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        """Start the auto-skipping task (idempotent)."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._auto_loop(), name="spindle-time-skipper")

    async def stop(self) -> None:
        """Stop the auto-skipping task and wait for it to end."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    # ------------------------------------------------------------------ state
    @property
    def auto_enabled(self) -> bool:
        """Whether auto skipping is on (no ``disabled()`` block is active)."""
        return self._disabled == 0

    @contextlib.contextmanager
    def awaiting_result(self) -> Iterator[None]:
        """Mark the block as "a test awaits a workflow result": auto skipping may run."""
        self._waiting += 1
        self._changed.set()
        try:
            yield
        finally:
            self._waiting -= 1

    @contextlib.contextmanager
    def disabled(self) -> Iterator[None]:
        """Turn auto skipping off inside the block (nests)."""
        self._disabled += 1
        try:
            yield
        finally:
            self._disabled -= 1
            self._changed.set()

    # ------------------------------------------------------------------ moving time
    async def sleep(self, seconds: float) -> None:
        """Advance virtual time by exactly ``seconds``, firing due timers in order.

        Returns once the clock reads the target time and the work triggered by the
        timers fired on the way has settled (a workflow task a worker is running is
        waited for). Running activities are never waited for: time moves on while they
        run, so their timeouts (start-to-close, heartbeat) fire in virtual time. Tasks
        that sit in a queue nobody polls (no worker running) are waited for only
        briefly, then time moves on without them.

        Raises:
            ValueError: ``seconds`` is negative.
        """
        if seconds < 0:
            raise ValueError(f"cannot sleep a negative duration ({seconds} s)")
        async with self._lock:
            target = self._clock.now_ms() + int(round(seconds * 1000))
            while True:
                await self._wait_quiet(stall=_STALLED_BACKLOG, count_activities=False)
                nxt = await self._engine.next_timer_ms()
                if nxt is None or nxt > target:
                    break
                await self._jump(nxt, stall=_STALLED_BACKLOG, count_activities=False)
            await self._jump(target, stall=_STALLED_BACKLOG, count_activities=False)

    async def _jump(self, to_ms: int, *, stall: float | None = None, count_activities: bool = True) -> None:
        """Set the clock to ``to_ms`` (if later), fire what is due and wait for it to settle."""
        self._clock.set(to_ms)
        self._engine.wake_timers()
        await self._wait_quiet(stall=stall, count_activities=count_activities)

    def _only_backlog(self, count_activities: bool) -> bool:
        """Busy only because tasks wait in a queue (nothing handed out, nothing being written)."""
        engine = self._engine
        busy = engine.outstanding.total if count_activities else engine.outstanding.workflow_tasks
        return not busy and not getattr(engine, "in_flight", 0)

    async def _wait_quiet(self, *, stall: float | None = None, count_activities: bool = True) -> None:
        """Wait until the engine is idle over several loop turns and nothing due is unfired.

        With ``stall`` (real seconds), also return once tasks have sat in a queue for that
        long with nothing else going on: no worker polls that queue, and waiting longer
        would hang the caller. With ``count_activities=False``, running activity attempts
        do not keep the engine busy.
        """
        engine = self._engine
        loop = asyncio.get_running_loop()
        quiet = 0
        stalled_since: float | None = None
        while quiet < _QUIET_TURNS:
            if not engine.is_idle(count_activities=count_activities):
                quiet = 0
                if stall is not None and self._only_backlog(count_activities):
                    now = loop.time()
                    if stalled_since is None:
                        stalled_since = now
                    elif now - stalled_since >= stall:
                        return
                else:
                    stalled_since = None
                await asyncio.sleep(_BUSY_POLL)
                continue
            if quiet == 0:
                nxt = await engine.next_timer_ms()
                if nxt is not None and nxt <= self._clock.now_ms():
                    # due but not yet popped by the shard's timer loop
                    engine.wake_timers()
                    await asyncio.sleep(_BUSY_POLL)
                    continue
            quiet += 1
            await asyncio.sleep(0)

    async def _auto_loop(self) -> None:
        while True:
            if self._waiting == 0 or self._disabled:
                self._changed.clear()
                await self._changed.wait()
                continue
            async with self._lock:
                await self._wait_quiet()
                if self._waiting == 0 or self._disabled:
                    continue
                nxt = await self._engine.next_timer_ms()
                if nxt is not None:
                    await self._jump(nxt)
                    continue
            # Nothing to fire: a workflow waits for a signal, or a result is being written.
            self._changed.clear()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._changed.wait(), _NOTHING_DUE_POLL)
