"""The deterministic asyncio event loop that runs one workflow execution.

It is a plain FIFO of ready callbacks with no I/O selector: :meth:`run_until_blocked`
runs callbacks until none is ready (every coroutine waits on a future that only a
history event can resolve). ``time()`` is workflow time; ``call_later``/``call_at``
become durable timers (``START_TIMER`` commands) through the :class:`LoopHost`, so a
plain ``asyncio.sleep`` in workflow code is a durable timer. I/O, sockets,
subprocesses, executors and signals raise :class:`UnsupportedInWorkflowError`.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import contextvars
import logging

from collections.abc import Callable, Iterator
from typing import Any, Protocol, TypeVarTuple, Unpack

from spindle.exceptions import WorkflowContextError

__all__ = ["WorkflowEventLoop", "LoopHost", "UnsupportedInWorkflowError", "DurableTimerHandle", "running_workflow_loop"]

_log = logging.getLogger("spindle.workflow.loop")
_Ts = TypeVarTuple("_Ts")


class UnsupportedInWorkflowError(WorkflowContextError, NotImplementedError):
    """An event-loop feature (I/O, threads, subprocesses, signals) that workflow code may not use."""


class LoopHost(Protocol):
    """What the loop needs from the runtime that owns it."""

    def workflow_time(self) -> float:
        """Current workflow time in seconds since the epoch."""
        ...

    def start_durable_timer(self, handle: DurableTimerHandle, delay_ms: int) -> None:
        """Issue a START_TIMER; when it fires, call ``loop.fire_timer(handle)``."""
        ...

    def cancel_durable_timer(self, handle: DurableTimerHandle) -> None:
        """Cancel the timer started for ``handle`` (no-op if it fired already)."""
        ...


class DurableTimerHandle(asyncio.TimerHandle):
    """A ``TimerHandle`` backed by a workflow timer; ``timer_id`` is set by the host."""

    __slots__ = ("timer_id",)

    def __init__(self, when: float, callback: Callable[..., Any], args: tuple[Any, ...], loop: WorkflowEventLoop,
                 context: contextvars.Context | None) -> None:
        super().__init__(when, callback, args, loop, context)
        self.timer_id = ""


def _unsupported(name: str) -> Callable[..., Any]:
    def method(self: WorkflowEventLoop, *args: Any, **kwargs: Any) -> Any:
        raise UnsupportedInWorkflowError(
            f"loop.{name}() is not available in workflow code: a workflow must be deterministic. "
            "Do I/O, network calls, threads and subprocesses in an activity (workflow.execute_activity)."
        )

    method.__name__ = name
    return method


class WorkflowEventLoop(asyncio.AbstractEventLoop):
    """A deterministic, single-threaded event loop driven by workflow activations."""

    def __init__(self, host: LoopHost) -> None:
        self._host = host
        self._ready: collections.deque[asyncio.Handle] = collections.deque()
        self._closed = False
        self._running = False
        self._exception_handler: Callable[[asyncio.AbstractEventLoop, dict[str, Any]], Any] | None = None
        self._task_factory: Any = None
        self._debug = False
        self.instance: Any = None  # the WorkflowInstance, for the workflow API
        #: Tasks of this loop not yet done (asyncio.all_tasks would scan every task of the process).
        self.tasks: set[asyncio.Task[Any]] = set()

    # ---------------------------------------------------------------- running

    def run_until_blocked(self) -> None:
        """Run ready callbacks in FIFO order until none is left.

        The caller must have made this loop the running loop.
        """
        ready = self._ready
        while ready:
            handle = ready.popleft()
            if not handle._cancelled:
                handle._run()

    @contextlib.contextmanager
    def as_running_loop(self) -> Iterator[None]:
        """Make this loop the thread's running loop for a block (an activation, a query, an eviction).

        Workflow code, the workflow API and the determinism guards find the run through it.
        """
        previous = asyncio.events._get_running_loop()
        asyncio.events._set_running_loop(self)
        self._running = True
        try:
            yield
        finally:
            self._running = False
            asyncio.events._set_running_loop(previous)

    def has_ready(self) -> bool:
        """Whether a callback is waiting to run."""
        return bool(self._ready)

    def fire_timer(self, handle: DurableTimerHandle) -> None:
        """Queue a durable timer's callback (its TimerFired event was applied)."""
        if not handle._cancelled:
            self._ready.append(handle)

    def drop_ready(self) -> None:
        """Forget every queued callback (used on eviction)."""
        self._ready.clear()

    def time(self) -> float:
        """Workflow time (seconds since the epoch): the current task's start time."""
        return self._host.workflow_time()

    def is_running(self) -> bool:
        return self._running

    def is_closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        self._closed = True
        self._ready.clear()

    def run_forever(self) -> None:
        raise UnsupportedInWorkflowError("a workflow event loop is driven by its WorkflowInstance, not run_forever()")

    def run_until_complete(self, future: Any) -> Any:
        raise UnsupportedInWorkflowError(
            "a workflow event loop is driven by its WorkflowInstance, not run_until_complete()"
        )

    def stop(self) -> None:
        pass

    async def shutdown_asyncgens(self) -> None:
        pass

    async def shutdown_default_executor(self) -> None:
        pass

    # ---------------------------------------------------------------- scheduling

    def _check_closed(self) -> None:
        if self._closed:
            raise RuntimeError("the workflow event loop is closed (the workflow was evicted or finished)")

    def call_soon(self, callback: Callable[[Unpack[_Ts]], object], *args: Unpack[_Ts], context: contextvars.Context | None = None
                  ) -> asyncio.Handle:
        self._check_closed()
        handle = asyncio.Handle(callback, args, self, context)
        self._ready.append(handle)
        return handle

    def call_soon_threadsafe(self, callback: Callable[[Unpack[_Ts]], object], *args: Unpack[_Ts],
                             context: contextvars.Context | None = None) -> asyncio.Handle:
        raise UnsupportedInWorkflowError(
            "call_soon_threadsafe() is not available in workflow code: workflows are single-threaded; "
            "run threaded work in an activity"
        )

    def call_later(self, delay: float, callback: Callable[[Unpack[_Ts]], object], *args: Unpack[_Ts],
                   context: contextvars.Context | None = None) -> asyncio.TimerHandle:
        """Schedule ``callback`` after ``delay`` seconds of workflow time, as a durable timer."""
        self._check_closed()
        delay_ms = round(delay * 1000)
        if delay_ms <= 0 and delay > 0:
            delay_ms = 1
        handle = DurableTimerHandle(self.time() + max(delay, 0), callback, args, self, context)
        if delay_ms <= 0:
            self._ready.append(handle)
        else:
            self._host.start_durable_timer(handle, delay_ms)
        return handle

    def call_at(self, when: float, callback: Callable[[Unpack[_Ts]], object], *args: Unpack[_Ts],
                context: contextvars.Context | None = None) -> asyncio.TimerHandle:
        return self.call_later(when - self.time(), callback, *args, context=context)

    def _timer_handle_cancelled(self, handle: asyncio.TimerHandle) -> None:
        if isinstance(handle, DurableTimerHandle) and handle.timer_id:
            self._host.cancel_durable_timer(handle)

    def create_future(self) -> asyncio.Future[Any]:
        return asyncio.Future(loop=self)

    def create_task(self, coro: Any, *, name: str | None = None,
                    context: contextvars.Context | None = None) -> asyncio.Task[Any]:
        self._check_closed()
        if self._task_factory is not None:
            task = self._task_factory(self, coro)
        else:
            task = asyncio.Task(coro, loop=self, name=name, context=context)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return task

    def set_task_factory(self, factory: Any) -> None:
        self._task_factory = factory

    def get_task_factory(self) -> Any:
        return self._task_factory

    # ---------------------------------------------------------------- errors and debug

    def get_exception_handler(self) -> Any:
        return self._exception_handler

    def set_exception_handler(self, handler: Any) -> None:
        self._exception_handler = handler

    def default_exception_handler(self, context: dict[str, Any]) -> None:
        if self._closed or context.get("message") == "Task was destroyed but it is pending!":
            return  # coroutines blocked forever are normal once a workflow finished or was evicted
        exc = context.get("exception")
        _log.error("workflow event loop: %s", context.get("message", "unhandled error"), exc_info=exc)

    def call_exception_handler(self, context: dict[str, Any]) -> None:
        if self._exception_handler is None:
            self.default_exception_handler(context)
        else:
            self._exception_handler(self, context)

    def get_debug(self) -> bool:
        return self._debug

    def set_debug(self, enabled: bool) -> None:
        self._debug = enabled


for _name in (
    "run_in_executor", "set_default_executor", "getaddrinfo", "getnameinfo", "create_connection",
    "create_server", "sendfile", "start_tls", "create_unix_connection", "create_unix_server",
    "connect_accepted_socket", "create_datagram_endpoint", "connect_read_pipe", "connect_write_pipe",
    "subprocess_shell", "subprocess_exec", "add_reader", "remove_reader", "add_writer", "remove_writer",
    "sock_recv", "sock_recv_into", "sock_recvfrom", "sock_recvfrom_into", "sock_sendall", "sock_sendto",
    "sock_connect", "sock_accept", "sock_sendfile", "add_signal_handler", "remove_signal_handler",
):
    setattr(WorkflowEventLoop, _name, _unsupported(_name))


def running_workflow_loop() -> WorkflowEventLoop | None:
    """The workflow event loop running in this thread, or ``None`` outside workflow code.

    Its ``instance`` is the running workflow (see :mod:`spindle._workflow.context`, which
    types it); modules below the instance look it up here without importing that module.
    """
    loop = asyncio.events._get_running_loop()
    return loop if isinstance(loop, WorkflowEventLoop) else None
