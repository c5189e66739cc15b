"""Per-namespace request rate limits: one token bucket per namespace in each frontend process.

A namespace's ``rps_limit`` (requests per second, 0 = unlimited) refills its bucket; the
bucket holds at most one second's worth (``max(1, rps_limit)`` tokens), so a namespace that
was idle may burst that much at once. Each counted call takes one token; a call that finds
none is refused before it does anything, with RESOURCE_EXHAUSTED and a retry delay
(``ResourceExhausted.retry_after``). A refused call takes no token.

The retry delays of refused calls are spread out, one ``1 / rps_limit`` apart: the first
call refused is told to come back when the next token is due, the next one a token later,
and so on (a virtual queue of return times). Telling every refused caller "the next
token is in 10 ms" would bring a flood of thousands back at the same instant, again and
again, and answering those refusals would cost the process as much as serving the
calls. Spread out, each refused caller comes back about once, when a token can be there
for it; a caller whose delay exceeds its patience gives up at once (the SDK gives up when
the delay would outlast its retry budget).

Which calls count is the frontend's choice (``FrontendService``): a client's calls about
workflows. The starts the server makes itself (schedule actions, child workflows) take
tokens from the same buckets (``take``, through the history service's ``StartTokens``
port) and are paced, not refused. Limits hold per process: a cluster of N members lets a namespace make up to N
times its limit when its calls are spread over all of them.
"""

from __future__ import annotations

import time

from collections.abc import Callable
from typing import Protocol

from spindle.controlplane.errors import ResourceExhausted

__all__ = ["NamespaceRateLimiter"]


class _Limited(Protocol):
    id: str
    name: str
    rps_limit: float


class _Bucket:
    __slots__ = ("rate", "tokens", "stamp", "horizon")

    def __init__(self, rate: float, now: float) -> None:
        self.rate = rate
        self.tokens = max(1.0, rate)  # a namespace starts with a full second's worth
        self.stamp = now
        self.horizon = 0.0  # the return time given to the last refused call

    def take(self, rate: float, now: float) -> float:
        """Take a token: 0.0 when taken, else the seconds after which the caller should come back."""
        if rate != self.rate:  # the namespace's limit changed: keep what is left, within the new burst
            self.rate = rate
            self.tokens = min(self.tokens, max(1.0, rate))
        burst = max(1.0, rate)
        self.tokens = min(burst, self.tokens + (now - self.stamp) * rate)
        self.stamp = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return 0.0
        back = max(now + (1.0 - self.tokens) / rate, self.horizon + 1.0 / rate)
        self.horizon = back
        return back - now


class NamespaceRateLimiter:
    """The token buckets of this process's namespaces (by namespace id).

    The one rule of ``rps_limit``: the frontend counts client calls with :meth:`check`
    (refused when over), and the history service takes tokens for the starts it makes
    itself (schedules, child workflows) with :meth:`take` through its ``StartTokens``
    port (paced, never refused: ``spindle.controlplane.history._pacing``).
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._buckets: dict[str, _Bucket] = {}

    def take(self, ns: _Limited) -> float:
        """Take one token of ``ns``: 0.0 when taken (or the namespace is unlimited), else the seconds until
        one is due for this caller (its place in the virtual queue of refused callers; nothing taken)."""
        rate = ns.rps_limit
        if rate <= 0:
            return 0.0
        now = self._clock()
        bucket = self._buckets.get(ns.id)
        if bucket is None:
            bucket = self._buckets[ns.id] = _Bucket(rate, now)
        return bucket.take(rate, now)

    def check(self, ns: _Limited) -> None:
        """Count one call of ``ns``.

        Raises:
            ResourceExhausted: the namespace is over its ``rps_limit``; ``retry_after`` says
                when the call would pass.
        """
        wait = self.take(ns)
        if wait > 0:
            raise ResourceExhausted(
                f"namespace {ns.name!r} is over its request rate limit of {ns.rps_limit:g} requests per second "
                f"(rps_limit); retry after {wait * 1000:.0f} ms", retry_after=wait)

    def forget(self, namespace_id: str) -> None:
        """Drop a deleted namespace's bucket."""
        self._buckets.pop(namespace_id, None)
