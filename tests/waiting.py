"""Waiting in tests: poll until something holds, and on a timeout say what was awaited.

One copy for the whole suite (``tests/`` is on ``sys.path``: ``from waiting import until``). Two
shapes, each for tests on an event loop and for plain (blocking) code:

``until(predicate)`` / ``until_sync``
    calls ``predicate`` until it returns something truthy, and returns that.
``eventually(check)`` / ``eventually_sync``
    calls ``check`` until it returns without raising one of ``retry_on`` (``AssertionError``
    unless told), and returns what it returned: ``check`` states its condition with ``assert``.

``predicate`` / ``check`` may be a plain function or, for the async variants, return an awaitable
(a coroutine function, or a ``lambda`` calling one); any other exception it raises goes straight up.
Every call states its ``timeout`` (seconds): a file whose waits share one binds it once with
``functools.partial``. On a timeout both raise ``AssertionError`` naming what was awaited
(``what``, else the function's name, else a lambda's source), the timeout and the last value, or
the last failure (which is also chained as the cause).
"""

from __future__ import annotations

import asyncio
import inspect
import time

from collections.abc import Callable
from typing import Any

__all__ = ["eventually", "eventually_sync", "until", "until_sync"]

_ASSERTION: tuple[type[BaseException], ...] = (AssertionError,)


async def until(predicate: Callable[[], Any], what: str | None = None, *, timeout: float,
                interval: float = 0.05) -> Any:
    """Poll ``predicate`` until it returns something truthy; return it."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(_timed_out(predicate, what, timeout, f"last value: {_short(repr(value))}"))
        await asyncio.sleep(interval)


def until_sync(predicate: Callable[[], Any], what: str | None = None, *, timeout: float,
               interval: float = 0.05) -> Any:
    """:func:`until` for blocking code: sleeps with ``time.sleep``."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(_timed_out(predicate, what, timeout, f"last value: {_short(repr(value))}"))
        time.sleep(interval)


async def eventually(check: Callable[[], Any], what: str | None = None, *, timeout: float,
                     interval: float = 0.05,
                     retry_on: tuple[type[BaseException], ...] = _ASSERTION) -> Any:
    """Call ``check`` until it stops raising ``retry_on``; return its value."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = check()
            if inspect.isawaitable(value):
                value = await value
            return value
        except retry_on as e:
            if time.monotonic() >= deadline:
                raise AssertionError(_timed_out(check, what, timeout, f"last failure: {_failure(e)}")) from e
        await asyncio.sleep(interval)


def eventually_sync(check: Callable[[], Any], what: str | None = None, *, timeout: float,
                    interval: float = 0.05,
                    retry_on: tuple[type[BaseException], ...] = _ASSERTION) -> Any:
    """:func:`eventually` for blocking code: sleeps with ``time.sleep``."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return check()
        except retry_on as e:
            if time.monotonic() >= deadline:
                raise AssertionError(_timed_out(check, what, timeout, f"last failure: {_failure(e)}")) from e
        time.sleep(interval)


def _timed_out(fn: Callable[[], Any], what: str | None, timeout: float, last: str) -> str:
    return f"timed out after {timeout:g} s waiting for {what or _describe(fn)}; {last}"


def _describe(fn: Callable[[], Any]) -> str:
    """The function's name, or for a lambda its source (whitespace collapsed)."""
    name = getattr(fn, "__name__", None)
    if name and name != "<lambda>":
        return name
    try:
        return _short(" ".join(inspect.getsource(fn).split()), 300)
    except (OSError, TypeError):
        return repr(fn)


def _failure(e: BaseException) -> str:
    text = str(e)
    return f"{type(e).__name__}: {_short(text, 2000)}" if text else type(e).__name__


def _short(text: str, limit: int = 500) -> str:
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} chars)"
