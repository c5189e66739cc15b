"""The workflow half of a worker: poll, replay or resume, complete, cache.

Workflow tasks come from the normal task queue and from this worker's sticky
queue. A sticky task carries only the events after the previous task, so the
worker keeps recently used :class:`WorkflowInstance` objects in an LRU cache and
resumes them; a task for a run that is not cached is replayed from the full
history. Completions ask the server to return the next task (and eager activity
tasks) in the response, saving a poll round trip.

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
import dataclasses
import logging
import time
import uuid

from collections.abc import Callable, Sequence
from typing import Any

import grpc
import grpc.aio

from spindle.api import messages_pb2 as pb, service_pb2 as svc
from spindle.worker._activity_worker import ActivityWorker
from spindle.converter._serialization_context import WorkflowSerializationContext
from spindle._workflow.deadlock import ActivationWatchdog, DeadlockError
from spindle.worker._polling import Slots, cancel_and_wait, poll_loop
from spindle.converter._payload_visitor import decode_message, encode_message
from spindle.client._retry_delay import call_with_retries
from spindle.exceptions import ApplicationError, NonDeterminismError

__all__ = ["WorkflowWorker"]

log = logging.getLogger("spindle.worker")
_CLOSE_COMMANDS = frozenset({
    pb.COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION,
    pb.COMMAND_TYPE_FAIL_WORKFLOW_EXECUTION,
    pb.COMMAND_TYPE_CANCEL_WORKFLOW_EXECUTION,
    pb.COMMAND_TYPE_CONTINUE_AS_NEW_WORKFLOW_EXECUTION,
})
_UNHANDLED = pb.WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_WORKER_UNHANDLED_FAILURE
#: A task failure's stack trace is cut to this many characters (its end kept): each retry writes it again.
_MAX_TASK_FAILURE_STACK = 32 * 1024


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


@dataclasses.dataclass
class _CachedRun:
    instance: Any
    started_event_id: int = 0
    lock: asyncio.Lock = dataclasses.field(default_factory=asyncio.Lock)


def _what(task: svc.PollWorkflowTaskQueueResponse) -> str:
    wf = task.workflow_execution
    return f"workflow {task.workflow_type} (id {wf.workflow_id!r}, run {wf.run_id})"


def _safe_str(error: BaseException) -> str:
    try:
        return str(error)
    except Exception as e:  # noqa: BLE001 - an exception whose __str__ raises
        return f"<str() failed: {type(e).__name__}>"


def _log_task_failure(task: svc.PollWorkflowTaskQueueResponse, error: BaseException) -> None:
    """A failed workflow task: ERROR with the traceback (the server retries the task, so each try logs)."""
    wf = task.workflow_execution
    what = "is not deterministic" if isinstance(error, NonDeterminismError) else "failed"
    log.error("workflow task of %s %s (run %s, attempt %d) %s: %s: %s", task.workflow_type, wf.workflow_id,
              wf.run_id, task.attempt or 1, what, type(error).__name__, _safe_str(error), exc_info=error,
              extra={"workflow_id": wf.workflow_id, "run_id": wf.run_id, "workflow_type": task.workflow_type})


def _failure_cause(cause: int, error: BaseException) -> str:
    """The ``cause`` label of a failed workflow task (see ``spindle.worker._metrics``)."""
    if cause == pb.WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR or isinstance(error, NonDeterminismError):
        return "non_determinism"
    if cause == pb.WORKFLOW_TASK_FAILED_CAUSE_UNREGISTERED_WORKFLOW_TYPE:
        return "unregistered_type"
    if isinstance(error, DeadlockError):
        return "deadlock"
    if isinstance(error, ApplicationError) and error.type in ("PayloadDecodeError", "PayloadEncodeError"):
        return "payload"
    return "other"


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
    ) -> None:
        self._client = client
        self._stub = client._stub
        self._ns = client.namespace
        self._conv = client.data_converter
        self._codecs = client.codecs
        self._identity = identity
        self.task_queue = task_queue
        self._defs = definitions
        self._max_cached = max_cached
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
        self._cache: collections.OrderedDict[str, _CachedRun] = collections.OrderedDict()
        self._stopping = False
        self._poll_tasks: list[asyncio.Task[None]] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._registered_names = ", ".join(sorted(definitions)) or "none"
        self._watchdog = ActivationWatchdog(deadlock_timeout) if deadlock_timeout else None
        self._loop: asyncio.AbstractEventLoop | None = None
        #: Counters for tests and metrics: tasks resumed from the cache, runs replayed from history.
        self.stats: collections.Counter[str] = collections.Counter()
        self._metrics = metrics
        self._on_poll: Callable[[float, str], None] | None = None
        if metrics is not None:
            self._on_poll = lambda seconds, result: metrics.poll("workflow", seconds, result)
            metrics.watch_slots("workflow", lambda: len(self._tasks))
            if self.sticky_queue:
                metrics.watch_cache(lambda: len(self._cache))

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
        for run_id in list(self._cache):
            self._evict(run_id)
        if self._watchdog is not None:
            self._watchdog.stop()
        if self._metrics is not None:
            self._metrics.close()

    @property
    def cached_run_ids(self) -> list[str]:
        """Run ids in the sticky cache, least recently used first (for tests and metrics)."""
        return list(self._cache)

    def submit(self, task: svc.PollWorkflowTaskQueueResponse) -> None:
        """Process a workflow task obtained without polling (returned by an activity completion)."""
        self._spawn(task, reserved=False)

    # ------------------------------------------------------------------ polling

    async def _poll_loop(self, queue: str, sticky: bool) -> None:
        req = svc.PollWorkflowTaskQueueRequest(namespace=self._ns, task_queue=queue, identity=self._identity,
                                               sticky=sticky)
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
                await decode_message(self._codecs, task, context=self._context(task))
            except Exception as e:  # noqa: BLE001 - bad data in the task, or a failing codec
                await self._undecodable(task, e)
                return None
        if task.HasField("query"):
            await self._answer_query(task)
            return None
        run_id = task.workflow_execution.run_id
        defn = self._defs.get(task.workflow_type)
        if defn is None:
            await self._fail_task(task, pb.WORKFLOW_TASK_FAILED_CAUSE_UNREGISTERED_WORKFLOW_TYPE, ApplicationError(
                f"workflow type {task.workflow_type!r} is not registered on this worker (task queue "
                f"{self.task_queue!r}); registered workflows: {self._registered_names}",
                type="WorkflowTypeNotRegistered"))
            return None
        entry = self._cache.get(run_id)
        if entry is not None:
            self._cache.move_to_end(run_id)
            async with entry.lock:
                if self._cache.get(run_id) is entry:
                    return await self._activate(task, defn, entry)
            entry = None
        entry = _CachedRun(instance=None)
        async with entry.lock:
            return await self._activate(task, defn, entry)

    async def _activate(self, task: svc.PollWorkflowTaskQueueResponse, defn: Any, entry: _CachedRun
                        ) -> svc.PollWorkflowTaskQueueResponse | None:
        run_id = task.workflow_execution.run_id
        metrics = self._metrics
        t0 = time.perf_counter()
        try:
            events = await self._task_events(task)
            new_events: list[pb.HistoryEvent] = []
            if entry.instance is not None:
                new_events = [e for e in events if e.event_id > entry.started_event_id]
                if (task.previous_started_event_id != entry.started_event_id or not new_events
                        or new_events[0].event_id != entry.started_event_id + 1):
                    # The server's view moved on without us (a task failed or timed out
                    # elsewhere, or events are missing): replay from the full history.
                    self._evict(run_id, entry)
                    entry = _CachedRun(instance=None)
            commands: list[pb.Command] | None = None
            if entry.instance is not None:
                self.stats["cache_hits"] += 1
                try:
                    commands = self._run_activation(entry.instance, new_events, task)
                    if metrics is not None:
                        metrics.cache_hit()
                except _Stale:
                    self._evict(run_id, entry)
                    entry = _CachedRun(instance=None)
            if commands is None:
                self.stats["replays"] += 1
                t_replay = time.perf_counter()
                events = await self._full_history(task, events)
                started = events[0].workflow_execution_started_event_attributes
                entry.instance = self._new_instance(defn, task, started.task_queue)
                try:
                    commands = self._run_activation(entry.instance, events, task)
                except _Stale as e:
                    raise _TaskFailed(_UNHANDLED, e.__cause__ or e) from e
                if metrics is not None and task.previous_started_event_id > 0:  # past its first task: a real replay
                    metrics.cache_miss()
                    metrics.replayed(task.workflow_type, time.perf_counter() - t_replay)
            entry.started_event_id = task.started_event_id
        except _TaskFailed as f:
            self._evict(run_id, entry)
            _log_task_failure(task, f.error)
            await self._fail_task(task, f.cause, f.error)
            return None
        except grpc.aio.AioRpcError as e:  # the server, not the workflow code: e.g. fetching its history
            self._evict(run_id, entry)
            log.warning("workflow task of %s %s (run %s) failed: %s %s", task.workflow_type,
                        task.workflow_execution.workflow_id, run_id, e.code(), e.details())
            await self._fail_task(task, _UNHANDLED, e)
            return None
        except Exception as e:
            self._evict(run_id, entry)
            _log_task_failure(task, e)
            await self._fail_task(task, _UNHANDLED, e)
            return None

        if metrics is not None:
            metrics.executed("workflow", time.perf_counter() - t0)
        closing = any(c.command_type in _CLOSE_COMMANDS for c in commands)
        if not closing and self._max_cached > 0:
            self._insert(run_id, entry)
        else:
            self._evict(run_id, entry)
        return await self._complete(task, commands, run_id, entry, closing)

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
            return wd.run(lambda: _what(task), fn, *args, **kwargs)
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
            raise _TaskFailed(_UNHANDLED, e) from e

    async def _complete(self, task: svc.PollWorkflowTaskQueueResponse, commands: Sequence[pb.Command],
                        run_id: str, entry: _CachedRun, closing: bool) -> svc.PollWorkflowTaskQueueResponse | None:
        reserved = 0
        acts = self._activities
        if acts is not None and not closing:
            for c in commands:
                if c.command_type == pb.COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK:
                    a = c.schedule_activity_task_command_attributes
                    if acts.try_reserve(a.activity_type, a.task_queue):
                        a.request_eager_execution = True
                        reserved += 1
        req = svc.RespondWorkflowTaskCompletedRequest(
            task_token=task.task_token, commands=commands, identity=self._identity,
            return_new_workflow_task=not closing, namespace=self._ns)
        if self._sticky_attrs is not None and not closing:
            req.sticky_attributes.CopyFrom(self._sticky_attrs)
        try:
            if self._codecs:
                await encode_message(self._codecs, req, context=self._context(task))
            resp = await self._stub.RespondWorkflowTaskCompleted(req)
        except grpc.aio.AioRpcError as e:
            for _ in range(reserved):
                acts.run_reserved(None)  # type: ignore[union-attr]
            self._evict(run_id, entry)
            level = logging.DEBUG if e.code() == grpc.StatusCode.NOT_FOUND else logging.WARNING
            log.log(level, "completing workflow task of %s failed: %s %s", run_id, e.code(), e.details())
            return None
        except Exception as e:  # noqa: BLE001 - a codec refused the commands' payloads
            for _ in range(reserved):
                acts.run_reserved(None)  # type: ignore[union-attr]
            self._evict(run_id, entry)
            error = ApplicationError(f"the payloads of the workflow task's commands cannot be encoded by the codec "
                                     f"chain: {type(e).__name__}: {e}", type="PayloadEncodeError")
            _log_task_failure(task, error)
            await self._fail_task(task, _UNHANDLED, error)
            return None
        if reserved:
            got = list(resp.activity_tasks)
            for t in got[:reserved]:
                acts.run_reserved(t)  # type: ignore[union-attr]
            for _ in range(reserved - min(reserved, len(got))):
                acts.run_reserved(None)  # type: ignore[union-attr]
            for t in got[reserved:]:  # more than we asked for: should not happen; run them anyway
                if acts.slots.try_acquire():  # type: ignore[union-attr]
                    acts.run_reserved(t)  # type: ignore[union-attr]
        if resp.HasField("workflow_task") and resp.workflow_task.task_token:
            return resp.workflow_task
        return None

    def _context(self, task: svc.PollWorkflowTaskQueueResponse) -> WorkflowSerializationContext:
        return WorkflowSerializationContext(task.namespace or self._ns, task.workflow_execution.workflow_id)

    async def _undecodable(self, task: svc.PollWorkflowTaskQueueResponse, error: Exception) -> None:
        """A task whose payloads the codecs refuse: answer it with the error (a query gets it as its answer)."""
        message = f"cannot decode the payloads of a task of {_what(task)}: {type(error).__name__}: {error}"
        if task.HasField("query"):
            log.warning("%s", message)
            req = svc.RespondQueryTaskCompletedRequest(task_token=task.task_token, namespace=self._ns,
                                                       error_message=message)
            try:
                await self._stub.RespondQueryTaskCompleted(req)
            except grpc.aio.AioRpcError as e:
                log.debug("answering a query failed: %s %s", e.code(), e.details())
            return
        self._evict(task.workflow_execution.run_id)
        failure = ApplicationError(message, type="PayloadDecodeError")
        _log_task_failure(task, failure)
        await self._fail_task(task, _UNHANDLED, failure)

    def _task_failure(self, error: BaseException) -> pb.Failure:
        """``error`` as a Failure that never fails to build, never has an empty message and has a bounded stack."""
        try:
            failure = self._conv.to_failure(error)
        except BaseException as e:  # noqa: BLE001 - e.g. MemoryError again, or a __str__ that raises
            failure = pb.Failure(message=f"{type(error).__name__} (its details cannot be converted: "
                                         f"{type(e).__name__})", source="spindle-python")
            failure.application_failure_info.type = type(error).__name__
        if not failure.message:
            failure.message = type(error).__name__
        if isinstance(error, DeadlockError) and error.stack_trace:
            failure.stack_trace = error.stack_trace  # where the workflow code was stuck, not where we noticed
        if len(failure.stack_trace) > _MAX_TASK_FAILURE_STACK:
            failure.stack_trace = "...\n" + failure.stack_trace[-_MAX_TASK_FAILURE_STACK:]
        return failure

    async def _fail_task(self, task: svc.PollWorkflowTaskQueueResponse, cause: int, error: BaseException) -> None:
        if self._metrics is not None:
            self._metrics.workflow_task_failed(task.workflow_type, _failure_cause(cause, error))
        req = svc.RespondWorkflowTaskFailedRequest(task_token=task.task_token, cause=cause,  # type: ignore[arg-type]
                                                   failure=self._task_failure(error), identity=self._identity,
                                                   namespace=self._ns)
        if self._codecs:
            try:
                await encode_message(self._codecs, req, context=self._context(task))
            except Exception as e:  # noqa: BLE001 - the codec cannot encode the failure either
                # Say only what cannot leak a secret: the kinds of the two errors.
                req.failure.CopyFrom(pb.Failure(
                    message=f"{type(error).__name__} (the failure cannot be encoded by the codec chain: "
                            f"{type(e).__name__})", source="spindle-python"))
        try:
            await self._stub.RespondWorkflowTaskFailed(req)
        except grpc.aio.AioRpcError as e:
            log.debug("failing workflow task failed: %s %s", e.code(), e.details())

    # ------------------------------------------------------------------ history

    async def _task_events(self, task: svc.PollWorkflowTaskQueueResponse) -> list[pb.HistoryEvent]:
        events = list(task.history.events)
        token = task.next_page_token
        while token:
            resp = await self._get_history(task.workflow_execution, token)
            last = events[-1].event_id if events else 0
            events.extend(e for e in resp.history.events if e.event_id > last)
            token = resp.next_page_token
        return events

    async def _full_history(self, task: svc.PollWorkflowTaskQueueResponse, events: list[pb.HistoryEvent]
                            ) -> list[pb.HistoryEvent]:
        """All events of the run up to the task's WorkflowTaskStarted, fetching what the task lacks."""
        if not events or events[0].event_id != 1:
            first = events[0].event_id if events else task.started_event_id + 1
            fetched: list[pb.HistoryEvent] = []
            token = b""
            while True:
                resp = await self._get_history(task.workflow_execution, token)
                fetched.extend(resp.history.events)
                token = resp.next_page_token
                if not token or (fetched and fetched[-1].event_id >= first - 1):
                    break
            events = [e for e in fetched if e.event_id < first] + events
        for i, e in enumerate(events):
            if e.event_id != i + 1:
                raise RuntimeError(f"history of run {task.workflow_execution.run_id} has a gap before event "
                                   f"{e.event_id} (expected {i + 1})")
        if not events or events[0].event_type != pb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
            raise RuntimeError(f"history of run {task.workflow_execution.run_id} does not start with "
                               "WorkflowExecutionStarted")
        return events

    async def _get_history(self, execution: pb.WorkflowExecution, token: bytes
                           ) -> svc.GetWorkflowExecutionHistoryResponse:
        # a history read counts against the namespace's request rate: wait out a throttle (it is safe to repeat)
        resp = await call_with_retries(self._stub.GetWorkflowExecutionHistory, svc.GetWorkflowExecutionHistoryRequest(
            namespace=self._ns, execution=execution, next_page_token=token))
        if self._codecs:
            await decode_message(self._codecs, resp,
                                 context=WorkflowSerializationContext(self._ns, execution.workflow_id))
        return resp

    # ------------------------------------------------------------------ queries

    async def _answer_query(self, task: svc.PollWorkflowTaskQueueResponse) -> None:
        run_id = task.workflow_execution.run_id
        req = svc.RespondQueryTaskCompletedRequest(task_token=task.task_token, namespace=self._ns)
        try:
            entry = self._cache.get(run_id)
            if entry is not None:
                async with entry.lock:
                    if self._cache.get(run_id) is entry and entry.instance is not None:
                        inst = entry.instance
                        try:
                            req.query_result.CopyFrom(self._guarded(task, inst.query, task.query))
                        except DeadlockError:
                            self._evict(run_id, entry)  # interrupted mid-handler: its state is not to be trusted
                            raise
                    else:
                        entry = None
            if entry is None:
                req.query_result.CopyFrom(await self._query_fresh(task))
        except Exception as e:
            req.ClearField("query_result")
            req.error_message = str(e) or type(e).__name__
        if self._codecs:
            try:
                await encode_message(self._codecs, req, context=self._context(task))
            except Exception as e:  # noqa: BLE001 - a codec refused the result
                req.ClearField("query_result")
                req.error_message = f"the query result cannot be encoded by the codec chain: {type(e).__name__}: {e}"
        try:
            await self._stub.RespondQueryTaskCompleted(req)
        except grpc.aio.AioRpcError as e:
            log.debug("answering a query failed: %s %s", e.code(), e.details())

    async def _query_fresh(self, task: svc.PollWorkflowTaskQueueResponse) -> pb.Payloads:
        """Replay the run from its history (up to the last completed workflow task) and query it."""
        defn = self._defs.get(task.workflow_type)
        if defn is None:
            raise RuntimeError(f"workflow type {task.workflow_type!r} is not registered on this worker; "
                               f"registered workflows: {self._registered_names}")
        events = list(task.history.events)
        if not events or events[0].event_id != 1:
            events = []
            token = b""
            while True:
                resp = await self._get_history(task.workflow_execution, token)
                events.extend(resp.history.events)
                token = resp.next_page_token
                if not token:
                    break
        # Replay up to the WorkflowTaskStarted of the last completed workflow task.
        cut = 0
        for i in range(len(events) - 1):
            if (events[i].event_type == pb.EVENT_TYPE_WORKFLOW_TASK_STARTED
                    and events[i + 1].event_type == pb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED):
                cut = i + 1
        if cut == 0:
            raise RuntimeError("the workflow has not completed its first workflow task yet")
        started = events[0].workflow_execution_started_event_attributes
        inst = self._new_instance(defn, task, started.task_queue)
        try:
            self._guarded(task, inst.activate, events[:cut], updates=[], started_event_id=events[cut - 1].event_id)
            result: pb.Payloads = self._guarded(task, inst.query, task.query)
            return result
        finally:
            self._close_instance(inst, task.workflow_execution.run_id)

    # ------------------------------------------------------------------ cache

    def _insert(self, run_id: str, entry: _CachedRun) -> None:
        cache = self._cache
        if cache.get(run_id) is not entry:
            old = cache.pop(run_id, None)
            if old is not None and old.instance is not None:
                old.instance.close()
            cache[run_id] = entry
        cache.move_to_end(run_id)
        while len(cache) > self._max_cached:
            victim = next((rid for rid, e in cache.items() if not e.lock.locked() and rid != run_id), None)
            if victim is None:
                break
            self._evict(victim)

    def _evict(self, run_id: str, entry: _CachedRun | None = None) -> None:
        cached = self._cache.get(run_id)
        if cached is not None and (entry is None or cached is entry):
            del self._cache[run_id]
        target = entry if entry is not None else cached
        if target is not None and target.instance is not None:
            inst, target.instance = target.instance, None
            self._close_instance(inst, run_id)

    def _close_instance(self, inst: Any, run_id: str) -> None:
        """Evict ``inst``: its coroutines' cleanup is workflow code too, so it runs under the deadline."""
        wd = self._watchdog
        try:
            if wd is None:
                inst.close()
            else:
                wd.run(lambda: f"the eviction of workflow run {run_id}", inst.close)
        except DeadlockError as e:
            log.error("evicting workflow run %s: %s", run_id, e)
        except Exception:
            log.exception("closing workflow instance of run %s failed", run_id)
