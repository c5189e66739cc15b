"""Waiting in workflow code: ``workflow.sleep``, ``wait_condition``, and signals (``wait_for_signal``,
``set_signal_handler``, ``all_handlers_finished``).

Re-exported by ``spindle.workflow``. Each finds the running :class:`~spindle._workflow.instance.WorkflowInstance` through the
running event loop and raises :class:`~spindle.exceptions.WorkflowContextError` when
called outside a workflow.
"""

from __future__ import annotations

import asyncio
import builtins
import collections

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from spindle._workflow.context import instance as _instance
from spindle.api import messages_pb2 as pb
from spindle.exceptions import TimeoutError

__all__ = ["sleep", "wait_condition", "wait_for_signal", "set_signal_handler", "all_handlers_finished"]


def _seconds(value: float | timedelta | None, what: str) -> float | None:
    if value is None:
        return None
    secs = value.total_seconds() if isinstance(value, timedelta) else float(value)
    if secs < 0:
        raise ValueError(f"{what} must not be negative")
    return secs



async def sleep(duration: float | timedelta) -> None:
    """Sleep for ``duration`` (seconds or timedelta) of workflow time with a durable timer.

    Raises:
        WorkflowContextError: outside a workflow or in a query/validator.
        ValueError: negative duration.
    """
    _instance("sleep").runtime.require_commands_allowed("workflow.sleep")
    await asyncio.sleep(_seconds(duration, "sleep duration") or 0)


async def wait_condition(fn: Callable[[], bool], *, timeout: float | timedelta | None = None) -> None:
    """Wait until ``fn()`` is true (checked whenever the workflow's coroutines block).

    Raises:
        TimeoutError: (``spindle.exceptions.TimeoutError``, a builtin ``TimeoutError``) when
            ``timeout`` elapses first (a durable timer).
        WorkflowContextError: outside a workflow or in a query/validator.
    """
    runtime = _instance("wait_condition").runtime
    runtime.require_commands_allowed("workflow.wait_condition")
    if fn():
        return
    fut: asyncio.Future[None] = runtime.create_waiter()
    runtime.conditions.append((fn, fut))
    secs = _seconds(timeout, "timeout")
    if secs is None:
        await fut
        return
    try:
        await asyncio.wait_for(fut, secs)
    except builtins.TimeoutError:
        raise TimeoutError(f"wait_condition timed out after {secs:g}s") from None


async def wait_for_signal(name: str, timeout: float | timedelta | None = None, *,
                          type_hint: Any = None) -> Any:
    """Wait for the next signal ``name`` that has no handler and return its payload.

    Signals that arrived before the call are buffered and consumed in order. The value
    is the signal's single argument (``None`` for none, a tuple for several), decoded
    with ``type_hint`` when given.

    Returns:
        The payload, or ``None`` when ``timeout`` elapses first.

    Raises:
        WorkflowContextError: outside a workflow or in a query/validator.
    """
    inst = _instance("wait_for_signal")
    runtime, handlers = inst.runtime, inst.handlers
    runtime.require_commands_allowed("workflow.wait_for_signal")
    buffered = handlers.signal_buffer.get(name)
    if buffered:
        payloads = buffered.popleft()
        handlers.signal_buffer_headers.pop(id(payloads), None)
    else:
        fut: asyncio.Future[pb.Payloads] = runtime.create_waiter()
        waiters = handlers.signal_waiters.setdefault(name, collections.deque())
        waiters.append(fut)
        secs = _seconds(timeout, "timeout")
        try:
            payloads = await (asyncio.wait_for(fut, secs) if secs is not None else fut)
        except builtins.TimeoutError:
            return None
        finally:
            if fut in waiters:
                waiters.remove(fut)
    values = runtime.converter.from_payloads(payloads, [type_hint] if type_hint is not None else None)
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


def set_signal_handler(name: str, handler: Callable[..., Any] | None) -> None:
    """Handle signal ``name`` with ``handler`` (``None`` removes it); buffered signals go to it now.

    Raises:
        WorkflowContextError: called outside a workflow.
    """
    _instance("set_signal_handler").handlers.set_signal_handler(name, handler)


def all_handlers_finished() -> bool:
    """Whether no signal or update handler of this workflow is still running.

    Async handlers run as tasks of their own and may still be waiting (on an
    activity, a timer) when the run method is ready to return or continue as new,
    which would cut them short (an update's caller would get no result). Wait for
    them first: ``await workflow.wait_condition(workflow.all_handlers_finished)``.
    Synchronous handlers finish as they are delivered and never count.

    Raises:
        WorkflowContextError: called outside a workflow.
    """
    return _instance("all_handlers_finished").handlers.all_handlers_finished()
