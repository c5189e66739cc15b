"""The SQLite store's worker deployments: one row per (namespace, deployment), written optimistically."""

from __future__ import annotations

import sqlite3

from ._model import ConditionFailedError, DeploymentRow
from ._sqlite_group_commit import GroupCommitWriter
from ._sqlite_reads import SqliteReads


class SqliteDeployments:
    """Reads and optimistic writes of the ``deployments`` table."""

    def __init__(self, reads: SqliteReads, writer: GroupCommitWriter) -> None:
        self._reads = reads
        self._writer = writer

    async def get_deployment(self, namespace_id: str, name: str) -> DeploymentRow | None:
        r = await self._reads.read(lambda c: c.execute(
            "SELECT namespace_id, name, version, doc FROM deployments WHERE namespace_id=? AND name=?",
            (namespace_id, name)).fetchone())
        return DeploymentRow(r[0], r[1], int(r[2]), r[3]) if r else None

    async def list_deployments(self, namespace_id: str, after_name: str, limit: int) -> list[DeploymentRow]:
        rows = await self._reads.read(lambda c: c.execute(
            "SELECT namespace_id, name, version, doc FROM deployments WHERE namespace_id=? AND name>? "
            "ORDER BY name LIMIT ?", (namespace_id, after_name, limit)).fetchall())
        return [DeploymentRow(r[0], r[1], int(r[2]), r[3]) for r in rows]

    async def put_deployment(self, row: DeploymentRow, expected_version: int) -> None:
        new_version = expected_version + 1

        def run(conn: sqlite3.Connection) -> None:
            if expected_version == 0:
                try:
                    conn.execute("INSERT INTO deployments (namespace_id, name, version, doc) VALUES (?,?,?,?)",
                                 (row.namespace_id, row.name, new_version, row.doc))
                except sqlite3.IntegrityError as e:
                    raise ConditionFailedError(f"deployment {row.name!r} exists already") from e
                return
            cur = conn.execute("UPDATE deployments SET version=?, doc=? WHERE namespace_id=? AND name=? AND version=?",
                               (new_version, row.doc, row.namespace_id, row.name, expected_version))
            if cur.rowcount != 1:
                raise ConditionFailedError(f"deployment {row.name!r} changed concurrently (or is gone)")

        await self._writer.write(run)
        row.version = new_version

    async def delete_deployments(self, namespace_id: str) -> None:
        await self._writer.write(lambda c: c.execute("DELETE FROM deployments WHERE namespace_id=?", (namespace_id,)))


__all__ = ["SqliteDeployments"]
