"""Pacing of the starts the server makes itself: they take tokens from the namespace's request rate limit.

A schedule's actions (its timer, a trigger, a backfill, catch-up after an outage) and a
child workflow a workflow task commands are started by the server, not by a client call,
so the frontend's per-namespace token bucket (``rps_limit``) never saw them. They take
their tokens from the same bucket through ``StartTokens``, a port the frontend's limiter
(``spindle.controlplane.frontend._rate_limit.NamespaceRateLimiter``) fills; the history
service does not import the frontend. A start that finds no token is PACED, never refused:
a schedule's fire starts what the tokens allow and writes its timer for when the next one
is due (``ops.schedule``); a child start waits for its token (``wait_for_token``).

Without a limiter plugged in (an engine used on its own, in tests) every take succeeds.
"""

from __future__ import annotations

import asyncio
import time

from collections.abc import Callable
from typing import Protocol

from spindle.controlplane.clock import Clock, VirtualClock


class Limited(Protocol):
    """What a token bucket needs of a namespace (``Namespace`` has it)."""

    id: str
    name: str
    rps_limit: float


class StartTokens(Protocol):
    """Takes tokens from a namespace's request rate limit (the one bucket per namespace per process)."""

    def take(self, ns: Limited) -> float:
        """Take one token of ``ns``: 0.0 when taken (or ``ns`` is unlimited), else the seconds until one is due for the caller."""
        ...


class Unlimited:
    """Every take succeeds (no limiter plugged in)."""

    def take(self, ns: Limited) -> float:
        return 0.0


def token_clock(clock: Clock) -> Callable[[], float]:
    """The seconds token buckets refill with: monotonic time; under a ``VirtualClock`` (time skipping), virtual plus monotonic.

    Under time skipping a schedule paced to its next token writes a timer for it and the
    clock jumps there, so the bucket must see virtual time; it must also move with real time,
    or a start that waits for a token while the engine is busy (a child start: the clock only
    moves while nothing is in progress) would wait forever.
    """
    if isinstance(clock, VirtualClock):
        return lambda: clock.now_ms() / 1000 + time.monotonic()
    return time.monotonic


async def wait_for_token(tokens: StartTokens, ns: Limited) -> None:
    """Take a token of ``ns``, waiting (real time) as long as it takes; returns at once while one is there (hot path)."""
    wait = tokens.take(ns)
    while wait > 0:
        await asyncio.sleep(wait)
        wait = tokens.take(ns)


__all__ = ["Limited", "StartTokens", "Unlimited", "token_clock", "wait_for_token"]
