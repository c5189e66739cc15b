"""Namespace administration behind :class:`~spindle.client.Client`: :class:`NamespaceDescription` and the calls.

``client.create_namespace`` / ``describe_namespace`` / ``update_namespace`` / ``list_namespaces`` /
``delete_namespace`` / ``add_search_attributes`` delegate to the functions here (the public
methods, their signatures and their documentation stay on the client). Search attribute types
travel as the wire's ``SearchAttributeType`` numbers and are shown as Temporal's names
(``"Keyword"``, ``"KeywordList"`` ...).
"""

from __future__ import annotations

import dataclasses
import datetime

from collections.abc import Mapping
from typing import Any, Protocol

from google.protobuf.message import Message

from spindle import exceptions as E
from spindle.api import service_pb2 as svc
from spindle.client._rpc import duration_ms, time_from_ms

__all__ = [
    "NamespaceClient",
    "NamespaceDescription",
    "add_search_attributes",
    "create_namespace",
    "delete_namespace",
    "describe_namespace",
    "list_namespaces",
    "search_attribute_type_name",
    "search_attribute_type_value",
    "update_namespace",
]

_SA_PREFIX = "SEARCH_ATTRIBUTE_TYPE_"


class NamespaceClient(Protocol):
    """What namespace calls use of a :class:`spindle.client.Client` (which imports this module)."""

    namespace: str

    async def _rpc(self, method: str, request: Message, *, timeout: float | None = None,
                   not_found: str = "workflow") -> Any: ...


def search_attribute_type_value(t: Any) -> Any:
    """The wire number of a search attribute type given as a number or a name in any spelling.

    ``"KeywordList"``, ``"keyword_list"``, ``"KEYWORD_LIST"`` and
    ``"SEARCH_ATTRIBUTE_TYPE_KEYWORD_LIST"`` all name the same type.

    Raises:
        ValueError: an unknown type name (the message lists the known ones).
    """
    if isinstance(t, int):
        return t
    s = str(t)
    if s.startswith(_SA_PREFIX):
        key = s
    else:
        # "KeywordList" / "keyword_list" / "KEYWORD_LIST" -> SEARCH_ATTRIBUTE_TYPE_KEYWORD_LIST
        if "_" in s or s.isupper() or s.islower():
            snake = s
        else:
            snake = "".join("_" + c if c.isupper() and i else c for i, c in enumerate(s))
        key = _SA_PREFIX + snake.upper()
    try:
        return int(svc.SearchAttributeType.Value(key))
    except ValueError:
        allowed = "Keyword, Text, Int, Double, Bool, Datetime, KeywordList"
        raise ValueError(f"unknown search attribute type {t!r} (use one of: {allowed})") from None


def search_attribute_type_name(v: int) -> str:
    """Temporal's name of a search attribute type's wire number (``"KeywordList"``)."""
    name = svc.SearchAttributeType.Name(v).removeprefix(_SA_PREFIX)
    return "".join(part.capitalize() for part in name.split("_"))


def _type_values(search_attributes: Mapping[str, Any]) -> dict[str, Any]:
    return {k: search_attribute_type_value(v) for k, v in search_attributes.items()}


@dataclasses.dataclass(frozen=True)
class NamespaceDescription:
    """A namespace as ``describe_namespace``/``list_namespaces`` report it.

    ``search_attributes`` maps custom attribute names to type names such as
    ``"Keyword"``. ``rps_limit`` is the namespace's request rate limit (requests per
    second per server process; 0 = unlimited).
    """

    name: str
    id: str
    description: str
    owner_email: str
    retention: datetime.timedelta | None
    search_attributes: Mapping[str, str]
    archival_uri: str
    state: str
    create_time: datetime.datetime | None
    update_time: datetime.datetime | None
    rps_limit: float = 0.0

    @classmethod
    def from_proto(cls, info: svc.NamespaceInfo) -> NamespaceDescription:
        """Build from the wire message."""
        return cls(
            name=info.name,
            id=info.id,
            description=info.description,
            owner_email=info.owner_email,
            retention=datetime.timedelta(milliseconds=info.retention_ms) if info.retention_ms else None,
            search_attributes={k: search_attribute_type_name(v) for k, v in info.search_attributes.items()},
            archival_uri=info.archival_uri,
            state=info.state,
            create_time=time_from_ms(info.create_time_ms),
            update_time=time_from_ms(info.update_time_ms),
            rps_limit=info.rps_limit,
        )


async def _call_on_namespace(client: NamespaceClient, method: str, request: Message) -> Any:
    """Call ``method``; a NOT_FOUND is the namespace's (:class:`NamespaceNotFoundError`) whatever its message."""
    try:
        return await client._rpc(method, request, not_found="rpc")
    except E.RPCError as e:
        if e.status == "NOT_FOUND" and not isinstance(e, E.NamespaceNotFoundError):
            raise E.NamespaceNotFoundError(e.message) from e
        raise


async def create_namespace(client: NamespaceClient, name: str, *, retention: datetime.timedelta | None,
                           description: str, owner_email: str, search_attributes: Mapping[str, Any] | None,
                           archival_uri: str, rps_limit: float | None) -> NamespaceDescription:
    """See :meth:`spindle.client.Client.create_namespace`."""
    req = svc.CreateNamespaceRequest(
        name=name, description=description, owner_email=owner_email, retention_ms=duration_ms(retention),
        search_attributes=_type_values(search_attributes or {}), archival_uri=archival_uri)
    if rps_limit is not None:
        req.rps_limit = rps_limit
    resp = await client._rpc("CreateNamespace", req, not_found="rpc")
    return NamespaceDescription.from_proto(resp.namespace_info)


async def describe_namespace(client: NamespaceClient, name: str | None) -> NamespaceDescription:
    """See :meth:`spindle.client.Client.describe_namespace`."""
    req = svc.DescribeNamespaceRequest(name=name or client.namespace)
    resp = await _call_on_namespace(client, "DescribeNamespace", req)
    return NamespaceDescription.from_proto(resp.namespace_info)


async def update_namespace(client: NamespaceClient, name: str | None, *, description: str | None,
                           owner_email: str | None, retention: datetime.timedelta | None,
                           search_attributes: Mapping[str, Any] | None, archival_uri: str | None,
                           rps_limit: float | None) -> NamespaceDescription:
    """See :meth:`spindle.client.Client.update_namespace`: only the fields given are sent (and named in the mask)."""
    req = svc.UpdateNamespaceRequest(name=name or client.namespace)
    if description is not None:
        req.description = description
        req.update_mask.append("description")
    if owner_email is not None:
        req.owner_email = owner_email
        req.update_mask.append("owner_email")
    if retention is not None:
        req.retention_ms = duration_ms(retention)
        req.update_mask.append("retention")
    if search_attributes is not None:
        req.search_attributes.update(_type_values(search_attributes))
        req.update_mask.append("search_attributes")
    if archival_uri is not None:
        req.archival_uri = archival_uri
        req.update_mask.append("archival_uri")
    if rps_limit is not None:
        req.rps_limit = rps_limit
        req.update_mask.append("rps_limit")
    resp = await _call_on_namespace(client, "UpdateNamespace", req)
    return NamespaceDescription.from_proto(resp.namespace_info)


async def list_namespaces(client: NamespaceClient) -> list[NamespaceDescription]:
    """See :meth:`spindle.client.Client.list_namespaces` (reads every page)."""
    out: list[NamespaceDescription] = []
    token = b""
    while True:
        resp = await client._rpc("ListNamespaces", svc.ListNamespacesRequest(page_size=100, next_page_token=token),
                                 not_found="rpc")
        out.extend(NamespaceDescription.from_proto(n) for n in resp.namespaces)
        token = resp.next_page_token
        if not token:
            return out


async def delete_namespace(client: NamespaceClient, name: str, *, force: bool) -> int:
    """See :meth:`spindle.client.Client.delete_namespace`."""
    resp = await _call_on_namespace(client, "DeleteNamespace", svc.DeleteNamespaceRequest(name=name, force=force))
    return int(resp.terminated_executions)


async def add_search_attributes(client: NamespaceClient, search_attributes: Mapping[str, Any]) -> None:
    """See :meth:`spindle.client.Client.add_search_attributes` (in the client's namespace)."""
    req = svc.AddSearchAttributesRequest(namespace=client.namespace, search_attributes=_type_values(search_attributes))
    await client._rpc("AddSearchAttributes", req, not_found="rpc")
