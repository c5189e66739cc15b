"""Caps on the long polls a server process holds: overall and per client.

A long poll (a worker's PollWorkflowTaskQueue or PollActivityTaskQueue, a client's
GetWorkflowExecutionHistory waiting for the next event) holds server memory for up to a
minute while it waits. Without a cap, one client could park any number of them on a single
connection. The gRPC layer (:func:`spindle.controlplane._grpc_service.make_servicer`) holds a
slot of :class:`LongPollLimiter` for the length of each such call; a call that finds no
free slot is refused before it does anything, with RESOURCE_EXHAUSTED naming the limit and a
retry delay (``google.rpc.RetryInfo``, as the namespace rate limiter answers), which the SDK's
pollers and clients honour.

Who is "a client": its principal when it authenticated (API key or certificate), else its
network address (host, without the port); a worker's polls are further keyed by the
``identity`` the worker declares, so that several workers on one host (or sharing one key)
each get their own allowance. The overall cap bounds what many clients together may hold.
The in-process stub (``spindle.controlplane.embedded``) does not go through here.
"""

from __future__ import annotations

import contextlib

from collections.abc import Iterator

from spindle.controlplane.config import ServerConfig
from spindle.controlplane.errors import ResourceExhausted

__all__ = ["LONG_POLL_RETRY_AFTER", "LongPollLimiter", "long_poll_client", "peer_host"]

#: Seconds a refused long poll is told to wait before it tries again.
LONG_POLL_RETRY_AFTER = 1.0


def peer_host(peer: str) -> str:
    """The address part of a gRPC peer string (``ipv4:10.0.0.7:53122`` -> ``ipv4:10.0.0.7``)."""
    if peer.startswith(("ipv4:", "ipv6:")):
        host, _, port = peer.rpartition(":")
        if port.isdigit() and host not in ("ipv4", "ipv6"):
            return host
    return peer


class LongPollLimiter:
    """Counts the long polls in flight, overall and per client key; refuses those over a cap."""

    def __init__(self, max_total: int, max_per_client: int) -> None:
        #: 0 = no limit.
        self.max_total = max_total
        self.max_per_client = max_per_client
        self.total = 0
        self._per_client: dict[str, int] = {}

    @classmethod
    def from_config(cls, config: ServerConfig) -> "LongPollLimiter":
        return cls(config.max_long_polls, config.max_long_polls_per_client)

    def held(self, client: str) -> int:
        """Long polls ``client`` holds now."""
        return self._per_client.get(client, 0)

    @contextlib.contextmanager
    def hold(self, client: str, what: str) -> Iterator[None]:
        """Hold one slot for ``client`` while the block runs (``what`` names the call in errors).

        Raises:
            ResourceExhausted: the process holds ``max_long_polls`` already, or ``client``
                ``max_long_polls_per_client``; with a retry delay.
        """
        held = self._per_client.get(client, 0)
        if self.max_per_client and held >= self.max_per_client:
            raise ResourceExhausted(
                f"{what}: client {client} already holds {held} long polls, the most one client may hold at once "
                f"(max_long_polls_per_client = {self.max_per_client}); retry after "
                f"{LONG_POLL_RETRY_AFTER:g} s, or use fewer pollers", retry_after=LONG_POLL_RETRY_AFTER)
        if self.max_total and self.total >= self.max_total:
            raise ResourceExhausted(
                f"{what}: the server holds {self.total} long polls, the most it holds at once (max_long_polls = "
                f"{self.max_total}); retry after {LONG_POLL_RETRY_AFTER:g} s", retry_after=LONG_POLL_RETRY_AFTER)
        self.total += 1
        self._per_client[client] = held + 1
        try:
            yield
        finally:
            self.total -= 1
            left = self._per_client[client] - 1
            if left:
                self._per_client[client] = left
            else:
                del self._per_client[client]


#: The RPCs that may wait (for a task, or for a run's next event) and so hold a slot.
_WORKER_POLLS = frozenset({"PollWorkflowTaskQueue", "PollActivityTaskQueue"})


def long_poll_client(rpc: str, request: object, principal_id: str | None, peer: str) -> str | None:
    """The client key a call of ``rpc`` counts against, or None when the call is not a long poll.

    ``principal_id`` is the authenticated caller's (None or "anonymous" when authentication is off).
    """
    if rpc in _WORKER_POLLS:
        identity = str(getattr(request, "identity", "") or "")[:256]
    elif rpc == "GetWorkflowExecutionHistory" and getattr(request, "wait_new_event", False):
        identity = ""
    else:
        return None
    who = principal_id if principal_id and principal_id != "anonymous" else peer_host(peer)
    return f"{who} (identity {identity!r})" if identity else who
