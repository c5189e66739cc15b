"""The run method's task: :class:`WorkflowRun` starts it and turns its outcome into the closing command.

WorkflowExecutionStarted builds the run's info, the workflow object and (with
interceptors) the inbound chain, whose end, :class:`InboundEnd`, runs the workflow's
own code. When the run method returns, its result completes the workflow;
:class:`ContinueAsNewError` continues it as new; a cancellation after the cancel request
cancels it; a :class:`~spindle.exceptions.FailureError` (or a timeout) fails it; any other
error fails the workflow task instead (the code is retried, not the workflow ended).
"""

from __future__ import annotations

import asyncio
import builtins
import functools

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

from spindle._interceptors.worker import (
    ExecuteWorkflowInput,
    HandleQueryInput,
    HandleSignalInput,
    HandleUpdateInput,
    Interceptor,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
    WorkflowOutboundInterceptor,
)
from spindle._workflow.commands import CommandBuffer
from spindle._workflow.defn import WorkflowDefinition
from spindle._workflow.fatal import Fatal
from spindle._workflow.handlers import Handlers
from spindle._workflow.info import ParentInfo, WorkflowInfo
from spindle._workflow.loop import WorkflowEventLoop
from spindle._workflow.outbound import WorkflowOutboundImpl
from spindle._workflow.runtime import WorkflowRuntime
from spindle._workflow.statemachines.closing import (
    cancel_workflow_command,
    complete_workflow_command,
    continue_as_new_command,
    fail_workflow_command,
)
from spindle.api import messages_pb2 as pb
from spindle.exceptions import (
    ActivityError,
    ApplicationError,
    CancelledError,
    ChildWorkflowError,
    FailureError,
    NonDeterminismError,
)

__all__ = ["WorkflowRun", "InboundEnd", "ContinueAsNewError", "is_cancellation"]


class ContinueAsNewError(BaseException):
    """Raised by ``workflow.continue_as_new``; the runtime turns it into CONTINUE_AS_NEW.

    It derives from ``BaseException`` so that ``except Exception`` in workflow code does
    not swallow it.
    """

    def __init__(self, attrs: pb.ContinueAsNewWorkflowExecutionCommandAttributes) -> None:
        super().__init__("continue as new")
        self.attrs = attrs


def is_cancellation(exc: BaseException) -> bool:
    """Whether ``exc`` reports a cancellation (directly or as an activity/child cause)."""
    if isinstance(exc, (asyncio.CancelledError, CancelledError)):
        return True
    if isinstance(exc, (ActivityError, ChildWorkflowError)):
        return isinstance(exc.cause, (asyncio.CancelledError, CancelledError))
    return False


class WorkflowRun:
    """Starts a run's workflow code and records how it ended (see the module docs).

    Args:
        defn: the workflow's definition.
        converter: decodes the input, memo and search attributes; encodes the result or failure.
        loop: the run's event loop (the run method is a task on it).
        runtime: told the run's info; the outbound chain's end calls it.
        commands: where the closing command goes.
        fatal: where an error that fails the task (not the workflow) is recorded.
        handlers: given the workflow object and the inbound chain.
        interceptors: the worker's interceptors (an inbound chain is built when any is given).
        namespace, workflow_id, run_id, task_queue: the run's identity, for its info.
        use_outbound: called with the outbound chain the interceptors built.
    """

    def __init__(self, defn: WorkflowDefinition, converter: Any, loop: WorkflowEventLoop, runtime: WorkflowRuntime,
                 commands: CommandBuffer, fatal: Fatal, handlers: Handlers, *, interceptors: Sequence[Interceptor],
                 namespace: str, workflow_id: str, run_id: str, task_queue: str,
                 use_outbound: Callable[[WorkflowOutboundInterceptor], None]) -> None:
        self._defn = defn
        self._converter = converter
        self._loop = loop
        self._runtime = runtime
        self._commands = commands
        self._fatal = fatal
        self._handlers = handlers
        self._interceptors = interceptors
        self._namespace = namespace
        self._workflow_id = workflow_id
        self._run_id = run_id
        self._task_queue = task_queue
        self._use_outbound = use_outbound
        self._task: asyncio.Task[Any] | None = None
        self._cancel_requested = False

    def start(self, e: pb.HistoryEvent) -> None:
        """Apply WorkflowExecutionStarted: the run's info, the workflow object, the run method's task.

        Arguments that do not decode fail the workflow (``ApplicationError`` of type
        ``InvalidArgument``, non-retryable) when the task first runs.
        """
        a = e.workflow_execution_started_event_attributes
        conv = self._converter
        defn = self._defn
        parent = None
        if a.HasField("parent"):
            parent = ParentInfo(a.parent.namespace, a.parent.execution.workflow_id, a.parent.execution.run_id)
        search_attributes = {k: _decode_or_raw(conv, v) for k, v in a.search_attributes.indexed_fields.items()}

        def td(ms: int) -> timedelta | None:
            return timedelta(milliseconds=ms) if ms else None

        info = WorkflowInfo(
            namespace=self._namespace, workflow_id=self._workflow_id, run_id=self._run_id,
            workflow_type=a.workflow_type or defn.name, task_queue=a.task_queue or self._task_queue,
            attempt=a.attempt or 1, start_time=datetime.fromtimestamp(e.event_time_ms / 1000, tz=timezone.utc),
            parent=parent, continued_run_id=a.continued_execution_run_id or None,
            first_run_id=a.first_execution_run_id or self._run_id,
            search_attributes={}, memo={k: _decode_or_raw(conv, v) for k, v in a.memo.fields.items()},
            is_replaying=self._runtime.is_replaying,
            execution_timeout=td(a.execution_timeout_ms), run_timeout=td(a.run_timeout_ms),
            task_timeout=td(a.task_timeout_ms), _history_length=e.event_id,
        )
        self._runtime.set_run_info(info, search_attributes)
        run = defn.run
        try:
            args = run.decode_args(conv, a.input, f"workflow {defn.name!r}")
        except TypeError as err:
            coro = _raise_later(ApplicationError(str(err), type="InvalidArgument", non_retryable=True))
        else:
            obj = None
            run_fn: Callable[..., Any]
            if defn.cls is not None:
                obj = defn.cls(*args) if defn.init_takes_args else defn.cls()
                run_fn = functools.partial(run.fn, obj)
            else:
                run_fn = run.fn
            if self._interceptors:
                inbound = self._inbound_chain()
                self._handlers.bind(obj, inbound)
                coro = inbound.execute_workflow(ExecuteWorkflowInput(
                    type=info.workflow_type, run_fn=run_fn, args=args, headers=dict(a.header.fields)))
            else:
                self._handlers.bind(obj, None)
                coro = run_fn(*args)
        self._task = self._loop.create_task(coro, name=f"workflow {defn.name}")
        self._task.add_done_callback(self._done)

    def request_cancel(self) -> None:
        """Apply WorkflowExecutionCancelRequested: cancel the run method's task (a cancellation it lets
        out then cancels the workflow)."""
        self._cancel_requested = True
        if self._task is not None and not self._task.done():
            self._task.cancel()

    def _inbound_chain(self) -> WorkflowInboundInterceptor:
        """Build the run's inbound chain (first interceptor outermost) and let it wrap the outbound one."""
        inbound: WorkflowInboundInterceptor = InboundEnd(self._handlers, self._defn, self._use_outbound)
        classes = [i.workflow_interceptor_class(WorkflowInterceptorClassInput()) for i in self._interceptors]
        for cls in reversed(classes):
            if cls is not None:
                inbound = cls(inbound)
        inbound.init(WorkflowOutboundImpl(self._runtime))
        return inbound

    def _done(self, task: asyncio.Task[Any]) -> None:
        exc: BaseException | None
        exc = asyncio.CancelledError() if task.cancelled() else task.exception()
        if exc is None:
            try:
                payloads = self._converter.to_payloads([task.result()])
            except TypeError as e:
                self._fatal.record(e)
                return
            self._commands.set_closing(complete_workflow_command(payloads))
        elif isinstance(exc, ContinueAsNewError):
            self._commands.set_closing(continue_as_new_command(exc.attrs))
        elif isinstance(exc, NonDeterminismError):
            self._fatal.record(exc)
        elif self._cancel_requested and is_cancellation(exc):
            self._commands.set_closing(cancel_workflow_command())
        elif isinstance(exc, (FailureError, builtins.TimeoutError, asyncio.CancelledError)):
            self._commands.set_closing(fail_workflow_command(self._converter.to_failure(exc)))
        elif isinstance(exc, self._defn.failure_exception_types):  # @workflow.defn(failure_exception_types=...)
            self._commands.set_closing(fail_workflow_command(self._converter.to_failure(exc)))
        else:
            self._fatal.record(exc)


class InboundEnd(WorkflowInboundInterceptor):
    """The end of a run's inbound chain: runs the workflow's own code.

    Args:
        handlers: the run's handlers (the workflow object and its signal handlers).
        defn: the workflow's definition.
        use_outbound: called with the outbound chain the interceptors built (``init``),
            which workflow API calls go through from then on.
    """

    def __init__(self, handlers: Handlers, defn: WorkflowDefinition,  # noqa: D107 - no next: this is the end
                 use_outbound: Callable[[WorkflowOutboundInterceptor], None]) -> None:
        self._handlers = handlers
        self._defn = defn
        self._use_outbound = use_outbound

    def init(self, outbound: WorkflowOutboundInterceptor) -> None:
        self._use_outbound(outbound)

    async def execute_workflow(self, input: ExecuteWorkflowInput) -> Any:
        return await input.run_fn(*input.args)

    async def handle_signal(self, input: HandleSignalInput) -> None:
        fn, info = self._handlers.signal_handler(input.signal)
        if fn is None or info is None:
            return  # its handler was removed meanwhile (an interceptor awaited)
        if info.is_async:
            await fn(*input.args)
        else:
            fn(*input.args)

    async def handle_query(self, input: HandleQueryInput) -> Any:
        qd = self._defn.queries[input.query]
        return qd.handler.fn(self._handlers.obj, *input.args)

    def handle_update_validator(self, input: HandleUpdateInput) -> None:
        ud = self._handlers.update_definition(input.update)
        assert ud is not None  # Handlers.update_request checked it
        if ud.validator is not None:
            ud.validator.fn(self._handlers.obj, *input.args)

    async def handle_update_handler(self, input: HandleUpdateInput) -> Any:
        ud = self._handlers.update_definition(input.update)
        assert ud is not None  # Handlers.update_request checked it
        result = ud.handler.fn(self._handlers.obj, *input.args)
        return await result if ud.handler.is_async else result


def _decode_or_raw(conv: Any, p: pb.Payload) -> Any:
    try:
        return conv.from_payload(p)
    except ValueError:
        return p


async def _raise_later(exc: BaseException) -> Any:
    raise exc
