"""Visibility from the client: listing and counting the executions a query matches.

``client.list_workflows`` returns a :class:`WorkflowExecutionAsyncIterator` (temporalio's
name): it reads one page at a time, stops after ``limit`` rows, and its
:meth:`~WorkflowExecutionAsyncIterator.map_histories` streams the listed runs' histories.
``list_workflows_page`` / ``count_workflows`` /
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
from spindle.common._history import History
from spindle.converter._data_converter import DataConverter

__all__ = ["VisibilityClient", "WorkflowExecutionAsyncIterator", "count_workflows", "count_workflows_by",
           "list_workflows_page"]


class VisibilityClient(Protocol):
    """What listing and counting use of a :class:`spindle.client.Client` (which imports this module)."""

    namespace: str
    data_converter: DataConverter

    async def _rpc(self, method: str, request: Message, *, timeout: float | None = None,
                   not_found: str = "workflow") -> Any: ...

    async def _decode(self, msg: Message, workflow_id: str = "") -> None: ...


class _HandleClient(VisibilityClient, Protocol):
    """What :meth:`WorkflowExecutionAsyncIterator.map_histories` also uses: a handle on a listed run."""

    def get_workflow_handle(self, workflow_id: str, *, run_id: str | None = None) -> Any: ...


class WorkflowExecutionAsyncIterator:
    """The executions a visibility query matches, read one page at a time (``async for wf in ...``).

    What ``client.list_workflows(query, limit=..., page_size=...)`` returns (temporalio's
    ``WorkflowExecutionAsyncIterator``). Nothing is read until the iteration starts; each
    ``ListWorkflowExecutions`` call asks for at most ``page_size`` rows (fewer when ``limit``
    leaves fewer to go), and the next page is asked for only when the current one is used
    up. With ``limit`` the iteration ends after that many rows. Iterate it once.

    Raises (from the iteration):
        RPCError: the query is malformed (``status="INVALID_ARGUMENT"``; the message is the server's,
            with the position of the error).
    """

    def __init__(self, client: _HandleClient, query: str, *, page_size: int = 1000, limit: int | None = None,
                 next_page_token: bytes | None = None) -> None:
        if page_size < 1:
            raise ValueError(f"page_size must be at least 1, got {page_size}")
        if limit is not None and limit < 0:
            raise ValueError(f"limit must not be negative, got {limit}")
        self._client = client
        self._query = query
        self._page_size = page_size
        self._limit = limit
        self._yielded = 0
        self._page: list[WorkflowExecutionDescription] = []
        self._index = 0
        self._token = next_page_token
        self._started = False
        self._done = False

    @property
    def current_page(self) -> list[WorkflowExecutionDescription]:
        """The rows of the page read last (empty before the first read)."""
        return self._page

    @property
    def next_page_token(self) -> bytes | None:
        """The token of the page after :attr:`current_page` (None once the last page was read)."""
        return self._token

    def __aiter__(self) -> WorkflowExecutionAsyncIterator:
        return self

    async def __anext__(self) -> WorkflowExecutionDescription:
        if self._limit is not None and self._yielded >= self._limit:
            raise StopAsyncIteration
        while self._index >= len(self._page):
            if self._done or (self._started and self._token is None):
                self._done = True
                raise StopAsyncIteration
            await self._fetch_next_page()
        row = self._page[self._index]
        self._index += 1
        self._yielded += 1
        return row

    async def _fetch_next_page(self) -> None:
        size = self._page_size
        if self._limit is not None:
            size = max(1, min(size, self._limit - self._yielded))
        self._page, self._token = await list_workflows_page(self._client, self._query, page_size=size,
                                                           next_page_token=self._token)
        self._index = 0
        self._started = True

    async def map_histories(self) -> AsyncIterator[History]:
        """The full event history of each listed run, in listing order, fetched one run at a time.

        ``Replayer.replay_workflows(client.list_workflows(q).map_histories())`` replays what a query
        selects while holding one page of rows and one history in memory. Payloads are decoded by the
        client's codec chain, as ``handle.fetch_history()`` does.

        Raises:
            RPCError: the query is malformed; WorkflowNotFoundError: a listed run was deleted (its
                retention ran out) before its history was read.
        """
        async for row in self:
            yield await self._client.get_workflow_handle(row.id, run_id=row.run_id).fetch_history()


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
