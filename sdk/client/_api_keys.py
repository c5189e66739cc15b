"""API keys from the client side: sending one with every call, and managing them (``Client.create_api_key`` ...).

A client made with ``Client.connect(address, api_key="spk_...")`` sends the metadata
``authorization: Bearer spk_...`` with every call, its workers' polls and answers
included (:class:`MetadataStub`). ``client.api_key = "spk_..."`` swaps the key for all
later calls (rotation without reconnecting), as ``temporalio.client.Client.api_key`` does.
"""

from __future__ import annotations

import dataclasses
import datetime

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from google.protobuf.message import Message

from spindle.api import service_pb2 as svc

_UTC = datetime.timezone.utc


def check_api_key(api_key: object) -> str | None:
    """``api_key`` if it can travel as gRPC metadata (None stays None); ValueError otherwise."""
    if api_key is None:
        return None
    if not isinstance(api_key, str) or not api_key or api_key != api_key.strip() or any(
            ord(c) < 0x21 or ord(c) > 0x7e for c in api_key):
        raise ValueError("api_key: expected the key's secret as printed when it was created (spk_..., printable "
                         "ASCII, no spaces)")
    return api_key


class MetadataStub:
    """A ``WorkflowServiceStub`` that adds the API key to every call's metadata.

    Same calling convention as the stub it wraps (``await stub.Rpc(request, timeout=...)``).
    """

    def __init__(self, stub: Any, api_key: str | None) -> None:
        self._stub = stub
        self.api_key = api_key

    @property
    def api_key(self) -> str | None:
        """The key sent with every later call (None: none)."""
        return self._api_key

    @api_key.setter
    def api_key(self, value: str | None) -> None:
        self._api_key = check_api_key(value)
        self._metadata: tuple[tuple[str, str], ...] = (
            (("authorization", f"Bearer {self._api_key}"),) if self._api_key else ())

    def __getattr__(self, name: str) -> Any:
        fn = getattr(self._stub, name)
        if not callable(fn):
            return fn

        def call(request: Any, *, metadata: Any = None, **kwargs: Any) -> Any:
            md = self._metadata + tuple(metadata or ())
            return fn(request, metadata=md or None, **kwargs)

        call.__name__ = name
        setattr(self, name, call)  # found directly next time
        return call


@dataclasses.dataclass(frozen=True)
class ApiKey:
    """An API key as the server describes it.

    Attributes:
        id: the key's id (the ``<id>`` of ``spk_<id>_<secret>``); what ``revoke_api_key`` takes.
        name: what it is for.
        secret: the whole key, ``spk_...``: only set on the value ``create_api_key`` returns,
            and never shown again (the server keeps only a hash).
        grants: role per namespace: ``"reader"``, ``"worker"``, ``"writer"`` or ``"admin"``.
        system_admin: may do everything, on every namespace.
        expires_at: when it stops working (None: never).
        created_at: when it was created.
        revoked_at: when it was revoked (None: not revoked).
        created_by: the principal that created it.
        task_queues: namespace -> the only task queues the key's ``worker`` grant there may
            poll and answer (a namespace missing here: every task queue).
    """

    id: str
    name: str
    grants: Mapping[str, str]
    system_admin: bool = False
    expires_at: datetime.datetime | None = None
    created_at: datetime.datetime | None = None
    revoked_at: datetime.datetime | None = None
    created_by: str = ""
    secret: str | None = dataclasses.field(default=None, repr=False)
    task_queues: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)

    @classmethod
    def from_proto(cls, info: svc.ApiKeyInfo, secret: str | None = None) -> ApiKey:
        return cls(id=info.id, name=info.name, grants=dict(info.grants), system_admin=info.system_admin,
                   expires_at=_time(info.expire_time_ms), created_at=_time(info.create_time_ms),
                   revoked_at=_time(info.revoke_time_ms), created_by=info.created_by, secret=secret,
                   task_queues={ns: tuple(q.names) for ns, q in sorted(info.task_queues.items())})


def _time(ms: int) -> datetime.datetime | None:
    return datetime.datetime.fromtimestamp(ms / 1000, _UTC) if ms else None


def create_request(name: str, grants: Mapping[str, str] | None, system_admin: bool,
                   expires: datetime.timedelta | datetime.datetime | None,
                   now: Callable[[], datetime.datetime] = lambda: datetime.datetime.now(_UTC),
                   task_queues: Mapping[str, Sequence[str]] | None = None) -> svc.CreateApiKeyRequest:
    """The CreateApiKey request; ValueError for an expiry in the past or of the wrong type, or task queues
    given as one string instead of a list of names (the server checks the rest)."""
    ttl_ms = 0
    if isinstance(expires, datetime.datetime):
        when = expires if expires.tzinfo is not None else expires.replace(tzinfo=_UTC)
        expires = when - now()
        if expires <= datetime.timedelta(0):
            raise ValueError(f"expires: {when.isoformat()} is in the past")
    if isinstance(expires, datetime.timedelta):
        ttl_ms = int(expires.total_seconds() * 1000)
        if ttl_ms <= 0:
            raise ValueError(f"expires: must be a positive duration, got {expires}")
    elif expires is not None:
        raise ValueError(f"expires: expected a timedelta, a datetime or None, got {type(expires).__name__}")
    roles = {}
    for ns, role in (grants or {}).items():
        roles[str(ns)] = role.value if hasattr(role, "value") else str(role)
    queues = {}
    for ns, names in (task_queues or {}).items():
        if isinstance(names, str):
            raise ValueError(f"task_queues[{ns!r}]: expected a list of task queue names, got the string {names!r}")
        queues[str(ns)] = svc.ApiKeyTaskQueues(names=[str(n) for n in names])
    return svc.CreateApiKeyRequest(name=name, grants=roles, system_admin=system_admin, ttl_ms=ttl_ms,
                                   task_queues=queues)


class ApiKeyClient(Protocol):
    """What the key calls use of a :class:`spindle.client.Client` (which imports this module)."""

    async def _rpc(self, method: str, request: Message, *, timeout: float | None = None,
                   not_found: str = "workflow") -> Any: ...


async def create_api_key(client: ApiKeyClient, name: str, grants: Mapping[str, str] | None, system_admin: bool,
                         expires: datetime.timedelta | datetime.datetime | None,
                         task_queues: Mapping[str, Sequence[str]] | None = None) -> ApiKey:
    """See :meth:`spindle.client.Client.create_api_key`: the returned key carries its ``secret``."""
    req = create_request(name, grants, system_admin, expires, task_queues=task_queues)
    resp = await client._rpc("CreateApiKey", req, not_found="rpc")
    return ApiKey.from_proto(resp.key, secret=resp.secret)


async def list_api_keys(client: ApiKeyClient) -> list[ApiKey]:
    """See :meth:`spindle.client.Client.list_api_keys`."""
    resp = await client._rpc("ListApiKeys", svc.ListApiKeysRequest(), not_found="rpc")
    return [ApiKey.from_proto(k) for k in resp.keys]


async def revoke_api_key(client: ApiKeyClient, id: str) -> None:
    """See :meth:`spindle.client.Client.revoke_api_key`."""
    await client._rpc("RevokeApiKey", svc.RevokeApiKeyRequest(id=id), not_found="rpc")


__all__ = ["ApiKey", "ApiKeyClient", "MetadataStub", "check_api_key", "create_api_key", "create_request",
           "list_api_keys", "revoke_api_key"]
