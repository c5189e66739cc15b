"""The activity half of a worker: poll, run attempts, heartbeat, report.

Async activities run as tasks on the worker's loop; sync ones run in a thread
pool (or, with a :class:`SharedStateManager`, in another executor such as a
process pool). A completion that makes a workflow task for this worker's sticky
queue returns it in the response, and it is handed straight to the workflow half.

Every attempt that does not complete is logged on ``spindle.worker``: a failure
at WARNING with its traceback (DEBUG for an ``ApplicationError`` whose category
is ``BENIGN``), a cancellation at DEBUG; each record carries the attempt's
details as ``extra`` (see :func:`spindle._activity.logger.logger_details`).
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import dataclasses
import datetime
import logging
import pickle
import time

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import grpc
import grpc.aio

from spindle.api import messages_pb2 as pb, service_pb2 as svc
from spindle._activity.context import (
    ActivityContext,
    ActivityDefinition,
    ActivityInfo,
    CompleteAsyncError,
    _current,
    _params_of,
    bind_arguments,
    execute,
    runs_in_threads,
)
from spindle.worker._heartbeat import Heartbeater, throttle_interval
from spindle._activity.logger import EXTRA_KEY, logger_details
from spindle._activity.shared_state import SharedStateManager
from spindle.converter._serialization_context import WorkflowSerializationContext
from spindle._interceptors.worker import (
    ActivityInboundInterceptor,
    ActivityOutboundInterceptor,
    ExecuteActivityInput,
    Interceptor,
)
from spindle.converter._payload_visitor import decode_message, encode_message
from spindle.worker._polling import Slots, cancel_and_wait, poll_loop
from spindle.client._retry_delay import call_with_retries
from spindle.exceptions import ApplicationError, ApplicationErrorCategory, CancelledError

__all__ = ["ActivityWorker", "Slots"]

log = logging.getLogger("spindle.worker")
_UTC = datetime.timezone.utc
#: Seconds an activity attempt's outcome keeps being re-sent while the server is unavailable or throttles it.
RESPOND_RETRY_BUDGET = 30.0


def _time(ms: int) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(ms / 1000, _UTC)


def _td(ms: int) -> datetime.timedelta | None:
    return datetime.timedelta(milliseconds=ms) if ms else None


@dataclasses.dataclass(frozen=True)
class _Registered:
    name: str
    fn: Callable[..., Any]
    is_async: bool


def _check_executor(registered: Any, executor: concurrent.futures.Executor | None,
                    shared_state: SharedStateManager | None) -> None:
    """Refuse, at construction, a setup in which every attempt of a sync activity would fail."""
    if runs_in_threads(executor):
        return
    sync = [r for r in registered if not r.is_async]
    if not sync:
        return
    kind = type(executor).__name__
    if shared_state is None:
        raise ValueError(
            f"sync activity {sync[0].name!r} would run in activity_executor={kind}, which is not a "
            f"ThreadPoolExecutor, so its heartbeats and cancellation must cross processes: pass "
            f"shared_state_manager=SharedStateManager.create_from_multiprocessing(multiprocessing.Manager()) "
            f"(from spindle.worker), use a ThreadPoolExecutor, or make the activity async")
    if isinstance(executor, concurrent.futures.ProcessPoolExecutor):
        for r in sync:
            try:
                pickle.dumps(r.fn)
            except Exception as e:
                raise TypeError(
                    f"sync activity {r.name!r} cannot run in a ProcessPoolExecutor: it must be picklable "
                    f"(a module-level function), but pickling it failed: {e}") from e


def _log_attempt(level: int, info: ActivityInfo, what: str, exc: BaseException | None = None) -> None:
    details = logger_details(info)
    log.log(level, "activity %r (id %s, workflow %s) attempt %d %s", info.activity_type, info.activity_id,
            info.workflow_id, info.attempt, what, exc_info=exc, extra={**details, EXTRA_KEY: details})


def _log_failure(info: ActivityInfo, exc: BaseException, what: str = "failed: ") -> None:
    """A failed attempt: WARNING with the traceback, DEBUG for a BENIGN ``ApplicationError``."""
    benign = isinstance(exc, ApplicationError) and exc.category is ApplicationErrorCategory.BENIGN
    _log_attempt(logging.DEBUG if benign else logging.WARNING, info, f"{what}{type(exc).__name__}: {exc}", exc)


class ActivityWorker:
    """Runs the activities registered on one worker.

    Args:
        client: the worker's client (stub, namespace, identity, converter, codecs).
        task_queue: the queue to poll.
        activities: ``@activity.defn`` callables (functions or bound methods).
        max_concurrent: the most attempts running at once.
        executor: where sync activities run (a thread pool is created if needed and ``None``).
        shared_state_manager: required when ``executor`` is not a ``ThreadPoolExecutor``
            and a sync activity is registered (heartbeats and cancellation cross processes).
        sticky_queue: this worker's sticky workflow queue (for completions that
            return a workflow task).
        on_workflow_task: called with a workflow task returned by a completion.
        pollers: concurrent long polls.

    Raises:
        TypeError: an entry is not an activity, or (with a ``ProcessPoolExecutor``) a
            sync activity cannot be pickled.
        ValueError: two activities share a name, or a sync activity would run in a
            non-thread executor without a ``shared_state_manager``.
    """

    def __init__(
        self,
        client: Any,
        task_queue: str,
        activities: Sequence[Callable[..., Any]],
        *,
        max_concurrent: int,
        executor: concurrent.futures.Executor | None,
        sticky_queue: str,
        on_workflow_task: Callable[[svc.PollWorkflowTaskQueueResponse], None] | None,
        pollers: int = 4,
        identity: str,
        max_tasks_per_second: float | None = None,
        shared_state_manager: SharedStateManager | None = None,
        interceptors: Sequence[Interceptor] = (),
        metrics: Any = None,
    ) -> None:
        self._client = client
        self._interceptors = tuple(interceptors)
        self._rate = max_tasks_per_second
        self._stub = client._stub
        self._ns = client.namespace
        self._conv = client.data_converter
        self._codecs = client.codecs
        #: The workflow each running attempt belongs to, by task token (what codecs bind payloads to).
        self._payload_contexts: dict[bytes, WorkflowSerializationContext] = {}
        self._identity = identity
        self.task_queue = task_queue
        self._sticky_queue = sticky_queue
        self._on_workflow_task = on_workflow_task
        self._pollers = max(1, pollers)
        self.registered: dict[str, _Registered] = {}
        for fn in activities:
            d = ActivityDefinition.must_from_callable(fn)
            if d.name in self.registered:
                raise ValueError(f"two activities are registered under the name {d.name!r}")
            self.registered[d.name] = _Registered(d.name, fn, d.is_async)
        _check_executor(self.registered.values(), executor, shared_state_manager)
        self._shared_state = shared_state_manager
        self.slots = Slots(max_concurrent)
        self._own_executor = False
        self._executor = executor
        if executor is None and any(not r.is_async for r in self.registered.values()):
            self._executor = concurrent.futures.ThreadPoolExecutor(
                max_workers=max_concurrent, thread_name_prefix=f"spindle-activity-{task_queue}")
            self._own_executor = True
        self._tasks: set[asyncio.Task[None]] = set()
        self._contexts: dict[bytes, ActivityContext] = {}
        self._stopping = False
        self._cancel_all = False
        #: Counters for tests and metrics: attempts started from polls and eagerly.
        self.stats: collections.Counter[str] = collections.Counter()
        self._poll_tasks: list[asyncio.Task[None]] = []
        #: Records ``spindle_worker_*`` metrics (a recorder from ``WorkerMetrics``), or ``None``.
        self._metrics = metrics
        self._on_poll: Callable[[float, str], None] | None = None
        if metrics is not None:
            self._on_poll = lambda seconds, result: metrics.poll("activity", seconds, result)
            metrics.watch_slots("activity", lambda: len(self._tasks))

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Start the pollers on the running loop."""
        loop = asyncio.get_running_loop()
        self._poll_tasks = [loop.create_task(self._poll_loop(), name=f"activity-poller-{i}")
                            for i in range(self._pollers)]

    async def stop_polling(self) -> None:
        """Stop taking new attempts (in-flight polls are abandoned)."""
        self._stopping = True
        await cancel_and_wait(self._poll_tasks)
        self._poll_tasks = []

    async def drain(self, grace: float) -> None:
        """Let running attempts finish for ``grace`` seconds, then cancel them and wait."""
        tasks = list(self._tasks)
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=grace)
            if pending:
                self._cancel_all = True
                for ctx in list(self._contexts.values()):
                    ctx.request_cancel("worker_shutdown")
                # Async attempts stop at once; sync ones only when they check is_cancelled().
                await asyncio.wait(pending, timeout=max(grace, 1.0))
        if self._own_executor and self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
        if self._metrics is not None:
            self._metrics.close()

    def try_reserve(self, activity_type: str, task_queue: str) -> bool:
        """Reserve a slot for an eager activity this worker can run; ``False`` if it cannot."""
        if self._stopping or activity_type not in self.registered or self._rate:
            return False  # a rate-limited queue hands out every task through the server's limiter
        if task_queue and task_queue != self.task_queue:
            return False
        return self.slots.try_acquire()

    def run_reserved(self, task: svc.PollActivityTaskQueueResponse | None) -> None:
        """Start an attempt on a slot reserved by :meth:`try_reserve` (``None`` just frees the slot)."""
        if task is None or not task.task_token:
            self.slots.release()
            return
        self.stats["eager"] += 1
        self._spawn(task)

    # ------------------------------------------------------------------ polling

    async def _poll_loop(self) -> None:
        req = svc.PollActivityTaskQueueRequest(namespace=self._ns, task_queue=self.task_queue, identity=self._identity,
                                               max_tasks_per_second=self._rate or 0.0)

        def take(task: svc.PollActivityTaskQueueResponse) -> None:
            self.stats["polled"] += 1
            self._spawn(task)

        await poll_loop(f"activity poll on {self.task_queue!r}", self.slots, lambda: self._stopping,
                        lambda: self._stub.PollActivityTaskQueue(req), take, self._on_poll)

    def _spawn(self, task: svc.PollActivityTaskQueueResponse) -> None:
        t = asyncio.get_running_loop().create_task(self._run_attempt(task))
        self._tasks.add(t)
        t.add_done_callback(self._tasks.discard)

    # ------------------------------------------------------------------ one attempt

    async def _run_attempt(self, task: svc.PollActivityTaskQueueResponse) -> None:
        token = task.task_token
        heartbeater: Heartbeater | None = None
        try:
            if self._codecs:
                context = WorkflowSerializationContext(task.workflow_namespace or self._ns,
                                                       task.workflow_execution.workflow_id)
                self._payload_contexts[token] = context
                try:
                    await decode_message(self._codecs, task, context=context)
                except Exception as e:  # noqa: BLE001 - the codecs refuse the task's payloads
                    err = ApplicationError(
                        f"cannot decode the payloads of activity {task.activity_type!r} (id {task.activity_id!r}) "
                        f"of workflow {task.workflow_execution.workflow_id!r}: {type(e).__name__}: {e}",
                        type="PayloadDecodeError")
                    log.warning("%s", err)
                    self._count_failure(task.activity_type)
                    await self._fail(token, err, None)
                    return
            info = self._info(task)
            reg = self.registered.get(task.activity_type)
            if reg is None:
                names = ", ".join(sorted(self.registered)) or "none"
                err = ApplicationError(
                    f"activity type {task.activity_type!r} is not registered on this worker "
                    f"(task queue {self.task_queue!r}); registered activities: {names}",
                    type="ActivityNotRegistered", non_retryable=True)
                _log_attempt(logging.WARNING, info, f"failed: {err}")
                self._count_failure(task.activity_type)
                await self._fail(token, err, None)
                return
            loop = asyncio.get_running_loop()
            conv = self._conv
            ctx_holder: list[ActivityContext] = []

            async def send(details: pb.Payloads) -> None:
                await self._heartbeat(token, details, ctx_holder[0])

            heartbeater = Heartbeater(loop, throttle_interval(info.heartbeat_timeout), send)
            hb = heartbeater

            def record(details: Sequence[Any]) -> None:
                hb.record(conv.to_payloads(details))

            outbound: list[ActivityOutboundInterceptor] = []

            def on_heartbeat(details: Sequence[Any]) -> None:
                if outbound:
                    outbound[0].heartbeat(*details)
                else:
                    record(details)

            ctx = ActivityContext(info, on_heartbeat)
            ctx_holder.append(ctx)
            self._contexts[token] = ctx
            if self._cancel_all:
                ctx.request_cancel("worker_shutdown")
            try:
                t_exec = time.perf_counter()
                try:
                    args = self._decode_args(reg, task.input)
                    if self._interceptors:
                        result = await self._intercepted(reg, args, ctx, dict(task.header.fields), record, outbound)
                    else:
                        result = await execute(reg.fn, args, ctx, is_async=reg.is_async, executor=self._executor,
                                               shared_state=self._shared_state)
                finally:
                    if self._metrics is not None:
                        self._metrics.executed("activity", time.perf_counter() - t_exec)
            except CompleteAsyncError:
                _log_attempt(logging.DEBUG, info, "will be completed asynchronously")
                return
            except (asyncio.CancelledError, CancelledError) as e:
                reason = ctx.cancel_reason
                if reason == "cancel_requested":
                    _log_attempt(logging.DEBUG, info, "cancelled as requested")
                    await self._canceled(token, heartbeater.latest_details)
                elif reason == "not_found":
                    _log_attempt(logging.DEBUG, info, "stopped: the server no longer knows it (its workflow closed, "
                                 "or it timed out)")
                    return
                elif reason == "worker_shutdown" or isinstance(e, asyncio.CancelledError):
                    _log_attempt(logging.WARNING, info, "failed: the worker shut down before it finished")
                    self._count_failure(reg.name)
                    await self._fail(token, ApplicationError(
                        "worker shutting down", type="WorkerShutdown"), heartbeater.latest_details)
                else:
                    _log_failure(info, e)
                    self._count_failure(reg.name)
                    await self._fail(token, e, heartbeater.latest_details)
                return
            except Exception as e:
                heartbeater.close()
                _log_failure(info, e)
                self._count_failure(reg.name)
                await self._fail(token, e, heartbeater.latest_details)
                return
            heartbeater.close()
            try:
                payloads = conv.to_payloads([result])
            except (TypeError, ValueError) as e:
                _log_failure(info, e, "failed: its result cannot be converted: ")
                self._count_failure(reg.name)
                await self._fail(token, e, None)
                return
            await self._complete(token, payloads)
        except Exception:
            log.exception("activity task %s failed inside the worker", task.activity_type)
        finally:
            if heartbeater is not None:
                heartbeater.close()
            self._contexts.pop(token, None)
            self._payload_contexts.pop(token, None)
            self.slots.release()

    def _count_failure(self, activity_type: str) -> None:
        if self._metrics is not None:
            self._metrics.activity_failed(activity_type)

    async def _intercepted(self, reg: _Registered, args: list[Any], ctx: ActivityContext,
                           headers: dict[str, pb.Payload], record: Callable[[Sequence[Any]], None],
                           outbound: list[ActivityOutboundInterceptor]) -> Any:
        """Run one attempt through the worker's activity interceptors (first one outermost)."""
        async def run(input: ExecuteActivityInput) -> Any:
            return await execute(input.fn, input.args, ctx, is_async=reg.is_async,
                                 executor=input.executor, shared_state=self._shared_state)

        inbound: ActivityInboundInterceptor = _ActivityInboundImpl(run, outbound)
        for interceptor in reversed(self._interceptors):
            inbound = interceptor.intercept_activity(inbound)
        token = _current.set(ctx)  # activity.info() works in the interceptors too
        try:
            inbound.init(_ActivityOutboundImpl(ctx, record))
            return await inbound.execute_activity(
                ExecuteActivityInput(fn=reg.fn, args=args, headers=headers, executor=self._executor))
        finally:
            _current.reset(token)

    def _info(self, task: svc.PollActivityTaskQueueResponse) -> ActivityInfo:
        started = _time(task.started_time_ms) if task.started_time_ms else datetime.datetime.now(_UTC)
        deadline: datetime.datetime | None = None
        if task.start_to_close_timeout_ms:
            deadline = started + datetime.timedelta(milliseconds=task.start_to_close_timeout_ms)
        if task.schedule_to_close_timeout_ms and task.scheduled_time_ms:
            s2c = _time(task.scheduled_time_ms) + datetime.timedelta(milliseconds=task.schedule_to_close_timeout_ms)
            deadline = s2c if deadline is None else min(deadline, s2c)
        return ActivityInfo(
            activity_id=task.activity_id,
            activity_type=task.activity_type,
            attempt=task.attempt or 1,
            workflow_id=task.workflow_execution.workflow_id,
            workflow_run_id=task.workflow_execution.run_id,
            workflow_type=task.workflow_type,
            namespace=task.workflow_namespace or self._ns,
            task_queue=task.task_queue or self.task_queue,
            task_token=task.task_token,
            heartbeat_details=self._conv._safe_decode(task.heartbeat_details),
            scheduled_time=_time(task.scheduled_time_ms),
            current_attempt_scheduled_time=_time(task.current_attempt_scheduled_time_ms or task.scheduled_time_ms),
            started_time=started,
            start_to_close_timeout=_td(task.start_to_close_timeout_ms),
            schedule_to_close_timeout=_td(task.schedule_to_close_timeout_ms),
            heartbeat_timeout=_td(task.heartbeat_timeout_ms),
            deadline=deadline,
        )

    def _decode_args(self, reg: _Registered, payloads: pb.Payloads) -> list[Any]:
        items = payloads.payloads
        hints = bind_arguments(reg.fn, reg.name, len(items))
        out: list[Any] = []
        conv = self._conv
        n = len(hints)
        for i, p in enumerate(items):
            try:
                out.append(conv.from_payload(p, hints[i] if i < n else None))
            except ValueError as e:
                names = _params_of(reg.fn).names
                param = names[i] if i < len(names) else f"*args[{i - len(names)}]"
                raise ApplicationError(
                    f"activity {reg.name!r}: argument {i + 1} for parameter {param!r} cannot be decoded: {e}",
                    type="ActivityArgumentError", non_retryable=True) from e
        return out

    # ------------------------------------------------------------------ server calls

    async def _heartbeat(self, token: bytes, details: pb.Payloads, ctx: ActivityContext) -> None:
        req = svc.RecordActivityTaskHeartbeatRequest(task_token=token, details=details, identity=self._identity,
                                                     namespace=self._ns)
        try:
            if self._codecs:
                await encode_message(self._codecs, req, context=self._payload_contexts.get(token))
            resp = await self._stub.RecordActivityTaskHeartbeat(req)
        except ValueError as e:  # a codec refused the details: the heartbeat is not sent
            log.warning("heartbeat not sent: the codec chain cannot encode its details: %s", e)
            return
        except grpc.aio.AioRpcError as e:
            if e.code() == grpc.StatusCode.NOT_FOUND:
                ctx.request_cancel("not_found")
            else:
                log.warning("heartbeat failed: %s %s", e.code(), e.details())
            return
        if resp.cancel_requested:
            ctx.request_cancel("cancel_requested")

    async def _respond(self, method: str, req: Any) -> None:
        if self._codecs:
            try:
                await encode_message(self._codecs, req, context=self._payload_contexts.get(req.task_token))
            except Exception as e:  # noqa: BLE001 - a codec refused the result or failure
                if method == "RespondActivityTaskFailed" and req.failure.application_failure_info.type == \
                        "PayloadEncodeError":
                    log.error("%s: cannot encode even the failure report: %s: %s", method, type(e).__name__, e)
                    return
                log.warning("%s: the codec chain cannot encode its payloads: %s: %s", method, type(e).__name__, e)
                await self._fail(req.task_token, ApplicationError(
                    f"the payloads of {method} cannot be encoded by the codec chain: {type(e).__name__}: {e}",
                    type="PayloadEncodeError"), None)
                return
        try:
            # Retried while the server is unavailable or throttles it: the outcome of an attempt that
            # took minutes must not be dropped because a cluster shard was moving for a few seconds.
            # A repeat is harmless (the server accepts one outcome per attempt; later ones get NOT_FOUND).
            resp = await call_with_retries(getattr(self._stub, method), req, budget=RESPOND_RETRY_BUDGET,
                                           retry_unavailable=True)
        except grpc.aio.AioRpcError as e:
            if e.code() == grpc.StatusCode.NOT_FOUND:
                log.debug("%s: attempt no longer current: %s", method, e.details())
            else:
                log.warning("%s failed: %s %s", method, e.code(), e.details())
            return
        wft = getattr(resp, "workflow_task", None)
        if wft is not None and wft.task_token and self._on_workflow_task is not None:
            self._on_workflow_task(wft)

    async def _complete(self, token: bytes, result: pb.Payloads) -> None:
        await self._respond("RespondActivityTaskCompleted", svc.RespondActivityTaskCompletedRequest(
            task_token=token, result=result, identity=self._identity, namespace=self._ns,
            sticky_task_queue=self._sticky_queue))

    async def _fail(self, token: bytes, error: BaseException, last_details: pb.Payloads | None) -> None:
        req = svc.RespondActivityTaskFailedRequest(
            task_token=token, failure=self._conv.to_failure(error), identity=self._identity, namespace=self._ns,
            sticky_task_queue=self._sticky_queue)
        if last_details is not None:
            req.last_heartbeat_details.CopyFrom(last_details)
        await self._respond("RespondActivityTaskFailed", req)

    async def _canceled(self, token: bytes, last_details: pb.Payloads | None) -> None:
        req = svc.RespondActivityTaskCanceledRequest(task_token=token, identity=self._identity, namespace=self._ns,
                                                     sticky_task_queue=self._sticky_queue)
        if last_details is not None:
            req.details.CopyFrom(last_details)
        await self._respond("RespondActivityTaskCanceled", req)


class _ActivityInboundImpl(ActivityInboundInterceptor):
    """The end of an attempt's inbound chain: runs the activity; keeps the outbound chain for heartbeats."""

    def __init__(self, run: Callable[[ExecuteActivityInput], Awaitable[Any]],
                 outbound: list[ActivityOutboundInterceptor]) -> None:  # noqa: D107 - the end of the chain
        self._run = run
        self._outbound = outbound

    def init(self, outbound: ActivityOutboundInterceptor) -> None:
        self._outbound[:] = [outbound]

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        return await self._run(input)


class _ActivityOutboundImpl(ActivityOutboundInterceptor):
    """The end of an attempt's outbound chain: the attempt's own info and heartbeat."""

    def __init__(self, ctx: ActivityContext, record: Callable[[Sequence[Any]], None]) -> None:  # noqa: D107
        self._ctx = ctx
        self._record = record

    def info(self) -> ActivityInfo:
        return self._ctx.info

    def heartbeat(self, *details: Any) -> None:
        self._record(details)
