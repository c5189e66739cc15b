"""SQLite store: one file, WAL, group commit.

Writes go through one writer thread that drains every queued mutation into a single
transaction (each mutation in its own SAVEPOINT, so one failed optimistic check does
not undo the others), commits once (one fsync for the whole batch, with
``synchronous=FULL`` so a commit is on disk before anyone is told it succeeded), then
resolves each caller's future. Reads run on a small reader pool with their own
connections (WAL lets them proceed while the writer commits).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import re
import queue
import shutil
import sqlite3
import tempfile
import threading
from collections.abc import Sequence
from typing import Any, Callable, TypeVar

from ._interface import Store
from ._model import (
    ApiKeyRow,
    BacklogTask,
    ConditionFailedError,
    CurrentRow,
    ExecutionRow,
    LoadedExecution,
    Mutation,
    NamespaceRow,
    ScheduleRow,
    ServerSecret,
    ShardOwnershipLostError,
    StoreUnavailableError,
    TimerTask,
    TransferTask,
    VisibilityRow,
)

T = TypeVar("T")

SCHEMA_VERSION = 5  # 2: executions.activity_state; 3: api_keys, server_secrets; 4: blob_refs; 5: schedules

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
  revoke_time_ms INTEGER NOT NULL, created_by TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS server_secrets (
  name TEXT PRIMARY KEY, value BLOB NOT NULL, create_time_ms INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS blob_refs (
  namespace_id TEXT NOT NULL, workflow_id TEXT NOT NULL, run_id TEXT NOT NULL, blob_key TEXT NOT NULL,
  PRIMARY KEY (namespace_id, workflow_id, run_id, blob_key)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS blob_refs_key ON blob_refs (namespace_id, blob_key);
CREATE TABLE IF NOT EXISTS schedules (
  namespace_id TEXT NOT NULL, schedule_id TEXT NOT NULL, shard_id INTEGER NOT NULL, version INTEGER NOT NULL,
  data BLOB NOT NULL, PRIMARY KEY (namespace_id, schedule_id)) WITHOUT ROWID;
"""

#: Custom search attributes of these types get an expression index (KeywordList is read
#: through json_each, which no index serves). SEARCH_ATTRIBUTE_TYPE_* numbers.
_INDEXED_SA_TYPES = frozenset({1, 2, 3, 4, 5, 6})
_SA_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


def _ensure_sa_indexes(conn: sqlite3.Connection, namespace_data: str) -> None:
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


def _connect(path: str, *, uri: bool = False) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, uri=uri, timeout=30.0)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("PRAGMA busy_timeout=30000")
    conn.execute("PRAGMA cache_size=-16000")
    return conn


class _Pending:
    __slots__ = ("mutation", "future", "loop", "admin")

    def __init__(
        self,
        mutation: Mutation,
        future: asyncio.Future[None],
        loop: asyncio.AbstractEventLoop,
        admin: Callable[[sqlite3.Connection], None] | None = None,
    ) -> None:
        self.mutation = mutation
        self.future = future
        self.loop = loop
        self.admin = admin


class SqliteStore(Store):
    """Store on one SQLite file (or ``:memory:`` for tests: then a private file in RAM-backed temp storage)."""

    name = "sqlite"

    def __init__(self, path: str, *, max_batch: int = 512) -> None:
        self.path = path
        self.max_batch = max_batch
        self._tmpdir: str | None = None
        if path == ":memory:":
            # Not a shared-cache in-memory database: shared cache locks whole tables and a reader
            # meeting the writer fails at once with SQLITE_LOCKED ("database table is locked";
            # busy_timeout does not apply). A throwaway WAL file (in /dev/shm when there is one)
            # gives readers snapshots that never block the writer. Removed on close().
            shm = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
            self._tmpdir = tempfile.mkdtemp(prefix="spindle-memory-", dir=shm)
            self._dsn = os.path.join(self._tmpdir, "spindle.db")
            self._uri = False
        else:
            self._dsn = path
            self._uri = False
        self._writer: sqlite3.Connection | None = None
        self._queue: queue.SimpleQueue[_Pending | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._readers: concurrent.futures.ThreadPoolExecutor | None = None
        self._local = threading.local()
        self._reader_conns: list[sqlite3.Connection] = []
        self._keepalive: sqlite3.Connection | None = None
        self._point_reader: sqlite3.Connection | None = None
        #: Test hook: called with (stage, mutation) at "before_commit" / "after_commit".
        self.fault_hook: Callable[[str, Sequence[Mutation]], None] | None = None

    # ------------------------------------------------------------------ lifecycle
    async def open(self, num_shards: int) -> None:
        if self._uri:
            self._keepalive = sqlite3.connect(self._dsn, uri=True, check_same_thread=False)
        self._writer = _connect(self._dsn, uri=self._uri)
        self._writer.executescript(SCHEMA)
        _upgrade(self._writer)
        cur = self._writer.execute("SELECT value FROM meta WHERE key='num_shards'")
        row = cur.fetchone()
        if row is None:
            with _txn(self._writer):
                self._writer.execute("INSERT INTO meta VALUES ('num_shards', ?)", (str(num_shards),))
                self._writer.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
                self._writer.executemany(
                    "INSERT OR IGNORE INTO shards (shard_id, range_id) VALUES (?, 0)", [(i,) for i in range(num_shards)]
                )
        elif int(row[0]) != num_shards:
            raise ValueError(
                f"{self.path} was created with {row[0]} shards; it cannot be opened with num_shards={num_shards} "
                "(workflow ids hash to shards permanently)"
            )
        with _txn(self._writer):  # databases made before search-attribute indexes existed
            for (data,) in self._writer.execute("SELECT data FROM namespaces").fetchall():
                _ensure_sa_indexes(self._writer, data)
        self._readers = concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="spindle-sqlite-read")
        self._thread = threading.Thread(target=self._writer_loop, name="spindle-sqlite-writer", daemon=True)
        self._thread.start()

    async def close(self) -> None:
        if self._thread is not None:
            self._queue.put(None)
            await asyncio.get_running_loop().run_in_executor(None, self._thread.join)
            self._thread = None
        if self._readers is not None:
            self._readers.shutdown(wait=True)
            self._readers = None
        for c in self._reader_conns:
            c.close()
        if self._point_reader is not None:
            self._point_reader.close()
            self._point_reader = None
        self._reader_conns.clear()
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        if self._keepalive is not None:
            self._keepalive.close()
            self._keepalive = None
        if self._tmpdir is not None:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None

    # ------------------------------------------------------------------ helpers
    def _reader(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = _connect(self._dsn, uri=self._uri)
            self._local.conn = conn
            self._reader_conns.append(conn)
        return conn

    def _loop_reader(self) -> sqlite3.Connection:
        """A read connection for the event-loop thread (point lookups only)."""
        if self._point_reader is None:
            self._point_reader = _connect(self._dsn, uri=self._uri)
        return self._point_reader

    async def _read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        assert self._readers is not None, "store is not open"
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._readers, lambda: fn(self._reader()))

    async def _write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run a small administrative transaction through the writer thread."""
        result: dict[str, Any] = {}

        def run(conn: sqlite3.Connection) -> None:
            result["v"] = fn(conn)

        await self._enqueue(Mutation(shard_id=-1, range_id=-1), run)
        return result.get("v")  # type: ignore[return-value]

    # ------------------------------------------------------------------ group commit
    async def apply(self, mutation: Mutation) -> None:
        await self._enqueue(mutation, None)

    async def _enqueue(self, mutation: Mutation, admin: Callable[[sqlite3.Connection], None] | None) -> None:
        if self._thread is None:
            raise StoreUnavailableError("store is closed")
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        self._queue.put(_Pending(mutation, fut, loop, admin))
        await fut

    def _writer_loop(self) -> None:
        conn = self._writer
        assert conn is not None
        stop = False
        while not stop:
            item = self._queue.get()
            if item is None:
                break
            batch = [item]
            while len(batch) < self.max_batch:
                try:
                    nxt = self._queue.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    stop = True
                    break
                batch.append(nxt)
            results = self._commit_batch(conn, batch)
            by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[None], BaseException | None]]] = {}
            for p, err in zip(batch, results):
                by_loop.setdefault(p.loop, []).append((p.future, err))
            for loop, items in by_loop.items():  # one wake-up per loop and batch
                try:
                    loop.call_soon_threadsafe(_resolve_all, items)
                except RuntimeError:  # the loop is closed: nobody waits any more
                    pass

    def _commit_batch(self, conn: sqlite3.Connection, batch: list[_Pending]) -> list[BaseException | None]:
        results: list[BaseException | None] = [None] * len(batch)
        try:
            conn.execute("BEGIN IMMEDIATE")
            ranges: dict[int, int] = {}
            shard_ids = {p.mutation.shard_id for p in batch if p.mutation.shard_id >= 0}
            if shard_ids:
                q = ",".join("?" * len(shard_ids))
                for sid, rid in conn.execute(f"SELECT shard_id, range_id FROM shards WHERE shard_id IN ({q})", tuple(shard_ids)):
                    ranges[sid] = rid
            for i, p in enumerate(batch):
                m = p.mutation
                admin = p.admin
                if admin is None and ranges.get(m.shard_id) != m.range_id:
                    results[i] = ShardOwnershipLostError(
                        f"shard {m.shard_id}: range_id {m.range_id} is stale (now {ranges.get(m.shard_id)})"
                    )
                    continue
                # Only writes with a condition (version, current run, unique key) can fail half
                # way; the others (task inserts and deletes, visibility) skip the savepoint.
                guarded = (admin is not None or m.execution is not None or m.current is not None or bool(m.backlog_insert)
                           or m.schedule is not None or m.schedule_delete is not None)
                if not guarded:
                    _apply_mutation(conn, m)
                    continue
                conn.execute("SAVEPOINT m")
                try:
                    if admin is not None:
                        admin(conn)
                    else:
                        _apply_mutation(conn, m)
                    conn.execute("RELEASE m")
                except (ConditionFailedError, sqlite3.IntegrityError, ValueError) as e:
                    conn.execute("ROLLBACK TO m")
                    conn.execute("RELEASE m")
                    results[i] = e if not isinstance(e, sqlite3.IntegrityError) else ConditionFailedError(str(e))
            if self.fault_hook is not None:
                self.fault_hook("before_commit", [p.mutation for p in batch])
            conn.execute("COMMIT")
        except Exception as e:  # noqa: BLE001 - the whole batch failed; report to every caller
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            err = StoreUnavailableError(f"sqlite write failed: {e}")
            return [err] * len(batch)
        if self.fault_hook is not None:
            try:
                self.fault_hook("after_commit", [p.mutation for p in batch])
            except Exception as e:  # noqa: BLE001 - committed, but the caller is told it failed
                return [StoreUnavailableError(f"reply lost after commit: {e}", outcome_unknown=True)] * len(batch)
        return results

    # ------------------------------------------------------------------ shards
    async def acquire_shard(self, shard_id: int, owner: str) -> int:
        def run(conn: sqlite3.Connection) -> int:
            conn.execute("UPDATE shards SET range_id = range_id + 1, owner = ? WHERE shard_id = ?", (owner, shard_id))
            row = conn.execute("SELECT range_id FROM shards WHERE shard_id = ?", (shard_id,)).fetchone()
            if row is None:
                raise ValueError(f"no shard {shard_id}")
            return int(row[0])

        return await self._write(run)

    async def get_range_id(self, shard_id: int) -> int:
        row = await self._read(lambda c: c.execute("SELECT range_id FROM shards WHERE shard_id=?", (shard_id,)).fetchone())
        return int(row[0]) if row else -1

    # ------------------------------------------------------------------ namespaces
    async def create_namespace(self, row: NamespaceRow) -> None:
        def run(conn: sqlite3.Connection) -> None:
            try:
                conn.execute(
                    "INSERT INTO namespaces (name, id, data, state, version) VALUES (?,?,?,?,?)",
                    (row.name, row.id, row.data, row.state, row.version),
                )
            except sqlite3.IntegrityError as e:
                raise ConditionFailedError(f"namespace {row.name!r} already exists") from e
            _ensure_sa_indexes(conn, row.data)

        await self._write(run)

    async def get_namespace(self, name: str) -> NamespaceRow | None:
        r = await self._read(
            lambda c: c.execute("SELECT id, name, data, state, version FROM namespaces WHERE name=?", (name,)).fetchone()
        )
        return NamespaceRow(*r) if r else None

    async def list_namespaces(self) -> list[NamespaceRow]:
        rows = await self._read(lambda c: c.execute("SELECT id, name, data, state, version FROM namespaces ORDER BY name").fetchall())
        return [NamespaceRow(*r) for r in rows]

    async def update_namespace(self, row: NamespaceRow, expected_version: int) -> None:
        def run(conn: sqlite3.Connection) -> None:
            cur = conn.execute(
                "UPDATE namespaces SET data=?, state=?, version=? WHERE name=? AND version=?",
                (row.data, row.state, row.version, row.name, expected_version),
            )
            if cur.rowcount != 1:
                raise ConditionFailedError(f"namespace {row.name!r} changed concurrently")
            _ensure_sa_indexes(conn, row.data)

        await self._write(run)

    async def delete_namespace(self, name: str) -> None:
        await self._write(lambda c: c.execute("DELETE FROM namespaces WHERE name=?", (name,)))

    # ------------------------------------------------------------------ API keys, server secrets
    async def create_api_key(self, row: ApiKeyRow) -> None:
        def run(conn: sqlite3.Connection) -> None:
            try:
                conn.execute(f"INSERT INTO api_keys ({_API_KEY_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?)",
                             (row.key_id, row.name, row.secret_hash, row.grants, int(row.system_admin),
                              row.create_time_ms, row.expire_time_ms, row.revoke_time_ms, row.created_by))
            except sqlite3.IntegrityError as e:
                raise ConditionFailedError(f"API key {row.key_id!r} already exists") from e

        await self._write(run)

    async def get_api_key(self, key_id: str) -> ApiKeyRow | None:
        r = await self._read(
            lambda c: c.execute(f"SELECT {_API_KEY_COLUMNS} FROM api_keys WHERE key_id=?", (key_id,)).fetchone())
        return _api_key(r) if r else None

    async def list_api_keys(self) -> list[ApiKeyRow]:
        rows = await self._read(lambda c: c.execute(f"SELECT {_API_KEY_COLUMNS} FROM api_keys ORDER BY key_id").fetchall())
        return [_api_key(r) for r in rows]

    async def revoke_api_key(self, key_id: str, revoke_time_ms: int) -> ApiKeyRow | None:
        def run(conn: sqlite3.Connection) -> ApiKeyRow | None:
            conn.execute("UPDATE api_keys SET revoke_time_ms=? WHERE key_id=? AND revoke_time_ms=0",
                         (revoke_time_ms, key_id))
            r = conn.execute(f"SELECT {_API_KEY_COLUMNS} FROM api_keys WHERE key_id=?", (key_id,)).fetchone()
            return _api_key(r) if r else None

        return await self._write(run)

    async def add_server_secret(self, secret: ServerSecret) -> ServerSecret:
        def run(conn: sqlite3.Connection) -> ServerSecret:
            conn.execute("INSERT OR IGNORE INTO server_secrets (name, value, create_time_ms) VALUES (?,?,?)",
                         (secret.name, secret.value, secret.create_time_ms))
            r = conn.execute("SELECT name, value, create_time_ms FROM server_secrets WHERE name=?",
                             (secret.name,)).fetchone()
            return ServerSecret(r[0], bytes(r[1]), int(r[2]))

        return await self._write(run)

    async def list_server_secrets(self, prefix: str = "") -> list[ServerSecret]:
        rows = await self._read(lambda c: c.execute(
            "SELECT name, value, create_time_ms FROM server_secrets WHERE substr(name, 1, ?) = ? ORDER BY name",
            (len(prefix), prefix)).fetchall())
        return [ServerSecret(r[0], bytes(r[1]), int(r[2])) for r in rows]

    # ------------------------------------------------------------------ executions
    async def get_current(self, namespace_id: str, workflow_id: str) -> CurrentRow | None:
        # A primary-key lookup costs microseconds: run it on the calling thread rather than
        # paying a thread hop (this is on the path of every start).
        r = self._loop_reader().execute(
            "SELECT namespace_id, workflow_id, run_id, status, start_request_id FROM current_executions "
            "WHERE namespace_id=? AND workflow_id=?",
            (namespace_id, workflow_id),
        ).fetchone()
        return CurrentRow(*r) if r else None

    async def get_execution_row(self, namespace_id: str, workflow_id: str, run_id: str) -> ExecutionRow | None:
        r = await self._read(lambda c: _exec_row(c, namespace_id, workflow_id, run_id))
        return r

    async def load_execution(self, namespace_id: str, workflow_id: str, run_id: str) -> LoadedExecution | None:
        def run(c: sqlite3.Connection) -> LoadedExecution | None:
            c.execute("BEGIN")
            try:
                row = _exec_row(c, namespace_id, workflow_id, run_id)
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

        return await self._read(run)

    async def read_events(
        self, namespace_id: str, workflow_id: str, run_id: str, first_event_id: int, max_events: int
    ) -> list[tuple[int, bytes]]:
        return await self._read(
            lambda c: c.execute(
                "SELECT event_id, data FROM events WHERE namespace_id=? AND workflow_id=? AND run_id=? AND event_id>=? "
                "ORDER BY event_id LIMIT ?",
                (namespace_id, workflow_id, run_id, first_event_id, max_events),
            ).fetchall()
        )

    async def list_running_executions(self, shard_id: int) -> list[ExecutionRow]:
        rows = await self._read(
            lambda c: c.execute(
                f"SELECT {EXEC_COLUMNS} FROM executions WHERE shard_id=? AND status=1",
                (shard_id,),
            ).fetchall()
        )
        return [ExecutionRow(*r) for r in rows]

    # ------------------------------------------------------------------ queues
    async def load_transfer_tasks(self, shard_id: int, after_task_id: int, limit: int) -> list[TransferTask]:
        rows = await self._read(
            lambda c: c.execute(
                "SELECT task_id, data FROM transfer_tasks WHERE shard_id=? AND task_id>? ORDER BY task_id LIMIT ?",
                (shard_id, after_task_id, limit),
            ).fetchall()
        )
        return [TransferTask(*r) for r in rows]

    async def load_timer_tasks(self, shard_id: int, until_ms: int, after: tuple[int, int], limit: int) -> list[TimerTask]:
        rows = await self._read(
            lambda c: c.execute(
                "SELECT fire_time_ms, task_id, data FROM timer_tasks WHERE shard_id=? AND fire_time_ms<? "
                "AND (fire_time_ms>? OR (fire_time_ms=? AND task_id>?)) ORDER BY fire_time_ms, task_id LIMIT ?",
                (shard_id, until_ms, after[0], after[0], after[1], limit),
            ).fetchall()
        )
        return [TimerTask(*r) for r in rows]

    async def load_backlog(self, namespace_id: str, task_queue: str, kind: int, limit: int) -> list[BacklogTask]:
        rows = await self._read(
            lambda c: c.execute(
                "SELECT namespace_id, task_queue, kind, shard_id, task_id, data FROM task_backlog "
                "WHERE namespace_id=? AND task_queue=? AND kind=? ORDER BY task_id LIMIT ?",
                (namespace_id, task_queue, kind, limit),
            ).fetchall()
        )
        return [BacklogTask(*r) for r in rows]

    async def list_backlog_queues(self) -> list[tuple[str, str, int]]:
        rows = await self._read(lambda c: c.execute("SELECT DISTINCT namespace_id, task_queue, kind FROM task_backlog").fetchall())
        return [tuple(r) for r in rows]  # type: ignore[misc]

    # ------------------------------------------------------------------ visibility
    async def query_visibility(
        self, namespace_id: str, where: str, params: dict[str, object], order_by: str, limit: int, offset: int
    ) -> list[VisibilityRow]:
        sql = f"SELECT {VIS_COLUMNS} FROM visibility WHERE namespace_id = :__ns"
        if where:
            sql += f" AND ({where})"
        sql += f" ORDER BY {order_by or 'start_time_ms DESC, run_id'} LIMIT :__limit OFFSET :__offset"
        p = dict(params)
        p.update({"__ns": namespace_id, "__limit": limit, "__offset": offset})
        rows = await self._read(lambda c: c.execute(sql, p).fetchall())
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
        rows = await self._read(lambda c: c.execute(sql, p).fetchall())
        return [(tuple(r[:-1]), int(r[-1])) for r in rows]

    async def list_closed_before(self, namespace_id: str, close_before_ms: int, limit: int) -> list[VisibilityRow]:
        rows = await self._read(
            lambda c: c.execute(
                f"SELECT {VIS_COLUMNS} FROM visibility WHERE namespace_id=? AND close_time_ms IS NOT NULL "
                "AND close_time_ms < ? ORDER BY close_time_ms LIMIT ?",
                (namespace_id, close_before_ms, limit),
            ).fetchall()
        )
        return [VisibilityRow(*r) for r in rows]

    async def count_running(self, namespace_id: str) -> int:
        r = await self._read(
            lambda c: c.execute("SELECT COUNT(*) FROM current_executions WHERE namespace_id=? AND status=1", (namespace_id,)).fetchone()
        )
        return int(r[0])

    async def list_blob_refs(self, namespace_id: str, workflow_id: str, run_id: str) -> list[str]:
        rows = await self._read(lambda c: c.execute(
            "SELECT blob_key FROM blob_refs WHERE namespace_id=? AND workflow_id=? AND run_id=? ORDER BY blob_key",
            (namespace_id, workflow_id, run_id)).fetchall())
        return [r[0] for r in rows]

    async def blob_is_referenced(self, namespace_id: str, blob_key: str) -> bool:
        r = await self._read(lambda c: c.execute(
            "SELECT 1 FROM blob_refs WHERE namespace_id=? AND blob_key=? LIMIT 1", (namespace_id, blob_key)).fetchone())
        return r is not None

    async def get_schedule(self, namespace_id: str, schedule_id: str) -> ScheduleRow | None:
        r = await self._read(lambda c: c.execute(
            "SELECT namespace_id, schedule_id, shard_id, version, data FROM schedules WHERE namespace_id=? AND schedule_id=?",
            (namespace_id, schedule_id)).fetchone())
        return ScheduleRow(r[0], r[1], int(r[2]), int(r[3]), bytes(r[4])) if r else None

    async def list_schedules(self, namespace_id: str, after_schedule_id: str, limit: int) -> list[ScheduleRow]:
        rows = await self._read(lambda c: c.execute(
            "SELECT namespace_id, schedule_id, shard_id, version, data FROM schedules WHERE namespace_id=? "
            "AND schedule_id>? ORDER BY schedule_id LIMIT ?", (namespace_id, after_schedule_id, limit)).fetchall())
        return [ScheduleRow(r[0], r[1], int(r[2]), int(r[3]), bytes(r[4])) for r in rows]

    async def list_running(self, namespace_id: str, limit: int) -> list[CurrentRow]:
        rows = await self._read(
            lambda c: c.execute(
                "SELECT namespace_id, workflow_id, run_id, status, start_request_id FROM current_executions "
                "WHERE namespace_id=? AND status=1 LIMIT ?",
                (namespace_id, limit),
            ).fetchall()
        )
        return [CurrentRow(*r) for r in rows]


def _upgrade(conn: sqlite3.Connection) -> None:
    """Bring a database made by an older version to the current schema (idempotent).

    New tables (schema 3: ``api_keys``, ``server_secrets``; 4: ``blob_refs``; 5: ``schedules``) come from ``SCHEMA``'s
    ``CREATE TABLE IF NOT EXISTS``; new columns are added here.
    """
    columns = {r[1] for r in conn.execute("PRAGMA table_info(executions)")}
    if "activity_state" not in columns:  # schema 1 -> 2
        with _txn(conn):
            conn.execute("ALTER TABLE executions ADD COLUMN activity_state BLOB NOT NULL DEFAULT x''")
    row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
    if row is not None and int(row[0]) < SCHEMA_VERSION:
        with _txn(conn):
            conn.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION),))


_API_KEY_COLUMNS = ("key_id, name, secret_hash, grants, system_admin, create_time_ms, expire_time_ms, revoke_time_ms, "
                    "created_by")


def _api_key(r: Sequence[Any]) -> ApiKeyRow:
    return ApiKeyRow(key_id=r[0], name=r[1], secret_hash=bytes(r[2]), grants=r[3], system_admin=bool(r[4]),
                     create_time_ms=int(r[5]), expire_time_ms=int(r[6]), revoke_time_ms=int(r[7]), created_by=r[8])


def _resolve_all(items: list[tuple[asyncio.Future[None], BaseException | None]]) -> None:
    for fut, err in items:
        if fut.done():
            continue
        if err is None:
            fut.set_result(None)
        else:
            fut.set_exception(err)


class _txn:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> None:
        self.conn.execute("BEGIN IMMEDIATE")

    def __exit__(self, et: Any, e: Any, tb: Any) -> None:
        self.conn.execute("COMMIT" if et is None else "ROLLBACK")


def _exec_row(c: sqlite3.Connection, ns: str, wid: str, rid: str) -> ExecutionRow | None:
    r = c.execute(
        f"SELECT {EXEC_COLUMNS} FROM executions WHERE namespace_id=? AND workflow_id=? AND run_id=?",
        (ns, wid, rid),
    ).fetchone()
    return ExecutionRow(*r) if r else None


def _apply_mutation(conn: sqlite3.Connection, m: Mutation) -> None:
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
        _apply_mutation(conn, sub)


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
