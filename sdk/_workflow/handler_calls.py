"""Handlers set at run time by workflow code: ``set_query_handler``, ``get_query_handler``, ``get_signal_handler``.

Re-exported by ``spindle.workflow`` (names as in ``temporalio.workflow``). A handler set
here answers only names the workflow class does not declare; ``None`` removes it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from spindle._workflow.context import instance as _instance

__all__ = ["get_query_handler", "get_signal_handler", "set_query_handler"]


def set_query_handler(name: str, handler: Callable[..., Any] | None) -> None:
    """Answer query ``name`` with ``handler`` (a plain, non-async callable; ``None`` removes it).

    The handler is called with the query's arguments (decoded by its type hints) and runs
    with commands refused, like a declared query; interceptors are not called for it.

    Raises:
        WorkflowContextError: called outside a workflow.
        TypeError: ``handler`` is an ``async def`` (a query must answer without waiting).
    """
    import inspect

    if handler is not None and inspect.iscoroutinefunction(handler):
        raise TypeError(f"query handler {name!r} must not be async (queries answer without waiting)")
    handlers = _instance("set_query_handler").handlers.dynamic_query_handlers
    if handler is None:
        handlers.pop(name, None)
    else:
        handlers[name] = handler


def get_query_handler(name: str) -> Callable[..., Any] | None:
    """The handler ``set_query_handler`` set for ``name``, or ``None``.

    Raises:
        WorkflowContextError: called outside a workflow.
    """
    return _instance("get_query_handler").handlers.dynamic_query_handlers.get(name)


def get_signal_handler(name: str) -> Callable[..., Any] | None:
    """The handler signal ``name`` goes to now (one set at run time first, else the declared one), or ``None``.

    Raises:
        WorkflowContextError: called outside a workflow.
    """
    fn, _ = _instance("get_signal_handler").handlers.signal_handler(name)
    return fn
