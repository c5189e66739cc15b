"""Activity definitions and the activity context (what ``spindle.activity`` exposes).

The context is a ``contextvars`` value, so it follows an activity into the tasks it
creates and into the thread that runs a synchronous activity. The worker and the
test helper ``ActivityEnvironment`` both run activities through :func:`execute`
with an :class:`ActivityContext` they build.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import dataclasses
import datetime
import functools
import inspect
import threading
import typing

from collections.abc import Callable, Sequence
from typing import Any, TypeVar, overload

from spindle.exceptions import ApplicationError, WorkflowContextError

__all__ = [
    "ActivityDefinition",
    "ActivityInfo",
    "ActivityContext",
    "CompleteAsyncError",
    "defn",
    "info",
    "heartbeat",
    "is_cancelled",
    "in_activity",
    "raise_complete_async",
    "wait_for_cancelled",
    "wait_for_cancelled_sync",
    "execute",
    "bind_arguments",
]

F = TypeVar("F", bound=Callable[..., Any])

_DEFN_ATTR = "__spindle_activity_definition__"


@dataclasses.dataclass(frozen=True)
class ActivityDefinition:
    """What ``@activity.defn`` attaches to a function (as ``__spindle_activity_definition__``).

    Attributes:
        name: the activity type name (the function name unless ``name=`` was given).
        fn: the decorated function (unbound for methods).
        is_async: ``fn`` is a coroutine function (it runs on the worker's event loop;
            otherwise it runs in the worker's thread pool).
    """

    name: str
    fn: Callable[..., Any]
    is_async: bool

    @staticmethod
    def from_callable(fn: Any) -> ActivityDefinition | None:
        """The definition attached to ``fn`` (a function or bound method), or ``None``."""
        return getattr(fn, _DEFN_ATTR, None)

    @staticmethod
    def must_from_callable(fn: Any) -> ActivityDefinition:
        """Like :meth:`from_callable`, but raise when ``fn`` is not an activity.

        Raises:
            TypeError: ``fn`` was not decorated with ``@activity.defn``.
        """
        d = getattr(fn, _DEFN_ATTR, None)
        if d is None:
            raise TypeError(f"{getattr(fn, '__qualname__', fn)!r} is not an activity: decorate it with @activity.defn")
        return d


@overload
def defn(fn: F) -> F: ...


@overload
def defn(*, name: str | None = None) -> Callable[[F], F]: ...


def defn(fn: F | None = None, *, name: str | None = None) -> F | Callable[[F], F]:
    """Mark a function (``async def`` or plain ``def``) as an activity.

    ``@activity.defn`` names the activity after the function; ``@activity.defn(name="x")``
    chooses the name. The function itself is returned unchanged (it stays callable
    directly, e.g. in unit tests). Plain ``def`` activities run in the worker's
    thread pool, so they may block.

    Raises:
        TypeError: the target is not callable, or is an async generator.
        ValueError: ``name`` is empty.
    """

    def decorate(f: F) -> F:
        if not callable(f):
            raise TypeError(f"@activity.defn needs a function, got {type(f).__name__}")
        if inspect.isasyncgenfunction(f) or inspect.isgeneratorfunction(f):
            raise TypeError(f"activity {f.__qualname__} must not be a generator")
        if name is not None and not name:
            raise ValueError("activity name must not be empty")
        target = inspect.unwrap(f)
        is_async = inspect.iscoroutinefunction(target) or inspect.iscoroutinefunction(
            getattr(target, "__call__", None)
        )
        d = ActivityDefinition(name=name or f.__name__, fn=f, is_async=is_async)
        setattr(f, _DEFN_ATTR, d)
        return f

    if fn is not None:
        return decorate(fn)
    return decorate


@dataclasses.dataclass(frozen=True)
class ActivityInfo:
    """Facts about the running activity attempt (``activity.info()``).

    ``heartbeat_details`` holds the details of the last heartbeat recorded by an
    earlier attempt (empty on the first attempt), decoded as plain JSON values, so
    an attempt can resume where the previous one stopped.
    """

    activity_id: str
    activity_type: str
    attempt: int
    workflow_id: str
    workflow_run_id: str
    workflow_type: str
    namespace: str
    task_queue: str
    task_token: bytes
    heartbeat_details: Sequence[Any]
    scheduled_time: datetime.datetime
    current_attempt_scheduled_time: datetime.datetime
    started_time: datetime.datetime
    start_to_close_timeout: datetime.timedelta | None
    schedule_to_close_timeout: datetime.timedelta | None
    heartbeat_timeout: datetime.timedelta | None
    deadline: datetime.datetime | None
    """When this attempt times out (start-to-close, capped by schedule-to-close), if bounded."""

    @property
    def start_to_close_deadline(self) -> datetime.datetime | None:
        """Alias of ``deadline``."""
        return self.deadline


class CompleteAsyncError(BaseException):
    """Raised by :func:`raise_complete_async`; tells the worker not to report a result.

    A ``BaseException`` so that ``except Exception`` in user code does not swallow it.
    """


class ActivityContext:
    """The per-attempt state behind ``activity.*`` calls.

    Args:
        info: the attempt's :class:`ActivityInfo`.
        heartbeat: called with the details tuple on every ``activity.heartbeat``;
            may be called from a worker thread (sync activities), so it must be
            thread-safe. The worker's implementation throttles and sends.
    """

    def __init__(self, info: ActivityInfo, heartbeat: Callable[[Sequence[Any]], None]) -> None:
        self.info = info
        self._heartbeat = heartbeat
        self._cancelled = threading.Event()
        self.cancel_reason: str = ""
        self._task: asyncio.Task[Any] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._async_waiters: list[asyncio.Future[None]] = []

    def heartbeat(self, details: Sequence[Any]) -> None:
        """Record a heartbeat (see :func:`heartbeat`)."""
        self._heartbeat(details)

    @property
    def cancelled(self) -> bool:
        """Whether cancellation was requested."""
        return self._cancelled.is_set()

    def request_cancel(self, reason: str) -> None:
        """Ask the activity to stop: sets the flag and, for an async activity, cancels its task.

        Thread-safe; idempotent. ``reason`` is e.g. ``"cancel_requested"``,
        ``"not_found"`` or ``"worker_shutdown"``.
        """
        if self._cancelled.is_set():
            return
        self.cancel_reason = reason
        self._cancelled.set()
        loop = self._loop
        if loop is None:
            return

        def _wake() -> None:
            if self._task is not None and not self._task.done():
                self._task.cancel(f"activity cancelled: {reason}")
            for w in self._async_waiters:
                if not w.done():
                    w.set_result(None)

        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            _wake()
        else:
            loop.call_soon_threadsafe(_wake)

    async def wait_cancelled(self) -> None:
        if self._cancelled.is_set():
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._async_waiters.append(fut)
        try:
            await fut
        finally:
            self._async_waiters.remove(fut)


_current: contextvars.ContextVar[ActivityContext] = contextvars.ContextVar("spindle_activity")


def _ctx() -> ActivityContext:
    try:
        return _current.get()
    except LookupError:
        raise WorkflowContextError("not in an activity: activity.* functions work only inside a running activity") from None


def in_activity() -> bool:
    """Whether the caller runs inside an activity."""
    return _current.get(None) is not None


def info() -> ActivityInfo:
    """The running attempt's :class:`ActivityInfo`.

    Raises:
        WorkflowContextError: called outside an activity.
    """
    return _ctx().info


def heartbeat(*details: Any) -> None:
    """Tell the server the activity is alive, with optional progress ``details``.

    Cheap to call often: sends are throttled to one per 0.8 x ``heartbeat_timeout``
    (at most every 30 s), and the latest details are always sent at the end of the
    throttle window. A retried attempt sees the last recorded details in
    ``activity.info().heartbeat_details``. If the server answers that cancellation
    was requested, the activity is cancelled (see :func:`is_cancelled`).

    Raises:
        WorkflowContextError: called outside an activity.
    """
    _ctx().heartbeat(details)


def is_cancelled() -> bool:
    """Whether cancellation of this activity was requested (poll it in sync activities).

    Async activities get ``asyncio.CancelledError`` raised at their next ``await``
    instead; sync activities must check this flag (or heartbeat and check it).

    Raises:
        WorkflowContextError: called outside an activity.
    """
    return _ctx().cancelled


async def wait_for_cancelled() -> None:
    """Wait until cancellation is requested (async activities)."""
    await _ctx().wait_cancelled()


def wait_for_cancelled_sync(timeout: datetime.timedelta | float | None = None) -> bool:
    """Block until cancellation is requested or ``timeout`` passes; return whether it was.

    For sync activities (in a thread); never call it on the event loop.
    """
    t = timeout.total_seconds() if isinstance(timeout, datetime.timedelta) else timeout
    return _ctx()._cancelled.wait(t)


def raise_complete_async() -> typing.NoReturn:
    """End the activity function without completing the activity.

    The attempt stays open until someone calls ``complete``/``fail`` on
    ``client.get_async_activity_handle(activity.info().task_token)`` (or it times out).

    Raises:
        CompleteAsyncError: always (the worker catches it).
    """
    _ctx()  # validate we are in an activity
    raise CompleteAsyncError()


# ---------------------------------------------------------------------- running


@dataclasses.dataclass(frozen=True)
class _Params:
    names: tuple[str, ...]
    hints: tuple[Any, ...]
    required: int
    varargs: bool


@functools.lru_cache(maxsize=4096)
def _params_of(fn: Callable[..., Any]) -> _Params:
    sig = inspect.signature(fn)
    try:
        hints = typing.get_type_hints(inspect.unwrap(fn))
    except Exception:  # unresolved forward references: decode as plain JSON
        hints = {}
    names: list[str] = []
    types: list[Any] = []
    required = 0
    varargs = False
    for p in sig.parameters.values():
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names.append(p.name)
            types.append(hints.get(p.name))
            if p.default is p.empty:
                required += 1
        elif p.kind is p.VAR_POSITIONAL:
            varargs = True
    return _Params(tuple(names), tuple(types), required, varargs)


def argument_type_hints(fn: Callable[..., Any]) -> tuple[Any, ...]:
    """The type hints of ``fn``'s positional parameters (``None`` where unannotated)."""
    return _params_of(fn).hints


def bind_arguments(fn: Callable[..., Any], name: str, payload_count: int) -> tuple[Any, ...]:
    """Check the argument count for ``fn`` and return the hints to decode them with.

    Raises:
        ApplicationError: (non-retryable, type ``"ActivityArgumentError"``) the count
            does not fit; the message names the missing parameter.
    """
    p = _params_of(fn)
    if payload_count < p.required:
        missing = p.names[payload_count]
        raise ApplicationError(
            f"activity {name!r} is missing argument {missing!r}: it takes ({', '.join(p.names)}) "
            f"but got {payload_count} argument(s)",
            type="ActivityArgumentError",
            non_retryable=True,
        )
    if payload_count > len(p.names) and not p.varargs:
        raise ApplicationError(
            f"activity {name!r} takes {len(p.names)} argument(s) ({', '.join(p.names)}) but got {payload_count}",
            type="ActivityArgumentError",
            non_retryable=True,
        )
    return p.hints


async def execute(
    fn: Callable[..., Any],
    args: Sequence[Any],
    ctx: ActivityContext,
    *,
    is_async: bool,
    executor: concurrent.futures.Executor | None = None,
) -> Any:
    """Run one activity attempt with ``ctx`` as its context and return its result.

    Async activities run as a task on the current loop (``ctx.request_cancel`` cancels
    it); sync ones run in ``executor`` (the loop's default executor if ``None``)
    with the context copied into the thread.

    Raises:
        CompleteAsyncError: the activity called ``raise_complete_async()``.
        asyncio.CancelledError: an async activity was cancelled.
        Exception: whatever the activity raised.
    """
    loop = asyncio.get_running_loop()
    ctx._loop = loop
    token = _current.set(ctx)
    try:
        if is_async:
            task = loop.create_task(fn(*args))
            ctx._task = task
            if ctx.cancelled:
                task.cancel(f"activity cancelled: {ctx.cancel_reason}")
            return await task
        run_ctx = contextvars.copy_context()
        return await loop.run_in_executor(executor, functools.partial(run_ctx.run, fn, *args))
    finally:
        _current.reset(token)
