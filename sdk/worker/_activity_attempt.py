"""One activity attempt: build its context, decode its arguments, run it, and report what it did.

An attempt runs the activity (through the worker's interceptors, if any) with an
:class:`ActivityContext` whose heartbeats are throttled (:mod:`spindle.worker._heartbeat`)
and sent by the :class:`~spindle.worker._activity_outcomes.OutcomeReporter`, which also
reports its outcome. Every attempt that does not complete is logged on ``spindle.worker``:
a failure at WARNING with its traceback (DEBUG for an ``ApplicationError`` whose category
is ``BENIGN``), a cancellation at DEBUG; each record carries the attempt's details as
``extra`` (see :func:`spindle._activity.logger.logger_details`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import datetime
import logging
import time

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from spindle._activity.context import ActivityContext, ActivityInfo, CompleteAsyncError, _current
from spindle._activity.execution import _params_of, bind_arguments, execute
from spindle._activity.logger import EXTRA_KEY, logger_details
from spindle._activity.shared_state import SharedStateManager
from spindle._interceptors.worker import (
    ActivityInboundInterceptor,
    ActivityOutboundInterceptor,
    ExecuteActivityInput,
    Interceptor,
)
from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.converter._payload_codec import PayloadCodec
from spindle.converter._payload_visitor import decode_message
from spindle.converter._serialization_context import WorkflowSerializationContext
from spindle.exceptions import ApplicationError, ApplicationErrorCategory, CancelledError
from spindle.worker._activity_outcomes import OutcomeReporter
from spindle.worker._activity_registry import RegisteredActivity
from spindle.worker._heartbeat import Heartbeater, throttle_interval
from spindle.worker._polling import Slots

__all__ = ["AttemptRunner"]

log = logging.getLogger("spindle.worker")
_UTC = datetime.timezone.utc


def _time(ms: int) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(ms / 1000, _UTC)


def _td(ms: int) -> datetime.timedelta | None:
    return datetime.timedelta(milliseconds=ms) if ms else None


def _log_attempt(level: int, info: ActivityInfo, what: str, exc: BaseException | None = None) -> None:
    details = logger_details(info)
    log.log(level, "activity %r (id %s, workflow %s) attempt %d %s", info.activity_type, info.activity_id,
            info.workflow_id, info.attempt, what, exc_info=exc, extra={**details, EXTRA_KEY: details})


def _log_failure(info: ActivityInfo, exc: BaseException, what: str = "failed: ") -> None:
    """A failed attempt: WARNING with the traceback, DEBUG for a BENIGN ``ApplicationError``."""
    benign = isinstance(exc, ApplicationError) and exc.category is ApplicationErrorCategory.BENIGN
    _log_attempt(logging.DEBUG if benign else logging.WARNING, info, f"{what}{type(exc).__name__}: {exc}", exc)


class AttemptRunner:
    """Runs a worker's activity attempts, each on a slot it frees when the attempt ends.

    Args:
        namespace: the worker's namespace.
        task_queue: the worker's activity task queue.
        converter: the data converter.
        codecs: the client's codec chain (decodes the task).
        registered: the worker's activities by name.
        executor: where sync activities run.
        shared_state: carries heartbeats and cancellation across processes, or ``None``.
        interceptors: the worker's interceptors (the first one outermost).
        reporter: reports heartbeats and outcomes.
        slots: the worker's attempt slots.
        metrics: records ``spindle_worker_*`` metrics, or ``None``.
    """

    def __init__(self, *, namespace: str, task_queue: str, converter: Any, codecs: Sequence[PayloadCodec],
                 registered: dict[str, RegisteredActivity], executor: concurrent.futures.Executor | None,
                 shared_state: SharedStateManager | None, interceptors: Sequence[Interceptor],
                 reporter: OutcomeReporter, slots: Slots, metrics: Any) -> None:
        self._ns = namespace
        self.task_queue = task_queue
        self._conv = converter
        self._codecs = codecs
        self.registered = registered
        self._executor = executor
        self._shared_state = shared_state
        self._interceptors = tuple(interceptors)
        self._reporter = reporter
        self._payload_contexts = reporter.payload_contexts
        self.slots = slots
        self._metrics = metrics
        #: The context of each running attempt, by task token.
        self._contexts: dict[bytes, ActivityContext] = {}
        self._cancel_all = False

    def cancel_all(self) -> None:
        """Cancel every running attempt, and every attempt that starts from now on (the worker is shutting down)."""
        self._cancel_all = True
        for ctx in list(self._contexts.values()):
            ctx.request_cancel("worker_shutdown")

    async def run_attempt(self, task: svc.PollActivityTaskQueueResponse) -> None:
        """Run the attempt ``task`` starts, report its outcome and free its slot (never raises)."""
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
                    await self._reporter.fail(token, err, None)
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
                await self._reporter.fail(token, err, None)
                return
            loop = asyncio.get_running_loop()
            conv = self._conv
            ctx_holder: list[ActivityContext] = []

            async def send(details: pb.Payloads) -> None:
                await self._reporter.heartbeat(token, details, ctx_holder[0])

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
                    await self._reporter.canceled(token, heartbeater.latest_details)
                elif reason == "not_found":
                    _log_attempt(logging.DEBUG, info, "stopped: the server no longer knows it (its workflow closed, "
                                 "or it timed out)")
                    return
                elif reason == "worker_shutdown" or isinstance(e, asyncio.CancelledError):
                    _log_attempt(logging.WARNING, info, "failed: the worker shut down before it finished")
                    self._count_failure(reg.name)
                    await self._reporter.fail(token, ApplicationError(
                        "worker shutting down", type="WorkerShutdown"), heartbeater.latest_details)
                else:
                    _log_failure(info, e)
                    self._count_failure(reg.name)
                    await self._reporter.fail(token, e, heartbeater.latest_details)
                return
            except Exception as e:
                heartbeater.close()
                _log_failure(info, e)
                self._count_failure(reg.name)
                await self._reporter.fail(token, e, heartbeater.latest_details)
                return
            heartbeater.close()
            try:
                payloads = conv.to_payloads([result])
            except (TypeError, ValueError) as e:
                _log_failure(info, e, "failed: its result cannot be converted: ")
                self._count_failure(reg.name)
                await self._reporter.fail(token, e, None)
                return
            await self._reporter.complete(token, payloads)
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

    async def _intercepted(self, reg: RegisteredActivity, args: list[Any], ctx: ActivityContext,
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

    def _decode_args(self, reg: RegisteredActivity, payloads: pb.Payloads) -> list[Any]:
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
