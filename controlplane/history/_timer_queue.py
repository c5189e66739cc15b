"""A shard's timer queue: durable timers, preloaded into memory, fired when due.

Timer rows live in the store keyed by (fire time, task id), written by the same
transaction as the events that made them (a user timer, an activity or workflow-task
timeout, a retry backoff, a run timeout, a retention deadline).

The preload window: the queue keeps in an in-memory heap every timer due within the next
``ServerConfig.timer_preload_window`` seconds (30 s by default), reads the next window when
half of it has passed, and sleeps on the engine's clock (``Clock.wait_until``) until the
earliest timer is due. A timer committed while a window is loaded (or while it is being
read) is armed directly by the commit (``arm``) if it falls inside the window, so the
store is read once per half window and not once per timer; a timer beyond the window is
read with a later window.

Firing: due timers are taken off the heap and each is handled as a background task
(``fire``), so one slow write does not hold back the next timer. A timer whose handling
fails goes back into the heap one second later (its row stays in the store). Handlers
check the run's state first, so a stale timer (its activity completed, its task moved on)
is dropped; the row of a handled timer is deleted with the transaction that handled it or
with the shard's next ack batch (``acks``).

Recovery: there is none to do beyond loading. After a restart, or when a shard moves to
this process, the first load reads every row due within the window, overdue ones
included. A workflow task started by a process that is gone can never be completed; the
``due_at`` policy makes its timeout fire at once instead of at its fire time.
"""

from __future__ import annotations

import asyncio
import heapq
import logging

from collections.abc import Awaitable, Callable

from spindle.controlplane._log_format import run_fields
from spindle.controlplane.clock import Clock
from spindle.controlplane.errors import ShardNotOwned
from spindle.controlplane.store import Store

from ._background import Background
from ._tasks import Task

log = logging.getLogger("spindle.history")

#: Rows read per store call while loading a window.
LOAD_BATCH = 2000


class TimerQueue:
    """The timers of one shard: the heap of the loaded window, its loop, and the rows to delete.

    ``on_due(t)`` is called when a timer is taken off the heap as due and ``on_fired(t)`` when
    its handling ended (done, or put back for a retry): start admission counts the timers due
    per namespace with them.
    """

    def __init__(self, shard_id: int, store: Store, clock: Clock, window_s: float, *,
                 fire: Callable[[Task], Awaitable[None]], due_at: Callable[[Task, int], int],
                 background: Background, on_due: Callable[[Task], None], on_fired: Callable[[Task], None]) -> None:
        self.shard_id = shard_id
        self._store = store
        self._clock = clock
        self._window_ms = int(window_s * 1000)
        self._fire_handler = fire
        self._due_at = due_at
        self._background = background
        self._on_due = on_due
        self._on_fired = on_fired
        self.heap: list[tuple[int, int, Task]] = []
        self.loaded_until = 0
        #: Upper bound of the window load in flight (a timer committed meanwhile may be missed by its read).
        self.loading_until = 0
        self.cursor: tuple[int, int] = (0, 0)
        self._wake = asyncio.Event()
        #: (fire time, task id) of handled timers, deleted in the shard's next ack batch.
        self.acks: list[tuple[int, int]] = []
        self._loop: asyncio.Task[None] | None = None

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        self._loop = asyncio.create_task(self._run(), name=f"timers-{self.shard_id}")

    def cancel(self) -> None:
        """Cancel the loop (``stop`` waits for it to end)."""
        if self._loop is not None:
            self._loop.cancel()

    async def stop(self) -> None:
        loop, self._loop = self._loop, None
        if loop is None:
            return
        loop.cancel()
        try:
            await loop
        except (asyncio.CancelledError, Exception):  # noqa: BLE001 - it is going away
            pass

    # ------------------------------------------------------------------ timers
    def arm(self, t: Task) -> None:
        """Hold a just-committed timer in memory if it is due within the loaded window."""
        if t.fire_time_ms < max(self.loaded_until, self.loading_until):
            heapq.heappush(self.heap, (t.fire_time_ms, t.task_id, t))
            if self.heap[0][2] is t:
                self._wake.set()

    def retry_at(self, t: Task, at_ms: int, *, wake: bool = True) -> None:
        """Fire ``t`` again at ``at_ms`` (its row, keyed by its original fire time, stays)."""
        heapq.heappush(self.heap, (at_ms, t.task_id, t))
        if wake:
            self._wake.set()

    def wake(self) -> None:
        """Re-check due timers now (after the clock moved)."""
        self._wake.set()

    def done(self, key: tuple[int, int]) -> None:
        """Delete a handled timer's row with the shard's next ack batch."""
        self.acks.append(key)

    async def next_fire_ms(self, counts: Callable[[int, Task], bool]) -> int | None:
        """The earliest fire time of a timer that ``counts``, in memory or in the store; None if none."""
        best: int | None = None
        for fire_ms, _, t in self.heap:
            if counts(fire_ms, t) and (best is None or fire_ms < best):
                best = fire_ms
        after = self.cursor
        while True:
            rows = await self._store.load_timer_tasks(self.shard_id, 2**62, after, 256)
            hit = next((r for r in rows if counts(r.fire_time_ms, Task.decode(r.data))), None)
            if hit is not None:
                best = hit.fire_time_ms if best is None else min(best, hit.fire_time_ms)
                break
            if len(rows) < 256 or (best is not None and rows[-1].fire_time_ms >= best):
                break
            after = (rows[-1].fire_time_ms, rows[-1].task_id)
        return best

    # ------------------------------------------------------------------ the loop
    async def _run(self) -> None:
        window_ms = self._window_ms
        clock = self._clock
        while True:
            try:
                now = clock.now_ms()
                if now + window_ms // 2 >= self.loaded_until:
                    await self._load(now, now + window_ms)
                now = clock.now_ms()
                due: list[Task] = []
                while self.heap and self.heap[0][0] <= now:
                    due.append(heapq.heappop(self.heap)[2])
                if due:
                    # Fire without waiting for the batch: a timer that falls due meanwhile is not
                    # held back by the commits of the previous ones.
                    for t in due:
                        self._on_due(t)
                        self._background.in_flight += 1
                        self._background.spawn(self._fire(t))
                    continue
                next_fire = self.heap[0][0] if self.heap else self.loaded_until - window_ms // 2
                self._wake.clear()
                await clock.wait_until(min(next_fire, self.loaded_until - window_ms // 2), self._wake)
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - keep the loop alive; the timer stays in the store
                log.exception("timer loop error on shard %s", self.shard_id)
                await asyncio.sleep(0.5)

    async def _load(self, now: int, until: int) -> None:
        self.loading_until = until  # arm() holds what commits during the reads
        while True:
            rows = await self._store.load_timer_tasks(self.shard_id, until, self.cursor, LOAD_BATCH)
            known = {tid for _, tid, _ in self.heap}
            for r in rows:
                self.cursor = (r.fire_time_ms, r.task_id)
                if r.task_id not in known:
                    t = Task.decode(r.data, task_id=r.task_id, fire_time_ms=r.fire_time_ms)
                    heapq.heappush(self.heap, (self._due_at(t, now), r.task_id, t))
            if len(rows) < LOAD_BATCH:
                break
        self.loaded_until = until

    async def _fire(self, t: Task) -> None:
        background = self._background
        try:
            await self._fire_handler(t)
        except Exception as e:  # noqa: BLE001 - retried on the next load of the shard's timers
            if isinstance(e, ShardNotOwned):
                # The shard moved (a member paused past its lease fires its overdue timers on
                # SIGCONT, and every commit is fenced): the lease manager reports the loss once per
                # shard and stops this queue; the new owner fires the timer.
                log.debug("timer %s for %s not fired here: %s", t.kind, t.workflow_id, e)
            else:
                log.warning("timer %s for %s failed: %s; retrying in 1 s", t.kind, t.workflow_id, e,
                            extra=run_fields("", t.workflow_id, t.run_id))
            # (only the heap key moves: fire_time_ms is half of the row's key, which deletes it)
            self.retry_at(t, self._clock.now_ms() + 1000, wake=False)
        finally:
            background.in_flight -= 1
            self._on_fired(t)


__all__ = ["TimerQueue"]
