"""Start admission: back-pressure on new starts, so that work of running executions goes first.

A burst of starts must not queue in front of the timers, signals and results of runs
already going. A start waits (at most ``ServerConfig.start_admission_wait`` seconds, first
come first served) while timers are due but not yet handled, or while as many workflow
tasks are scheduled and unfinished as the limit allows: ``start_admission_max_pending``,
or ``start_admission_per_worker`` per workflow-task poller seen in the last two minutes,
whichever is larger.

One ``StartAdmission`` serves every namespace for now. Admission per namespace is a local
change: key admission objects by namespace id (the frontend passes the namespace it
resolved) and count each namespace's scheduled workflow tasks in its own object.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from spindle.controlplane.config import ServerConfig

from ._background import Background

#: A scheduled workflow task: (namespace id, workflow id, run id, scheduled event id).
WorkflowTaskKey = tuple[str, str, str, int]

#: Seconds without a poll after which a worker no longer counts towards the limit.
POLLER_TTL = 120


class StartAdmission:
    """Admits starts (``admit``) against due timers and the workflow tasks scheduled and unfinished."""

    def __init__(self, config: ServerConfig, background: Background) -> None:
        self._config = config
        self._background = background
        self._pending_wt: dict[WorkflowTaskKey, float] = {}
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()
        self._admitting = 0
        self._pollers: dict[str, float] = {}  # workflow-task poller identity -> last poll (loop time)

    @asynccontextmanager
    async def admit(self) -> AsyncIterator[None]:
        """Wait for admission (at most ``start_admission_wait``), then hold a slot while the start runs."""
        if self._waiters or not self._can_admit():
            fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(fut)
            try:
                await asyncio.wait_for(asyncio.shield(fut), self._config.start_admission_wait)
            except asyncio.TimeoutError:
                pass
            finally:
                if not fut.done():
                    fut.cancel()
                    try:
                        self._waiters.remove(fut)
                    except ValueError:
                        pass
        self._admitting += 1
        try:
            yield
        finally:
            self._admitting -= 1
            self.release()

    def _can_admit(self) -> bool:
        if self._background.due_timers:
            return False
        return len(self._pending_wt) + self._admitting < self._limit()

    def note_workflow_poller(self, identity: str) -> None:
        """A worker polled for workflow tasks: the admission limit scales with live workers."""
        self._pollers[identity] = asyncio.get_running_loop().time()

    def _limit(self) -> int:
        cfg = self._config
        now = asyncio.get_running_loop().time()
        if len(self._pollers) > 1000:  # forget workers not seen for a while
            for k in [k for k, t in self._pollers.items() if now - t > POLLER_TTL]:
                del self._pollers[k]
        workers = sum(1 for t in self._pollers.values() if now - t <= POLLER_TTL)
        return max(cfg.start_admission_max_pending, cfg.start_admission_per_worker * workers)

    def release(self) -> None:
        """Something that held starts back is over (a timer fired, a task finished): admit who may go now."""
        if not self._waiters:
            return
        self._purge_pending_wt()
        while self._waiters and self._can_admit():
            fut = self._waiters.popleft()
            if not fut.done():
                fut.set_result(None)
                self._admitting += 1  # reserved until the waiter runs (it takes its own slot)
                asyncio.get_running_loop().call_soon(self._unreserve)

    def _unreserve(self) -> None:
        self._admitting -= 1

    # ------------------------------------------------------------------ workflow-task bookkeeping
    def workflow_task_scheduled(self, key: WorkflowTaskKey) -> None:
        self._pending_wt[key] = asyncio.get_running_loop().time()

    def workflow_task_done(self, key: WorkflowTaskKey) -> None:
        if self._pending_wt.pop(key, None) is not None:
            self.release()

    def _purge_pending_wt(self) -> None:
        # A task lost without a trace (it will time out) must not block starts for long.
        if not self._pending_wt:
            return
        old = asyncio.get_running_loop().time() - self._config.start_admission_wait * 10
        stale = [k for k, t in self._pending_wt.items() if t < old]
        for k in stale:
            del self._pending_wt[k]


__all__ = ["StartAdmission", "WorkflowTaskKey"]
