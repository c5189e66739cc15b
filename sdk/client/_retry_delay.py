"""Reading a throttled call's retry delay, and how long to wait before trying again.

A server that refuses a call because a limit was reached for now (a namespace's request
rate limit) answers RESOURCE_EXHAUSTED with the delay after which the call would pass:
as a ``google.rpc.RetryInfo`` in the standard rich status details
(``grpc-status-details-bin``), and in plain trailing metadata
(``spindle.api.RETRY_AFTER_KEY``, milliseconds). A RESOURCE_EXHAUSTED
without a delay (a payload over the size limit, say) will fail again: it is not retried.
"""

from __future__ import annotations

import asyncio
import random

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import grpc
import grpc.aio

from spindle.api import RETRY_AFTER_KEY

__all__ = ["call_with_retries", "retry_delay", "throttled_wait"]

_DETAILS_KEY = "grpc-status-details-bin"
#: Longest exponential part of a throttled call's wait (seconds).
MAX_BACKOFF = 2.0

T = TypeVar("T")


def _trailing(e: grpc.aio.AioRpcError) -> Any:
    try:
        return e.trailing_metadata() or ()
    except Exception:  # noqa: BLE001 - a hand-made error without metadata
        return ()


def retry_delay(e: grpc.aio.AioRpcError) -> float | None:
    """Seconds after which the refused call would pass, when ``e`` is a RESOURCE_EXHAUSTED saying so; else None."""
    if e.code() != grpc.StatusCode.RESOURCE_EXHAUSTED:
        return None
    plain: float | None = None
    for key, value in _trailing(e):
        if key == _DETAILS_KEY and isinstance(value, bytes):
            delay = _from_status_details(value)
            if delay is not None:
                return delay
        elif key == RETRY_AFTER_KEY:
            try:
                plain = int(value) / 1000.0
            except (TypeError, ValueError):
                pass
    return plain


def _from_status_details(raw: bytes) -> float | None:
    try:
        from google.rpc import error_details_pb2, status_pb2
    except ImportError:  # pragma: no cover - googleapis-common-protos comes with grpcio-status
        return None
    try:
        status = status_pb2.Status.FromString(raw)
    except Exception:  # noqa: BLE001 - not a google.rpc.Status: as if absent
        return None
    for detail in status.details:
        info = error_details_pb2.RetryInfo()
        if detail.Is(info.DESCRIPTOR) and detail.Unpack(info):
            return float(info.retry_delay.seconds + info.retry_delay.nanos / 1e9)
    return None


def throttled_wait(e: grpc.aio.AioRpcError, attempt: int) -> float | None:
    """How long to wait before retry number ``attempt`` (1, 2, ...) of a throttled call; None if ``e`` is not one.

    The server's delay plus a random share of an exponential backoff (50 ms doubling up to
    ``MAX_BACKOFF``), so that many callers refused together do not all come back at once.
    """
    delay = retry_delay(e)
    if delay is None:
        return None
    return delay + random.uniform(0.0, min(MAX_BACKOFF, 0.05 * 2 ** (attempt - 1)))


async def call_with_retries(fn: Callable[..., Awaitable[T]], request: Any, *, budget: float = 15.0,
                            retry_unavailable: bool = False, **kwargs: Any) -> T:
    """``await fn(request, **kwargs)``, retried while the server throttles it (within ``budget`` seconds).

    For calls that are safe to repeat. With ``retry_unavailable`` an UNAVAILABLE answer (the
    server restarting, a cluster shard between owners) is retried too, with a backoff from
    0.1 s doubling to 1 s. Any other error, or a wait that would outlast the budget, is raised
    as it came.
    """
    loop = asyncio.get_running_loop()
    give_up = loop.time() + budget
    attempt = 0
    backoff = 0.1
    while True:
        try:
            return await fn(request, **kwargs)
        except grpc.aio.AioRpcError as e:
            attempt += 1
            wait = throttled_wait(e, attempt)
            if wait is None and retry_unavailable and e.code() == grpc.StatusCode.UNAVAILABLE:
                wait = backoff * random.uniform(0.8, 1.2)
                backoff = min(backoff * 2, 1.0)
            if wait is None or loop.time() + wait > give_up:
                raise
        await asyncio.sleep(wait)
