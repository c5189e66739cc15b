"""The SQLite store's reads of executions: current runs, execution rows, histories, blob references."""

from __future__ import annotations

import sqlite3

from ._model import CurrentRow, ExecutionRow, LoadedExecution
from ._sqlite_reads import SqliteReads
from ._sqlite_schema import EXEC_COLUMNS


class SqliteExecutions:
    """Reads of runs (their writes are mutations: ``_sqlite_mutation``)."""

    def __init__(self, reads: SqliteReads) -> None:
        self._reads = reads

    async def get_current(self, namespace_id: str, workflow_id: str) -> CurrentRow | None:
        # A primary-key lookup costs microseconds: run it on the calling thread rather than
        # paying a thread hop (this is on the path of every start).
        r = self._reads.point_reader().execute(
            "SELECT namespace_id, workflow_id, run_id, status, start_request_id FROM current_executions "
            "WHERE namespace_id=? AND workflow_id=?",
            (namespace_id, workflow_id),
        ).fetchone()
        return CurrentRow(*r) if r else None

    async def get_execution_row(self, namespace_id: str, workflow_id: str, run_id: str) -> ExecutionRow | None:
        r = await self._reads.read(lambda c: exec_row(c, namespace_id, workflow_id, run_id))
        return r

    async def load_execution(self, namespace_id: str, workflow_id: str, run_id: str) -> LoadedExecution | None:
        def run(c: sqlite3.Connection) -> LoadedExecution | None:
            c.execute("BEGIN")
            try:
                row = exec_row(c, namespace_id, workflow_id, run_id)
                if row is None:
                    return None
                events = [
                    r[0]
                    for r in c.execute(
                        "SELECT data FROM events WHERE namespace_id=? AND workflow_id=? AND run_id=? ORDER BY event_id",
                        (namespace_id, workflow_id, run_id),
                    )
                ]
                buffered = [
                    r[0]
                    for r in c.execute(
                        "SELECT data FROM buffered_events WHERE namespace_id=? AND workflow_id=? AND run_id=? ORDER BY seq",
                        (namespace_id, workflow_id, run_id),
                    )
                ]
                return LoadedExecution(row, events, buffered)
            finally:
                c.execute("COMMIT")

        return await self._reads.read(run)

    async def read_events(
        self, namespace_id: str, workflow_id: str, run_id: str, first_event_id: int, max_events: int
    ) -> list[tuple[int, bytes]]:
        return await self._reads.read(
            lambda c: c.execute(
                "SELECT event_id, data FROM events WHERE namespace_id=? AND workflow_id=? AND run_id=? AND event_id>=? "
                "ORDER BY event_id LIMIT ?",
                (namespace_id, workflow_id, run_id, first_event_id, max_events),
            ).fetchall()
        )

    async def list_running_executions(self, shard_id: int) -> list[ExecutionRow]:
        rows = await self._reads.read(
            lambda c: c.execute(
                f"SELECT {EXEC_COLUMNS} FROM executions WHERE shard_id=? AND status=1",
                (shard_id,),
            ).fetchall()
        )
        return [ExecutionRow(*r) for r in rows]

    async def count_running(self, namespace_id: str) -> int:
        r = await self._reads.read(
            lambda c: c.execute("SELECT COUNT(*) FROM current_executions WHERE namespace_id=? AND status=1", (namespace_id,)).fetchone()
        )
        return int(r[0])

    async def list_blob_refs(self, namespace_id: str, workflow_id: str, run_id: str) -> list[str]:
        rows = await self._reads.read(lambda c: c.execute(
            "SELECT blob_key FROM blob_refs WHERE namespace_id=? AND workflow_id=? AND run_id=? ORDER BY blob_key",
            (namespace_id, workflow_id, run_id)).fetchall())
        return [r[0] for r in rows]

    async def blob_is_referenced(self, namespace_id: str, blob_key: str) -> bool:
        r = await self._reads.read(lambda c: c.execute(
            "SELECT 1 FROM blob_refs WHERE namespace_id=? AND blob_key=? LIMIT 1", (namespace_id, blob_key)).fetchone())
        return r is not None

    async def list_running(self, namespace_id: str, limit: int) -> list[CurrentRow]:
        rows = await self._reads.read(
            lambda c: c.execute(
                "SELECT namespace_id, workflow_id, run_id, status, start_request_id FROM current_executions "
                "WHERE namespace_id=? AND status=1 LIMIT ?",
                (namespace_id, limit),
            ).fetchall()
        )
        return [CurrentRow(*r) for r in rows]


def exec_row(c: sqlite3.Connection, ns: str, wid: str, rid: str) -> ExecutionRow | None:
    r = c.execute(
        f"SELECT {EXEC_COLUMNS} FROM executions WHERE namespace_id=? AND workflow_id=? AND run_id=?",
        (ns, wid, rid),
    ).fetchone()
    return ExecutionRow(*r) if r else None


__all__ = ["SqliteExecutions", "exec_row"]
