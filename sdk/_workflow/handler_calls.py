"""Handlers set at run time by workflow code: ``set_query_handler``, ``set_update_handler`` and their getters.

Re-exported by ``spindle.workflow`` (names as in ``temporalio.workflow``). A handler set
here answers only names the workflow class does not declare; ``None`` removes it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from spindle._workflow.context import instance as _instance
from spindle._workflow.defn import CallableInfo, UpdateDefinition

__all__ = ["get_query_handler", "get_signal_handler", "get_update_handler", "set_query_handler", "set_update_handler"]


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


def _taking_object_first(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` as a method-like callable (its first argument, the workflow object, dropped), keeping its hints."""
    import functools
    import inspect

    sig = inspect.signature(fn)
    params = [inspect.Parameter("_workflow_object", inspect.Parameter.POSITIONAL_ONLY), *sig.parameters.values()]
    if inspect.iscoroutinefunction(fn):
        async def method(_obj: Any, *args: Any) -> Any:
            return await fn(*args)
    else:
        def method(_obj: Any, *args: Any) -> Any:  # type: ignore[misc]
            return fn(*args)
    functools.update_wrapper(method, fn)
    method.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
    return method


def set_update_handler(name: str, handler: Callable[..., Any] | None, *,
                       validator: Callable[..., None] | None = None) -> None:
    """Handle update ``name`` with ``handler`` (``None`` removes it), validated first by ``validator`` if given.

    Only names the workflow class does not declare reach it. Updates are delivered as
    for declared handlers: a validator that raises rejects the update; an async handler
    runs as a task of its own (counted by ``all_handlers_finished``).

    Raises:
        WorkflowContextError: called outside a workflow.
        TypeError: ``validator`` is an ``async def``.
    """
    import inspect

    updates = _instance("set_update_handler").handlers.dynamic_updates
    if handler is None:
        updates.pop(name, None)
        return
    if validator is not None and inspect.iscoroutinefunction(validator):
        raise TypeError(f"update validator for {name!r} must not be async")
    updates[name] = UpdateDefinition(
        name=name, handler=CallableInfo(_taking_object_first(handler), skip_self=True),
        validator=CallableInfo(_taking_object_first(validator), skip_self=True) if validator is not None else None)


def get_update_handler(name: str) -> Callable[..., Any] | None:
    """The handler ``set_update_handler`` set for ``name``, or ``None``.

    Raises:
        WorkflowContextError: called outside a workflow.
    """
    ud = _instance("get_update_handler").handlers.dynamic_updates.get(name)
    return getattr(ud.handler.fn, "__wrapped__", None) if ud is not None else None
