"""The Spanner store's server-side batch jobs (issue 26: erasure): one row per (namespace, job id), written
optimistically."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from ._interface import BatchJobRow
from ._model import ConditionFailedError
from ._spanner_codec import dec, enc

Query = Callable[[str, "Mapping[str, Any] | None"], Awaitable[list[list[Any]]]]
Transaction = Callable[[Callable[[Any], Any]], Awaitable[Any]]
_COLUMNS = ["NamespaceId", "JobId", "Version", "State", "Data"]
_SELECT = "SELECT NamespaceId, JobId, Version, State, Data FROM BatchJobs"


class SpannerBatchJobs:
    """Reads and optimistic writes of the ``BatchJobs`` table (schema version 7)."""

    def __init__(self, query: Query, txn: Transaction) -> None:
        self._query = query
        self._txn = txn

    async def create_batch_job(self, row: BatchJobRow) -> None:
        from google.cloud.spanner_v1 import KeySet

        def run(txn: Any) -> None:
            if list(txn.read("BatchJobs", ["Version"], KeySet(keys=[[row.namespace_id, row.job_id]]))):
                raise ConditionFailedError(f"batch job {row.job_id!r} exists already")
            txn.insert("BatchJobs", _COLUMNS, [[row.namespace_id, row.job_id, 1, row.state, enc(row.data)]])

        await self._txn(run)
        row.version = 1

    async def get_batch_job(self, namespace_id: str, job_id: str) -> BatchJobRow | None:
        rows = await self._query(f"{_SELECT} WHERE NamespaceId = @ns AND JobId = @j", {"ns": namespace_id, "j": job_id})
        return _row(rows[0]) if rows else None

    async def update_batch_job(self, row: BatchJobRow, expected_version: int) -> None:
        from google.cloud.spanner_v1 import KeySet

        new_version = expected_version + 1

        def run(txn: Any) -> None:
            found = list(txn.read("BatchJobs", ["Version"], KeySet(keys=[[row.namespace_id, row.job_id]])))
            stored = int(found[0][0]) if found else 0
            if not found or stored != expected_version:
                raise ConditionFailedError(f"batch job {row.job_id!r} changed concurrently (version {stored}, "
                                           f"expected {expected_version})")
            txn.update("BatchJobs", _COLUMNS, [[row.namespace_id, row.job_id, new_version, row.state, enc(row.data)]])

        await self._txn(run)
        row.version = new_version

    async def list_batch_jobs(self, *, namespace_id: str = "", state: int = 0, limit: int = 1000) -> list[BatchJobRow]:
        where: list[str] = []
        params: dict[str, object] = {"l": limit}
        if namespace_id:
            where.append("NamespaceId = @ns")
            params["ns"] = namespace_id
        if state:
            where.append("State = @s")
            params["s"] = state
        sql = f"{_SELECT}{' WHERE ' + ' AND '.join(where) if where else ''} ORDER BY NamespaceId, JobId LIMIT @l"
        return [_row(r) for r in await self._query(sql, params)]


def _row(r: list[Any]) -> BatchJobRow:
    return BatchJobRow(namespace_id=r[0], job_id=r[1], version=int(r[2]), state=int(r[3]), data=dec(r[4]))


__all__ = ["SpannerBatchJobs"]
