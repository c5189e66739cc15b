"""Caps on the long polls a server process holds: overall, per namespace and per client.

A long poll (a worker's PollWorkflowTaskQueue or PollActivityTaskQueue, a client's
GetWorkflowExecutionHistory waiting for the next event) holds server memory for up to a
minute while it waits. Without a cap, one client could park any number of them on a single
connection. The gRPC layer (:func:`spindle.controlplane._grpc_service.make_servicer`) holds a
slot of :class:`LongPollLimiter` for the length of each such call; a call that finds no
free slot is refused before it does anything, with RESOURCE_EXHAUSTED naming the limit and a
retry delay (``google.rpc.RetryInfo``, as the namespace rate limiter answers), which the SDK's
pollers and clients honour.

Who is "a client": its principal when it authenticated (API key or certificate), else its
network address (host, without the port). The ``identity`` a worker declares is not part of
it: a client names itself as it likes, so counting per identity would let one key multiply
its own allowance (security issue 26).

Namespaces share the process's slots fairly (``long_poll_namespace_share``, default 0.5): a
namespace may hold at most that share of the slots the *other* namespaces leave free, i.e. a
new poll of namespace N is let in while ``held(N) < share x (max_long_polls - held by the
others)``. Why this rule rather than a fixed per-namespace number:

- a namespace alone on the server may use ``share`` of it (half by default), and one
  namespace that floods leaves the rest to everyone else;
- a namespace that holds none is let in whenever any slot is free (its bound is
  ``share x free slots`` > 0), however many namespaces flood: each newcomer may take only
  a share of what is left, so nobody's share reaches the last free slot first;
- it needs no setting per namespace, follows ``max_long_polls`` when an operator changes
  it, and costs one dict lookup and a comparison per long poll.

The overall cap bounds what many clients together may hold. The in-process stub
(``spindle.controlplane.embedded``) does not go through here.
"""

from __future__ import annotations

import contextlib

from collections.abc import Iterator

from spindle.controlplane.config import ServerConfig
from spindle.controlplane.errors import ResourceExhausted

__all__ = ["LONG_POLL_RETRY_AFTER", "LongPollLimiter", "long_poll_key", "peer_host"]

#: Seconds a refused long poll is told to wait before it tries again.
LONG_POLL_RETRY_AFTER = 1.0


def peer_host(peer: str) -> str:
    """The address part of a gRPC peer string (``ipv4:10.0.0.7:53122`` -> ``ipv4:10.0.0.7``)."""
    if peer.startswith(("ipv4:", "ipv6:")):
        host, _, port = peer.rpartition(":")
        if port.isdigit() and host not in ("ipv4", "ipv6"):
            return host
    return peer


def _release(counts: dict[str, int], key: str) -> None:
    left = counts[key] - 1
    if left:
        counts[key] = left
    else:
        del counts[key]


class LongPollLimiter:
    """Counts the long polls in flight, overall, per namespace and per client; refuses those over a cap.

    Args:
        max_total: ``max_long_polls`` (0 = no limit, and then no namespace cap either).
        max_per_client: ``max_long_polls_per_client`` (0 = no limit).
        namespace_share: ``long_poll_namespace_share``, in (0, 1]; 1 = no namespace cap.
    """

    def __init__(self, max_total: int, max_per_client: int, namespace_share: float = 1.0) -> None:
        self.max_total = max_total
        self.max_per_client = max_per_client
        self.namespace_share = namespace_share
        self.total = 0
        self._per_client: dict[str, int] = {}
        self._per_namespace: dict[str, int] = {}

    @classmethod
    def from_config(cls, config: ServerConfig) -> "LongPollLimiter":
        return cls(config.max_long_polls, config.max_long_polls_per_client, config.long_poll_namespace_share)

    def held(self, client: str) -> int:
        """Long polls ``client`` holds now."""
        return self._per_client.get(client, 0)

    def held_in(self, namespace: str) -> int:
        """Long polls of ``namespace`` held now."""
        return self._per_namespace.get(namespace, 0)

    @contextlib.contextmanager
    def hold(self, client: str, namespace: str, what: str) -> Iterator[None]:
        """Hold one slot for ``client`` in ``namespace`` while the block runs (``what`` names the call in errors).

        Raises:
            ResourceExhausted: ``client`` holds ``max_long_polls_per_client`` already, or
                ``namespace`` its share of the slots the other namespaces leave
                (``long_poll_namespace_share``), or the process ``max_long_polls``; with a
                retry delay. The message names the limit.
        """
        held = self._per_client.get(client, 0)
        if self.max_per_client and held >= self.max_per_client:
            raise ResourceExhausted(
                f"{what}: client {client} already holds {held} long polls, the most one client may hold at once "
                f"(max_long_polls_per_client = {self.max_per_client}); retry after "
                f"{LONG_POLL_RETRY_AFTER:g} s, or use fewer pollers", retry_after=LONG_POLL_RETRY_AFTER)
        in_ns = self._per_namespace.get(namespace, 0)
        if self.max_total and self.namespace_share < 1.0:
            left = self.max_total - (self.total - in_ns)  # the slots the other namespaces leave
            if in_ns >= self.namespace_share * left:
                raise ResourceExhausted(
                    f"{what}: namespace {namespace!r} holds {in_ns} long polls, its share of the {left} slots the "
                    f"other namespaces leave (long_poll_namespace_share = {self.namespace_share:g} of "
                    f"max_long_polls = {self.max_total}); retry after {LONG_POLL_RETRY_AFTER:g} s",
                    retry_after=LONG_POLL_RETRY_AFTER)
        if self.max_total and self.total >= self.max_total:
            raise ResourceExhausted(
                f"{what}: the server holds {self.total} long polls, the most it holds at once (max_long_polls = "
                f"{self.max_total}); retry after {LONG_POLL_RETRY_AFTER:g} s", retry_after=LONG_POLL_RETRY_AFTER)
        self.total += 1
        self._per_client[client] = held + 1
        self._per_namespace[namespace] = in_ns + 1
        try:
            yield
        finally:
            self.total -= 1
            _release(self._per_client, client)
            _release(self._per_namespace, namespace)


#: The RPCs that may wait for a task and so hold a slot (GetWorkflowExecutionHistory does when it waits).
_WORKER_POLLS = frozenset({"PollWorkflowTaskQueue", "PollActivityTaskQueue"})


def long_poll_key(rpc: str, request: object, principal_id: str | None, peer: str) -> tuple[str, str] | None:
    """``(client, namespace)`` a call of ``rpc`` counts against, or None when the call is not a long poll.

    ``principal_id`` is the authenticated caller's (None or "anonymous" when authentication is
    off: the client is then the peer's address). The identity a worker declares is not used.
    """
    if rpc not in _WORKER_POLLS and not (rpc == "GetWorkflowExecutionHistory"
                                         and getattr(request, "wait_new_event", False)):
        return None
    who = principal_id if principal_id and principal_id != "anonymous" else peer_host(peer)
    return who, str(getattr(request, "namespace", ""))
