"""What both kinds of worker poll with: the slot limit, the long-poll loop, stopping pollers."""

from __future__ import annotations

import asyncio
import logging
import random
import time

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import grpc
import grpc.aio

from spindle.client._retry_delay import retry_delay

log = logging.getLogger("spindle.worker")

#: Seconds a poller waits after a failed poll (server unreachable, say) before the next one; it doubles
#: with each failure in a row, up to ``POLL_ERROR_MAX_BACKOFF``.
POLL_ERROR_BACKOFF = 0.5
POLL_ERROR_MAX_BACKOFF = 5.0


def poll_error_wait(failures: int, server_delay: float | None = None) -> float:
    """Seconds to wait after the ``failures``-th failed poll in a row: the server's retry delay (a throttled
    poll) plus a jittered exponential backoff, between half and all of
    ``min(POLL_ERROR_MAX_BACKOFF, POLL_ERROR_BACKOFF * 2 ** (failures - 1))``."""
    backoff = min(POLL_ERROR_MAX_BACKOFF, POLL_ERROR_BACKOFF * 2 ** (max(1, failures) - 1))
    return float((server_delay or 0.0) + backoff * random.uniform(0.5, 1.0))


async def cancel_and_wait(tasks: Sequence[asyncio.Task[Any]]) -> None:
    """Cancel ``tasks`` and wait until each has finished (their errors are dropped)."""
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


class Slots:
    """A counting limit with a non-blocking ``try_acquire`` (for eager activity reservation)."""

    def __init__(self, n: int) -> None:
        if n < 1:
            raise ValueError("a concurrency limit must be at least 1")
        self.free = n
        self._waiters: list[asyncio.Future[None]] = []

    def try_acquire(self) -> bool:
        if self.free > 0:
            self.free -= 1
            return True
        return False

    async def acquire(self) -> None:
        while self.free <= 0:
            fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(fut)
            try:
                await fut
            finally:
                if fut in self._waiters:
                    self._waiters.remove(fut)
        self.free -= 1

    def release(self) -> None:
        self.free += 1
        while self._waiters:
            fut = self._waiters.pop(0)
            if not fut.done():
                fut.set_result(None)
                break


async def poll_loop(what: str, slots: Slots, stopping: Callable[[], bool], poll: Callable[[], Awaitable[Any]],
                    take: Callable[[Any], None], on_poll: Callable[[float, str], None] | None = None) -> None:
    """Long-poll with ``poll()`` while a slot is free and until ``stopping()``; hand each task to ``take``.

    ``take`` owns the slot of the task it gets. A poll that returns no task (the long
    poll's timeout), a cancelled or timed-out call frees the slot at once; any other
    failure is logged as ``what`` failed and the next poll waits ``poll_error_wait`` (the
    server's retry delay, if it throttled the poll, and a backoff growing with failures
    in a row). ``on_poll(seconds, result)`` (if given) hears how each poll ended: ``"task"``,
    ``"empty"`` (no task before the long poll's timeout, or cancelled) or ``"error"``.
    """
    failures = 0
    perf = time.perf_counter
    while not stopping():
        await slots.acquire()
        t0 = perf()
        try:
            task = await poll()
        except asyncio.CancelledError:
            slots.release()
            raise
        except grpc.aio.AioRpcError as e:
            slots.release()
            if e.code() in (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED):
                if on_poll is not None:
                    on_poll(perf() - t0, "empty")
                continue
            if on_poll is not None:
                on_poll(perf() - t0, "error")
            failures += 1
            wait = poll_error_wait(failures, retry_delay(e))
            log.warning("%s failed: %s %s (next poll in %.1f s)", what, e.code(), e.details(), wait)
            await asyncio.sleep(wait)
            continue
        except Exception:
            slots.release()
            if on_poll is not None:
                on_poll(perf() - t0, "error")
            failures += 1
            log.exception("%s failed", what)
            await asyncio.sleep(poll_error_wait(failures))
            continue
        failures = 0
        if not task.task_token:
            slots.release()
            if on_poll is not None:
                on_poll(perf() - t0, "empty")
            continue
        if on_poll is not None:
            on_poll(perf() - t0, "task")
        take(task)


__all__ = ["POLL_ERROR_BACKOFF", "POLL_ERROR_MAX_BACKOFF", "Slots", "cancel_and_wait", "poll_error_wait", "poll_loop"]
