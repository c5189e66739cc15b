"""Start admission: back-pressure on new starts, per namespace, so that running executions' work goes first.

A burst of starts must not queue in front of the timers, signals and results of runs
already going. Each namespace is admitted on its own (a tenant boundary):

- **Its budget.** A start in namespace N waits while timers of N are due but not yet
  handled, or while as many of N's workflow tasks are scheduled and unfinished as N's
  limit allows: ``start_admission_max_pending``, or ``start_admission_per_worker`` per
  worker that polled N for workflow tasks in the last two minutes, whichever is larger.
  Starts being admitted count against the budget too.
- **Its queue.** Waiting starts of N queue first come, first served in N's own queue,
  and only N's work (a task of N finishing, a timer of N handled, a start of N done)
  admits them. A flood of starts into a namespace nobody serves (no worker: its tasks
  never finish) fills only that namespace's budget and queue; another namespace's start
  finds its own budget free and an empty queue, and goes at once.
- **Its bound.** A start never waits longer than ``start_admission_wait`` seconds; then
  it goes anyway (admission delays, it never refuses: the namespace's request rate
  limit, ``rps_limit`` in the frontend, is what refuses a flood).

The starts the server makes for a schedule (its actions, backfills, catch-up) are admitted
here like a client's, one at a time, in the same queue (``ops.schedule``), but a schedule
waits at most ``SCHEDULE_ADMISSION_WAIT`` at a time and never goes without admission: it
gives its turn up (its actions stay in its record) and tries again.

Nothing is shared between namespaces here, so there is no global ordering to be fair
about: per-namespace state is created on first use and dropped once it holds nothing.
A workflow task lost without a trace (it will time out) stops counting after ten times
``start_admission_wait``.
"""

from __future__ import annotations

import asyncio
import collections

from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager

from spindle.controlplane.config import ServerConfig

from ._tasks import TM_SCHEDULE, Task

#: A scheduled workflow task: (namespace id, workflow id, run id, scheduled event id).
WorkflowTaskKey = tuple[str, str, str, int]

#: Seconds without a poll after which a worker no longer counts towards the limit.
POLLER_TTL = 120
#: Longest a schedule's start waits for admission at a time (it holds the schedule's lock meanwhile).
SCHEDULE_ADMISSION_WAIT = 1.0


class _NamespaceAdmission:
    """The admission state of one namespace."""

    __slots__ = ("pending_wt", "waiters", "admitting", "pollers", "due_timers")

    def __init__(self) -> None:
        self.pending_wt: dict[WorkflowTaskKey, float] = {}  # -> when scheduled (loop time)
        self.waiters: collections.deque[asyncio.Future[None]] = collections.deque()
        self.admitting = 0  # starts admitted and running, and waiters woken but not yet running
        self.pollers: dict[str, float] = {}  # workflow-task poller identity -> last poll (loop time)
        self.due_timers = 0

    def empty(self) -> bool:
        return not (self.pending_wt or self.waiters or self.admitting or self.pollers or self.due_timers)


class StartAdmission:
    """Admits starts per namespace (``admit``) against its due timers and its unfinished workflow tasks."""

    def __init__(self, config: ServerConfig) -> None:
        self._config = config
        self._ns: dict[str, _NamespaceAdmission] = {}

    def _get(self, namespace_id: str) -> _NamespaceAdmission:
        n = self._ns.get(namespace_id)
        if n is None:
            n = self._ns[namespace_id] = _NamespaceAdmission()
        return n

    def _tidy(self, namespace_id: str, n: _NamespaceAdmission) -> None:
        if n.empty() and self._ns.get(namespace_id) is n:
            del self._ns[namespace_id]

    @asynccontextmanager
    async def admit(self, namespace_id: str, max_wait: float | None = None) -> AsyncIterator[bool]:
        """Wait for admission in ``namespace_id`` (at most ``max_wait``, default ``start_admission_wait``), then hold
        a slot while the start runs. Yields whether it was admitted (False: the wait ran out; a client's start
        goes anyway, a schedule's gives its turn up and tries again later)."""
        n = self._get(namespace_id)
        admitted = True
        if n.waiters or not self._can_admit(n):
            fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            n.waiters.append(fut)
            try:
                await asyncio.wait_for(asyncio.shield(fut),
                                       self._config.start_admission_wait if max_wait is None else max_wait)
            except asyncio.TimeoutError:
                admitted = False
            finally:
                if not fut.done():
                    fut.cancel()
                    try:
                        n.waiters.remove(fut)
                    except ValueError:
                        pass
        n.admitting += 1
        try:
            yield admitted
        finally:
            n.admitting -= 1
            self._release(namespace_id, n)

    def _can_admit(self, n: _NamespaceAdmission) -> bool:
        if n.due_timers:
            return False
        return len(n.pending_wt) + n.admitting < self._limit(n)

    def _limit(self, n: _NamespaceAdmission) -> int:
        cfg = self._config
        now = asyncio.get_running_loop().time()
        for k in [k for k, t in n.pollers.items() if now - t > POLLER_TTL]:
            del n.pollers[k]  # a worker not seen for a while no longer counts
        return max(cfg.start_admission_max_pending, cfg.start_admission_per_worker * len(n.pollers))

    def note_workflow_poller(self, namespace_id: str, identity: str) -> None:
        """A worker polled ``namespace_id`` for workflow tasks: that namespace's limit scales with its live workers."""
        n = self._get(namespace_id)
        n.pollers[identity] = asyncio.get_running_loop().time()
        self._release(namespace_id, n)

    def _release(self, namespace_id: str, n: _NamespaceAdmission) -> None:
        """Something that held ``namespace_id``'s starts back is over: admit who may go now."""
        if n.waiters:
            self._purge_pending_wt(n)
            loop = asyncio.get_running_loop()
            while n.waiters and self._can_admit(n):
                fut = n.waiters.popleft()
                if not fut.done():
                    fut.set_result(None)
                    n.admitting += 1  # reserved until the waiter runs (it takes its own slot)
                    loop.call_soon(self._unreserve, namespace_id, n)
        self._tidy(namespace_id, n)

    def _unreserve(self, namespace_id: str, n: _NamespaceAdmission) -> None:
        n.admitting -= 1
        self._tidy(namespace_id, n)

    # ------------------------------------------------------------------ timers
    def timer_due(self, t: Task) -> None:
        """A timer of ``t.namespace_id`` is due: that namespace's starts wait until it is handled.

        A schedule's timer does not count: it is no running execution's work, and the
        starts it makes are admitted here themselves (they would wait for their own timer).
        """
        if t.kind != TM_SCHEDULE:
            self._get(t.namespace_id).due_timers += 1

    def timer_handled(self, t: Task) -> None:
        """A due timer was handled (or put back for a retry)."""
        if t.kind == TM_SCHEDULE:
            return
        n = self._ns.get(t.namespace_id)
        if n is not None:
            n.due_timers = max(0, n.due_timers - 1)
            self._release(t.namespace_id, n)

    # ------------------------------------------------------------------ workflow-task bookkeeping
    def workflow_task_scheduled(self, key: WorkflowTaskKey) -> None:
        pending = self._get(key[0]).pending_wt
        pending.pop(key, None)  # (re)inserted last: the dict stays in the order of scheduling times
        pending[key] = asyncio.get_running_loop().time()

    def workflow_task_done(self, key: WorkflowTaskKey) -> None:
        n = self._ns.get(key[0])
        if n is not None and n.pending_wt.pop(key, None) is not None:
            self._release(key[0], n)

    def _purge_pending_wt(self, n: _NamespaceAdmission) -> None:
        # A task lost without a trace (it will time out) must not block starts for long.
        if not n.pending_wt:
            return
        # The oldest come first (see workflow_task_scheduled): stop at the first one still young, so that
        # a namespace with thousands of pending tasks does not pay for a full scan on every release.
        old = asyncio.get_running_loop().time() - self._config.start_admission_wait * 10
        stale = []
        for k, t in n.pending_wt.items():
            if t >= old:
                break
            stale.append(k)
        for k in stale:
            del n.pending_wt[k]

    # ------------------------------------------------------------------ introspection (tests, metrics)
    def pending(self, namespace_id: str) -> int:
        """Workflow tasks of ``namespace_id`` scheduled and unfinished, as admission counts them."""
        n = self._ns.get(namespace_id)
        return len(n.pending_wt) if n is not None else 0

    def waiting(self, namespace_id: str) -> int:
        """Starts of ``namespace_id`` waiting for admission."""
        n = self._ns.get(namespace_id)
        return sum(1 for f in n.waiters if not f.done()) if n is not None else 0

    def namespaces(self) -> Iterable[str]:
        """Namespace ids with admission state (anything pending, waiting, admitted, polled or due)."""
        return list(self._ns)


__all__ = ["POLLER_TTL", "SCHEDULE_ADMISSION_WAIT", "StartAdmission", "WorkflowTaskKey"]
