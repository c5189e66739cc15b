"""The workflow half of a worker: poll, replay or resume, complete.

Workflow tasks come from the normal task queue and from this worker's sticky
queue. A sticky task carries only the events after the previous task, so the
worker keeps recently used :class:`WorkflowInstance` objects in an LRU cache
(:mod:`spindle.worker._run_cache`) and resumes them; a task for a run that is not
cached is replayed from the full history (:mod:`spindle.worker._workflow_history`).
Completions ask the server to return the next task (and eager activity tasks) in the
response, saving a poll round trip (:mod:`spindle.worker._workflow_task_responses`).

Nothing a task carries can wedge the worker: workflow code that does not yield within
the deadlock timeout is interrupted (:mod:`spindle._workflow.deadlock`), and a task that cannot
be processed (a payload the codecs refuse, a result that cannot be converted or
encoded, an error in workflow code) is answered with ``RespondWorkflowTaskFailed``
carrying the error, so it shows in the history and the server retries it with backoff;
the run's cached instance is evicted.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
import uuid

from collections.abc import Callable
from typing import Any

import grpc
import grpc.aio

from spindle._workflow.deadlock import ActivationWatchdog, DeadlockError
from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.converter._payload_visitor import decode_message
from spindle.exceptions import ApplicationError, NonDeterminismError
from spindle.worker._activity_worker import ActivityWorker
from spindle.worker._polling import Slots, cancel_and_wait, poll_loop
from spindle.worker._run_cache import CachedRun, RunCache
from spindle.worker._workflow_history import WorkflowHistory
from spindle.worker._workflow_queries import QueryAnswerer
from spindle.worker._workflow_task_responses import (
    UNHANDLED,
    WorkflowTaskResponder,
    describe_task,
    log_task_failure,
    task_context,
)

__all__ = ["WorkflowWorker"]

log = logging.getLogger("spindle.worker")
_CLOSE_COMMANDS = frozenset({
    pb.COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION,
    pb.COMMAND_TYPE_FAIL_WORKFLOW_EXECUTION,
    pb.COMMAND_TYPE_CANCEL_WORKFLOW_EXECUTION,
    pb.COMMAND_TYPE_CONTINUE_AS_NEW_WORKFLOW_EXECUTION,
})


class _TaskFailed(Exception):
    """Fail the current workflow task with ``cause`` (and evict the run)."""

    def __init__(self, cause: int, error: BaseException) -> None:
        super().__init__(type(error).__name__)
        self.cause = cause
        self.error = error


class _Stale(Exception):
    """The cached instance is out of date with the server: replay from the full history."""


try:  # the runtime signals a cached instance whose previous task failed on the server
    from spindle._workflow.instance import StaleWorkflowInstanceError as _StaleError
except ImportError:  # pragma: no cover - older runtime
    _StaleError = None  # type: ignore[assignment,misc]


class WorkflowWorker:
    """Runs the workflows registered on one worker (see the module docstring).

    Args:
        client: the worker's client.
        task_queue: the normal queue to poll.
        definitions: ``WorkflowDefinition`` by type name.
        max_concurrent: the most workflow tasks processed at once.
        max_cached: the most runs kept in the sticky cache (0 disables stickiness).
        sticky_schedule_to_start_ms: how long the server waits on the sticky queue
            before falling back to the normal queue.
        activity_worker: for eager activities (``None`` if this worker runs none).
        identity: names this worker in histories.
        instance_factory: builds a ``WorkflowInstance`` (the runtime's constructor).
        pollers: concurrent long polls on the normal queue (the sticky queue gets as many).
        deadlock_timeout: seconds workflow code may run without yielding before its task
            fails with :class:`~spindle._workflow.deadlock.DeadlockError`; ``None`` disables detection.
        metrics: records ``spindle_worker_*`` metrics (a recorder from ``WorkerMetrics``), or ``None``.
        deployment_options: the worker's build, sent on every poll (sticky ones too) and completion
            (``None``: an unversioned worker, whose requests carry none of the versioning fields).
        versioning_behaviors: the behavior each workflow type declares on completion (with ``deployment_options``).
    """

    def __init__(
        self,
        client: Any,
        task_queue: str,
        definitions: dict[str, Any],
        *,
        max_concurrent: int,
        max_cached: int,
        sticky_schedule_to_start_ms: int,
        activity_worker: ActivityWorker | None,
        identity: str,
        instance_factory: Callable[..., Any],
        pollers: int = 2,
        deadlock_timeout: float | None = None,
        metrics: Any = None,
        deployment_options: pb.WorkerDeploymentOptions | None = None,
        versioning_behaviors: dict[str, int] | None = None,
    ) -> None:
        self._client = client
        self._deployment_options = deployment_options
        self._stub = client._stub
        self._ns = client.namespace
        self._conv = client.data_converter
        self._codecs = client.codecs
        self._identity = identity
        self.task_queue = task_queue
        self._defs = definitions
        self.sticky_queue = f"{task_queue}/sticky/{uuid.uuid4().hex}" if max_cached > 0 else ""
        self._sticky_attrs = (
            svc.StickyExecutionAttributes(worker_task_queue=self.sticky_queue,
                                          schedule_to_start_timeout_ms=sticky_schedule_to_start_ms)
            if self.sticky_queue else None
        )
        self._activities = activity_worker
        self._factory = instance_factory
        self._pollers = max(1, pollers)
        self.slots = Slots(max_concurrent)
        self._stopping = False
        self._poll_tasks: list[asyncio.Task[None]] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._registered_names = ", ".join(sorted(definitions)) or "none"
        self._watchdog = ActivationWatchdog(deadlock_timeout) if deadlock_timeout else None
        #: The sticky cache (its ``max_cached`` 0 when caching is off).
        self._runs = runs = RunCache(max_cached, self._watchdog)
        self._history = WorkflowHistory(self._stub, self._ns, self._codecs)
        self._responses = WorkflowTaskResponder(self._stub, self._ns, identity, self._conv, self._codecs,
                                                self._sticky_attrs, runs, metrics, deployment_options,
                                                versioning_behaviors or {})
        self._queries = QueryAnswerer(self._stub, self._ns, self._codecs, runs, self._history, definitions,
                                      self._new_instance, self._guarded)
        self._loop: asyncio.AbstractEventLoop | None = None
        #: Counters for tests and metrics: tasks resumed from the cache, runs replayed from history.
        self.stats: collections.Counter[str] = collections.Counter()
        self._metrics = metrics
        self._on_poll: Callable[[float, str], None] | None = None
        if metrics is not None:
            self._on_poll = lambda seconds, result: metrics.poll("workflow", seconds, result)
            metrics.watch_slots("workflow", lambda: len(self._tasks))
            if self.sticky_queue:
                metrics.watch_cache(lambda: len(runs))

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Start the pollers on the running loop."""
        loop = self._loop = asyncio.get_running_loop()
        if self._watchdog is not None:
            self._watchdog.start()
        self._poll_tasks = [loop.create_task(self._poll_loop(self.task_queue, False)) for _ in range(self._pollers)]
        if self.sticky_queue:
            self._poll_tasks += [loop.create_task(self._poll_loop(self.sticky_queue, True))
                                 for _ in range(self._pollers)]

    async def stop_polling(self) -> None:
        """Stop taking new tasks."""
        self._stopping = True
        await cancel_and_wait(self._poll_tasks)
        self._poll_tasks = []

    async def drain(self, timeout: float) -> None:
        """Wait for the workflow tasks in progress, then evict every cached run."""
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=timeout)
        self._runs.evict_all()
        if self._watchdog is not None:
            self._watchdog.stop()
        if self._metrics is not None:
            self._metrics.close()

    @property
    def cached_run_ids(self) -> list[str]:
        """Run ids in the sticky cache, least recently used first (for tests and metrics)."""
        return list(self._runs.entries)

    def submit(self, task: svc.PollWorkflowTaskQueueResponse) -> None:
        """Process a workflow task obtained without polling (returned by an activity completion)."""
        self._spawn(task, reserved=False)

    # ------------------------------------------------------------------ polling

    async def _poll_loop(self, queue: str, sticky: bool) -> None:
        req = svc.PollWorkflowTaskQueueRequest(namespace=self._ns, task_queue=queue, identity=self._identity,
                                               sticky=sticky)
        if self._deployment_options is not None:
            req.deployment_options.CopyFrom(self._deployment_options)
        await poll_loop(f"workflow poll on {queue!r}", self.slots, lambda: self._stopping,
                        lambda: self._stub.PollWorkflowTaskQueue(req), lambda task: self._spawn(task, reserved=True),
                        self._on_poll)

    def _spawn(self, task: svc.PollWorkflowTaskQueueResponse, *, reserved: bool) -> None:
        t = asyncio.get_running_loop().create_task(self._handle(task, reserved))
        self._tasks.add(t)
        t.add_done_callback(self._tasks.discard)

    async def _handle(self, task: svc.PollWorkflowTaskQueueResponse | None, reserved: bool) -> None:
        try:
            while task is not None and task.task_token:
                task = await self._process(task)
        except Exception:
            log.exception("workflow task processing failed inside the worker")
        finally:
            if reserved:
                self.slots.release()

    # ------------------------------------------------------------------ one task

    async def _process(self, task: svc.PollWorkflowTaskQueueResponse) -> svc.PollWorkflowTaskQueueResponse | None:
        if self._codecs:
            try:
                await decode_message(self._codecs, task, context=task_context(task, self._ns))
            except Exception as e:  # noqa: BLE001 - bad data in the task, or a failing codec
                await self._responses.undecodable(task, e)
                return None
        if task.HasField("query"):
            await self._queries.answer(task)
            return None
        run_id = task.workflow_execution.run_id
        defn = self._defs.get(task.workflow_type)
        if defn is None:
            await self._responses.fail(task, pb.WORKFLOW_TASK_FAILED_CAUSE_UNREGISTERED_WORKFLOW_TYPE, ApplicationError(
                f"workflow type {task.workflow_type!r} is not registered on this worker (task queue "
                f"{self.task_queue!r}); registered workflows: {self._registered_names}",
                type="WorkflowTypeNotRegistered"))
            return None
        cache = self._runs.entries
        entry = cache.get(run_id)
        if entry is not None:
            cache.move_to_end(run_id)
            async with entry.lock:
                if cache.get(run_id) is entry:
                    return await self._activate(task, defn, entry)
            entry = None
        entry = CachedRun(instance=None)
        async with entry.lock:
            return await self._activate(task, defn, entry)

    async def _activate(self, task: svc.PollWorkflowTaskQueueResponse, defn: Any, entry: CachedRun
                        ) -> svc.PollWorkflowTaskQueueResponse | None:
        run_id = task.workflow_execution.run_id
        metrics = self._metrics
        t0 = time.perf_counter()
        try:
            events = await self._history.task_events(task)
            new_events: list[pb.HistoryEvent] = []
            if entry.instance is not None:
                new_events = [e for e in events if e.event_id > entry.started_event_id]
                if (task.previous_started_event_id != entry.started_event_id or not new_events
                        or new_events[0].event_id != entry.started_event_id + 1):
                    # The server's view moved on without us (a task failed or timed out
                    # elsewhere, or events are missing): replay from the full history.
                    self._runs.evict(run_id, entry)
                    entry = CachedRun(instance=None)
            commands: list[pb.Command] | None = None
            if entry.instance is not None:
                self.stats["cache_hits"] += 1
                try:
                    commands = self._run_activation(entry.instance, new_events, task)
                    if metrics is not None:
                        metrics.cache_hit()
                except _Stale:
                    self._runs.evict(run_id, entry)
                    entry = CachedRun(instance=None)
            if commands is None:
                self.stats["replays"] += 1
                t_replay = time.perf_counter()
                events = await self._history.full_history(task, events)
                started = events[0].workflow_execution_started_event_attributes
                entry.instance = self._new_instance(defn, task, started.task_queue)
                try:
                    commands = self._run_activation(entry.instance, events, task)
                except _Stale as e:
                    raise _TaskFailed(UNHANDLED, e.__cause__ or e) from e
                if metrics is not None and task.previous_started_event_id > 0:  # past its first task: a real replay
                    metrics.cache_miss()
                    metrics.replayed(task.workflow_type, time.perf_counter() - t_replay)
            entry.started_event_id = task.started_event_id
        except _TaskFailed as f:
            self._runs.evict(run_id, entry)
            log_task_failure(task, f.error)
            await self._responses.fail(task, f.cause, f.error)
            return None
        except grpc.aio.AioRpcError as e:  # the server, not the workflow code: e.g. fetching its history
            self._runs.evict(run_id, entry)
            log.warning("workflow task of %s %s (run %s) failed: %s %s", task.workflow_type,
                        task.workflow_execution.workflow_id, run_id, e.code(), e.details())
            await self._responses.fail(task, UNHANDLED, e)
            return None
        except Exception as e:
            self._runs.evict(run_id, entry)
            log_task_failure(task, e)
            await self._responses.fail(task, UNHANDLED, e)
            return None

        if metrics is not None:
            metrics.executed("workflow", time.perf_counter() - t0)
        closing = any(c.command_type in _CLOSE_COMMANDS for c in commands)
        if not closing and self._runs.max_cached > 0:
            self._runs.insert(run_id, entry)
        else:
            self._runs.evict(run_id, entry)
        return await self._responses.complete(task, commands, run_id, entry, closing, self._activities)

    def _new_instance(self, defn: Any, task: svc.PollWorkflowTaskQueueResponse, task_queue: str) -> Any:
        inst = self._factory(defn, converter=self._conv, namespace=task.namespace or self._ns,
                             workflow_id=task.workflow_execution.workflow_id, run_id=task.workflow_execution.run_id,
                             task_queue=task_queue or self.task_queue)
        if self._watchdog is not None:
            try:
                inst.on_activation = self._watchdog.touch
            except AttributeError:  # an instance type without the hook: one deadline for the whole replay
                pass
        return inst

    def _guarded(self, task: svc.PollWorkflowTaskQueueResponse, fn: Callable[..., Any], *args: Any,
                 **kwargs: Any) -> Any:
        """Call workflow code under the deadlock deadline (see :mod:`spindle._workflow.deadlock`)."""
        wd = self._watchdog
        if wd is None:
            return fn(*args, **kwargs)
        try:
            return wd.run(lambda: describe_task(task), fn, *args, **kwargs)
        except DeadlockError:
            # The interrupt unwound workflow code only, but make sure the worker's loop is current again.
            loop = self._loop
            if loop is not None and asyncio.events._get_running_loop() is not loop:
                asyncio.events._set_running_loop(loop)
            raise

    def _run_activation(self, inst: Any, events: list[pb.HistoryEvent], task: svc.PollWorkflowTaskQueueResponse
                        ) -> list[pb.Command]:
        try:
            return list(self._guarded(task, inst.activate, events, updates=list(task.updates),
                                      started_event_id=task.started_event_id))
        except NonDeterminismError as e:
            raise _TaskFailed(pb.WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR, e) from e
        except Exception as e:
            if _StaleError is not None and isinstance(e, _StaleError):
                raise _Stale() from e
            raise _TaskFailed(UNHANDLED, e) from e
