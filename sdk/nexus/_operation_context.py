"""The context a Nexus operation handler runs in: which task queue, which client, which logger.

The Nexus worker sets it (``operation_context(...)``) around each start or cancel handler call;
``spindle.nexus.info()``, ``client()``, ``logger`` and ``in_operation()`` read it.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import logging

from collections.abc import Iterator, MutableMapping
from typing import Any


@dataclasses.dataclass(frozen=True)
class Info:
    """What a running Nexus operation handler may know about where it runs (Temporal's ``nexus.Info``)."""

    #: The task queue of the worker running the handler (the endpoint's target task queue).
    task_queue: str
    #: The namespace of that worker.
    namespace: str = ""


@dataclasses.dataclass(frozen=True)
class _Context:
    info: Info
    client: Any


_current: contextvars.ContextVar[_Context | None] = contextvars.ContextVar("spindle_nexus_operation", default=None)


@contextlib.contextmanager
def operation_context(info: Info, client: Any) -> Iterator[None]:
    """Run the body as a Nexus operation handler of ``info.task_queue`` using ``client``."""
    token = _current.set(_Context(info=info, client=client))
    try:
        yield
    finally:
        _current.reset(token)


def in_operation() -> bool:
    """True inside a Nexus operation handler run by a Spindle worker, False anywhere else."""
    return _current.get() is not None


def _context() -> _Context:
    ctx = _current.get()
    if ctx is None:
        raise RuntimeError("not in a Nexus operation handler (spindle.nexus.in_operation() is False)")
    return ctx


def info() -> Info:
    """The :class:`Info` of the running Nexus operation handler.

    Raises ``RuntimeError`` outside a handler.
    """
    return _context().info


def client() -> Any:
    """The :class:`spindle.client.Client` of the worker running this Nexus operation handler.

    Raises ``RuntimeError`` outside a handler.
    """
    return _context().client


class _OperationLoggerAdapter(logging.LoggerAdapter[logging.Logger]):
    """Adds the handler's task queue to each record logged inside a handler (as ``nexus`` extra)."""

    def process(self, msg: Any, kwargs: MutableMapping[str, Any]) -> tuple[Any, MutableMapping[str, Any]]:
        ctx = _current.get()
        if ctx is not None:
            extra = dict(kwargs.get("extra") or {})
            extra.setdefault("nexus", {"task_queue": ctx.info.task_queue, "namespace": ctx.info.namespace})
            kwargs["extra"] = extra
            msg = f"{msg} ({{'task_queue': {ctx.info.task_queue!r}}})"
        return msg, kwargs


logger = _OperationLoggerAdapter(logging.getLogger("spindle.nexus"), {})
