"""The SQLite store's visibility reads: list and count queries (compiled by ``spindle.controlplane.visibility``),
and closed runs for retention."""

from __future__ import annotations

from collections.abc import Sequence

from ._model import VisibilityRow
from ._sqlite_reads import SqliteReads
from ._sqlite_schema import VIS_COLUMNS


class SqliteVisibility:
    """Reads of the ``visibility`` table (its writes are mutations: ``_sqlite_mutation``)."""

    def __init__(self, reads: SqliteReads) -> None:
        self._reads = reads

    async def query_visibility(
        self, namespace_id: str, where: str, params: dict[str, object], order_by: str, limit: int, offset: int
    ) -> list[VisibilityRow]:
        sql = f"SELECT {VIS_COLUMNS} FROM visibility WHERE namespace_id = :__ns"
        if where:
            sql += f" AND ({where})"
        sql += f" ORDER BY {order_by or 'start_time_ms DESC, run_id'} LIMIT :__limit OFFSET :__offset"
        p = dict(params)
        p.update({"__ns": namespace_id, "__limit": limit, "__offset": offset})
        rows = await self._reads.read(lambda c: c.execute(sql, p).fetchall())
        return [VisibilityRow(*r) for r in rows]

    async def count_visibility(
        self, namespace_id: str, where: str, params: dict[str, object], group_by: Sequence[str]
    ) -> list[tuple[tuple[object, ...], int]]:
        cols = ", ".join(group_by)
        sql = f"SELECT {cols + ', ' if cols else ''}COUNT(*) FROM visibility WHERE namespace_id = :__ns"
        if where:
            sql += f" AND ({where})"
        if cols:
            sql += f" GROUP BY {cols}"
        p = dict(params)
        p["__ns"] = namespace_id
        rows = await self._reads.read(lambda c: c.execute(sql, p).fetchall())
        return [(tuple(r[:-1]), int(r[-1])) for r in rows]

    async def list_closed_before(self, namespace_id: str, close_before_ms: int, limit: int) -> list[VisibilityRow]:
        rows = await self._reads.read(
            lambda c: c.execute(
                f"SELECT {VIS_COLUMNS} FROM visibility WHERE namespace_id=? AND close_time_ms IS NOT NULL "
                "AND close_time_ms < ? ORDER BY close_time_ms LIMIT ?",
                (namespace_id, close_before_ms, limit),
            ).fetchall()
        )
        return [VisibilityRow(*r) for r in rows]


__all__ = ["SqliteVisibility"]
