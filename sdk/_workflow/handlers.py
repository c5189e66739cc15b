"""A run's signal, query and update handlers: :class:`Handlers`.

Signals with no handler are buffered (``workflow.wait_for_signal`` takes them, a handler
registered later receives them). Async signal and update handlers run as tasks of their
own, counted until they end (``workflow.all_handlers_finished``); sync ones run as they
are delivered. A handler that raises a :class:`~spindle.exceptions.FailureError` (or a
timeout) fails the workflow; anything else fails the workflow task. Queries run at once,
with commands refused; update validators too, and a refused update is rejected.
"""

from __future__ import annotations

import asyncio
import builtins
import collections
import contextvars
import logging

from collections.abc import Callable, Mapping
from typing import Any

from spindle._interceptors.worker import (
    HandleQueryInput,
    HandleSignalInput,
    HandleUpdateInput,
    WorkflowInboundInterceptor,
)
from spindle._workflow.builtin_queries import BUILTIN_QUERIES
from spindle._workflow.commands import CommandBuffer
from spindle._workflow.defn import CallableInfo, UpdateDefinition, WorkflowDefinition
from spindle._workflow.fatal import Fatal
from spindle._workflow.info import CURRENT_UPDATE, UpdateInfo
from spindle._workflow.loop import WorkflowEventLoop
from spindle._workflow.statemachines._command import CommandEntry, describe_event
from spindle._workflow.statemachines.closing import fail_workflow_command
from spindle._workflow.statemachines.update import accept_command, complete_command, reject_command
from spindle.api import messages_pb2 as pb
from spindle.exceptions import ApplicationError, FailureError, NonDeterminismError, QueryFailedError

__all__ = ["Handlers"]

_log = logging.getLogger("spindle.workflow.instance")


class Handlers:
    """Delivers a run's signals, queries and updates to the workflow's handlers (see the module docs).

    Args:
        defn: the workflow's definition (its declared handlers).
        converter: decodes arguments, encodes results and failures.
        loop: the run's event loop (handler tasks run on it).
        commands: where update answers and a failing handler's FAIL_WORKFLOW_EXECUTION go,
            and the mode queries and validators run in.
        fatal: where a handler's unexpected error is recorded (it fails the task).
        workflow_id: named in the log when an undecodable signal is dropped.
        keep_signal_headers: keep the headers of buffered signals (interceptors will want them).

    Attributes:
        obj: the workflow object (``None`` until the run started, and for a function workflow).
        inbound: the run's inbound interceptor chain (``None`` without interceptors).
        signal_buffer: payloads of signals that found no handler, by name, oldest first.
        signal_buffer_headers: their headers, by ``id()`` of the Payloads, when kept; whoever
            takes a signal out of the buffer pops its entry.
        signal_waiters: futures of ``workflow.wait_for_signal`` calls waiting, by name.
    """

    def __init__(self, defn: WorkflowDefinition, converter: Any, loop: WorkflowEventLoop, commands: CommandBuffer,
                 fatal: Fatal, *, workflow_id: str, keep_signal_headers: bool) -> None:
        self._defn = defn
        self._converter = converter
        self._loop = loop
        self._commands = commands
        self._fatal = fatal
        self._workflow_id = workflow_id
        self._keep_signal_headers = keep_signal_headers
        self.obj: Any = None
        self.inbound: WorkflowInboundInterceptor | None = None
        self._dynamic_signal_handlers: dict[str, Callable[..., Any]] = {}
        self.dynamic_query_handlers: dict[str, Callable[..., Any]] = {}
        #: Update handlers set by ``workflow.set_update_handler``, as definitions whose callables take the object first.
        self.dynamic_updates: dict[str, UpdateDefinition] = {}
        self._running_handlers: set[asyncio.Task[Any]] = set()
        self.signal_buffer: dict[str, collections.deque[pb.Payloads]] = {}
        self.signal_buffer_headers: dict[int, Mapping[str, pb.Payload]] = {}
        self.signal_waiters: dict[str, collections.deque[asyncio.Future[pb.Payloads]]] = {}

    def bind(self, obj: Any, inbound: WorkflowInboundInterceptor | None) -> None:
        """Route to the started run's workflow object, through ``inbound`` when there are interceptors."""
        self.obj = obj
        self.inbound = inbound

    # ================================================================== signals

    def set_signal_handler(self, name: str, handler: Callable[..., Any] | None) -> None:
        """Register (or remove) a handler for ``name``; buffered signals are delivered to it now."""
        if handler is None:
            self._dynamic_signal_handlers.pop(name, None)
            return
        self._dynamic_signal_handlers[name] = handler
        buffered = self.signal_buffer.pop(name, None)
        while buffered:
            payloads = buffered.popleft()
            self.deliver_signal(name, payloads, self.signal_buffer_headers.pop(id(payloads), None))

    def signal_handler(self, name: str) -> tuple[Callable[..., Any] | None, CallableInfo | None]:
        """The handler a signal ``name`` goes to now (dynamic ones first), or (None, None)."""
        if name in self._dynamic_signal_handlers:
            fn = self._dynamic_signal_handlers[name]
            return fn, CallableInfo(fn, skip_self=False)
        if name in self._defn.signals and self.obj is not None:
            info = self._defn.signals[name].handler
            return info.fn.__get__(self.obj), info
        return None, None

    def deliver_signal(self, name: str, payloads: pb.Payloads,
                       headers: Mapping[str, pb.Payload] | None = None) -> None:
        """Hand a signal to its handler, else to a waiting ``wait_for_signal``, else to the buffer.

        Arguments that do not decode for the handler drop the signal (logged).
        """
        fn, info = self.signal_handler(name)
        if fn is None or info is None:
            waiters = self.signal_waiters.get(name)
            while waiters:
                w = waiters.popleft()
                if not w.done():
                    w.set_result(payloads)
                    return
            self.signal_buffer.setdefault(name, collections.deque()).append(payloads)
            if headers and self._keep_signal_headers:
                self.signal_buffer_headers[id(payloads)] = dict(headers)
            return
        try:
            args = info.decode_args(self._converter, payloads, f"signal {name!r}")
        except TypeError as e:
            _log.warning("dropping signal %r for workflow %s: %s", name, self._workflow_id, e)
            return
        what = f"signal handler {name!r}"
        if self.inbound is not None:
            self._signal_through_chain(HandleSignalInput(signal=name, args=args, headers=dict(headers or {})),
                                       info.is_async, what)
            return
        if info.is_async:
            task = self._handler_task(fn(*args), what)

            def done(t: asyncio.Task[Any]) -> None:
                exc = None if t.cancelled() else t.exception()
                if exc is not None:
                    self._handler_failed(exc, what)

            task.add_done_callback(done)
        else:
            try:
                fn(*args)
            except Exception as e:
                self._handler_failed(e, what)

    def _signal_through_chain(self, input: HandleSignalInput, is_async: bool, what: str) -> None:
        """Deliver a signal through the inbound interceptors: an async handler as a task (as without
        interceptors), a sync one at once (so the order of effects does not change)."""
        assert self.inbound is not None

        def done(f: asyncio.Future[Any]) -> None:
            exc = None if f.cancelled() else f.exception()
            if exc is not None:
                self._handler_failed(exc, what)

        coro = self.inbound.handle_signal(input)
        if is_async:
            self._handler_task(coro, what).add_done_callback(done)
        else:
            self._run_eagerly(coro, what, done)

    # ================================================================== running handlers

    def _run_eagerly(self, coro: Any, what: str, on_done: Callable[[asyncio.Future[Any]], None],
                     context: contextvars.Context | None = None) -> None:
        """Run ``coro`` now until it finishes or suspends; if it suspends, the rest runs as a handler task.

        ``on_done`` gets a done future with its outcome either way.
        """
        fut: asyncio.Future[Any] = self._loop.create_future()
        try:
            yielded = context.run(coro.send, None) if context is not None else coro.send(None)
        except StopIteration as stop:
            fut.set_result(stop.value)
            on_done(fut)
            return
        except Exception as e:
            fut.set_exception(e)
            on_done(fut)
            return
        self._handler_task(_resume(coro, yielded), what, context).add_done_callback(on_done)

    def _handler_task(self, coro: Any, name: str, context: contextvars.Context | None = None) -> asyncio.Task[Any]:
        """Run an async signal/update handler as a task, counted until it ends (all_handlers_finished)."""
        task = self._loop.create_task(coro, name=name, context=context)
        self._running_handlers.add(task)
        task.add_done_callback(self._running_handlers.discard)
        return task

    def all_handlers_finished(self) -> bool:
        """Whether no async signal or update handler is still running."""
        return not self._running_handlers

    def _handler_failed(self, exc: BaseException, what: str) -> None:
        """A signal/update handler raised: FailureError fails the workflow, anything else the task."""
        if isinstance(exc, asyncio.CancelledError):
            return
        if isinstance(exc, (FailureError, builtins.TimeoutError, *self._defn.failure_exception_types)) and not isinstance(
                exc, NonDeterminismError):
            self._commands.set_closing(fail_workflow_command(self._converter.to_failure(exc)))
        else:
            _log.debug("%s raised %r", what, exc)
            self._fatal.record(exc)

    # ================================================================== queries

    def query(self, query: pb.WorkflowQuery) -> pb.Payloads:
        """Answer a query from the current state, with commands refused.

        Raises:
            QueryFailedError: unknown query name, the run has not started, undecodable
                arguments, the handler raised, or its result cannot be encoded.
        """
        name = query.query_type
        qd = self._defn.queries.get(name)
        if qd is None:
            dynamic = self.dynamic_query_handlers.get(name)
            if dynamic is not None:  # only on a miss: declared handlers pay nothing
                return self._dynamic_query(name, dynamic, query)
            builtin = BUILTIN_QUERIES.get(name)
            if builtin is not None:  # only on a miss: declared handlers pay nothing
                return self._converter.to_payloads([builtin(self._loop, self._defn)])
            known = ", ".join(sorted(self._defn.queries)) or "none"
            raise QueryFailedError(f"workflow {self._defn.name!r} has no query handler {name!r} (known: {known})")
        if self.obj is None:
            raise QueryFailedError(f"query {name!r}: the workflow has not started yet")
        try:
            args = qd.handler.decode_args(self._converter, query.query_args, f"query {name!r}")
        except TypeError as e:
            raise QueryFailedError(str(e)) from e
        with self._loop.as_running_loop(), self._commands.in_mode("query"):
            try:
                if self.inbound is not None:
                    result = _run_to_end(self.inbound.handle_query(HandleQueryInput(
                        id="", query=name, args=args, headers=dict(query.header.fields))), f"query {name!r}")
                else:
                    result = qd.handler.fn(self.obj, *args)
            except Exception as e:
                raise QueryFailedError(f"query {name!r} failed: {type(e).__name__}: {e}") from e
        try:
            return self._converter.to_payloads([result])
        except TypeError as e:
            raise QueryFailedError(f"query {name!r} returned a value that cannot be converted: {e}") from e

    def _dynamic_query(self, name: str, fn: Callable[..., Any], query: pb.WorkflowQuery) -> pb.Payloads:
        """Answer ``query`` with a handler set by ``workflow.set_query_handler`` (interceptors are not called)."""
        try:
            args = CallableInfo(fn, skip_self=False).decode_args(self._converter, query.query_args, f"query {name!r}")
        except TypeError as e:
            raise QueryFailedError(str(e)) from e
        with self._loop.as_running_loop(), self._commands.in_mode("query"):
            try:
                result = fn(*args)
            except Exception as e:
                raise QueryFailedError(f"query {name!r} failed: {type(e).__name__}: {e}") from e
        try:
            return self._converter.to_payloads([result])
        except TypeError as e:
            raise QueryFailedError(f"query {name!r} returned a value that cannot be converted: {e}") from e

    # ================================================================== updates

    def update_definition(self, name: str) -> UpdateDefinition | None:
        """The update handler ``name`` goes to: the declared one, else one set at run time, else ``None``."""
        ud = self._defn.updates.get(name)
        if ud is None and self.dynamic_updates:
            ud = self.dynamic_updates.get(name)
        return ud

    def update_request(self, u: pb.UpdateRequest) -> None:
        """Validate a new update and accept (running its handler) or reject it."""
        ud = self.update_definition(u.name)
        if ud is None or self.obj is None:
            known = ", ".join(sorted(self._defn.updates)) or "none"
            self._reject(u.update_id, ApplicationError(
                f"workflow {self._defn.name!r} has no update handler {u.name!r} (known: {known})",
                type="UnknownUpdate", non_retryable=True))
            return
        try:
            args = ud.handler.decode_args(self._converter, u.input, f"update {u.name!r}")
        except TypeError as e:
            self._reject(u.update_id, ApplicationError(str(e), type="InvalidArgument", non_retryable=True))
            return
        headers = dict(u.header.fields)
        if ud.validator is not None or self.inbound is not None:
            with self._commands.in_mode("validator"):
                try:
                    if self.inbound is not None:
                        _update_context(u.update_id, ud.name).run(
                            self.inbound.handle_update_validator,
                            HandleUpdateInput(id=u.update_id, update=ud.name, args=args, headers=headers))
                    elif ud.validator is not None:
                        _update_context(u.update_id, ud.name).run(ud.validator.fn, self.obj, *args)
                except Exception as e:
                    self._reject(u.update_id, e)
                    return
        self._accept(u.update_id, ud, args, headers)

    def replay_update(self, e: pb.HistoryEvent) -> None:
        """Run the handler of an update the replayed task accepted (its validator is not run again).

        Raises:
            NonDeterminismError: the workflow code has no handler for it.
        """
        a = e.workflow_execution_update_accepted_event_attributes
        ud = self.update_definition(a.name)
        if ud is None or self.obj is None:
            raise self._fatal.nondeterminism(
                f"nondeterministic workflow: history event {e.event_id} is {describe_event(e)} but the workflow "
                f"code has no update handler {a.name!r}", e.event_id)
        self._accept(a.update_id, ud, ud.handler.decode_args(self._converter, a.input, f"update {a.name!r}"),
                     dict(a.header.fields))

    def _reject(self, update_id: str, exc: BaseException) -> None:
        self._commands.append(CommandEntry(reject_command(update_id, self._converter.to_failure(exc))))

    def _accept(self, update_id: str, ud: UpdateDefinition, args: list[Any],
                headers: Mapping[str, pb.Payload] | None = None) -> None:
        self._commands.append(CommandEntry(accept_command(update_id)))
        fn = ud.handler.fn.__get__(self.obj)
        context = _update_context(update_id, ud.name)
        if self.inbound is not None:
            coro = self.inbound.handle_update_handler(
                HandleUpdateInput(id=update_id, update=ud.name, args=args, headers=dict(headers or {})))
            if ud.handler.is_async:
                task = self._handler_task(coro, f"update {ud.name}", context)
                task.add_done_callback(lambda t: self._complete_update(update_id, ud.name, t))
            else:
                self._run_eagerly(coro, f"update {ud.name}",
                                  lambda f: self._complete_update(update_id, ud.name, f), context)
            return
        if ud.handler.is_async:
            task = self._handler_task(fn(*args), f"update {ud.name}", context)
            task.add_done_callback(lambda t: self._complete_update(update_id, ud.name, t))
        else:
            fut = self._loop.create_future()
            try:
                fut.set_result(context.run(fn, *args))
            except Exception as e:
                fut.set_exception(e)
            self._complete_update(update_id, ud.name, fut)

    def _complete_update(self, update_id: str, name: str, done: asyncio.Future[Any]) -> None:
        exc = asyncio.CancelledError() if done.cancelled() else done.exception()
        if exc is None:
            try:
                self._commands.append(CommandEntry(complete_command(
                    update_id, success=self._converter.to_payloads([done.result()]))))
            except TypeError as e:
                self._fatal.record(e)
        elif isinstance(exc, (FailureError, builtins.TimeoutError, asyncio.CancelledError,
                              *self._defn.failure_exception_types)) and not isinstance(exc, NonDeterminismError):
            self._commands.append(CommandEntry(complete_command(update_id, failure=self._converter.to_failure(exc))))
        else:
            self._handler_failed(exc, f"update handler {name!r}")


def _run_to_end(coro: Any, what: str) -> Any:
    """Run ``coro`` to its end now; RuntimeError (and the coroutine closed) if it suspends."""
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value
    coro.close()
    raise RuntimeError(f"{what}: an inbound interceptor awaited something that suspends; a query is answered at once")


async def _resume(coro: Any, yielded: Any) -> Any:
    """Carry on a coroutine that was started by hand and suspended on ``yielded`` (as a Task would)."""
    while True:
        try:
            if yielded is not None and hasattr(yielded, "add_done_callback"):
                yielded._asyncio_future_blocking = False
                if not yielded.done():
                    waiter = asyncio.get_running_loop().create_future()
                    yielded.add_done_callback(lambda _f, w=waiter: w.done() or w.set_result(None))
                    await waiter
            else:
                await asyncio.sleep(0)
        except asyncio.CancelledError as e:
            try:
                yielded = coro.throw(e)
            except StopIteration as stop:
                return stop.value
            continue
        try:
            yielded = coro.send(None)
        except StopIteration as stop:
            return stop.value


def _update_context(update_id: str, name: str) -> contextvars.Context:
    """A context in which ``workflow.current_update_info()`` names this update."""
    context = contextvars.copy_context()
    context.run(CURRENT_UPDATE.set, UpdateInfo(update_id, name))
    return context
