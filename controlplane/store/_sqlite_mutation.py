"""How the SQLite store writes one :class:`Mutation`: its rows, with the optimistic checks it carries.

Run by the group-commit writer (``_sqlite_group_commit``) inside the batch's transaction;
a failed check raises :class:`ConditionFailedError` (or ``sqlite3.IntegrityError`` for a
duplicate key), and the writer rolls back that mutation's savepoint only.
"""

from __future__ import annotations

import sqlite3

from ._model import ConditionFailedError, Mutation, ScheduleRow
from ._sqlite_schema import EXEC_COLUMNS, VIS_COLUMNS


def apply_mutation(conn: sqlite3.Connection, m: Mutation) -> None:
    ex = m.execution
    if ex is not None:
        if m.expected_version is None:
            conn.execute(
                f"INSERT INTO executions ({EXEC_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                (ex.namespace_id, ex.workflow_id, ex.run_id, ex.shard_id, ex.status, ex.next_event_id, ex.db_version,
                 ex.workflow_type, ex.task_queue, ex.start_time_ms, ex.close_time_ms, ex.activity_state),
            )
        else:
            cur = conn.execute(
                "UPDATE executions SET status=?, next_event_id=?, db_version=?, close_time_ms=?, activity_state=? "
                "WHERE namespace_id=? AND workflow_id=? AND run_id=? AND db_version=?",
                (ex.status, ex.next_event_id, ex.db_version, ex.close_time_ms, ex.activity_state,
                 ex.namespace_id, ex.workflow_id, ex.run_id, m.expected_version),
            )
            if cur.rowcount != 1:
                raise ConditionFailedError(
                    f"execution {ex.workflow_id}/{ex.run_id}: version {m.expected_version} is stale"
                )
    cur_row = m.current
    if cur_row is not None:
        if m.current_expect is not None:
            existing = conn.execute(
                "SELECT run_id FROM current_executions WHERE namespace_id=? AND workflow_id=?",
                (cur_row.namespace_id, cur_row.workflow_id),
            ).fetchone()
            if m.current_expect == "":
                if existing is not None:
                    raise ConditionFailedError(f"workflow id {cur_row.workflow_id!r} already has a current run")
            elif existing is None or existing[0] != m.current_expect:
                raise ConditionFailedError(f"workflow id {cur_row.workflow_id!r}: current run changed")
        conn.execute(
            "INSERT OR REPLACE INTO current_executions (namespace_id, workflow_id, run_id, status, start_request_id) "
            "VALUES (?,?,?,?,?)",
            (cur_row.namespace_id, cur_row.workflow_id, cur_row.run_id, cur_row.status, cur_row.start_request_id),
        )
    if m.events:
        assert ex is not None
        conn.executemany(
            "INSERT INTO events (namespace_id, workflow_id, run_id, event_id, data) VALUES (?,?,?,?,?)",
            [(ex.namespace_id, ex.workflow_id, ex.run_id, eid, data) for eid, data in m.events],
        )
    if m.clear_buffered:
        assert ex is not None
        conn.execute(
            "DELETE FROM buffered_events WHERE namespace_id=? AND workflow_id=? AND run_id=?",
            (ex.namespace_id, ex.workflow_id, ex.run_id),
        )
    if m.add_buffered:
        assert ex is not None
        base = conn.execute(
            "SELECT COALESCE(MAX(seq), 0) FROM buffered_events WHERE namespace_id=? AND workflow_id=? AND run_id=?",
            (ex.namespace_id, ex.workflow_id, ex.run_id),
        ).fetchone()[0]
        conn.executemany(
            "INSERT INTO buffered_events (namespace_id, workflow_id, run_id, seq, data) VALUES (?,?,?,?,?)",
            [(ex.namespace_id, ex.workflow_id, ex.run_id, base + i + 1, d) for i, d in enumerate(m.add_buffered)],
        )
    if m.transfer_insert:
        conn.executemany(
            "INSERT INTO transfer_tasks (shard_id, task_id, data) VALUES (?,?,?)",
            [(m.shard_id, t.task_id, t.data) for t in m.transfer_insert],
        )
    if m.transfer_delete:
        conn.executemany("DELETE FROM transfer_tasks WHERE shard_id=? AND task_id=?", [(m.shard_id, t) for t in m.transfer_delete])
    if m.timer_insert:
        conn.executemany(
            "INSERT INTO timer_tasks (shard_id, fire_time_ms, task_id, data) VALUES (?,?,?,?)",
            [(m.shard_id, t.fire_time_ms, t.task_id, t.data) for t in m.timer_insert],
        )
    if m.timer_delete:
        conn.executemany(
            "DELETE FROM timer_tasks WHERE shard_id=? AND fire_time_ms=? AND task_id=?",
            [(m.shard_id, f, t) for f, t in m.timer_delete],
        )
    if m.backlog_insert:
        conn.executemany(
            "INSERT INTO task_backlog (namespace_id, task_queue, kind, shard_id, task_id, data) VALUES (?,?,?,?,?,?)",
            [(b.namespace_id, b.task_queue, b.kind, b.shard_id, b.task_id, b.data) for b in m.backlog_insert],
        )
    if m.backlog_delete:
        conn.executemany(
            "DELETE FROM task_backlog WHERE namespace_id=? AND task_queue=? AND kind=? AND shard_id=? AND task_id=?",
            m.backlog_delete,
        )
    if m.visibility:
        conn.executemany(
            f"INSERT OR REPLACE INTO visibility ({VIS_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            [
                (v.namespace_id, v.workflow_id, v.run_id, v.workflow_type, v.status, v.task_queue, v.start_time_ms,
                 v.close_time_ms, v.execution_duration_ms, v.history_length, v.search_attributes, v.memo,
                 v.parent_workflow_id, v.parent_run_id)
                for v in m.visibility
            ],
        )
    if m.visibility_history_length:
        conn.executemany(
            "UPDATE visibility SET history_length=? WHERE namespace_id=? AND run_id=? AND history_length<?",
            [(n, ns, rid, n) for ns, rid, n in m.visibility_history_length],
        )
    if m.visibility_delete:
        conn.executemany("DELETE FROM visibility WHERE namespace_id=? AND run_id=?", m.visibility_delete)
    if m.blob_refs:
        conn.executemany("INSERT OR IGNORE INTO blob_refs (namespace_id, workflow_id, run_id, blob_key) VALUES (?,?,?,?)",
                         m.blob_refs)
    if m.delete_execution is not None:
        ns, wid, rid = m.delete_execution
        for table in ("events", "buffered_events", "executions", "blob_refs"):
            conn.execute(f"DELETE FROM {table} WHERE namespace_id=? AND workflow_id=? AND run_id=?", (ns, wid, rid))
        conn.execute("DELETE FROM current_executions WHERE namespace_id=? AND workflow_id=? AND run_id=?", (ns, wid, rid))
    if m.schedule is not None:
        _write_schedule(conn, m.schedule, m.schedule_expected_version)
    if m.schedule_delete is not None:
        ns, sid, version = m.schedule_delete
        cur = conn.execute("DELETE FROM schedules WHERE namespace_id=? AND schedule_id=? AND version=?", (ns, sid, version))
        if cur.rowcount != 1:
            raise ConditionFailedError(f"schedule {sid!r}: version {version} is stale or the schedule is gone")
    for sub in m.also:
        apply_mutation(conn, sub)


def _write_schedule(conn: sqlite3.Connection, row: ScheduleRow, expected_version: int | None) -> None:
    if expected_version is None:
        try:
            conn.execute("INSERT INTO schedules (namespace_id, schedule_id, shard_id, version, data) VALUES (?,?,?,?,?)",
                         (row.namespace_id, row.schedule_id, row.shard_id, row.version, row.data))
        except sqlite3.IntegrityError as e:
            raise ConditionFailedError(f"schedule {row.schedule_id!r} already exists") from e
        return
    cur = conn.execute("UPDATE schedules SET shard_id=?, version=?, data=? WHERE namespace_id=? AND schedule_id=? "
                       "AND version=?", (row.shard_id, row.version, row.data, row.namespace_id, row.schedule_id,
                                         expected_version))
    if cur.rowcount != 1:
        raise ConditionFailedError(f"schedule {row.schedule_id!r}: version {expected_version} is stale "
                                   "or the schedule is gone")


__all__ = ["apply_mutation"]
