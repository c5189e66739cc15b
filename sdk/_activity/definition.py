"""Activity definitions: ``@activity.defn`` and the :class:`ActivityDefinition` it attaches to a function."""

from __future__ import annotations

import dataclasses
import inspect

from collections.abc import Callable
from typing import Any, TypeVar, overload

__all__ = ["ActivityDefinition", "defn"]

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
        no_thread_cancel_exception: a sync activity that is cancelled is not raised
            :class:`~spindle.exceptions.CancelledError` by ``activity.heartbeat()``;
            it must poll ``activity.is_cancelled()``.
    """

    name: str
    fn: Callable[..., Any]
    is_async: bool
    no_thread_cancel_exception: bool = False

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
def defn(*, name: str | None = None, no_thread_cancel_exception: bool = False) -> Callable[[F], F]: ...


def defn(fn: F | None = None, *, name: str | None = None,
         no_thread_cancel_exception: bool = False) -> F | Callable[[F], F]:
    """Mark a function (``async def`` or plain ``def``) as an activity.

    ``@activity.defn`` names the activity after the function; ``@activity.defn(name="x")``
    chooses the name. The function itself is returned unchanged (it stays callable
    directly, e.g. in unit tests). Plain ``def`` activities run in the worker's
    thread pool (or its ``activity_executor``), so they may block; when cancelled,
    their next ``activity.heartbeat()`` raises :class:`~spindle.exceptions.CancelledError`
    unless ``no_thread_cancel_exception=True`` (then only ``activity.is_cancelled()``
    tells).

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
            getattr(target, "__call__", None)  # noqa: B004 - reads the __call__ method to see if a callable object is async
        )
        d = ActivityDefinition(name=name or f.__name__, fn=f, is_async=is_async,
                               no_thread_cancel_exception=no_thread_cancel_exception)
        setattr(f, _DEFN_ATTR, d)
        return f

    if fn is not None:
        return decorate(fn)
    return decorate
