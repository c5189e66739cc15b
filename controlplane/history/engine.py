"""The history engine: owns shards and executions; everything that changes a history goes through it."""

from __future__ import annotations

import asyncio
from typing import Any, Callable

from spindle.controlplane.clock import Clock
from spindle.controlplane.config import ServerConfig
from spindle.controlplane.matching import KIND_QUERY, KIND_WORKFLOW, TaskRef
from spindle.controlplane.namespaces import NamespaceRegistry
from spindle.controlplane.store import Store

from ._activities import ActivitiesMixin
from ._client_ops import ClientOpsMixin, PendingQuery
from ._commands import CommandsMixin
from ._core import EngineCore
from ._processing import ProcessingMixin
from ._retention import RetentionMixin
from ._runs import RunsMixin
from ._tasks import TM_RETENTION, Task
from ._workflow_tasks import WorkflowTasksMixin


class HistoryEngine(
    ClientOpsMixin,
    WorkflowTasksMixin,
    ActivitiesMixin,
    CommandsMixin,
    ProcessingMixin,
    RetentionMixin,
    RunsMixin,
    EngineCore,
):
    """Executions, their histories and their task and timer queues, for every shard this process owns."""

    def __init__(self, store: Store, config: ServerConfig, clock: Clock, namespaces: NamespaceRegistry) -> None:
        super().__init__(store, config, clock, namespaces)
        self.pending_queries: dict[str, PendingQuery] = {}
        self._outstanding_listeners: list[Callable[[int], Any]] = []

    async def start_polled(self, ref: TaskRef, queue: str, kind: int, identity: str, *,
                           sticky: bool = False) -> Any:
        """Start a task a poller took from ``queue``: the poll response, or None if the task went stale.

        If the poller goes away (its call is cancelled) while the start waits for the
        workflow's lock or its state, the task goes back to the front of its queue for the
        next poller: nothing was started, and nothing else would ever offer it again (its
        transfer row is only re-read after a restart; an unstarted task has no timeout).
        """
        try:
            if ref.kind == KIND_QUERY:
                return await self.record_query_started(ref)
            if kind == KIND_WORKFLOW:
                return await self.record_workflow_task_started(ref, identity, sticky=sticky)
            return await self.record_activity_task_started(ref, identity)
        except asyncio.CancelledError:
            self.matching.queue(ref.namespace_id, queue, kind, sticky=sticky).push(ref, front=True)
            raise

    def _outstanding_changed(self, total: int) -> None:
        for fn in self._outstanding_listeners:
            fn(total)

    def on_outstanding(self, fn: Callable[[int], Any]) -> None:
        """Call ``fn(count)`` whenever the number of tasks handed to workers and unfinished changes."""
        self._outstanding_listeners.append(fn)

    @property
    def outstanding_tasks(self) -> int:
        """Workflow and activity tasks handed to workers and not finished (of runs still open)."""
        return self.outstanding.total

    def is_idle(self, *, count_activities: bool = True) -> bool:
        """No task handed to a worker is unfinished, no task waits in a queue, no write or timer firing is in flight.

        (Query tasks do not count.) The time-skipping test environment moves the clock
        only when this holds. With ``count_activities=False`` running activity attempts do
        not count (``env.sleep`` moves time while activities run: a hung activity's
        start-to-close timeout must fire in virtual time).
        """
        busy = self.outstanding.total if count_activities else self.outstanding.workflow_tasks
        if busy or self.background.in_flight or self.matching.total_backlog(ignore_queries=True):
            return False
        return not self.background.busy

    async def next_timer_ms(self) -> int | None:
        """The fire time of the earliest durable timer of any shard, or None when there is none.

        Retention timers count only once due: they are housekeeping, so automatic time
        skipping never jumps to one (closed runs would vanish under a test), but a due
        one is still waited for.
        """
        now = self.clock.now_ms()

        def counts(fire_ms: int, t: Task) -> bool:
            return t.kind != TM_RETENTION or fire_ms <= now

        best: int | None = None
        for shard in list(self.shards.values()):
            found = await shard.timers.next_fire_ms(counts)
            if found is not None and (best is None or found < best):
                best = found
        return best

    def wake_timers(self) -> None:
        """Re-check due timers now (after the clock moved)."""
        for shard in self.shards.values():
            shard.timers.wake()


__all__ = ["HistoryEngine"]
