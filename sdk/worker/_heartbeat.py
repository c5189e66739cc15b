"""Heartbeat throttling for one running activity attempt.

``activity.heartbeat()`` may be called thousands of times a second; the server
needs to hear at most once per throttle interval. The first heartbeat is sent at
once; later ones within the interval only replace the pending details, which are
sent when the interval ends, so the latest details are never lost.
"""

from __future__ import annotations

import asyncio
import datetime

from collections.abc import Awaitable, Callable

from spindle.api import messages_pb2 as pb

__all__ = ["Heartbeater", "throttle_interval"]

DEFAULT_THROTTLE = 30.0


def throttle_interval(heartbeat_timeout: datetime.timedelta | None) -> float:
    """Seconds between sends: 0.8 x ``heartbeat_timeout``, at most 30 s (30 s without a timeout)."""
    if heartbeat_timeout is None or heartbeat_timeout <= datetime.timedelta(0):
        return DEFAULT_THROTTLE
    return min(heartbeat_timeout.total_seconds() * 0.8, DEFAULT_THROTTLE)


class Heartbeater:
    """Throttles and sends heartbeats for one attempt. Lives on the worker's event loop.

    Args:
        loop: the loop the sends run on.
        interval: seconds between sends (see :func:`throttle_interval`).
        send: coroutine that records the details with the server; it handles its
            own errors (e.g. cancels the activity on NOT_FOUND).
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        interval: float,
        send: Callable[[pb.Payloads], Awaitable[None]],
    ) -> None:
        self._loop = loop
        self._interval = interval
        self._send = send
        self._last_sent: float | None = None
        self._pending: pb.Payloads | None = None
        self._latest: pb.Payloads | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._sending: asyncio.Task[None] | None = None
        self._closed = False

    @property
    def latest_details(self) -> pb.Payloads | None:
        """The details of the most recent heartbeat (sent or not), for a failure report."""
        return self._latest

    def record(self, details: pb.Payloads) -> None:
        """Record a heartbeat; thread-safe (sync activities call it from their thread)."""
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:
            self._record(details)
        else:
            self._loop.call_soon_threadsafe(self._record, details)

    def _record(self, details: pb.Payloads) -> None:
        if self._closed:
            return
        self._latest = details
        self._pending = details
        if self._timer is not None or self._sending is not None:
            return  # the scheduled flush (or the send in flight) will pick up the latest details
        now = self._loop.time()
        if self._last_sent is None or now - self._last_sent >= self._interval:
            self._start_send()
        else:
            self._timer = self._loop.call_at(self._last_sent + self._interval, self._flush)

    def _flush(self) -> None:
        self._timer = None
        if self._pending is not None and not self._closed and self._sending is None:
            self._start_send()

    def _start_send(self) -> None:
        details, self._pending = self._pending, None
        assert details is not None
        self._last_sent = self._loop.time()
        self._sending = self._loop.create_task(self._do_send(details))

    async def _do_send(self, details: pb.Payloads) -> None:
        try:
            await self._send(details)
        finally:
            self._sending = None
            if self._pending is not None and not self._closed and self._timer is None:
                self._timer = self._loop.call_at(
                    max(self._loop.time(), (self._last_sent or 0) + self._interval), self._flush
                )

    def close(self) -> None:
        """Stop sending (the attempt is over). Pending details stay in ``latest_details``."""
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._sending is not None and not self._sending.done():
            self._sending.cancel()
