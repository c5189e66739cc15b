"""Task queues: synchronous match to a waiting poller, backlog otherwise.

A task offered to a queue goes straight to a worker already waiting in a long poll
(sync match: no write at all). Only when no poller waits is it persisted to the
task backlog (through the ``persist`` callback, which also acknowledges the task's
transfer-queue entry in the same transaction) and kept in memory until a poller
comes. Sticky queues (one per worker) and query tasks are never persisted: a sticky
task falls back to the normal queue after a timeout, and a query is answered or
times out.
"""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

KIND_WORKFLOW = 0
KIND_ACTIVITY = 1
KIND_QUERY = 2


@dataclass
class TaskRef:
    """A task waiting for a worker. ``source`` says which durable row to acknowledge once started."""

    kind: int
    namespace_id: str
    workflow_id: str
    run_id: str
    event_id: int = 0
    attempt: int = 0
    source: tuple[Any, ...] | None = None  # ("t", shard_id, task_id) | ("b", ns_id, queue, kind, shard_id, task_id)
    query: Any = None  # a pending query (engine object) for KIND_QUERY


class TaskQueue:
    """One task queue of one kind in one namespace."""

    def __init__(self, namespace_id: str, name: str, kind: int, *, sticky: bool = False) -> None:
        self.namespace_id = namespace_id
        self.name = name
        self.kind = kind
        self.sticky = sticky
        self.tasks: collections.deque[TaskRef] = collections.deque()
        self.waiters: collections.deque[asyncio.Future[TaskRef]] = collections.deque()
        self.rate = 0.0
        self._tokens = 0.0
        self._last_refill = time.monotonic()
        self.last_poll = time.monotonic()

    def offer(self, ref: TaskRef) -> bool:
        """Hand ``ref`` to a waiting poller; False if none waits (the caller keeps it)."""
        if self.rate > 0:
            return False
        while self.waiters:
            w = self.waiters.popleft()
            if not w.done():
                w.set_result(ref)
                return True
        return False

    def push(self, ref: TaskRef, *, front: bool = False) -> None:
        if front:
            self.tasks.appendleft(ref)
        else:
            self.tasks.append(ref)
        while self.waiters and self.tasks:
            w = self.waiters.popleft()
            if not w.done():
                w.set_result(self.tasks.popleft())

    async def take(self, timeout: float) -> TaskRef | None:
        """The next task, waiting up to ``timeout`` seconds; None when none came."""
        self.last_poll = time.monotonic()
        if self.rate > 0:
            await self._throttle(timeout)
        if self.tasks:
            return self.tasks.popleft()
        fut: asyncio.Future[TaskRef] = asyncio.get_running_loop().create_future()
        self.waiters.append(fut)
        try:
            return await asyncio.wait_for(asyncio.shield(fut), timeout)
        except asyncio.TimeoutError:
            if fut.done() and not fut.cancelled():
                return fut.result()
            fut.cancel()
            return None
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():
                self.push(fut.result(), front=True)  # the poller went away: give the task to the next one
            else:
                fut.cancel()
            raise

    async def _throttle(self, timeout: float) -> None:
        while True:
            now = time.monotonic()
            self._tokens = min(max(self.rate, 1.0), self._tokens + (now - self._last_refill) * self.rate)
            self._last_refill = now
            if self._tokens >= 1.0:
                self._tokens -= 1.0
                return
            await asyncio.sleep(min(timeout, (1.0 - self._tokens) / self.rate))

    @property
    def backlog(self) -> int:
        return len(self.tasks)


class Matching:
    """All task queues of this process."""

    def __init__(self, persist: Callable[[TaskRef, TaskQueue], Awaitable[None]] | None = None) -> None:
        self._queues: dict[tuple[str, str, int], TaskQueue] = {}
        self._persist = persist
        self._background: set[asyncio.Task[None]] = set()
        #: Called whenever a task is offered or taken (the time-skipping clock watches it).
        self.on_activity: Callable[[], None] | None = None

    def queue(self, namespace_id: str, name: str, kind: int, *, sticky: bool = False) -> TaskQueue:
        key = (namespace_id, name, kind)
        q = self._queues.get(key)
        if q is None:
            q = TaskQueue(namespace_id, name, kind, sticky=sticky)
            self._queues[key] = q
        return q

    def add(self, ref: TaskRef, queue_name: str, *, sticky: bool = False, persist: bool = True) -> None:
        """Offer a task: sync match if a poller waits, else keep it (persisted to the backlog)."""
        kind = KIND_WORKFLOW if ref.kind == KIND_QUERY else ref.kind
        q = self.queue(ref.namespace_id, queue_name, kind, sticky=sticky)
        if q.offer(ref):
            return
        if persist and not sticky and ref.kind != KIND_QUERY and self._persist is not None and (ref.source or ("",))[0] != "b":
            t = asyncio.ensure_future(self._persist(ref, q))
            self._background.add(t)
            t.add_done_callback(self._background.discard)
        q.push(ref)

    async def poll(self, namespace_id: str, queue_name: str, kind: int, timeout: float, *, sticky: bool = False,
                   rate: float = 0.0) -> TaskRef | None:
        q = self.queue(namespace_id, queue_name, kind, sticky=sticky)
        if rate > 0:
            q.rate = rate
        return await q.take(timeout)

    def remove(self, ref: TaskRef, queue_name: str, kind: int) -> bool:
        q = self._queues.get((ref.namespace_id, queue_name, kind))
        if q is None:
            return False
        try:
            q.tasks.remove(ref)
            return True
        except ValueError:
            return False

    def total_backlog(self, *, ignore_queries: bool = False) -> int:
        if not ignore_queries:
            return sum(q.backlog for q in self._queues.values())
        return sum(1 for q in self._queues.values() for t in q.tasks if t.kind != KIND_QUERY)

    def queues(self) -> list[TaskQueue]:
        return list(self._queues.values())
