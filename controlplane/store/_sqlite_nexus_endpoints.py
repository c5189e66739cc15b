"""The SQLite store's Nexus endpoint registry (issue 30): one row per endpoint id, its name unique, written
optimistically."""

from __future__ import annotations

import sqlite3

from ._interface import NexusEndpointRow
from ._model import ConditionFailedError
from ._sqlite_group_commit import GroupCommitWriter
from ._sqlite_reads import SqliteReads

_SELECT = "SELECT id, name, version, data FROM nexus_endpoints"


class SqliteNexusEndpoints:
    """Reads and optimistic writes of the ``nexus_endpoints`` table (schema version 8)."""

    def __init__(self, reads: SqliteReads, writer: GroupCommitWriter) -> None:
        self._reads = reads
        self._writer = writer

    async def create_nexus_endpoint(self, row: NexusEndpointRow) -> None:
        def run(conn: sqlite3.Connection) -> None:
            try:
                conn.execute("INSERT INTO nexus_endpoints (id, name, version, data) VALUES (?,?,?,?)",
                             (row.id, row.name, 1, row.data))
            except sqlite3.IntegrityError as e:
                raise ConditionFailedError(f"a Nexus endpoint with id {row.id!r} or name {row.name!r} exists") from e

        await self._writer.write(run)
        row.version = 1

    async def get_nexus_endpoint(self, endpoint_id: str = "", *, name: str = "") -> NexusEndpointRow | None:
        where, arg = ("id=?", endpoint_id) if endpoint_id else ("name=?", name)
        r = await self._reads.read(lambda c: c.execute(f"{_SELECT} WHERE {where}", (arg,)).fetchone())
        return _row(r) if r else None

    async def update_nexus_endpoint(self, row: NexusEndpointRow, expected_version: int) -> None:
        new_version = expected_version + 1

        def run(conn: sqlite3.Connection) -> None:
            try:
                cur = conn.execute("UPDATE nexus_endpoints SET version=?, name=?, data=? WHERE id=? AND version=?",
                                   (new_version, row.name, row.data, row.id, expected_version))
            except sqlite3.IntegrityError as e:
                raise ConditionFailedError(f"another Nexus endpoint is named {row.name!r}") from e
            if cur.rowcount != 1:
                raise ConditionFailedError(f"Nexus endpoint {row.id!r} changed concurrently (or is gone)")

        await self._writer.write(run)
        row.version = new_version

    async def delete_nexus_endpoint(self, endpoint_id: str, expected_version: int) -> None:
        def run(conn: sqlite3.Connection) -> None:
            cur = conn.execute("DELETE FROM nexus_endpoints WHERE id=? AND version=?", (endpoint_id, expected_version))
            if cur.rowcount != 1:
                raise ConditionFailedError(f"Nexus endpoint {endpoint_id!r} changed concurrently (or is gone)")

        await self._writer.write(run)

    async def list_nexus_endpoints(self, *, after_name: str = "", limit: int = 1000) -> list[NexusEndpointRow]:
        rows = await self._reads.read(lambda c: c.execute(
            f"{_SELECT} WHERE name > ? ORDER BY name LIMIT ?", (after_name, limit)).fetchall())
        return [_row(r) for r in rows]


def _row(r: tuple[object, ...]) -> NexusEndpointRow:
    return NexusEndpointRow(id=str(r[0]), name=str(r[1]), version=int(r[2]),  # type: ignore[call-overload]
                            data=bytes(r[3]))  # type: ignore[call-overload]


__all__ = ["SqliteNexusEndpoints"]
