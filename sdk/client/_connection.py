"""Connecting a client: what ``Client.connect`` does, the channel's settings and the first call.

:func:`connect` checks ``Client.connect``'s arguments, then either starts an in-process
control plane (``"embedded:PATH"``) or opens a gRPC channel with :data:`CHANNEL_OPTIONS`, and
makes the client through the factory ``Client.connect`` passes (so this module never imports
the client). Over a channel, :func:`check_connection` makes one call (``GetSystemInfo``) so
that an unreachable server, a refused key or a TLS mismatch fails ``connect`` itself, with a
message that says which.
"""

from __future__ import annotations

import functools
import os
import socket

from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

import grpc
import grpc.aio

from google.protobuf.message import Message

from spindle import exceptions as E
from spindle.api import service_pb2 as svc
from spindle.api import service_pb2_grpc
from spindle.client._api_keys import MetadataStub, check_api_key
from spindle.client._impl import check_client_interceptors
from spindle.client._tls import TLSConfig, as_tls_config, explain_connect_failure, is_tls_refusal, open_channel

__all__ = ["CHANNEL_OPTIONS", "EMBEDDED_PREFIX", "ConnectingClient", "Connection", "check_connection", "connect",
           "default_identity"]

#: ``Client.connect("embedded:PATH")``: an in-process control plane on the SQLite file ``PATH``.
EMBEDDED_PREFIX = "embedded:"

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
    """What connecting uses of a :class:`spindle.client.Client` (which imports this module)."""

    api_key: str | None

    async def _rpc(self, method: str, request: Message, *, timeout: float | None = None, not_found: str = "workflow",
                   stop_retrying: Any = None) -> Any: ...


C = TypeVar("C", bound=ConnectingClient)


class Connection:
    """What a client talks through: its stub, the API key the stub sends, and what ``close()`` releases.

    ``channel`` (a gRPC channel) or ``embedded`` (an in-process control plane) is owned by the client:
    :meth:`close` closes or stops it, once.
    """

    def __init__(self, stub: Any, channel: grpc.aio.Channel | None, embedded: Any) -> None:
        self.stub = stub
        self._channel = channel
        self._embedded = embedded
        self._closed = False
        self._api_key = stub.api_key if isinstance(stub, MetadataStub) else None

    @property
    def api_key(self) -> str | None:
        """The key sent with every later call (None: none); ValueError on setting a key that is not printable."""
        return self._api_key

    @api_key.setter
    def api_key(self, value: str | None) -> None:
        value = check_api_key(value)
        if isinstance(self.stub, MetadataStub):
            self.stub.api_key = value
        self._api_key = value

    async def close(self) -> None:
        """Close the channel or stop the embedded control plane; a second call does nothing."""
        if self._closed:
            return
        self._closed = True
        if self._channel is not None:
            await self._channel.close()
        if self._embedded is not None:
            await self._embedded.stop()


def default_identity() -> str:
    """``pid@host``: the identity of a client (and its workers) made without one."""
    return f"{os.getpid()}@{socket.gethostname()}"


async def connect(new_client: Callable[..., C], target_host: str, *, api_key: str | None,
                  tls: bool | TLSConfig | None, interceptors: Sequence[Any], runtime: Any = None,
                  **client_options: Any) -> C:
    """What :meth:`spindle.client.Client.connect` does; its docstring says what it raises.

    The arguments are checked before anything is opened. The client is made by
    ``new_client(stub, interceptors=..., embedded=cp, **client_options)`` or ``new_client(stub, interceptors=...,
    channel=channel, **client_options)``, where the stub of a channel sends ``api_key`` with every call; ``runtime`` is kept as
    ``client.runtime`` (workers read it: :mod:`spindle.runtime`).
    """
    new_client = functools.partial(new_client, **client_options)
    if not isinstance(target_host, str) or not target_host:
        raise ValueError(f"target_host: expected 'host:port' or 'embedded:PATH', got {target_host!r}")
    api_key = check_api_key(api_key)
    tls_config = as_tls_config(tls)
    checked = check_client_interceptors(interceptors)
    if target_host.startswith(EMBEDDED_PREFIX):
        if tls_config is not None:
            raise ValueError("tls: an embedded control plane runs in this process; there is no connection to secure")
        from spindle.controlplane import embedded

        cp = await embedded.start(target_host[len(EMBEDDED_PREFIX):])
        client = new_client(cp.stub, interceptors=checked, embedded=cp)
        setattr(client, "runtime", runtime)  # noqa: B010  (Client declares no attribute for it)
        client.api_key = api_key  # shown by client.api_key; an embedded control plane checks no key
        return client
    channel = open_channel(target_host, tls_config, options=CHANNEL_OPTIONS)
    client = new_client(MetadataStub(service_pb2_grpc.WorkflowServiceStub(channel), api_key), interceptors=checked,  # type: ignore[no-untyped-call]  # the generated gRPC stub has no annotations
                        channel=channel)
    setattr(client, "runtime", runtime)  # noqa: B010  (Client declares no attribute for it)
    await check_connection(client, channel, target_host, tls_config)
    return client


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
