"""The Spanner store's visibility reads: list and count queries (compiled by ``spindle.controlplane.visibility``
for the Spanner dialect), and closed runs for retention."""

from __future__ import annotations

import json

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from ._model import VisibilityRow
from ._spanner_codec import VIS_COLUMNS, vis_from_row

#: ``query(sql, params)``: rows of a read-only snapshot (``SpannerStore._query``).
Query = Callable[..., Awaitable[list[list[Any]]]]


class SpannerVisibility:
    """Reads of the ``Visibility`` table (its writes are mutations: ``_spanner_write``)."""

    def __init__(self, query: Query) -> None:
        self._query = query

    async def query_visibility(self, namespace_id: str, where: str, params: dict[str, object], order_by: str, limit: int,
                               offset: int) -> list[VisibilityRow]:
        sql = f"SELECT {', '.join(VIS_COLUMNS)} FROM Visibility WHERE namespace_id = @vns"
        if where:
            sql += f" AND ({where})"
        sql += f" ORDER BY {order_by or 'start_time_ms DESC, run_id'} LIMIT @vlimit OFFSET @voffset"
        rows = await self._query(sql, {**params, "vns": namespace_id, "vlimit": limit, "voffset": offset})
        return [vis_from_row(r) for r in rows]

    async def count_visibility(self, namespace_id: str, where: str, params: dict[str, object],
                               group_by: Sequence[str]) -> list[tuple[tuple[object, ...], int]]:
        cols = ", ".join(group_by)
        sql = f"SELECT {cols + ', ' if cols else ''}COUNT(*) FROM Visibility WHERE namespace_id = @vns"
        if where:
            sql += f" AND ({where})"
        if cols:
            sql += f" GROUP BY {cols}"
        rows = await self._query(sql, {**params, "vns": namespace_id})
        return [(tuple(_plain(v) for v in r[:-1]), int(r[-1])) for r in rows]

    async def list_closed_before(self, namespace_id: str, close_before_ms: int, limit: int) -> list[VisibilityRow]:
        rows = await self._query(
            f"SELECT {', '.join(VIS_COLUMNS)} FROM Visibility WHERE namespace_id = @vns AND close_time_ms IS NOT NULL "
            "AND close_time_ms < @b ORDER BY close_time_ms LIMIT @l", {"vns": namespace_id, "b": close_before_ms, "l": limit})
        return [vis_from_row(r) for r in rows]


def _plain(v: Any) -> object:
    """A group-by value as SQLite would return it (JSON values become Python values)."""
    if v is None or isinstance(v, (str, int, float, bool)):
        return v
    try:
        return json.loads(json.dumps(v))
    except (TypeError, ValueError):
        return str(v)


__all__ = ["SpannerVisibility"]
