"""Running one activity attempt: checking its arguments and calling it with its context set.

Async activities run as a task on the worker's loop; sync ones in a thread pool with the
context copied into the thread, or in another executor (a process pool) with a context
rebuilt in the child process and heartbeats and cancellation carried by the worker's
:class:`~spindle._activity.shared_state.SharedStateManager`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import dataclasses
import functools
import inspect
import typing

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from spindle._activity.context import ActivityContext, ActivityInfo, _current
from spindle._activity.definition import ActivityDefinition
from spindle.exceptions import ApplicationError

if TYPE_CHECKING:
    from spindle._activity.shared_state import CancelEvent, SharedHeartbeatSender, SharedStateManager

__all__ = ["execute", "bind_arguments", "argument_type_hints", "runs_in_threads", "prepare_sync"]


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


def runs_in_threads(executor: concurrent.futures.Executor | None) -> bool:
    """Whether sync activities given to ``executor`` run in this process's threads (``None``: the loop's pool)."""
    return executor is None or isinstance(executor, concurrent.futures.ThreadPoolExecutor)


def prepare_sync(ctx: ActivityContext, fn: Callable[..., Any]) -> None:
    """Make ``ctx`` raise cancellation from ``heartbeat()`` unless ``fn`` opted out."""
    d = ActivityDefinition.from_callable(fn)
    ctx.raise_on_cancel = not (d is not None and d.no_thread_cancel_exception)


async def execute(
    fn: Callable[..., Any],
    args: Sequence[Any],
    ctx: ActivityContext,
    *,
    is_async: bool,
    executor: concurrent.futures.Executor | None = None,
    shared_state: SharedStateManager | None = None,
) -> Any:
    """Run one activity attempt with ``ctx`` as its context and return its result.

    Async activities run as a task on the current loop (``ctx.request_cancel`` cancels
    it). Sync ones run in ``executor`` (the loop's default executor if ``None``): in
    a ``ThreadPoolExecutor`` with the context copied into the thread; in any other
    executor (a ``ProcessPoolExecutor``) through :func:`_run_in_child`, with
    heartbeats and cancellation carried by ``shared_state``, so ``fn`` and its
    arguments must be picklable.

    Raises:
        CompleteAsyncError: the activity called ``raise_complete_async()``.
        asyncio.CancelledError: an async activity was cancelled.
        CancelledError: a sync activity was cancelled and its heartbeat raised it.
        ValueError: a sync activity for a non-thread executor without ``shared_state``.
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
        prepare_sync(ctx, fn)
        if runs_in_threads(executor):
            run_ctx = contextvars.copy_context()
            return await loop.run_in_executor(executor, functools.partial(run_ctx.run, fn, *args))
        if shared_state is None:
            raise ValueError(f"sync activity {ctx.info.activity_type!r} cannot run in a "
                             f"{type(executor).__name__} without a SharedStateManager")
        return await _execute_in_child(fn, args, ctx, executor, shared_state)
    finally:
        _current.reset(token)


async def _execute_in_child(fn: Callable[..., Any], args: Sequence[Any], ctx: ActivityContext,
                            executor: concurrent.futures.Executor | None, shared_state: SharedStateManager) -> Any:
    loop = asyncio.get_running_loop()
    token = ctx.info.task_token
    event = await loop.run_in_executor(None, shared_state.new_event)
    ctx.link_cancel_event(event)
    sender = await shared_state.register_heartbeater(token, ctx._heartbeat)
    try:
        return await loop.run_in_executor(executor, functools.partial(
            _run_in_child, ctx.info, sender, event, ctx.raise_on_cancel, fn, *args))
    finally:
        await shared_state.unregister_heartbeater(token)


def _run_in_child(info: ActivityInfo, sender: SharedHeartbeatSender, cancel_event: CancelEvent,
                  raise_on_cancel: bool, fn: Callable[..., Any], *args: Any) -> Any:
    """Run a sync activity in an executor's child process, with a context rebuilt there.

    Module-level so that it pickles; its arguments cross the process boundary.
    """

    def send(details: Sequence[Any]) -> None:
        sender.send_heartbeat(info.task_token, *details)

    ctx = ActivityContext(info, send, cancel_event=cancel_event)
    ctx.raise_on_cancel = raise_on_cancel
    token = _current.set(ctx)
    try:
        return fn(*args)
    finally:
        _current.reset(token)
