"""Connecting a client to a server: the channel's settings and the first call that proves the connection.

``Client.connect("host:port")`` opens a gRPC channel with :data:`CHANNEL_OPTIONS` and then
:func:`check_connection` makes one call (``GetSystemInfo``) so that an unreachable server, a
refused key or a TLS mismatch fails ``connect`` itself, with a message that says which.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import grpc
import grpc.aio

from google.protobuf.message import Message

from spindle import exceptions as E
from spindle.api import service_pb2 as svc
from spindle.client._tls import TLSConfig, explain_connect_failure, is_tls_refusal

__all__ = ["CHANNEL_OPTIONS", "ConnectingClient", "check_connection"]

#: The gRPC channel options of every client connection.
CHANNEL_OPTIONS: Sequence[tuple[str, Any]] = (
    ("grpc.max_receive_message_length", 128 * 1024 * 1024),
    ("grpc.max_send_message_length", 128 * 1024 * 1024),
    # gRPC's default reconnect backoff grows to 120 s: after a server restart (or a few
    # in a row) workers and clients would keep failing fast with UNAVAILABLE long after
    # the server is back. Retry the connection every 100 ms .. 2 s instead.
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 2000),
)


class ConnectingClient(Protocol):
    """What the check uses of a :class:`spindle.client.Client` (which imports this module)."""

    async def _rpc(self, method: str, request: Message, *, timeout: float | None = None, not_found: str = "workflow",
                   stop_retrying: Any = None) -> Any: ...


async def check_connection(client: ConnectingClient, channel: grpc.aio.Channel, target_host: str,
                           tls_config: TLSConfig | None) -> None:
    """Make the client's first call on ``channel``; on any failure close ``channel`` and raise.

    The call is retried while the server is unavailable (it may be starting), but not after a
    failed TLS handshake, nor after the server closed the connection three times in a row.

    Raises:
        RPCError: the call failed; an UNAVAILABLE that a TLS setting explains (an untrusted
            certificate, TLS against a plaintext server, a client certificate missing or
            refused) says so in the message.
    """
    closed_in_a_row = 0

    def refused(e: grpc.aio.AioRpcError) -> bool:
        # A failed handshake is not transient. A connection the server closes again and again
        # (three times, 0.35 s) is a refused handshake too: a server that requires a client
        # certificate, or a TLS server reached in plaintext (a restarting server refuses the
        # connection instead).
        nonlocal closed_in_a_row
        details = e.details() or ""
        closed_in_a_row = closed_in_a_row + 1 if "socket closed" in details.lower() else 0
        return is_tls_refusal(details) or closed_in_a_row >= 3

    try:
        await client._rpc("GetSystemInfo", svc.GetSystemInfoRequest(), timeout=10.0, not_found="rpc",
                          stop_retrying=refused)
    except E.RPCError as e:
        await channel.close()
        hint = explain_connect_failure(e.message, target_host, tls_config) if e.status == "UNAVAILABLE" else None
        if hint is not None:
            raise E.RPCError(hint, status=e.status) from e
        raise
    except BaseException:
        await channel.close()
        raise
