"""SQLite store: one file, WAL, group commit.

Writes go through one writer thread that commits every queued mutation in one
transaction, one fsync per batch (``_sqlite_group_commit``); reads run on a small reader
pool with their own connections (``_sqlite_reads``). :class:`SqliteStore` is the one class
that implements the :class:`Store` interface: it opens the file and hands each call to the
collaborator holding that part of the schema:

- ``_sqlite_namespaces``: namespaces, API keys, server secrets;
- ``_sqlite_executions``: current runs, execution rows, histories, blob references;
- ``_sqlite_tasks``: transfer and timer tasks, the matching backlog;
- ``_sqlite_visibility``: list and count queries, closed runs;
- ``_sqlite_schedules``: schedules;
- ``_sqlite_deployments``: worker deployments (build versioning);
- ``_sqlite_batch_jobs``: server-side batch jobs (erasure);
- ``_sqlite_mutation``: how one mutation is written (to every table), run by the writer;
- ``_sqlite_schema``: the tables, and the upgrade of a file made by an older version.

A delegating method is a plain ``def`` returning the collaborator's coroutine: the store is
on the path of every call, so delegation costs one function call, not a coroutine.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile

from collections.abc import Coroutine, Sequence
from typing import Any, Callable, TypeVar

from ._interface import BatchJobRow, NexusEndpointRow, Store
from ._model import (
    ApiKeyRow,
    BacklogTask,
    CurrentRow,
    DeploymentRow,
    ExecutionRow,
    LoadedExecution,
    Mutation,
    NamespaceRow,
    ScheduleRow,
    ServerSecret,
    TimerTask,
    TransferTask,
    VisibilityRow,
)
from ._sqlite_batch_jobs import SqliteBatchJobs
from ._sqlite_deployments import SqliteDeployments
from ._sqlite_executions import SqliteExecutions
from ._sqlite_group_commit import GroupCommitWriter
from ._sqlite_namespaces import SqliteNamespaces
from ._sqlite_nexus_endpoints import SqliteNexusEndpoints
from ._sqlite_reads import SqliteReads
from ._sqlite_schedules import SqliteSchedules
from ._sqlite_schema import SCHEMA, SCHEMA_VERSION, connect, ensure_sa_indexes, txn, upgrade
from ._sqlite_tasks import SqliteTasks
from ._sqlite_visibility import SqliteVisibility

T = TypeVar("T")
#: What a delegating method returns: the collaborator's coroutine.
Co = Coroutine[Any, Any, T]


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
        self._keepalive: sqlite3.Connection | None = None
        self._writer = GroupCommitWriter(max_batch)
        self._reads = SqliteReads(self._dsn, uri=self._uri)
        self._namespaces = SqliteNamespaces(self._reads, self._writer)
        self._executions = SqliteExecutions(self._reads)
        self._tasks = SqliteTasks(self._reads)
        self._visibility = SqliteVisibility(self._reads)
        self._schedules = SqliteSchedules(self._reads)
        self._deployments = SqliteDeployments(self._reads, self._writer)
        self._batch_jobs = SqliteBatchJobs(self._reads, self._writer)
        self._nexus_endpoints = SqliteNexusEndpoints(self._reads, self._writer)

    @property
    def fault_hook(self) -> Callable[[str, Sequence[Mutation]], None] | None:
        """Test hook: called with (stage, mutations) at "before_commit" / "after_commit" of each batch."""
        return self._writer.fault_hook

    @fault_hook.setter
    def fault_hook(self, hook: Callable[[str, Sequence[Mutation]], None] | None) -> None:
        self._writer.fault_hook = hook

    # ------------------------------------------------------------------ lifecycle
    async def open(self, num_shards: int) -> None:
        if self._uri:
            self._keepalive = sqlite3.connect(self._dsn, uri=True, check_same_thread=False)
        conn = connect(self._dsn, uri=self._uri)
        conn.executescript(SCHEMA)
        upgrade(conn)
        row = conn.execute("SELECT value FROM meta WHERE key='num_shards'").fetchone()
        if row is None:
            with txn(conn):
                conn.execute("INSERT INTO meta VALUES ('num_shards', ?)", (str(num_shards),))
                conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
                conn.executemany(
                    "INSERT OR IGNORE INTO shards (shard_id, range_id) VALUES (?, 0)", [(i,) for i in range(num_shards)]
                )
        elif int(row[0]) != num_shards:
            conn.close()
            raise ValueError(
                f"{self.path} was created with {row[0]} shards; it cannot be opened with num_shards={num_shards} "
                "(workflow ids hash to shards permanently)"
            )
        with txn(conn):  # databases made before search-attribute indexes existed
            for (data,) in conn.execute("SELECT data FROM namespaces").fetchall():
                ensure_sa_indexes(conn, data)
        self._reads.start()
        self._writer.start(conn)

    async def close(self) -> None:
        await self._writer.stop()
        self._reads.stop()
        self._writer.close()
        if self._keepalive is not None:
            self._keepalive.close()
            self._keepalive = None
        if self._tmpdir is not None:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None

    # ------------------------------------------------------------------ writes
    def apply(self, mutation: Mutation) -> Co[None]:
        return self._writer.apply(mutation)

    # ------------------------------------------------------------------ shards
    async def acquire_shard(self, shard_id: int, owner: str) -> int:
        def run(conn: sqlite3.Connection) -> int:
            conn.execute("UPDATE shards SET range_id = range_id + 1, owner = ? WHERE shard_id = ?", (owner, shard_id))
            row = conn.execute("SELECT range_id FROM shards WHERE shard_id = ?", (shard_id,)).fetchone()
            if row is None:
                raise ValueError(f"no shard {shard_id}")
            return int(row[0])

        return await self._writer.write(run)

    async def get_range_id(self, shard_id: int) -> int:
        row = await self._reads.read(
            lambda c: c.execute("SELECT range_id FROM shards WHERE shard_id=?", (shard_id,)).fetchone())
        return int(row[0]) if row else -1

    # ------------------------------------------------------------------ namespaces, API keys, server secrets
    def create_namespace(self, row: NamespaceRow) -> Co[None]:
        return self._namespaces.create_namespace(row)

    def get_namespace(self, name: str) -> Co[NamespaceRow | None]:
        return self._namespaces.get_namespace(name)

    def list_namespaces(self) -> Co[list[NamespaceRow]]:
        return self._namespaces.list_namespaces()

    def update_namespace(self, row: NamespaceRow, expected_version: int) -> Co[None]:
        return self._namespaces.update_namespace(row, expected_version)

    def delete_namespace(self, name: str, now_ms: int) -> Co[list[ApiKeyRow]]:
        return self._namespaces.delete_namespace(name, now_ms)

    def create_api_key(self, row: ApiKeyRow) -> Co[None]:
        return self._namespaces.create_api_key(row)

    def get_api_key(self, key_id: str) -> Co[ApiKeyRow | None]:
        return self._namespaces.get_api_key(key_id)

    def list_api_keys(self) -> Co[list[ApiKeyRow]]:
        return self._namespaces.list_api_keys()

    def revoke_api_key(self, key_id: str, revoke_time_ms: int) -> Co[ApiKeyRow | None]:
        return self._namespaces.revoke_api_key(key_id, revoke_time_ms)

    def add_server_secret(self, secret: ServerSecret) -> Co[ServerSecret]:
        return self._namespaces.add_server_secret(secret)

    def list_server_secrets(self, prefix: str = "") -> Co[list[ServerSecret]]:
        return self._namespaces.list_server_secrets(prefix)

    # ------------------------------------------------------------------ executions
    def get_current(self, namespace_id: str, workflow_id: str) -> Co[CurrentRow | None]:
        return self._executions.get_current(namespace_id, workflow_id)

    def get_execution_row(self, namespace_id: str, workflow_id: str, run_id: str) -> Co[ExecutionRow | None]:
        return self._executions.get_execution_row(namespace_id, workflow_id, run_id)

    def load_execution(self, namespace_id: str, workflow_id: str, run_id: str) -> Co[LoadedExecution | None]:
        return self._executions.load_execution(namespace_id, workflow_id, run_id)

    def read_events(self, namespace_id: str, workflow_id: str, run_id: str, first_event_id: int,
                    max_events: int) -> Co[list[tuple[int, bytes]]]:
        return self._executions.read_events(namespace_id, workflow_id, run_id, first_event_id, max_events)

    def list_running_executions(self, shard_id: int) -> Co[list[ExecutionRow]]:
        return self._executions.list_running_executions(shard_id)

    def count_running(self, namespace_id: str) -> Co[int]:
        return self._executions.count_running(namespace_id)

    def list_running(self, namespace_id: str, limit: int) -> Co[list[CurrentRow]]:
        return self._executions.list_running(namespace_id, limit)

    def list_blob_refs(self, namespace_id: str, workflow_id: str, run_id: str) -> Co[list[str]]:
        return self._executions.list_blob_refs(namespace_id, workflow_id, run_id)

    def blob_is_referenced(self, namespace_id: str, blob_key: str) -> Co[bool]:
        return self._executions.blob_is_referenced(namespace_id, blob_key)

    # ------------------------------------------------------------------ task queues
    def load_transfer_tasks(self, shard_id: int, after_task_id: int, limit: int) -> Co[list[TransferTask]]:
        return self._tasks.load_transfer_tasks(shard_id, after_task_id, limit)

    def load_timer_tasks(self, shard_id: int, until_ms: int, after: tuple[int, int], limit: int) -> Co[list[TimerTask]]:
        return self._tasks.load_timer_tasks(shard_id, until_ms, after, limit)

    def load_backlog(self, namespace_id: str, task_queue: str, kind: int, limit: int) -> Co[list[BacklogTask]]:
        return self._tasks.load_backlog(namespace_id, task_queue, kind, limit)

    def list_backlog_queues(self) -> Co[list[tuple[str, str, int]]]:
        return self._tasks.list_backlog_queues()

    # ------------------------------------------------------------------ visibility
    def query_visibility(self, namespace_id: str, where: str, params: dict[str, object], order_by: str, limit: int,
                         offset: int) -> Co[list[VisibilityRow]]:
        return self._visibility.query_visibility(namespace_id, where, params, order_by, limit, offset)

    def count_visibility(self, namespace_id: str, where: str, params: dict[str, object],
                         group_by: Sequence[str]) -> Co[list[tuple[tuple[object, ...], int]]]:
        return self._visibility.count_visibility(namespace_id, where, params, group_by)

    def list_closed_before(self, namespace_id: str, close_before_ms: int, limit: int) -> Co[list[VisibilityRow]]:
        return self._visibility.list_closed_before(namespace_id, close_before_ms, limit)

    # ------------------------------------------------------------------ schedules
    def get_schedule(self, namespace_id: str, schedule_id: str) -> Co[ScheduleRow | None]:
        return self._schedules.get_schedule(namespace_id, schedule_id)

    def list_schedules(self, namespace_id: str, after_schedule_id: str, limit: int) -> Co[list[ScheduleRow]]:
        return self._schedules.list_schedules(namespace_id, after_schedule_id, limit)

    # ------------------------------------------------------------------ worker deployments
    def get_deployment(self, namespace_id: str, name: str) -> Co[DeploymentRow | None]:
        return self._deployments.get_deployment(namespace_id, name)

    def list_deployments(self, namespace_id: str, after_name: str, limit: int) -> Co[list[DeploymentRow]]:
        return self._deployments.list_deployments(namespace_id, after_name, limit)

    def put_deployment(self, row: DeploymentRow, expected_version: int) -> Co[None]:
        return self._deployments.put_deployment(row, expected_version)

    def delete_deployments(self, namespace_id: str) -> Co[None]:
        return self._deployments.delete_deployments(namespace_id)

    # ------------------------------------------------------------------ server-side batch jobs (erasure)
    def create_batch_job(self, row: BatchJobRow) -> Co[None]:
        return self._batch_jobs.create_batch_job(row)

    def get_batch_job(self, namespace_id: str, job_id: str) -> Co[BatchJobRow | None]:
        return self._batch_jobs.get_batch_job(namespace_id, job_id)

    def update_batch_job(self, row: BatchJobRow, expected_version: int) -> Co[None]:
        return self._batch_jobs.update_batch_job(row, expected_version)

    def list_batch_jobs(self, *, namespace_id: str = "", state: int = 0, limit: int = 1000) -> Co[list[BatchJobRow]]:
        return self._batch_jobs.list_batch_jobs(namespace_id=namespace_id, state=state, limit=limit)

    def create_nexus_endpoint(self, row: NexusEndpointRow) -> Co[None]:
        return self._nexus_endpoints.create_nexus_endpoint(row)

    def get_nexus_endpoint(self, endpoint_id: str = "", *, name: str = "") -> Co[NexusEndpointRow | None]:
        return self._nexus_endpoints.get_nexus_endpoint(endpoint_id, name=name)

    def update_nexus_endpoint(self, row: NexusEndpointRow, expected_version: int) -> Co[None]:
        return self._nexus_endpoints.update_nexus_endpoint(row, expected_version)

    def delete_nexus_endpoint(self, endpoint_id: str, expected_version: int) -> Co[None]:
        return self._nexus_endpoints.delete_nexus_endpoint(endpoint_id, expected_version)

    def list_nexus_endpoints(self, *, after_name: str = "", limit: int = 1000) -> Co[list[NexusEndpointRow]]:
        return self._nexus_endpoints.list_nexus_endpoints(after_name=after_name, limit=limit)


__all__ = ["SCHEMA_VERSION", "SqliteStore"]
