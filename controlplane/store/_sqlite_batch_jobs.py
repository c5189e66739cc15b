"""The SQLite store's server-side batch jobs (issue 26: erasure): one row per (namespace, job id), written
optimistically."""

from __future__ import annotations

import sqlite3

from ._interface import BatchJobRow
from ._model import ConditionFailedError
from ._sqlite_group_commit import GroupCommitWriter
from ._sqlite_reads import SqliteReads

_SELECT = "SELECT namespace_id, job_id, version, state, data FROM batch_jobs"


class SqliteBatchJobs:
    """Reads and optimistic writes of the ``batch_jobs`` table (schema version 7)."""

    def __init__(self, reads: SqliteReads, writer: GroupCommitWriter) -> None:
        self._reads = reads
        self._writer = writer

    async def create_batch_job(self, row: BatchJobRow) -> None:
        def run(conn: sqlite3.Connection) -> None:
            try:
                conn.execute("INSERT INTO batch_jobs (namespace_id, job_id, version, state, data) VALUES (?,?,?,?,?)",
                             (row.namespace_id, row.job_id, 1, row.state, row.data))
            except sqlite3.IntegrityError as e:
                raise ConditionFailedError(f"batch job {row.job_id!r} exists already") from e

        await self._writer.write(run)
        row.version = 1

    async def get_batch_job(self, namespace_id: str, job_id: str) -> BatchJobRow | None:
        r = await self._reads.read(lambda c: c.execute(
            f"{_SELECT} WHERE namespace_id=? AND job_id=?", (namespace_id, job_id)).fetchone())
        return _row(r) if r else None

    async def update_batch_job(self, row: BatchJobRow, expected_version: int) -> None:
        new_version = expected_version + 1

        def run(conn: sqlite3.Connection) -> None:
            cur = conn.execute("UPDATE batch_jobs SET version=?, state=?, data=? WHERE namespace_id=? AND job_id=? "
                               "AND version=?", (new_version, row.state, row.data, row.namespace_id, row.job_id,
                                                 expected_version))
            if cur.rowcount != 1:
                raise ConditionFailedError(f"batch job {row.job_id!r} changed concurrently (or is gone)")

        await self._writer.write(run)
        row.version = new_version

    async def list_batch_jobs(self, *, namespace_id: str = "", state: int = 0, limit: int = 1000) -> list[BatchJobRow]:
        where: list[str] = []
        args: list[object] = []
        if namespace_id:
            where.append("namespace_id=?")
            args.append(namespace_id)
        if state:
            where.append("state=?")
            args.append(state)
        sql = f"{_SELECT}{' WHERE ' + ' AND '.join(where) if where else ''} ORDER BY namespace_id, job_id LIMIT ?"
        rows = await self._reads.read(lambda c: c.execute(sql, (*args, limit)).fetchall())
        return [_row(r) for r in rows]


def _row(r: tuple[object, ...]) -> BatchJobRow:
    return BatchJobRow(namespace_id=str(r[0]), job_id=str(r[1]), version=int(r[2]), state=int(r[3]),  # type: ignore[call-overload]
                       data=bytes(r[4]))  # type: ignore[call-overload]


__all__ = ["SqliteBatchJobs"]
