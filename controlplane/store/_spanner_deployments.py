"""The Spanner store's worker deployments: one row per (namespace, deployment), written optimistically."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from ._model import ConditionFailedError, DeploymentRow

T = TypeVar("T")
Query = Callable[[str, "Mapping[str, Any] | None"], Awaitable[list[list[Any]]]]
Transaction = Callable[[Callable[[Any], Any]], Awaitable[Any]]
_COLUMNS = ["NamespaceId", "Name", "Version", "Doc"]


class SpannerDeployments:
    """Reads and optimistic writes of the ``WorkerDeployments`` table (schema version 6)."""

    def __init__(self, query: Query, txn: Transaction) -> None:
        self._query = query
        self._txn = txn

    async def get_deployment(self, namespace_id: str, name: str) -> DeploymentRow | None:
        rows = await self._query("SELECT NamespaceId, Name, Version, Doc FROM WorkerDeployments "
                                 "WHERE NamespaceId = @ns AND Name = @n", {"ns": namespace_id, "n": name})
        return _row(rows[0]) if rows else None

    async def list_deployments(self, namespace_id: str, after_name: str, limit: int) -> list[DeploymentRow]:
        rows = await self._query("SELECT NamespaceId, Name, Version, Doc FROM WorkerDeployments "
                                 "WHERE NamespaceId = @ns AND Name > @a ORDER BY Name LIMIT @l",
                                 {"ns": namespace_id, "a": after_name, "l": limit})
        return [_row(r) for r in rows]

    async def put_deployment(self, row: DeploymentRow, expected_version: int) -> None:
        from google.cloud.spanner_v1 import KeySet

        new_version = expected_version + 1

        def run(txn: Any) -> None:
            found = list(txn.read("WorkerDeployments", ["Version"], KeySet(keys=[[row.namespace_id, row.name]])))
            stored = int(found[0][0]) if found else 0
            if stored != expected_version or (expected_version == 0 and found):
                raise ConditionFailedError(f"deployment {row.name!r} changed concurrently (version {stored}, "
                                           f"expected {expected_version})")
            values = [[row.namespace_id, row.name, new_version, row.doc]]
            (txn.insert if expected_version == 0 else txn.update)("WorkerDeployments", _COLUMNS, values)

        await self._txn(run)
        row.version = new_version

    async def delete_deployments(self, namespace_id: str) -> None:
        from google.cloud.spanner_v1 import KeyRange, KeySet

        await self._txn(lambda txn: txn.delete("WorkerDeployments", KeySet(ranges=[
            KeyRange(start_closed=[namespace_id], end_closed=[namespace_id])])))


def _row(r: list[Any]) -> DeploymentRow:
    return DeploymentRow(namespace_id=r[0], name=r[1], version=int(r[2]), doc=str(r[3]))


__all__ = ["SpannerDeployments"]
