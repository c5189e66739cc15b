"""``workflow.wait`` and ``workflow.as_completed``: asyncio's, made deterministic.

``asyncio.wait`` puts the futures in a ``set`` and returns ``(done, pending)`` as sets.
A set of futures iterates in an order that depends on the objects' hashes (their
memory addresses), so the order differs between a run and its replay: code that
loops over ``done`` (schedules an activity per item, appends results) can issue its
commands in another order on replay and fail with ``NonDeterminismError``. These
versions keep the caller's order everywhere (lists, not sets) and otherwise behave
like asyncio's; their timeouts are durable timers, like every timer in a workflow.
"""

from __future__ import annotations

import asyncio
import collections

from collections.abc import Awaitable, Iterable, Iterator
from datetime import timedelta
from typing import Any, Generic, TypeVar

from spindle.exceptions import TimeoutError

__all__ = ["wait", "as_completed"]

T = TypeVar("T")
_FT = TypeVar("_FT", bound="asyncio.Future[Any]")
_RETURN_WHEN = (asyncio.FIRST_COMPLETED, asyncio.FIRST_EXCEPTION, asyncio.ALL_COMPLETED)


def _timeout_seconds(timeout: float | timedelta | None) -> float | None:
    if timeout is None:
        return None
    secs = timeout.total_seconds() if isinstance(timeout, timedelta) else float(timeout)
    if secs < 0:
        raise ValueError(f"timeout must not be negative, got {secs:g}s")
    return secs


def _reject_single(fs: Any, api: str) -> None:
    if asyncio.isfuture(fs) or asyncio.iscoroutine(fs):
        raise TypeError(f"workflow.{api}() expects an iterable of futures or tasks, not a {type(fs).__name__}")


async def wait(fs: Iterable[_FT], *, timeout: float | timedelta | None = None,
               return_when: str = asyncio.ALL_COMPLETED) -> tuple[list[_FT], list[_FT]]:
    """Wait for the futures or tasks in ``fs``; a deterministic ``asyncio.wait``.

    Returns ``(done, pending)`` as lists, each in the order of ``fs``, when
    ``return_when`` is met (``asyncio.FIRST_COMPLETED``, ``asyncio.FIRST_EXCEPTION``
    or ``asyncio.ALL_COMPLETED``, the default) or ``timeout`` (seconds or a
    timedelta, a durable timer) elapses. Like ``asyncio.wait`` it raises nothing on
    timeout and cancels nothing: the unfinished ones are in ``pending``.

    Raises:
        TypeError: ``fs`` is a single future or coroutine, or holds a coroutine (wrap
            it in ``asyncio.create_task``) or something that is not a future.
        ValueError: ``fs`` is empty, ``return_when`` is not one of the three constants,
            or ``timeout`` is negative.
    """
    _reject_single(fs, "wait")
    if return_when not in _RETURN_WHEN:
        raise ValueError(f"workflow.wait(): return_when must be asyncio.FIRST_COMPLETED, FIRST_EXCEPTION or "
                         f"ALL_COMPLETED, got {return_when!r}")
    items = list(fs)
    if not items:
        raise ValueError("workflow.wait() needs at least one future or task")
    for i, f in enumerate(items):
        if asyncio.iscoroutine(f):
            raise TypeError(f"workflow.wait(): item {i} is a coroutine; pass tasks (asyncio.create_task(...))")
        if not asyncio.isfuture(f):
            raise TypeError(f"workflow.wait(): item {i} is a {type(f).__name__}, not a future or task")
    secs = _timeout_seconds(timeout)
    loop = asyncio.get_running_loop()
    waiter: asyncio.Future[None] = loop.create_future()
    remaining = len(items)

    def on_done(f: asyncio.Future[Any]) -> None:
        nonlocal remaining
        remaining -= 1
        failed = return_when == asyncio.FIRST_EXCEPTION and not f.cancelled() and f.exception() is not None
        if (remaining == 0 or return_when == asyncio.FIRST_COMPLETED or failed) and not waiter.done():
            waiter.set_result(None)

    def on_timeout() -> None:
        if not waiter.done():
            waiter.set_result(None)

    timer = loop.call_later(secs, on_timeout) if secs is not None else None
    for f in items:
        f.add_done_callback(on_done)
    try:
        await waiter
    finally:
        if timer is not None:
            timer.cancel()
        for f in items:
            f.remove_done_callback(on_done)
    done = [f for f in items if f.done()]
    pending = [f for f in items if not f.done()]
    return done, pending


def as_completed(fs: Iterable[Awaitable[T]], *, timeout: float | timedelta | None = None
                 ) -> Iterator[Awaitable[T]]:
    """Iterate over awaitables that yield the results of ``fs`` in the order they finish.

    A deterministic ``asyncio.as_completed``: coroutines in ``fs`` are wrapped in tasks
    in the order given; ties (several finishing in the same workflow task) come out in
    the order their results were applied, the same on replay. Each awaitable returns
    the next result or raises its exception. After ``timeout`` (seconds or a timedelta,
    a durable timer counted from this call) every awaitable still unanswered raises
    ``TimeoutError`` (``spindle.exceptions.TimeoutError``, a builtin ``TimeoutError``).

    Raises:
        TypeError: ``fs`` is a single future or coroutine.
        ValueError: ``timeout`` is negative.
    """
    _reject_single(fs, "as_completed")
    secs = _timeout_seconds(timeout)
    loop = asyncio.get_running_loop()
    completions = _Completions(loop, [asyncio.ensure_future(f, loop=loop) for f in list(fs)], secs)
    return (completions.next_result() for _ in range(completions.count))


class _Completions(Generic[T]):
    """The futures of one ``as_completed`` call, queued in the order they finish."""

    def __init__(self, loop: asyncio.AbstractEventLoop, todo: list[asyncio.Future[T]], secs: float | None) -> None:
        self._loop = loop
        self._secs = secs
        self.count = len(todo)
        self._unfinished = list(todo)
        self._finished: collections.deque[asyncio.Future[T] | None] = collections.deque()  # None: timed out
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()
        for f in todo:
            f.add_done_callback(self._on_done)
        self._timer = loop.call_later(secs, self._on_timeout) if todo and secs is not None else None

    def _wake(self) -> None:
        while self._waiters and self._finished:
            w = self._waiters.popleft()
            if not w.done():
                w.set_result(None)

    def _on_done(self, f: asyncio.Future[Any]) -> None:
        if f not in self._unfinished:
            return  # timed out already
        self._unfinished.remove(f)
        self._finished.append(f)
        if not self._unfinished and self._timer is not None:
            self._timer.cancel()
        self._wake()

    def _on_timeout(self) -> None:
        for f in self._unfinished:
            f.remove_done_callback(self._on_done)
            self._finished.append(None)
        self._unfinished.clear()
        self._wake()

    async def next_result(self) -> T:
        while not self._finished:
            w: asyncio.Future[None] = self._loop.create_future()
            self._waiters.append(w)
            await w
        f = self._finished.popleft()
        if f is None:
            raise TimeoutError(f"workflow.as_completed() timed out after {self._secs:g}s")
        return f.result()
