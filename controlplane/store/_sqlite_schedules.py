"""The SQLite store's reads of schedules (a schedule is written with its timer rows in one mutation:
``_sqlite_mutation``)."""

from __future__ import annotations

from ._model import ScheduleRow
from ._sqlite_reads import SqliteReads


class SqliteSchedules:
    """Reads of the ``schedules`` table."""

    def __init__(self, reads: SqliteReads) -> None:
        self._reads = reads

    async def get_schedule(self, namespace_id: str, schedule_id: str) -> ScheduleRow | None:
        r = await self._reads.read(lambda c: c.execute(
            "SELECT namespace_id, schedule_id, shard_id, version, data FROM schedules WHERE namespace_id=? AND schedule_id=?",
            (namespace_id, schedule_id)).fetchone())
        return ScheduleRow(r[0], r[1], int(r[2]), int(r[3]), bytes(r[4])) if r else None

    async def list_schedules(self, namespace_id: str, after_schedule_id: str, limit: int) -> list[ScheduleRow]:
        rows = await self._reads.read(lambda c: c.execute(
            "SELECT namespace_id, schedule_id, shard_id, version, data FROM schedules WHERE namespace_id=? "
            "AND schedule_id>? ORDER BY schedule_id LIMIT ?", (namespace_id, after_schedule_id, limit)).fetchall())
        return [ScheduleRow(r[0], r[1], int(r[2]), int(r[3]), bytes(r[4])) for r in rows]


__all__ = ["SqliteSchedules"]
