"""Task queues: synchronous match to a waiting poller, backlog otherwise.

A task offered to a queue goes straight to a worker already waiting in a long poll
(sync match: no write at all). Only when no poller waits is it persisted to the
task backlog (through the ``persist`` callback, which also acknowledges the task's
transfer-queue entry in the same transaction) and kept in memory until a poller
comes. Sticky queues (one per worker) and query tasks are never persisted: a sticky
task falls back to the normal queue after a timeout, and a query is answered or
times out.

Dispatch rate (activity queues): a poll may ask for a queue-wide rate
(``max_tasks_per_second``, Temporal's ``max_task_queue_activities_per_second``); as in
Temporal, the latest rate asked for applies to every poller of the queue, and a poll that
asks for none leaves it as it is. Three rules keep one poller's setting from stalling the
others: a rate is clamped to the server's floor and ceiling (``task_queue_min_rate``/
``task_queue_max_rate``; the frontend refuses negative and non-finite ones); the rate lapses (the queue is unlimited
again) when no poll has asked for it for ``rate_ttl`` seconds; and a poller waits for its
turn at most as long as its poll lasts (it then returns empty, like any long poll), with a
token it took given back when no task came, so an idle wait does not use up the rate.

A poller that takes workflow tasks and never answers (a hung or broken worker that keeps
polling) would otherwise get the retry of a task it let time out as likely as anyone, and
delay that workflow by one more task timeout each time. So a retried task carries the
identity of the poller that let it time out (``TaskRef.avoid``) and goes to any other poller
first; after ``avoid_for`` seconds (the sticky schedule-to-start timeout) it goes to whoever
polls, that poller included (it may be the only worker there is).

Worker build versioning: a queue some versioned poller (one naming a worker deployment's build)
has polled is *versioned*. Each of its tasks then goes only to pollers of one version: its pin
(``TaskRef.pin``, a pinned execution's build) or, without one, the version its deployment's
routing gives the workflow id (the current or ramping version; "" = unversioned pollers), asked of
the ``router`` at match time, so a routing change moves the tasks still queued
(:meth:`Matching.rematch`). A task whose version has no poller waits in the queue. Queues no
versioned poller has polled take none of these steps.
"""

from __future__ import annotations

import asyncio
import collections
import math
import time

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from spindle.controlplane.deployments._document import version_key

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
    #: A poller identity this task goes to only when nobody else takes it within ``avoid_for`` seconds.
    avoid: str = ""
    avoid_for: float = 0.0
    #: When (monotonic) the task first waited in a queue of this process (0: not yet); for the backlog's age.
    queued_at: float = 0.0
    #: The worker build (version key) a pinned execution's task must go to; "" = its queue's routing decides.
    pin: str = ""


class Router(Protocol):
    """Where the tasks of versioned queues go (``spindle.controlplane.deployments.Deployments``)."""

    def target(self, namespace_id: str, queue: str, kind: int, workflow_id: str, pin: str) -> str | None: ...

    def saw_poller(self, namespace_id: str, queue: str, kind: int, deployment: str, build: str) -> bool: ...

    def deployment_of(self, namespace_id: str, queue: str, kind: int) -> object | None: ...


class TaskQueue:
    """One task queue of one kind in one namespace."""

    def __init__(self, namespace_id: str, name: str, kind: int, *, sticky: bool = False) -> None:
        self.namespace_id = namespace_id
        self.name = name
        self.kind = kind
        self.sticky = sticky
        self.tasks: collections.deque[TaskRef] = collections.deque()
        #: Waiting polls with their poller identities and versions ("" = unversioned), first come first served.
        self.waiters: collections.deque[tuple[asyncio.Future[TaskRef], str, str]] = collections.deque()
        #: The version a task must go to (None: any poller); set once a versioned poller polled the queue.
        self.route: Callable[[TaskRef], str | None] | None = None
        self._avoiding = 0  # tasks in ``tasks`` with ``avoid`` set
        self._rate = 0.0
        self._rate_until = 0.0  # monotonic time at which the rate lapses
        self._tokens = 0.0
        self._last_refill = time.monotonic()
        self.last_poll = time.monotonic()

    @property
    def rate(self) -> float:
        """The dispatch rate in force (tasks per second; 0 = unlimited)."""
        if self._rate > 0 and time.monotonic() >= self._rate_until:
            self._rate = 0.0  # nobody has asked for it for a while
        return self._rate

    def set_rate(self, rate: float, ttl: float) -> None:
        """A poll asked for ``rate`` (> 0): it applies to every poller for ``ttl`` seconds after the last ask."""
        if rate != self._rate:
            if self.rate <= 0:  # a queue newly under a rate may hand out one task at once
                self._tokens = 1.0
            self._refill(time.monotonic())
            self._rate = rate
            self._tokens = min(self._tokens, max(rate, 1.0))
        self._rate_until = time.monotonic() + ttl

    def offer(self, ref: TaskRef) -> bool:
        """Hand ``ref`` to a waiting poller; False if none waits (the caller keeps it)."""
        if self.rate > 0:
            return False
        return self._hand(ref)

    def _hand(self, ref: TaskRef) -> bool:
        """Give ``ref`` to the first waiting poller it may go to; False if there is none."""
        skipped: list[tuple[asyncio.Future[TaskRef], str, str]] = []
        handed = False
        target = self.route(ref) if self.route is not None else None
        while self.waiters:
            w = self.waiters.popleft()
            if w[0].done():
                continue
            if (ref.avoid and w[1] == ref.avoid) or (target is not None and w[2] != target):
                skipped.append(w)
                continue
            w[0].set_result(ref)
            handed = True
            break
        if skipped:
            self.waiters.extendleft(reversed(skipped))
        return handed

    def push(self, ref: TaskRef, *, front: bool = False) -> None:
        if not ref.queued_at:
            ref.queued_at = time.monotonic()
        if ref.avoid:
            self._avoiding += 1
            if ref.avoid_for > 0:
                asyncio.get_running_loop().call_later(ref.avoid_for, self._stop_avoiding, ref)
        if front:
            self.tasks.appendleft(ref)
        else:
            self.tasks.append(ref)
        if not self._avoiding and self.route is None:
            while self.waiters and self.tasks:
                w = self.waiters.popleft()
                if not w[0].done():
                    w[0].set_result(self.tasks.popleft())
            return
        if self._avoiding:
            self.rematch()
        elif self.waiters and self._hand(ref):  # versioned: only the new task may have a poller waiting for it
            self._remove(ref)

    def rematch(self) -> None:
        """Match each queued task with a waiting poller it may go to (some avoid a poller, or need a version)."""
        for t in list(self.tasks):
            if not self.waiters:
                break
            if self._hand(t):
                self._remove(t)

    def _remove(self, ref: TaskRef) -> None:
        self.tasks.remove(ref)
        if ref.avoid:
            self._avoiding -= 1

    def discard(self, ref: TaskRef) -> bool:
        """Take ``ref`` out of the queue if it is still queued; whether it was."""
        try:
            self._remove(ref)
        except ValueError:
            return False
        return True

    def _stop_avoiding(self, ref: TaskRef) -> None:
        """``ref`` waited long enough for another poller: from now on it goes to whoever polls."""
        if not ref.avoid:
            return
        try:
            self._remove(ref)
        except ValueError:  # taken meanwhile
            ref.avoid = ""
            return
        ref.avoid = ""
        self.push(ref, front=True)

    def _pop_for(self, identity: str, version: str) -> TaskRef | None:
        """The first queued task a poller with ``identity`` and ``version`` may take (removed), or None."""
        route = self.route
        if not self._avoiding and route is None:
            return self.tasks.popleft()
        for t in self.tasks:
            if t.avoid and t.avoid == identity:
                continue
            if route is not None:
                target = route(t)
                if target is not None and target != version:
                    continue
            self._remove(t)
            return t
        return None

    async def take(self, timeout: float, identity: str = "", version: str = "") -> TaskRef | None:
        """The next task, waiting up to ``timeout`` seconds; None when none came (or, under a rate, no turn did).

        ``identity`` is the poller's: a task that avoids it goes to others first. ``version`` is its
        build (a version key; "" = unversioned): on a versioned queue it gets only that version's tasks.
        """
        self.last_poll = time.monotonic()
        end = self.last_poll + timeout
        token = False
        if self.rate > 0:
            token = await self._throttle(end)
            if not token and self.rate > 0:
                return None  # no turn within this poll
            timeout = max(0.0, end - time.monotonic())
        if self.tasks:
            ref = self._pop_for(identity, version)
            if ref is not None:
                return ref
        fut: asyncio.Future[TaskRef] = asyncio.get_running_loop().create_future()
        self.waiters.append((fut, identity, version))
        try:
            return await asyncio.wait_for(asyncio.shield(fut), timeout)
        except asyncio.TimeoutError:
            if fut.done() and not fut.cancelled():
                return fut.result()
            fut.cancel()
            if token:
                self._give_back_token()
            return None
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():
                self.push(fut.result(), front=True)  # the poller went away: give the task to the next one
            else:
                fut.cancel()
            if token:
                self._give_back_token()
            raise

    def _refill(self, now: float) -> None:
        rate = self._rate
        if rate > 0:
            self._tokens = min(max(rate, 1.0), self._tokens + (now - self._last_refill) * rate)
        self._last_refill = now

    def _give_back_token(self) -> None:
        if self._rate > 0:
            self._tokens = min(max(self._rate, 1.0), self._tokens + 1.0)

    async def _throttle(self, end: float) -> bool:
        """Wait for a token until ``end`` (monotonic): True when one was taken, False when time ran out
        or the rate lapsed meanwhile. Waits in steps of at most a second, so a rate that lapses or
        changes while pollers wait takes effect within a second."""
        while True:
            now = time.monotonic()
            rate = self.rate
            if rate <= 0:
                return False
            self._refill(now)
            if self._tokens >= 1.0:
                self._tokens -= 1.0
                return True
            if now >= end:
                return False
            await asyncio.sleep(min(end - now, (1.0 - self._tokens) / rate, 1.0))

    @property
    def backlog(self) -> int:
        return len(self.tasks)

    def oldest_age(self) -> float:
        """Seconds the longest-waiting task in the backlog has waited in this process (0 when none waits)."""
        tasks = list(self.tasks)  # read from the metrics thread: a copy, not a live iteration
        if not tasks:
            return 0.0
        return max(0.0, time.monotonic() - min(t.queued_at or time.monotonic() for t in tasks))


class Matching:
    """All task queues of this process."""

    def __init__(self, persist: Callable[[TaskRef, TaskQueue], Awaitable[None]] | None = None, *,
                 rate_ttl: float = 120.0, min_rate: float = 0.0, max_rate: float = math.inf) -> None:
        self._queues: dict[tuple[str, str, int], TaskQueue] = {}
        #: Seconds a dispatch rate asked for by a poll stays in force after the last poll that asked for it.
        self.rate_ttl = rate_ttl
        #: Floor and ceiling of a dispatch rate (``ServerConfig.task_queue_min_rate``/``task_queue_max_rate``).
        self.min_rate = min_rate
        self.max_rate = max_rate
        self._persist = persist
        self._background: set[asyncio.Task[None]] = set()
        #: Called whenever a task is offered or taken (the time-skipping clock watches it).
        self.on_activity: Callable[[], None] | None = None
        #: Where versioned queues' tasks go (worker deployments); None: no queue is versioned.
        self.router: Router | None = None
        #: Namespaces with a versioned queue here (a set lookup keeps the others' hot path as it was).
        self.versioned_namespaces: set[str] = set()

    def queue(self, namespace_id: str, name: str, kind: int, *, sticky: bool = False) -> TaskQueue:
        key = (namespace_id, name, kind)
        q = self._queues.get(key)
        if q is None:
            q = TaskQueue(namespace_id, name, kind, sticky=sticky)
            self._queues[key] = q
            self._route_if_versioned(q)
        return q

    def _route_if_versioned(self, q: TaskQueue) -> None:
        """Route ``q`` by version if its router knows a deployment of it (sticky queues: never)."""
        if q.route is None and not q.sticky and self.router is not None \
                and self.router.deployment_of(q.namespace_id, q.name, q.kind) is not None:
            self._versioned(q)

    def _versioned(self, q: TaskQueue) -> None:
        router = self.router
        assert router is not None
        ns, name, kind = q.namespace_id, q.name, q.kind
        self.versioned_namespaces.add(ns)
        q.route = lambda ref: router.target(ns, name, kind, ref.workflow_id, ref.pin)

    def rematch(self, namespace_id: str) -> None:
        """The routing of a namespace's deployments changed: versioned queues match their tasks again."""
        for q in list(self._queues.values()):
            if q.namespace_id == namespace_id:
                self._route_if_versioned(q)
                if q.route is not None:
                    q.rematch()

    def repin(self, namespace_id: str, queue_name: str, workflow_id: str, run_id: str, pin: str) -> None:
        """A run's pin changed (a versioning override): its queued workflow tasks go to the new version."""
        q = self._queues.get((namespace_id, queue_name, KIND_WORKFLOW))
        if q is None:
            return
        for t in q.tasks:
            if t.workflow_id == workflow_id and t.run_id == run_id:
                t.pin = pin
        q.rematch()

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
                   rate: float = 0.0, identity: str = "", deployment: str = "", build: str = "") -> TaskRef | None:
        """The next task of the queue within ``timeout`` seconds, or None. ``rate`` > 0 sets the queue's dispatch
        rate, clamped to ``min_rate``..``max_rate`` (whoever forwarded the poll: the frontend refused
        negative and non-finite rates; anything else that is not a positive number asks for none).
        ``deployment``/``build``: a versioned poller's build (it gets only the tasks routed to it)."""
        q = self.queue(namespace_id, queue_name, kind, sticky=sticky)
        if rate > 0 and math.isfinite(rate):
            q.set_rate(min(max(rate, self.min_rate), self.max_rate), self.rate_ttl)
        version = ""
        if deployment and self.router is not None:
            version = version_key(deployment, build)
            if not sticky and (self.router.saw_poller(namespace_id, queue_name, kind, deployment, build)
                               or q.route is None):
                self._versioned(q)
        return await q.take(timeout, identity, version)

    def remove(self, ref: TaskRef, queue_name: str, kind: int) -> bool:
        q = self._queues.get((ref.namespace_id, queue_name, kind))
        return q is not None and q.discard(ref)

    def total_backlog(self, *, ignore_queries: bool = False) -> int:
        if not ignore_queries:
            return sum(q.backlog for q in self._queues.values())
        return sum(1 for q in self._queues.values() for t in q.tasks if t.kind != KIND_QUERY)

    def queues(self) -> list[TaskQueue]:
        return list(self._queues.values())
