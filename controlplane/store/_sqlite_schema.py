"""The SQLite store's schema: its tables, how a database is opened and brought up to date.

``SCHEMA`` creates every table (``IF NOT EXISTS``, so it also adds the tables a newer
version brought); :func:`upgrade` adds the columns; :func:`ensure_sa_indexes` gives each
scalar custom search attribute of a namespace its expression index.
"""

from __future__ import annotations

import json
import re
import sqlite3

from typing import Any

#: 2: executions.activity_state; 3: api_keys, server_secrets; 4: blob_refs; 5: schedules; 6: deployments;
#: 7: api_keys.task_queues, batch_jobs; 8: nexus_endpoints
SCHEMA_VERSION = 8

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS shards (shard_id INTEGER PRIMARY KEY, range_id INTEGER NOT NULL, owner TEXT NOT NULL DEFAULT '');
CREATE TABLE IF NOT EXISTS namespaces (
  name TEXT PRIMARY KEY, id TEXT NOT NULL UNIQUE, data TEXT NOT NULL, state TEXT NOT NULL, version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS executions (
  namespace_id TEXT NOT NULL, workflow_id TEXT NOT NULL, run_id TEXT NOT NULL, shard_id INTEGER NOT NULL,
  status INTEGER NOT NULL, next_event_id INTEGER NOT NULL, db_version INTEGER NOT NULL,
  workflow_type TEXT NOT NULL, task_queue TEXT NOT NULL, start_time_ms INTEGER NOT NULL, close_time_ms INTEGER NOT NULL,
  activity_state BLOB NOT NULL DEFAULT x'',
  PRIMARY KEY (namespace_id, workflow_id, run_id)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS executions_running ON executions (shard_id, status);
CREATE TABLE IF NOT EXISTS current_executions (
  namespace_id TEXT NOT NULL, workflow_id TEXT NOT NULL, run_id TEXT NOT NULL, status INTEGER NOT NULL,
  start_request_id TEXT NOT NULL, PRIMARY KEY (namespace_id, workflow_id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS events (
  namespace_id TEXT NOT NULL, workflow_id TEXT NOT NULL, run_id TEXT NOT NULL, event_id INTEGER NOT NULL,
  data BLOB NOT NULL, PRIMARY KEY (namespace_id, workflow_id, run_id, event_id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS buffered_events (
  namespace_id TEXT NOT NULL, workflow_id TEXT NOT NULL, run_id TEXT NOT NULL, seq INTEGER NOT NULL,
  data BLOB NOT NULL, PRIMARY KEY (namespace_id, workflow_id, run_id, seq)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS transfer_tasks (
  shard_id INTEGER NOT NULL, task_id INTEGER NOT NULL, data TEXT NOT NULL, PRIMARY KEY (shard_id, task_id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS timer_tasks (
  shard_id INTEGER NOT NULL, fire_time_ms INTEGER NOT NULL, task_id INTEGER NOT NULL, data TEXT NOT NULL,
  PRIMARY KEY (shard_id, fire_time_ms, task_id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS task_backlog (
  namespace_id TEXT NOT NULL, task_queue TEXT NOT NULL, kind INTEGER NOT NULL, shard_id INTEGER NOT NULL,
  task_id INTEGER NOT NULL, data TEXT NOT NULL,
  PRIMARY KEY (namespace_id, task_queue, kind, shard_id, task_id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS visibility (
  namespace_id TEXT NOT NULL, run_id TEXT NOT NULL, workflow_id TEXT NOT NULL, workflow_type TEXT NOT NULL,
  status INTEGER NOT NULL, task_queue TEXT NOT NULL, start_time_ms INTEGER NOT NULL, close_time_ms INTEGER,
  execution_duration_ms INTEGER, history_length INTEGER NOT NULL, search_attributes TEXT NOT NULL,
  memo BLOB NOT NULL, parent_workflow_id TEXT NOT NULL, parent_run_id TEXT NOT NULL,
  PRIMARY KEY (namespace_id, run_id));
CREATE INDEX IF NOT EXISTS vis_start ON visibility (namespace_id, start_time_ms DESC, run_id);
DROP INDEX IF EXISTS vis_status;
DROP INDEX IF EXISTS vis_type;
DROP INDEX IF EXISTS vis_queue;
CREATE INDEX IF NOT EXISTS vis_status_run ON visibility (namespace_id, status, start_time_ms DESC, run_id);
CREATE INDEX IF NOT EXISTS vis_type_run ON visibility (namespace_id, workflow_type, start_time_ms DESC, run_id);
CREATE INDEX IF NOT EXISTS vis_wid ON visibility (namespace_id, workflow_id);
CREATE INDEX IF NOT EXISTS vis_close ON visibility (namespace_id, close_time_ms);
CREATE INDEX IF NOT EXISTS vis_queue_run ON visibility (namespace_id, task_queue, start_time_ms DESC, run_id);
CREATE TABLE IF NOT EXISTS api_keys (
  key_id TEXT PRIMARY KEY, name TEXT NOT NULL, secret_hash BLOB NOT NULL, grants TEXT NOT NULL,
  system_admin INTEGER NOT NULL, create_time_ms INTEGER NOT NULL, expire_time_ms INTEGER NOT NULL,
  revoke_time_ms INTEGER NOT NULL, created_by TEXT NOT NULL, task_queues TEXT NOT NULL DEFAULT '') WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS server_secrets (
  name TEXT PRIMARY KEY, value BLOB NOT NULL, create_time_ms INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS blob_refs (
  namespace_id TEXT NOT NULL, workflow_id TEXT NOT NULL, run_id TEXT NOT NULL, blob_key TEXT NOT NULL,
  PRIMARY KEY (namespace_id, workflow_id, run_id, blob_key)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS blob_refs_key ON blob_refs (namespace_id, blob_key);
CREATE TABLE IF NOT EXISTS schedules (
  namespace_id TEXT NOT NULL, schedule_id TEXT NOT NULL, shard_id INTEGER NOT NULL, version INTEGER NOT NULL,
  data BLOB NOT NULL, PRIMARY KEY (namespace_id, schedule_id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS deployments (
  namespace_id TEXT NOT NULL, name TEXT NOT NULL, version INTEGER NOT NULL, doc TEXT NOT NULL,
  PRIMARY KEY (namespace_id, name)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS batch_jobs (
  namespace_id TEXT NOT NULL, job_id TEXT NOT NULL, version INTEGER NOT NULL, state INTEGER NOT NULL,
  data BLOB NOT NULL, PRIMARY KEY (namespace_id, job_id)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS batch_jobs_state ON batch_jobs (state);
CREATE TABLE IF NOT EXISTS nexus_endpoints (
  id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, version INTEGER NOT NULL, data BLOB NOT NULL) WITHOUT ROWID;
"""

#: Custom search attributes of these types get an expression index (KeywordList is read
#: through json_each, which no index serves). SEARCH_ATTRIBUTE_TYPE_* numbers.
_INDEXED_SA_TYPES = frozenset({1, 2, 3, 4, 5, 6})
_SA_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


def ensure_sa_indexes(conn: sqlite3.Connection, namespace_data: str) -> None:
    """Index every scalar custom search attribute of a namespace row (idempotent).

    The index expression is exactly what the list-filter compiler emits
    (``json_extract(search_attributes, '$."Name"')``), so equality, ranges, IN and
    STARTS_WITH on the attribute, ordered by start time, read only matching rows.
    Attribute names are validated identifiers; one index serves every namespace.
    """
    try:
        attrs = json.loads(namespace_data).get("search_attributes") or {}
    except (ValueError, AttributeError):
        return
    for name, sa_type in attrs.items():
        if int(sa_type) in _INDEXED_SA_TYPES and _SA_NAME.match(name):
            conn.execute(f'CREATE INDEX IF NOT EXISTS "vis_sa_{name}" ON visibility (namespace_id, '
                         f"json_extract(search_attributes, '$.\"{name}\"'), start_time_ms DESC, run_id) "
                         f"WHERE json_extract(search_attributes, '$.\"{name}\"') IS NOT NULL")


EXEC_COLUMNS = (
    "namespace_id, workflow_id, run_id, shard_id, status, next_event_id, db_version, workflow_type, task_queue, "
    "start_time_ms, close_time_ms, activity_state"
)
VIS_COLUMNS = (
    "namespace_id, workflow_id, run_id, workflow_type, status, task_queue, start_time_ms, close_time_ms, "
    "execution_duration_ms, history_length, search_attributes, memo, parent_workflow_id, parent_run_id"
)


def connect(path: str, *, uri: bool = False) -> sqlite3.Connection:
    """A connection as the store uses them all: autocommit (explicit BEGIN), WAL, fsync on every commit."""
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, uri=uri, timeout=30.0)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("PRAGMA busy_timeout=30000")
    conn.execute("PRAGMA cache_size=-16000")
    return conn


def upgrade(conn: sqlite3.Connection) -> None:
    """Bring a database made by an older version to the current schema (idempotent).

    New tables (schema 3: ``api_keys``, ``server_secrets``; 4: ``blob_refs``; 5: ``schedules``; 6: ``deployments``;
    7: ``batch_jobs``; 8: ``nexus_endpoints``) come from ``SCHEMA``'s ``CREATE TABLE IF NOT EXISTS``; new columns are added here.
    """
    columns = {r[1] for r in conn.execute("PRAGMA table_info(executions)")}
    if "activity_state" not in columns:  # schema 1 -> 2
        with txn(conn):
            conn.execute("ALTER TABLE executions ADD COLUMN activity_state BLOB NOT NULL DEFAULT x''")
    key_columns = {r[1] for r in conn.execute("PRAGMA table_info(api_keys)")}
    if "task_queues" not in key_columns:  # schema 6 -> 7
        with txn(conn):
            conn.execute("ALTER TABLE api_keys ADD COLUMN task_queues TEXT NOT NULL DEFAULT ''")
    row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
    if row is not None and int(row[0]) < SCHEMA_VERSION:
        with txn(conn):
            conn.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION),))


class txn:
    """``with txn(conn):`` one immediate transaction, committed unless the block raises."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> None:
        self.conn.execute("BEGIN IMMEDIATE")

    def __exit__(self, et: Any, e: Any, tb: Any) -> None:
        self.conn.execute("COMMIT" if et is None else "ROLLBACK")


API_KEY_COLUMNS = ("key_id, name, secret_hash, grants, system_admin, create_time_ms, expire_time_ms, revoke_time_ms, "
                   "created_by, task_queues")


__all__ = ["API_KEY_COLUMNS", "EXEC_COLUMNS", "SCHEMA", "SCHEMA_VERSION", "VIS_COLUMNS", "connect", "ensure_sa_indexes",
           "txn", "upgrade"]
