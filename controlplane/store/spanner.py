"""Cloud Spanner store: the same contract as the SQLite store, for several processes and more than one machine.

Schema: ``schema/spanner_v1.sql`` (executions, events and task queues interleaved
under their shard). Writes: ``_spanner_write`` (one transaction per batch of
mutations, each fenced by its shard's ``RangeId``) run by ``_spanner_runner``.
Reads: single-use snapshots on a small thread pool. Namespaces, API keys and secrets:
``_spanner_namespaces``; visibility queries: ``_spanner_visibility`` (collaborators the
store delegates to, returning their coroutine). Cluster leases:
``_spanner_leases``, exposed here as ``claim_shard``/``renew_leases``/... for
``spindle.controlplane.cluster``.

Requires ``google-cloud-spanner`` (``pip install spindle[spanner]``). With the
emulator, set ``SPANNER_EMULATOR_HOST`` and turn multiplexed sessions off (see
``configure_emulator_env``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os

from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any, TypeVar

from . import _spanner_leases as leases
from ._interface import BatchJobRow, NexusEndpointRow, Store
from ._model import (
    ApiKeyRow,
    BacklogTask,
    ConditionFailedError,
    CurrentRow,
    DeploymentRow,
    ExecutionRow,
    LoadedExecution,
    Mutation,
    NamespaceRow,
    ScheduleRow,
    ServerSecret,
    StoreUnavailableError,
    TimerTask,
    TransferTask,
    VisibilityRow,
)
from ._spanner_batch_jobs import SpannerBatchJobs
from ._spanner_codec import CURRENT_COLUMNS, EXEC_COLUMNS, current_from_row, dec, exec_from_row
from ._spanner_deployments import SpannerDeployments
from ._spanner_namespaces import SpannerNamespaces
from ._spanner_nexus_endpoints import SpannerNexusEndpoints
from ._spanner_runner import TxnRunner
from ._spanner_schema import setup_schema
from ._spanner_visibility import SpannerVisibility

T = TypeVar("T")
#: What a delegating method returns: the collaborator's coroutine.
Co = Coroutine[Any, Any, T]

MULTIPLEXED_ENV = ("GOOGLE_CLOUD_SPANNER_MULTIPLEXED_SESSIONS", "GOOGLE_CLOUD_SPANNER_MULTIPLEXED_SESSIONS_FOR_RW",
                   "GOOGLE_CLOUD_SPANNER_MULTIPLEXED_SESSIONS_PARTITIONED_OPS")
#: Largest millisecond value a query bound may carry (timer scans use "until forever").
_MAX_MS = 2**62


def configure_emulator_env() -> None:
    """Turn multiplexed sessions off when talking to the emulator (1.5.x breaks concurrent transactions with them)."""
    if os.environ.get("SPANNER_EMULATOR_HOST"):
        for var in MULTIPLEXED_ENV:
            os.environ.setdefault(var, "false")


def _exec_select(alias: str = "x") -> str:
    return ", ".join(f"{alias}.{c}" for c in EXEC_COLUMNS)


class SpannerStore(Store):
    """Store on one Cloud Spanner database (shared by every process of a cluster).

    Args:
        project, instance, database: where the data lives.
        auto_setup: create the database and apply the schema on ``open`` (otherwise
            run ``spindle admin setup-schema`` first).
        max_batch: most mutations committed in one transaction.
        writers: writer threads (read-write transactions in flight from this process).
        readers: reader threads.
        retry_delay: seconds between retries of an aborted transaction (None: the
            client's backoff). The emulator aborts every concurrent transaction, so
            a few milliseconds suit it; it is the default when ``SPANNER_EMULATOR_HOST`` is set.
        client: an existing ``google.cloud.spanner.Client`` (tests).
    """

    name = "spanner"

    def __init__(self, project: str, instance: str, database: str, *, auto_setup: bool = True, max_batch: int = 64,
                 writers: int = 1, readers: int = 4, retry_delay: float | None = None, client: Any = None) -> None:
        self.project = project
        self.instance_id = instance
        self.database_id = database
        self.auto_setup = auto_setup
        self.max_batch = max_batch
        self.writers = writers
        self.readers = readers
        self.retry_delay = retry_delay
        self._client = client
        self.database: Any = None
        self._runner: TxnRunner | None = None
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        #: Leases and heartbeats get their own writer thread and reader thread: they must
        #: never wait behind this member's backlog of history writes and reads.
        self._lease_runner: TxnRunner | None = None
        self._lease_pool: concurrent.futures.ThreadPoolExecutor | None = None
        self.num_shards = 0
        self._namespaces = SpannerNamespaces(self._query, self._txn)
        self._deployments = SpannerDeployments(self._query, self._txn)
        self._batch_jobs = SpannerBatchJobs(self._query, self._txn)
        self._nexus_endpoints = SpannerNexusEndpoints(self._query, self._txn)
        self._visibility = SpannerVisibility(self._query)

    # ------------------------------------------------------------------ lifecycle
    def _connect(self) -> Any:
        configure_emulator_env()
        from google.cloud import spanner

        if self._client is None:
            self._client = spanner.Client(project=self.project)
        return self._client.instance(self.instance_id).database(self.database_id)

    async def open(self, num_shards: int) -> None:
        loop = asyncio.get_running_loop()
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=self.readers, thread_name_prefix="spindle-spanner-read")
        self.database = await loop.run_in_executor(self._pool, self._connect)
        if self.auto_setup:
            await loop.run_in_executor(self._pool, setup_schema, self.database)
        delay = self.retry_delay
        if delay is None and os.environ.get("SPANNER_EMULATOR_HOST"):
            delay = 0.005
        self._runner = TxnRunner(self.database, max_batch=self.max_batch, writers=self.writers, retry_delay=delay)
        self._runner.start()
        self._lease_runner = TxnRunner(self.database, max_batch=1, retry_delay=delay)
        self._lease_runner.start()
        self._lease_pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="spindle-spanner-lease")
        await self._runner.call(self._init_shards(num_shards))
        self.num_shards = num_shards

    @staticmethod
    def _init_shards(num_shards: int) -> Callable[[Any], None]:
        from google.cloud.spanner_v1 import KeySet

        def run(txn: Any) -> None:
            rows = list(txn.read("ClusterMeta", ["Value"], KeySet(keys=[["num_shards"]])))
            if rows and int(rows[0][0]) != num_shards:
                raise ValueError(
                    f"the Spanner database was created with {rows[0][0]} shards; it cannot be opened with "
                    f"num_shards={num_shards} (workflow ids hash to shards permanently)")
            if rows:
                return
            txn.insert("ClusterMeta", ["Key", "Value"], [["num_shards", str(num_shards)]])
            existing = {int(r[0]) for r in txn.execute_sql("SELECT ShardId FROM Shards")}
            missing = [[i, 0, "", 0] for i in range(num_shards) if i not in existing]
            if missing:
                txn.insert("Shards", ["ShardId", "RangeId", "Owner", "LeaseExpiryMs"], missing)

        return run

    async def close(self) -> None:
        loop = asyncio.get_running_loop()
        for runner in (self._runner, self._lease_runner):
            if runner is not None:
                await loop.run_in_executor(None, runner.stop)
        self._runner = self._lease_runner = None
        if self._lease_pool is not None:
            self._lease_pool.shutdown(wait=True)
            self._lease_pool = None
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    @property
    def stats(self) -> dict[str, float]:
        """Write counters (transactions, mutations, seconds in transactions) for benchmarks."""
        return dict(self._runner.stats) if self._runner is not None else {}

    # ------------------------------------------------------------------ helpers
    async def _read(self, fn: Callable[[Any], T], *, lease: bool = False) -> T:
        """Run ``fn(snapshot)`` on the reader pool (``lease``: the lease thread) in a (multi-use) read-only snapshot."""
        pool = self._lease_pool if lease else self._pool
        if pool is None or self.database is None:
            raise StoreUnavailableError("store is not open")

        def run() -> T:
            try:
                with self.database.snapshot(multi_use=True) as snap:
                    return fn(snap)
            except (ConditionFailedError, ValueError):
                raise
            except Exception as e:  # noqa: BLE001 - any client error is unavailability for the caller
                raise StoreUnavailableError(f"spanner read failed: {type(e).__name__}: {e}") from e

        return await asyncio.get_running_loop().run_in_executor(pool, run)

    async def _query(self, sql: str, params: Mapping[str, Any] | None = None,
                     types: Mapping[str, Any] | None = None) -> list[list[Any]]:
        return await self._read(lambda s: [list(r) for r in s.execute_sql(sql, params=dict(params or {}),
                                                                            param_types=dict(types or {}) or None)])

    async def _txn(self, fn: Callable[[Any], T], *, lease: bool = False) -> T:
        runner = self._lease_runner if lease else self._runner
        if runner is None:
            raise StoreUnavailableError("store is closed")
        return await runner.call(fn)

    # ------------------------------------------------------------------ writes
    async def apply(self, mutation: Mutation) -> None:
        if self._runner is None:
            raise StoreUnavailableError("store is closed")
        await self._runner.mutation(mutation)

    async def apply_many(self, mutations: Sequence[Mutation]) -> list[BaseException | None]:
        """Apply independent mutations concurrently: the writer commits them in as few transactions as it can."""
        outs = await asyncio.gather(*(self.apply(m) for m in mutations), return_exceptions=True)
        return [o if isinstance(o, BaseException) else None for o in outs]

    # ------------------------------------------------------------------ shards
    async def acquire_shard(self, shard_id: int, owner: str) -> int:
        from google.cloud import spanner
        from google.cloud.spanner_v1 import KeySet

        def run(txn: Any) -> int:
            rows = list(txn.read("Shards", ["RangeId"], KeySet(keys=[[shard_id]])))
            if not rows:
                raise ValueError(f"no shard {shard_id}")
            new = int(rows[0][0]) + 1
            txn.update("Shards", ["ShardId", "RangeId", "Owner", "UpdateTime"],
                       [[shard_id, new, owner, spanner.COMMIT_TIMESTAMP]])
            return new

        return await self._txn(run)

    async def get_range_id(self, shard_id: int) -> int:
        rows = await self._query("SELECT RangeId FROM Shards WHERE ShardId = @s", {"s": shard_id})
        return int(rows[0][0]) if rows else -1

    # -- cluster leases (spindle.controlplane.cluster): on their own threads, never queued behind history work --
    async def heartbeat_member(self, member_id: str, address: str, now_ms: int, started_ms: int) -> None:
        """Register or refresh this process in the membership table."""
        await self._txn(leases.heartbeat(member_id, address, now_ms, started_ms), lease=True)

    async def leave_cluster(self, member_id: str) -> None:
        """Remove this process from the membership table."""
        await self._txn(leases.leave(member_id), lease=True)

    async def claim_shard(self, shard_id: int, member_id: str, now_ms: int, ttl_ms: int) -> int | None:
        """Take a free or expired shard lease; the new range id, or None if another member holds it."""
        return await self._txn(leases.claim(shard_id, member_id, now_ms, ttl_ms), lease=True)

    async def renew_leases(self, member_id: str, held: Mapping[int, int], now_ms: int, ttl_ms: int) -> list[int]:
        """Extend our leases; returns the shards we lost (another member took them)."""
        if not held:
            return []  # (an empty read-write transaction cannot commit)
        return await self._txn(leases.renew(member_id, dict(held), now_ms, ttl_ms), lease=True)

    async def release_shard(self, shard_id: int, member_id: str, range_id: int) -> bool:
        """Give a shard up so another member can take it at once."""
        return await self._txn(leases.release(shard_id, member_id, range_id), lease=True)

    async def list_members(self) -> list[leases.Member]:
        return await self._read(leases.read_members, lease=True)

    async def list_leases(self) -> list[leases.ShardLease]:
        return await self._read(leases.read_leases, lease=True)

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
    async def get_current(self, namespace_id: str, workflow_id: str) -> CurrentRow | None:
        cols = ", ".join(CURRENT_COLUMNS)
        rows = await self._query(f"SELECT {cols} FROM CurrentExecutions WHERE NamespaceId = @ns AND WorkflowId = @w",
                                 {"ns": namespace_id, "w": workflow_id})
        return current_from_row(rows[0]) if rows else None

    _BY_RUN = "FROM Executions@{FORCE_INDEX=ExecutionsByRun} x WHERE x.NamespaceId = @ns AND x.WorkflowId = @w AND x.RunId = @r"
    _SAME_RUN = "ShardId = x.ShardId AND {t}.NamespaceId = x.NamespaceId AND {t}.WorkflowId = x.WorkflowId AND {t}.RunId = x.RunId"

    async def get_execution_row(self, namespace_id: str, workflow_id: str, run_id: str) -> ExecutionRow | None:
        rows = await self._query(f"SELECT {_exec_select()} {self._BY_RUN}",
                                 {"ns": namespace_id, "w": workflow_id, "r": run_id})
        return exec_from_row(rows[0]) if rows else None

    async def load_execution(self, namespace_id: str, workflow_id: str, run_id: str) -> LoadedExecution | None:
        # One query: the row plus its events and buffered events as arrays (one consistent snapshot).
        ev = self._SAME_RUN.format(t="e")
        bf = self._SAME_RUN.format(t="b")
        sql = (f"SELECT {_exec_select()}, "
               f"ARRAY(SELECT e.Data FROM Events e WHERE e.{ev} ORDER BY e.EventId) AS Ev, "
               f"ARRAY(SELECT b.Data FROM BufferedEvents b WHERE b.{bf} ORDER BY b.Seq) AS Buf "
               f"{self._BY_RUN}")
        rows = await self._query(sql, {"ns": namespace_id, "w": workflow_id, "r": run_id})
        if not rows:
            return None
        r = rows[0]
        n = len(EXEC_COLUMNS)
        return LoadedExecution(exec_from_row(r[:n]), [dec(d) for d in r[n] or []], [dec(d) for d in r[n + 1] or []])

    async def read_events(self, namespace_id: str, workflow_id: str, run_id: str, first_event_id: int,
                          max_events: int) -> list[tuple[int, bytes]]:
        ev = self._SAME_RUN.format(t="e")
        sql = (f"SELECT e.EventId, e.Data {self._BY_RUN.replace('WHERE', f'JOIN Events e ON e.{ev} WHERE')} "
               "AND e.EventId >= @first ORDER BY e.EventId LIMIT @lim")
        rows = await self._query(sql, {"ns": namespace_id, "w": workflow_id, "r": run_id, "first": first_event_id,
                                       "lim": max_events})
        return [(int(r[0]), dec(r[1])) for r in rows]

    async def list_running_executions(self, shard_id: int) -> list[ExecutionRow]:
        rows = await self._query(f"SELECT {_exec_select()} FROM Executions x WHERE x.ShardId = @s AND x.Status = 1",
                                 {"s": shard_id})
        return [exec_from_row(r) for r in rows]

    # ------------------------------------------------------------------ queues
    async def load_transfer_tasks(self, shard_id: int, after_task_id: int, limit: int) -> list[TransferTask]:
        rows = await self._query("SELECT TaskId, Data FROM TransferTasks WHERE ShardId = @s AND TaskId > @a "
                                 "ORDER BY TaskId LIMIT @l", {"s": shard_id, "a": after_task_id, "l": limit})
        return [TransferTask(int(r[0]), r[1]) for r in rows]

    async def load_timer_tasks(self, shard_id: int, until_ms: int, after: tuple[int, int], limit: int) -> list[TimerTask]:
        rows = await self._query(
            "SELECT FireTimeMs, TaskId, Data FROM TimerTasks WHERE ShardId = @s AND FireTimeMs < @u "
            "AND (FireTimeMs > @af OR (FireTimeMs = @af AND TaskId > @at)) ORDER BY FireTimeMs, TaskId LIMIT @l",
            {"s": shard_id, "u": min(until_ms, _MAX_MS), "af": after[0], "at": after[1], "l": limit})
        return [TimerTask(int(r[0]), int(r[1]), r[2]) for r in rows]

    async def load_backlog(self, namespace_id: str, task_queue: str, kind: int, limit: int) -> list[BacklogTask]:
        rows = await self._query(
            "SELECT NamespaceId, TaskQueue, Kind, ShardId, TaskId, Data FROM TaskBacklog WHERE NamespaceId = @ns "
            "AND TaskQueue = @q AND Kind = @k ORDER BY TaskId, ShardId LIMIT @l",
            {"ns": namespace_id, "q": task_queue, "k": kind, "l": limit})
        return [BacklogTask(r[0], r[1], int(r[2]), int(r[3]), int(r[4]), r[5]) for r in rows]

    async def list_backlog_queues(self) -> list[tuple[str, str, int]]:
        rows = await self._query("SELECT DISTINCT NamespaceId, TaskQueue, Kind FROM TaskBacklog")
        return [(r[0], r[1], int(r[2])) for r in rows]

    # ------------------------------------------------------------------ visibility
    def query_visibility(self, namespace_id: str, where: str, params: dict[str, object], order_by: str, limit: int,
                         offset: int) -> Co[list[VisibilityRow]]:
        return self._visibility.query_visibility(namespace_id, where, params, order_by, limit, offset)

    def count_visibility(self, namespace_id: str, where: str, params: dict[str, object],
                         group_by: Sequence[str]) -> Co[list[tuple[tuple[object, ...], int]]]:
        return self._visibility.count_visibility(namespace_id, where, params, group_by)

    def list_closed_before(self, namespace_id: str, close_before_ms: int, limit: int) -> Co[list[VisibilityRow]]:
        return self._visibility.list_closed_before(namespace_id, close_before_ms, limit)

    async def count_running(self, namespace_id: str) -> int:
        rows = await self._query("SELECT COUNT(*) FROM CurrentExecutions WHERE NamespaceId = @ns AND Status = 1",
                                 {"ns": namespace_id})
        return int(rows[0][0])

    async def list_blob_refs(self, namespace_id: str, workflow_id: str, run_id: str) -> list[str]:
        rows = await self._query("SELECT BlobKey FROM BlobRefs WHERE NamespaceId = @ns AND WorkflowId = @w AND RunId = @r "
                                 "ORDER BY BlobKey", {"ns": namespace_id, "w": workflow_id, "r": run_id})
        return [str(r[0]) for r in rows]

    async def blob_is_referenced(self, namespace_id: str, blob_key: str) -> bool:
        rows = await self._query("SELECT 1 FROM BlobRefs@{FORCE_INDEX=BlobRefsByKey} WHERE NamespaceId = @ns "
                                 "AND BlobKey = @k LIMIT 1", {"ns": namespace_id, "k": blob_key})
        return bool(rows)

    async def get_schedule(self, namespace_id: str, schedule_id: str) -> ScheduleRow | None:
        rows = await self._query("SELECT NamespaceId, ScheduleId, ShardId, Version, Data FROM Schedules "
                                 "WHERE NamespaceId = @ns AND ScheduleId = @id", {"ns": namespace_id, "id": schedule_id})
        return _schedule(rows[0]) if rows else None

    async def list_schedules(self, namespace_id: str, after_schedule_id: str, limit: int) -> list[ScheduleRow]:
        rows = await self._query("SELECT NamespaceId, ScheduleId, ShardId, Version, Data FROM Schedules "
                                 "WHERE NamespaceId = @ns AND ScheduleId > @a ORDER BY ScheduleId LIMIT @l",
                                 {"ns": namespace_id, "a": after_schedule_id, "l": limit})
        return [_schedule(r) for r in rows]

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

    async def list_running(self, namespace_id: str, limit: int) -> list[CurrentRow]:
        cols = ", ".join(CURRENT_COLUMNS)
        rows = await self._query(f"SELECT {cols} FROM CurrentExecutions WHERE NamespaceId = @ns AND Status = 1 LIMIT @l",
                                 {"ns": namespace_id, "l": limit})
        return [current_from_row(r) for r in rows]


def _schedule(r: list[Any]) -> ScheduleRow:
    return ScheduleRow(namespace_id=r[0], schedule_id=r[1], shard_id=int(r[2]), version=int(r[3]), data=dec(r[4]))


__all__ = ["SpannerStore", "configure_emulator_env"]
