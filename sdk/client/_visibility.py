"""Visibility from the client: listing and counting the executions a query matches.

``client.list_workflows`` / ``list_workflows_page`` / ``count_workflows`` /
``count_workflows_by`` delegate to the functions here (the public methods, their
signatures and their documentation stay on the client). A listed row's payloads (memo,
search attributes) are decoded by the client's codec chain before they are converted.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any, Protocol

from google.protobuf.message import Message

from spindle.api import service_pb2 as svc
from spindle.client._workflow_description import WorkflowExecutionDescription, describe_execution
from spindle.converter._data_converter import DataConverter

__all__ = ["VisibilityClient", "count_workflows", "count_workflows_by", "list_workflows", "list_workflows_page"]


class VisibilityClient(Protocol):
    """What listing and counting use of a :class:`spindle.client.Client` (which imports this module)."""

    namespace: str
    data_converter: DataConverter

    async def _rpc(self, method: str, request: Message, *, timeout: float | None = None,
                   not_found: str = "workflow") -> Any: ...

    async def _decode(self, msg: Message, workflow_id: str = "") -> None: ...


async def list_workflows(client: VisibilityClient, query: str, *, page_size: int
                         ) -> AsyncIterator[WorkflowExecutionDescription]:
    """See :meth:`spindle.client.Client.list_workflows`: every page, one page asked at a time."""
    token: bytes | None = None
    while True:
        rows, token = await list_workflows_page(client, query, page_size=page_size, next_page_token=token)
        for row in rows:
            yield row
        if token is None:
            return


async def list_workflows_page(client: VisibilityClient, query: str, *, page_size: int, next_page_token: bytes | None
                              ) -> tuple[list[WorkflowExecutionDescription], bytes | None]:
    """See :meth:`spindle.client.Client.list_workflows_page` (the server's empty token becomes None)."""
    req = svc.ListWorkflowExecutionsRequest(namespace=client.namespace, page_size=page_size,
                                            next_page_token=next_page_token or b"", query=query)
    resp = await client._rpc("ListWorkflowExecutions", req)
    await client._decode(resp)
    rows = [describe_execution(client.data_converter, info) for info in resp.executions]
    return rows, (resp.next_page_token or None)


async def count_workflows(client: VisibilityClient, query: str) -> int:
    """See :meth:`spindle.client.Client.count_workflows`."""
    resp = await client._rpc("CountWorkflowExecutions",
                             svc.CountWorkflowExecutionsRequest(namespace=client.namespace, query=query))
    return int(resp.count)


async def count_workflows_by(client: VisibilityClient, query: str, group_by: str | Sequence[str]) -> dict[Any, int]:
    """See :meth:`spindle.client.Client.count_workflows_by`: ``query`` with ``GROUP BY`` the fields, in one call.

    Raises:
        ValueError: ``group_by`` is empty or names an empty field (before any call).
    """
    fields = [group_by] if isinstance(group_by, str) else list(group_by)
    if not fields or not all(fields):
        raise ValueError("group_by: name at least one field")
    text = f"{query} GROUP BY {', '.join(fields)}" if query.strip() else f"GROUP BY {', '.join(fields)}"
    resp = await client._rpc("CountWorkflowExecutions",
                             svc.CountWorkflowExecutionsRequest(namespace=client.namespace, query=text))
    out: dict[Any, int] = {}
    for group in resp.groups:
        values = tuple(group.group_values)
        key: Any = values[0] if isinstance(group_by, str) and values else values
        out[key] = out.get(key, 0) + int(group.count)
    return out
