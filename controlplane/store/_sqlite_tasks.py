"""The SQLite store's reads of task queues: each shard's transfer and timer tasks, the matching backlog."""

from __future__ import annotations

from ._model import BacklogTask, TimerTask, TransferTask
from ._sqlite_reads import SqliteReads


class SqliteTasks:
    """Reads of the task tables (their writes are mutations: ``_sqlite_mutation``)."""

    def __init__(self, reads: SqliteReads) -> None:
        self._reads = reads

    async def load_transfer_tasks(self, shard_id: int, after_task_id: int, limit: int) -> list[TransferTask]:
        rows = await self._reads.read(
            lambda c: c.execute(
                "SELECT task_id, data FROM transfer_tasks WHERE shard_id=? AND task_id>? ORDER BY task_id LIMIT ?",
                (shard_id, after_task_id, limit),
            ).fetchall()
        )
        return [TransferTask(*r) for r in rows]

    async def load_timer_tasks(self, shard_id: int, until_ms: int, after: tuple[int, int], limit: int) -> list[TimerTask]:
        rows = await self._reads.read(
            lambda c: c.execute(
                "SELECT fire_time_ms, task_id, data FROM timer_tasks WHERE shard_id=? AND fire_time_ms<? "
                "AND (fire_time_ms>? OR (fire_time_ms=? AND task_id>?)) ORDER BY fire_time_ms, task_id LIMIT ?",
                (shard_id, until_ms, after[0], after[0], after[1], limit),
            ).fetchall()
        )
        return [TimerTask(*r) for r in rows]

    async def load_backlog(self, namespace_id: str, task_queue: str, kind: int, limit: int) -> list[BacklogTask]:
        rows = await self._reads.read(
            lambda c: c.execute(
                "SELECT namespace_id, task_queue, kind, shard_id, task_id, data FROM task_backlog "
                "WHERE namespace_id=? AND task_queue=? AND kind=? ORDER BY task_id LIMIT ?",
                (namespace_id, task_queue, kind, limit),
            ).fetchall()
        )
        return [BacklogTask(*r) for r in rows]

    async def list_backlog_queues(self) -> list[tuple[str, str, int]]:
        rows = await self._reads.read(lambda c: c.execute("SELECT DISTINCT namespace_id, task_queue, kind FROM task_backlog").fetchall())
        return [tuple(r) for r in rows]


__all__ = ["SqliteTasks"]
