"""The history service's facade: wires the parts together and offers what the frontend, the cluster and tests call.

Parts (see docs/ARCHITECTURE.md): ``ShardController`` and ``Shard`` (ownership, task ids,
a ``TransferQueue`` and a ``TimerQueue`` per shard), ``ExecutionCache`` (runs' ``MutableState``
and their locks), ``Committer`` (the commit path), ``StartAdmission``, ``Backlog`` (matching's
durable side), the operations in ``ops/`` (functions of a ``HistoryContext``) and the
cross-shard port (``LocalCrossShard``, or a cluster's). Nothing subclasses or extends the
facade: its methods hand each call to an operation, returning the operation's coroutine
so no extra await sits on the way.
"""

from __future__ import annotations

import functools

from collections.abc import Awaitable, Callable, Iterable
from contextlib import AbstractAsyncContextManager
from typing import Any

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.controlplane.archival import Archival
from spindle.controlplane.clock import Clock
from spindle.controlplane.config import ServerConfig
from spindle.controlplane.deployments import Deployments
from spindle.controlplane.matching import Matching, TaskRef
from spindle.controlplane.namespaces import Namespace, NamespaceRegistry
from spindle.controlplane.store import Store

from . import _time_skipping as time_skipping
from ._admission import StartAdmission
from ._background import Background
from ._backlog import Backlog
from ._cache import ExecutionCache
from ._commit import Committer
from ._context import CrossShard, HistoryContext
from ._cross_shard import LocalCrossShard
from ._executors import execute_timer, execute_transfer
from ._outstanding import OutstandingTasks
from ._shard import Shard, ShardController
from ._tasks import TM_USER_TIMER, Task
from ._timer_queue import TimerQueue
from ._tokens import StartNonces, TaskTokens
from ._transfer_queue import TransferQueue
from ._versioning import versioned_backlogs
from .ops import activity_task, close, poll, workflow_task, workflow_task_completed
from .ops import describe as describe_op
from .ops import erase as erase_op
from .ops import options as options_op
from .ops import query as query_op
from .ops import reset as reset_op
from .ops import schedule_requests as schedule_op
from .ops import signal as signal_op
from .ops import start as start_op
from .ops import update as update_op


class HistoryEngine:
    """Executions, their histories and their task and timer queues, for every shard this process owns."""

    def __init__(self, store: Store, config: ServerConfig, clock: Clock, namespaces: NamespaceRegistry) -> None:
        self.store = store
        self.config = config
        self.clock = clock
        self.namespaces = namespaces
        #: The identity this process acquires shards with (a cluster member sets its member id).
        self.identity = "spindle-history"
        self._listeners: list[Callable[[int], Any]] = []
        background = Background()
        admission = StartAdmission(config)
        self._shards = ShardController(store, config.num_shards, self._open_shard)
        self.cache = ExecutionCache(store, namespaces, config.execution_cache_size, self._shards.shard_for)
        backlog = Backlog(store, self._shards)
        self.matching = Matching(persist=backlog.persist, rate_ttl=max(60.0, 2 * config.long_poll_timeout),
                                 min_rate=config.task_queue_min_rate, max_rate=config.task_queue_max_rate)
        #: Worker deployments (build versioning): where versioned queues' tasks go.
        self.deployments = Deployments(store, clock)
        self.matching.router = self.deployments
        self.deployments.on_routing_change = self.matching.rematch
        #: Workflow/activity tasks handed to workers and not finished (the time-skipping clock waits for them).
        self.outstanding = OutstandingTasks(self._outstanding_changed)
        committer = Committer(store, self._shards, self.cache, background)
        self._committer = committer
        ctx = HistoryContext(
            store=store, config=config, clock=clock, namespaces=namespaces, shards=self._shards, cache=self.cache,
            matching=self.matching, backlog=backlog, admission=admission, outstanding=self.outstanding,
            background=background, nonces=StartNonces(), tokens=TaskTokens(), queries={},
            cross_shard=None,  # type: ignore[arg-type]  # the local port needs the context: set right below
            commit=committer.commit, write_background=committer.apply_background)
        #: The cross-shard operations run in this process (a cluster member runs forwarded ones on it).
        self.local_cross_shard = LocalCrossShard(ctx)
        ctx.cross_shard = self.local_cross_shard
        committer.before_commit = functools.partial(close.enforce_history_limit, ctx)
        #: The collaborators every operation gets (internal; tests that reach operations use it).
        self.context = ctx

    def _open_shard(self, shard_id: int, range_id: int, movable: bool) -> Shard:
        ctx = self.context

        def queues(shard: Shard) -> tuple[TransferQueue, TimerQueue]:
            return (TransferQueue(shard_id, self.store, functools.partial(execute_transfer, ctx, shard)),
                    TimerQueue(shard_id, self.store, self.clock, self.config.timer_preload_window,
                               fire=functools.partial(execute_timer, ctx, shard),
                               due_at=workflow_task.timeout_due_at(ctx.nonces), background=ctx.background,
                               on_due=self._timer_due, on_fired=ctx.admission.timer_handled))

        return Shard(shard_id, range_id, queues, movable=movable)

    def _timer_due(self, t: Task) -> None:
        ctx = self.context
        ctx.admission.timer_due(t)
        if ctx.metrics is not None and t.kind == TM_USER_TIMER:
            ctx.metrics.timer_fired(t.fire_time_ms, self.clock.now_ms())

    def attach_metrics(self, metrics: Any) -> None:
        """Record into ``metrics`` (a ``ServerMetrics``) from now on: starts and closes, task
        schedule-to-start, timer lag, sticky dispatch, archival, shard ownership changes, and, at
        scrape time, the task queues' backlogs (size and oldest task's age) and the shards owned."""
        self.context.metrics = metrics
        self._committer.metrics = metrics
        namespaces = self.namespaces

        def backlogs() -> Iterable[tuple[str, str, int, int, float]]:
            for q in self.matching.queues():
                if q.sticky:
                    continue
                ns = namespaces.by_id(q.namespace_id)
                yield (ns.name if ns is not None else q.namespace_id, q.name, q.kind, q.backlog, q.oldest_age())

        metrics.backlog_source = backlogs
        metrics.versioned_backlog_source = functools.partial(versioned_backlogs, self.matching, namespaces)
        metrics.shards_source = lambda: len(self._shards.owned)
        self._shards.metrics = metrics

    @property
    def tokens(self) -> TaskTokens:
        """Signs and verifies task tokens (configure its keys before ``start``, which loads them)."""
        return self.context.tokens

    # ------------------------------------------------------------------ wiring the cluster
    @property
    def cross_shard(self) -> CrossShard:
        """The port operations reach other shards' workflows through (a cluster member sets its router's)."""
        return self.context.cross_shard

    @cross_shard.setter
    def cross_shard(self, port: CrossShard) -> None:
        self.context.cross_shard = port

    @property
    def shard_lost_hook(self) -> Callable[[int], None] | None:
        """Called with a shard id when a write finds the shard taken by another process (cluster leases)."""
        return self._shards.lost_hook

    @shard_lost_hook.setter
    def shard_lost_hook(self, hook: Callable[[int], None] | None) -> None:
        self._shards.lost_hook = hook

    @property
    def shards(self) -> dict[int, Shard]:
        """The shards this process owns, by id."""
        return self._shards.owned

    def shard_id_of(self, namespace_id: str, workflow_id: str) -> int:
        """The shard a workflow id hashes to (fixed for the life of the database)."""
        return self._shards.shard_id_of(namespace_id, workflow_id)

    @property
    def archival(self) -> Archival:
        """The archive and blob services (built from the config on first use)."""
        return self.context.archival

    @archival.setter
    def archival(self, value: Archival) -> None:
        self.context.archival = value

    # ------------------------------------------------------------------ lifecycle
    async def start(self, shard_ids: Iterable[int] | None = None) -> None:
        """Acquire ``shard_ids`` (default: every shard) and start the background loops.

        A cluster member passes ``()`` and then adds the shards its leases give it
        with ``add_shard`` (spindle.controlplane.cluster).
        """
        await self.tokens.load(self.store)
        shards = self._shards
        for shard_id in range(self.config.num_shards) if shard_ids is None else shard_ids:
            await shards.acquire(shard_id, self.identity)
        if shards.owned:
            await self.context.backlog.load(self.matching)
        for shard in list(shards.owned.values()):
            await shard.transfer.recover()
            shard.timers.start()
        shards.start()

    async def add_shard(self, shard_id: int, range_id: int) -> None:
        """Start serving a shard whose ownership was just taken with ``range_id`` (cluster leases).

        Loads its backlog and unacknowledged transfer tasks and starts its timer loop.
        Cached state of the shard's executions is dropped first: another process may
        have changed them while this one did not own the shard.
        """
        if shard_id in self._shards.owned:
            await self.remove_shard(shard_id)
        self._forget_shard(shard_id)
        shard = self._shards.open(shard_id, range_id, movable=True)
        await self.context.backlog.load(self.matching, shard_id)
        await shard.transfer.recover()
        shard.timers.start()

    async def remove_shard(self, shard_id: int) -> None:
        """Stop serving a shard (lease lost or handed over): stop its timers, forget its cached state and queued tasks.

        Writes still in flight for it fail on the store's range_id check, so nothing the
        new owner does is overwritten. Calls waiting on its workflows end with Unavailable.
        """
        await self._shards.close(shard_id)
        self._forget_shard(shard_id)

    def _forget_shard(self, shard_id: int) -> None:
        self.cache.forget_shard(shard_id, self._shards.shard_id_of)
        self.context.backlog.forget_shard(self.matching, shard_id)

    async def stop(self) -> None:
        """Stop the loops, write the last ack batches and cancel background work."""
        background = self.context.background
        background.stopping = True
        await self._shards.stop()
        background.cancel_all()
        await self.deployments.close()

    # ------------------------------------------------------------------ client operations
    def admit_start(self, namespace_id: str) -> AbstractAsyncContextManager[bool]:
        """Start admission in a namespace (``async with``): back-pressure on its new starts (see ``_admission``)."""
        return self.context.admission.admit(namespace_id)

    def note_workflow_poller(self, namespace_id: str, identity: str) -> None:
        """A worker polled a namespace for workflow tasks: its admission limit scales with live workers."""
        self.context.admission.note_workflow_poller(namespace_id, identity)

    def start_workflow(self, ns: Namespace, req: svc.StartWorkflowExecutionRequest, *,
                       parent: pb.ParentExecutionInfo | None = None,
                       signal: tuple[str, pb.Payloads, pb.Header] | None = None) -> Awaitable[tuple[str, bool]]:
        """Start a run (or, per the conflict policy, return the running one). Returns (run_id, started).

        With ``signal`` (signal-with-start, already routed by the frontend) it runs here;
        otherwise through the cross-shard port (a cluster member runs it on the owner).
        """
        if signal is not None:
            return start_op.start_workflow(self.context, ns, req, parent=parent, signal=signal)
        return self.context.cross_shard.start_workflow(ns, req, parent=parent)

    def signal(self, ns: Namespace, execution: pb.WorkflowExecution, name: str, payloads: pb.Payloads,
               header: pb.Header, identity: str, request_id: str) -> Awaitable[None]:
        """Signal a run (see ``ops.signal``)."""
        return signal_op.signal(self.context, ns, execution, name, payloads, header, identity, request_id)

    def request_cancel(self, ns: Namespace, execution: pb.WorkflowExecution, identity: str, reason: str,
                       external: tuple[int, pb.WorkflowExecution] | None = None) -> Awaitable[None]:
        """Ask a run to cancel (through the cross-shard port; see ``ops.cancel``)."""
        return self.context.cross_shard.request_cancel(ns, execution, identity, reason, external)

    def terminate(self, ns: Namespace, execution: pb.WorkflowExecution, reason: str, details: pb.Payloads,
                  identity: str) -> Awaitable[None]:
        """Terminate a run (through the cross-shard port; see ``ops.cancel``)."""
        return self.context.cross_shard.terminate(ns, execution, reason, details, identity)

    def reset(self, ns: Namespace, req: svc.ResetWorkflowExecutionRequest) -> Awaitable[str]:
        """Reset a workflow to a WorkflowTaskCompleted event of one of its runs; the new run's id (see ``ops.reset``)."""
        return reset_op.reset(self.context, ns, req)

    def erase(self, ns: Namespace, workflow_id: str, run_id: str, reason: str, identity: str) -> Awaitable[erase_op.Erased]:
        """Erase one run for good, terminated first if running (``ops.erase``; a cluster member routes to the owner)."""
        return erase_op.erase_run(self.context, ns, workflow_id, run_id, reason, identity)

    def describe(self, ns: Namespace, execution: pb.WorkflowExecution) -> Awaitable[svc.DescribeWorkflowExecutionResponse]:
        """Describe a run (see ``ops.describe``)."""
        return describe_op.describe(self.context, ns, execution)

    def get_history(self, ns: Namespace, req: svc.GetWorkflowExecutionHistoryRequest,
                    deadline: float) -> Awaitable[svc.GetWorkflowExecutionHistoryResponse]:
        """A page of history; with wait_new_event, waits (until ``deadline``) for events or the close.

        Ends with Unavailable if the workflow's shard is handed over meanwhile.
        """
        return self._shards.while_owned(ns.id, req.execution.workflow_id,
                                        describe_op.get_history(self.context, ns, req, deadline))

    def query(self, ns: Namespace, req: svc.QueryWorkflowRequest) -> Awaitable[svc.QueryWorkflowResponse]:
        """Query a run (see ``ops.query``); Unavailable if its shard is handed over meanwhile."""
        return self._shards.while_owned(ns.id, req.execution.workflow_id, query_op.query(self.context, ns, req))

    def update(self, ns: Namespace, req: svc.UpdateWorkflowExecutionRequest) -> Awaitable[svc.UpdateWorkflowExecutionResponse]:
        """Update a run and wait for the outcome (see ``ops.update``); Unavailable if its shard is handed over meanwhile."""
        return self._shards.while_owned(ns.id, req.workflow_execution.workflow_id, update_op.update(self.context, ns, req))

    # ------------------------------------------------------------------ schedules (ops.schedule_requests)
    def create_schedule(self, ns: Namespace, req: svc.CreateScheduleRequest) -> Awaitable[svc.CreateScheduleResponse]:
        """Create a schedule on the shard of its id (checked by the frontend)."""
        return schedule_op.create(self.context, ns, req)

    def describe_schedule(self, ns: Namespace, schedule_id: str) -> Awaitable[svc.DescribeScheduleResponse]:
        """A schedule with its info and next action times."""
        return schedule_op.describe(self.context, ns, schedule_id)

    def update_schedule(self, ns: Namespace, req: svc.UpdateScheduleRequest) -> Awaitable[None]:
        """Replace a schedule (checked by the frontend)."""
        return schedule_op.update(self.context, ns, req)

    def patch_schedule(self, ns: Namespace, req: svc.PatchScheduleRequest) -> Awaitable[None]:
        """Pause, unpause, trigger or backfill a schedule (checked by the frontend)."""
        return schedule_op.patch(self.context, ns, req)

    def delete_schedule(self, ns: Namespace, schedule_id: str) -> Awaitable[None]:
        """Delete a schedule and its timer."""
        return schedule_op.delete(self.context, ns, schedule_id)

    def list_schedules(self, ns: Namespace, after: str, size: int) -> Awaitable[tuple[list[svc.ScheduleListEntry], str]]:
        """A page of a namespace's schedules (by id) and the id to continue after ('' at the end)."""
        return schedule_op.list_page(self.context, ns, after, size)

    # ------------------------------------------------------------------ worker operations
    def update_options(self, ns: Namespace, req: svc.UpdateWorkflowExecutionOptionsRequest
                       ) -> Awaitable[svc.UpdateWorkflowExecutionOptionsResponse]:
        """Set or remove a run's versioning override (``ops.options``; routed to the owner by a cluster member)."""
        return options_op.update_options(self.context, ns, req)

    def start_polled(self, ref: TaskRef, queue: str, kind: int, identity: str, *, sticky: bool = False,
                     version: str = "") -> Awaitable[Any]:
        """Start a task a poller (of build ``version``) took from ``queue``: the poll response, or None (``ops.poll``)."""
        return poll.start_polled(self.context, ref, queue, kind, identity, sticky=sticky, version=version)

    def respond_workflow_task_completed(self, req: svc.RespondWorkflowTaskCompletedRequest
                                        ) -> Awaitable[svc.RespondWorkflowTaskCompletedResponse]:
        """Record a completed workflow task and its commands (see ``ops.workflow_task_completed``)."""
        return workflow_task_completed.respond(self.context, req)

    def respond_workflow_task_failed(self, req: svc.RespondWorkflowTaskFailedRequest) -> Awaitable[None]:
        """Record a failed workflow task (see ``ops.workflow_task``)."""
        return workflow_task.respond_failed(self.context, req)

    def respond_query(self, req: svc.RespondQueryTaskCompletedRequest) -> None:
        """A worker's answer to a query task (see ``ops.query``)."""
        query_op.respond(self.context, req)

    def respond_activity_completed(self, req: svc.RespondActivityTaskCompletedRequest
                                   ) -> Awaitable[svc.RespondActivityTaskCompletedResponse]:
        """Record a completed activity attempt (see ``ops.activity_task``)."""
        return activity_task.respond_completed(self.context, req)

    def respond_activity_failed(self, req: svc.RespondActivityTaskFailedRequest
                                ) -> Awaitable[svc.RespondActivityTaskFailedResponse]:
        """Record a failed activity attempt (see ``ops.activity_task``)."""
        return activity_task.respond_failed(self.context, req)

    def respond_activity_canceled(self, req: svc.RespondActivityTaskCanceledRequest
                                  ) -> Awaitable[svc.RespondActivityTaskCanceledResponse]:
        """Record a cancelled activity attempt (see ``ops.activity_task``)."""
        return activity_task.respond_canceled(self.context, req)

    def record_heartbeat(self, req: svc.RecordActivityTaskHeartbeatRequest
                         ) -> Awaitable[svc.RecordActivityTaskHeartbeatResponse]:
        """Record an activity heartbeat (see ``ops.activity_task``)."""
        return activity_task.heartbeat(self.context, req)

    # ------------------------------------------------------------------ time skipping (spindle.testing)
    def _outstanding_changed(self, total: int) -> None:
        for fn in self._listeners:
            fn(total)

    def on_outstanding(self, fn: Callable[[int], Any]) -> None:
        """Call ``fn(count)`` whenever the number of tasks handed to workers and unfinished changes."""
        self._listeners.append(fn)

    @property
    def outstanding_tasks(self) -> int:
        """Workflow and activity tasks handed to workers and not finished (of runs still open)."""
        return self.outstanding.total

    @property
    def in_flight(self) -> int:
        """Commits and timer firings under way."""
        return self.context.background.in_flight

    def is_idle(self, *, count_activities: bool = True) -> bool:
        """Nothing in progress, so the time-skipping clock may move (see ``_time_skipping.is_idle``)."""
        return time_skipping.is_idle(self.context, count_activities=count_activities)

    def next_timer_ms(self) -> Awaitable[int | None]:
        """The fire time of the earliest durable timer of any shard (retention timers once due), or None."""
        return time_skipping.next_timer_ms(self.context)

    def wake_timers(self) -> None:
        """Re-check due timers now (after the clock moved)."""
        for shard in self._shards.owned.values():
            shard.timers.wake()


__all__ = ["HistoryEngine"]
