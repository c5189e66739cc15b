"""The Spanner store's Nexus endpoint registry (issue 30): one row per endpoint id, its name unique (a unique
index), written optimistically."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from ._interface import NexusEndpointRow
from ._model import ConditionFailedError
from ._spanner_codec import dec, enc

Query = Callable[[str, "Mapping[str, Any] | None"], Awaitable[list[list[Any]]]]
Transaction = Callable[[Callable[[Any], Any]], Awaitable[Any]]
_COLUMNS = ["Id", "Name", "Version", "Data"]
_SELECT = "SELECT Id, Name, Version, Data FROM NexusEndpoints"


class SpannerNexusEndpoints:
    """Reads and optimistic writes of the ``NexusEndpoints`` table (schema version 8)."""

    def __init__(self, query: Query, txn: Transaction) -> None:
        self._query = query
        self._txn = txn

    async def create_nexus_endpoint(self, row: NexusEndpointRow) -> None:
        from google.cloud.spanner_v1 import KeySet

        def run(txn: Any) -> None:
            if list(txn.read("NexusEndpoints", ["Version"], KeySet(keys=[[row.id]]))) or _named(txn, row.name, ""):
                raise ConditionFailedError(f"a Nexus endpoint with id {row.id!r} or name {row.name!r} exists")
            txn.insert("NexusEndpoints", _COLUMNS, [[row.id, row.name, 1, enc(row.data)]])

        await self._txn(run)
        row.version = 1

    async def get_nexus_endpoint(self, endpoint_id: str = "", *, name: str = "") -> NexusEndpointRow | None:
        if endpoint_id:
            rows = await self._query(f"{_SELECT} WHERE Id = @id", {"id": endpoint_id})
        else:
            rows = await self._query(f"{_SELECT} WHERE Name = @n", {"n": name})
        return _row(rows[0]) if rows else None

    async def update_nexus_endpoint(self, row: NexusEndpointRow, expected_version: int) -> None:
        from google.cloud.spanner_v1 import KeySet

        new_version = expected_version + 1

        def run(txn: Any) -> None:
            found = list(txn.read("NexusEndpoints", ["Version"], KeySet(keys=[[row.id]])))
            stored = int(found[0][0]) if found else 0
            if not found or stored != expected_version:
                raise ConditionFailedError(f"Nexus endpoint {row.id!r} changed concurrently (version {stored}, "
                                           f"expected {expected_version})")
            if _named(txn, row.name, row.id):
                raise ConditionFailedError(f"another Nexus endpoint is named {row.name!r}")
            txn.update("NexusEndpoints", _COLUMNS, [[row.id, row.name, new_version, enc(row.data)]])

        await self._txn(run)
        row.version = new_version

    async def delete_nexus_endpoint(self, endpoint_id: str, expected_version: int) -> None:
        from google.cloud.spanner_v1 import KeySet

        def run(txn: Any) -> None:
            found = list(txn.read("NexusEndpoints", ["Version"], KeySet(keys=[[endpoint_id]])))
            if not found or int(found[0][0]) != expected_version:
                raise ConditionFailedError(f"Nexus endpoint {endpoint_id!r} changed concurrently (or is gone)")
            txn.delete("NexusEndpoints", KeySet(keys=[[endpoint_id]]))

        await self._txn(run)

    async def list_nexus_endpoints(self, *, after_name: str = "", limit: int = 1000) -> list[NexusEndpointRow]:
        rows = await self._query(f"{_SELECT} WHERE Name > @a ORDER BY Name LIMIT @l", {"a": after_name, "l": limit})
        return [_row(r) for r in rows]


def _named(txn: Any, name: str, other_than: str) -> bool:
    """Whether an endpoint other than ``other_than`` is named ``name`` (read in the transaction)."""
    rows = list(txn.execute_sql("SELECT Id FROM NexusEndpoints WHERE Name = @n", params={"n": name}))
    return any(r[0] != other_than for r in rows)


def _row(r: list[Any]) -> NexusEndpointRow:
    return NexusEndpointRow(id=r[0], name=r[1], version=int(r[2]), data=dec(r[3]))


__all__ = ["SpannerNexusEndpoints"]
