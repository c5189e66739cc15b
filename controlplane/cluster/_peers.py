"""Calling other members: one gRPC channel per peer, the internal service, error mapping.

Members talk over one internal gRPC method, ``/spindle.cluster.v1.Internal/Call``,
whose request and response are JSON objects (``{"op": ..., ...}``; protobuf values
travel base64-encoded). It carries forwarded frontend RPCs and the few engine
operations that cross shards (see ``_engine`` and ``_internal``). Using a generic
handler keeps the public ``.proto`` free of cluster internals.

It is served on the member's internal listener only (``internal.advertise``, the
address in the membership row), never on the public one. With ``internal.tls`` the
channels present this member's certificate and check the peer's against the cluster CA
(mutual TLS); when the files change, new channels use the new certificate. Every call
also carries the cluster's member token (``MEMBER_TOKEN_HEADER``): a secret the members
share through the store (the server secret ``cluster_member_token``). A member whose
internal listener has no TLS (loopback only) refuses a call without it, so another process
on the machine cannot run internal operations (which skip API keys) by dialling the port.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import secrets
import time

from collections.abc import Awaitable, Callable
from typing import Any

import grpc

from spindle.controlplane import errors
from spindle.controlplane._tls import MemberTLS, TLSFileError
from spindle.controlplane.store import ServerSecret, Store

log = logging.getLogger("spindle.cluster")

METHOD = "/spindle.cluster.v1.Internal/Call"
#: The metadata key of the member token every internal call carries.
MEMBER_TOKEN_HEADER = "x-spindle-member-token"
#: The server secret holding the member token (created by the first member, shared through the store).
MEMBER_TOKEN_SECRET = "cluster_member_token"
_CODES: dict[grpc.StatusCode, type[errors.ServiceError]] = {
    grpc.StatusCode.INVALID_ARGUMENT: errors.InvalidArgument,
    grpc.StatusCode.NOT_FOUND: errors.NotFound,
    grpc.StatusCode.ALREADY_EXISTS: errors.AlreadyExists,
    grpc.StatusCode.FAILED_PRECONDITION: errors.FailedPrecondition,
    grpc.StatusCode.RESOURCE_EXHAUSTED: errors.ResourceExhausted,
    grpc.StatusCode.DEADLINE_EXCEEDED: errors.DeadlineExceeded,
    grpc.StatusCode.UNAVAILABLE: errors.Unavailable,
}
#: Marks an error raised by a member that does not (or no longer) own the shard: the caller refreshes its view.
NOT_OWNER = "is not owned by this process"


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def unb64(text: str) -> bytes:
    return base64.b64decode(text)


def to_service_error(e: grpc.aio.AioRpcError) -> errors.ServiceError:
    """The ServiceError a peer's status stands for (so the caller's client sees the same status)."""
    cls = _CODES.get(e.code(), errors.ServiceError)
    message = e.details() or str(e.code())
    if cls is errors.AlreadyExists:  # keep the refused start's details (the running run's id)
        started = errors.already_started_details(e.trailing_metadata())
        if started is not None:
            return errors.AlreadyExists(message, run_id=started[0], start_request_id=started[1])
    if cls is errors.ResourceExhausted:  # keep the retry delay of a throttled call
        return errors.ResourceExhausted(message, retry_after=errors.retry_after_details(e.trailing_metadata()))
    err = cls(message)
    if cls is errors.ServiceError:
        err.code = e.code()
    return err


#: Seconds a channel replaced after a certificate rotation stays open for the calls still on it.
RETIRED_CHANNEL_GRACE = 120.0
_CHANNEL_OPTIONS = [("grpc.max_receive_message_length", 64 * 1024 * 1024),
                    ("grpc.max_send_message_length", 64 * 1024 * 1024)]


async def member_token(store: Store) -> bytes:
    """The cluster's member token: read from the store, created there by the first member to ask."""
    stored = await store.add_server_secret(ServerSecret(MEMBER_TOKEN_SECRET, secrets.token_bytes(32),
                                                        int(time.time() * 1000)))
    return stored.value


class Peers:
    """Channels to other members, by internal address (mutual TLS with ``tls``, else plaintext on loopback).

    ``token`` is the cluster's member token, sent with every call (set once the store is open).
    """

    def __init__(self, tls: MemberTLS | None = None, token: bytes = b"") -> None:
        self._tls = tls
        self.token = token
        self._watch = tls.watcher() if tls is not None else None
        self._creds = tls.channel_credentials() if tls is not None else None
        self._channels: dict[str, grpc.aio.Channel] = {}
        self._calls: dict[str, Callable[..., Awaitable[bytes]]] = {}
        self._retired: list[grpc.aio.Channel] = []

    def _rotate(self) -> None:
        """The member's certificate files changed: new channels present the new certificate."""
        assert self._tls is not None
        try:
            self._tls.check()
            creds = self._tls.channel_credentials()
        except TLSFileError as e:
            log.warning("internal.tls files changed but do not load (%s); keeping the previous certificate", e)
            return
        retired = list(self._channels.values())
        self._channels.clear()
        self._calls.clear()
        self._creds = creds
        self._retired.extend(retired)

        def close_retired() -> None:
            for ch in retired:
                if ch in self._retired:
                    self._retired.remove(ch)
                    asyncio.ensure_future(ch.close())

        asyncio.get_running_loop().call_later(RETIRED_CHANNEL_GRACE, close_retired)
        log.info("internal.tls files changed: peers are dialled with the new certificate")

    def _call(self, address: str) -> Callable[..., Awaitable[bytes]]:
        if self._watch is not None and self._watch.changed():
            self._rotate()
        fn = self._calls.get(address)
        if fn is None:
            if self._tls is not None and self._creds is not None:
                ch = grpc.aio.secure_channel(address, self._creds, options=_CHANNEL_OPTIONS + self._tls.channel_options())
            else:
                ch = grpc.aio.insecure_channel(address, options=_CHANNEL_OPTIONS)
            self._channels[address] = ch
            fn = ch.unary_unary(METHOD, request_serializer=None, response_deserializer=None)
            self._calls[address] = fn
        return fn

    async def call(self, address: str, payload: dict[str, Any], timeout: float | None) -> dict[str, Any]:
        """Run one internal operation on the member at ``address``; raises ServiceError (mapped status)."""
        try:
            raw = await self._call(address)(json.dumps(payload).encode(), timeout=timeout,
                                            metadata=((MEMBER_TOKEN_HEADER, self.token.hex()),) if self.token else None)
        except grpc.aio.AioRpcError as e:
            raise to_service_error(e) from None
        return json.loads(raw) if raw else {}

    async def close(self) -> None:
        for ch in [*self._channels.values(), *self._retired]:
            await ch.close()
        self._channels.clear()
        self._calls.clear()
        self._retired.clear()


async def with_retry(fn: Callable[[], Awaitable[Any]], *, deadline: float, on_retry: Callable[[], Awaitable[None]],
                     pause: float = 0.2) -> Any:
    """Run ``fn`` until it does not raise Unavailable or ``deadline`` (event-loop time) passes.

    Unavailable means the shard's owner is unknown, moving or dead; ``on_retry``
    refreshes the cluster view before the next attempt.
    """
    loop = asyncio.get_running_loop()
    while True:
        try:
            return await fn()
        except errors.Unavailable:
            if loop.time() + pause >= deadline:
                raise
            await asyncio.sleep(pause)
            await on_retry()


__all__ = ["MEMBER_TOKEN_HEADER", "MEMBER_TOKEN_SECRET", "METHOD", "NOT_OWNER", "Peers", "b64", "member_token", "to_service_error",
           "unb64", "with_retry"]
