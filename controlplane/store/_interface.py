"""The Store contract. Both backends (SQLite, Cloud Spanner) pass the same conformance suite."""

from __future__ import annotations

import abc

from collections.abc import Sequence
from dataclasses import dataclass

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


@dataclass
class BatchJobRow:
    """A durable server-side batch job (issue 26: erasure), keyed by namespace and job id.

    ``state`` is the job's ``BatchOperationState`` number (the store indexes it so a member finds
    the running jobs without reading every row); ``data`` is the job's serialized record (the
    store never reads it); ``version`` rises by one with every write (optimistic updates).
    """

    namespace_id: str
    job_id: str
    version: int
    state: int
    data: bytes


@dataclass
class NexusEndpointRow:
    """A Nexus endpoint of the registry (issue 30; docs/NEXUS.md), keyed by id; ``name`` is unique too.

    ``data`` is the serialized ``spindle.v1.Endpoint`` (the store never reads it); ``version``
    rises by one with every write (optimistic updates, Temporal's endpoint version).
    """

    id: str
    name: str
    version: int
    data: bytes


class Store(abc.ABC):
    """Durable state of the control plane. All methods are coroutines safe to call from the event loop."""

    name: str = "store"

    @abc.abstractmethod
    async def open(self, num_shards: int) -> None:
        """Create or check the schema. Raises ValueError if the database was made with another shard count."""

    @abc.abstractmethod
    async def close(self) -> None: ...

    # -- shards ------------------------------------------------------------------
    @abc.abstractmethod
    async def acquire_shard(self, shard_id: int, owner: str) -> int:
        """Take ownership of a shard: increment and return its range_id (fences older owners)."""

    @abc.abstractmethod
    async def get_range_id(self, shard_id: int) -> int: ...

    # -- namespaces --------------------------------------------------------------
    @abc.abstractmethod
    async def create_namespace(self, row: NamespaceRow) -> None:
        """Insert; raises ConditionFailedError if the name exists."""

    @abc.abstractmethod
    async def get_namespace(self, name: str) -> NamespaceRow | None: ...

    @abc.abstractmethod
    async def list_namespaces(self) -> list[NamespaceRow]: ...

    @abc.abstractmethod
    async def update_namespace(self, row: NamespaceRow, expected_version: int) -> None:
        """Replace under an optimistic version check (ConditionFailedError)."""

    @abc.abstractmethod
    async def delete_namespace(self, name: str, now_ms: int) -> list[ApiKeyRow]:
        """Delete the namespace row and, in the same transaction, every API-key grant on it.

        Each key holding a grant or task queues on ``name`` loses them
        (:meth:`ApiKeyRow.without_namespace`); one left with no grant that is not
        ``system_admin`` is revoked at ``now_ms``. Returns the keys as changed.
        """

    # -- API keys and server secrets (spindle.controlplane.auth, history._tokens) ------
    @abc.abstractmethod
    async def create_api_key(self, row: ApiKeyRow) -> None:
        """Insert; raises ConditionFailedError if a key with this id exists."""

    @abc.abstractmethod
    async def get_api_key(self, key_id: str) -> ApiKeyRow | None: ...

    @abc.abstractmethod
    async def list_api_keys(self) -> list[ApiKeyRow]:
        """Every key, revoked and expired ones included, ordered by id."""

    @abc.abstractmethod
    async def revoke_api_key(self, key_id: str, revoke_time_ms: int) -> ApiKeyRow | None:
        """Mark a key revoked (a key already revoked keeps its first revocation time).

        Returns the key as stored afterwards, or None if there is no such key.
        """

    @abc.abstractmethod
    async def add_server_secret(self, secret: ServerSecret) -> ServerSecret:
        """Insert ``secret`` unless one of that name exists; returns the stored one (the first writer wins)."""

    @abc.abstractmethod
    async def list_server_secrets(self, prefix: str = "") -> list[ServerSecret]:
        """Secrets whose name starts with ``prefix``, ordered by name."""

    # -- executions ---------------------------------------------------------------
    @abc.abstractmethod
    async def get_current(self, namespace_id: str, workflow_id: str) -> CurrentRow | None: ...

    @abc.abstractmethod
    async def load_execution(self, namespace_id: str, workflow_id: str, run_id: str) -> LoadedExecution | None:
        """The execution row, all its events (serialized, in order) and its buffered events."""

    @abc.abstractmethod
    async def get_execution_row(self, namespace_id: str, workflow_id: str, run_id: str) -> ExecutionRow | None: ...

    @abc.abstractmethod
    async def read_events(
        self, namespace_id: str, workflow_id: str, run_id: str, first_event_id: int, max_events: int
    ) -> list[tuple[int, bytes]]:
        """Events with id >= first_event_id, at most max_events, in order."""

    @abc.abstractmethod
    async def list_running_executions(self, shard_id: int) -> list[ExecutionRow]: ...

    @abc.abstractmethod
    async def apply(self, mutation: Mutation) -> None:
        """Apply every write of the mutation in one transaction, or none.

        Raises ShardOwnershipLostError (range_id moved), ConditionFailedError (version or
        current-run check), StoreUnavailableError (I/O, disk full).
        """

    async def apply_many(self, mutations: Sequence[Mutation]) -> list[BaseException | None]:
        """Apply independent mutations; one's failure does not affect the others."""
        out: list[BaseException | None] = []
        for m in mutations:
            try:
                await self.apply(m)
                out.append(None)
            except Exception as e:  # noqa: BLE001 - reported per mutation
                out.append(e)
        return out

    # -- large-payload blob references (controlplane/archival/_blobs.py) ---------------
    async def list_blob_refs(self, namespace_id: str, workflow_id: str, run_id: str) -> list[str]:
        """Keys of the blobs a run refers to (``Mutation.blob_refs``), sorted. Default: none known."""
        return []

    async def blob_is_referenced(self, namespace_id: str, blob_key: str) -> bool:
        """Whether any run still refers to the blob. The default (a store without the table) says
        True, so a blob is never deleted on a store that cannot tell."""
        return True

    # -- schedules (issue 17; written with ``Mutation.schedule`` / ``schedule_delete``) --------
    @abc.abstractmethod
    async def get_schedule(self, namespace_id: str, schedule_id: str) -> ScheduleRow | None:
        """The schedule row, or None."""

    @abc.abstractmethod
    async def list_schedules(self, namespace_id: str, after_schedule_id: str, limit: int) -> list[ScheduleRow]:
        """Up to ``limit`` schedules of the namespace with an id greater than ``after_schedule_id``, ordered by id."""

    # -- worker deployments (issue 25: build versioning; one JSON document per deployment) --
    @abc.abstractmethod
    async def get_deployment(self, namespace_id: str, name: str) -> DeploymentRow | None:
        """The deployment's row as last written (``version`` is the stored version), or None if there is none."""

    @abc.abstractmethod
    async def list_deployments(self, namespace_id: str, after_name: str, limit: int) -> list[DeploymentRow]:
        """Up to ``limit`` deployments of the namespace with a name greater than ``after_name``, ordered by name
        (``""`` starts at the first; pass the last name of a page to get the next)."""

    @abc.abstractmethod
    async def put_deployment(self, row: DeploymentRow, expected_version: int) -> None:
        """Write ``row`` as version ``expected_version + 1`` if the stored version is ``expected_version``, then set
        ``row.version`` to it. ``expected_version == 0`` inserts: no row of that (namespace, name) may exist.

        The check and the write are one transaction: of writers that read the same version, exactly one wins.
        Raises ConditionFailedError (nothing written, ``row`` unchanged) when the stored version differs, a row
        exists for 0, or none exists for a version above 0.
        """

    @abc.abstractmethod
    async def delete_deployments(self, namespace_id: str) -> None:
        """Delete every deployment of the namespace (namespace deletion); other namespaces' rows stay."""

    # -- server-side batch jobs (issue 26: erasure; controlplane/erasure) ----------------
    @abc.abstractmethod
    async def create_batch_job(self, row: BatchJobRow) -> None:
        """Insert ``row`` as version 1 (``row.version`` is set to 1).

        Raises ConditionFailedError (nothing written) if a job of that (namespace, job id) exists.
        """

    @abc.abstractmethod
    async def get_batch_job(self, namespace_id: str, job_id: str) -> BatchJobRow | None:
        """The job as last written, or None."""

    @abc.abstractmethod
    async def update_batch_job(self, row: BatchJobRow, expected_version: int) -> None:
        """Write ``row`` (state and data) as version ``expected_version + 1`` if the stored version is
        ``expected_version``, then set ``row.version`` to it. The check and the write are one transaction.

        Raises ConditionFailedError (nothing written, ``row`` unchanged) when the stored version
        differs or the job is gone.
        """

    @abc.abstractmethod
    async def list_batch_jobs(self, *, namespace_id: str = "", state: int = 0, limit: int = 1000) -> list[BatchJobRow]:
        """Up to ``limit`` jobs of ``namespace_id`` ("" = every namespace) in ``state`` (0 = any),
        ordered by (namespace id, job id)."""

    # -- Nexus endpoints (issue 30; controlplane/nexus) ----------------------------------
    @abc.abstractmethod
    async def create_nexus_endpoint(self, row: NexusEndpointRow) -> None:
        """Insert ``row`` as version 1 (``row.version`` is set to 1).

        Raises ConditionFailedError (nothing written) if an endpoint of that id or that name exists.
        """

    @abc.abstractmethod
    async def get_nexus_endpoint(self, endpoint_id: str = "", *, name: str = "") -> NexusEndpointRow | None:
        """The endpoint of ``endpoint_id`` (or, when it is "", of ``name``) as last written, or None."""

    @abc.abstractmethod
    async def update_nexus_endpoint(self, row: NexusEndpointRow, expected_version: int) -> None:
        """Write ``row`` (name and data) as version ``expected_version + 1`` if the stored version is
        ``expected_version``, then set ``row.version`` to it; one transaction.

        Raises ConditionFailedError (nothing written, ``row`` unchanged) when the stored version differs,
        the endpoint is gone, or another endpoint has the new name.
        """

    @abc.abstractmethod
    async def delete_nexus_endpoint(self, endpoint_id: str, expected_version: int) -> None:
        """Delete the endpoint if its stored version is ``expected_version``.

        Raises ConditionFailedError (nothing deleted) when the version differs or the endpoint is gone.
        """

    @abc.abstractmethod
    async def list_nexus_endpoints(self, *, after_name: str = "", limit: int = 1000) -> list[NexusEndpointRow]:
        """Up to ``limit`` endpoints whose name sorts after ``after_name``, ordered by name."""

    # -- queues --------------------------------------------------------------------
    @abc.abstractmethod
    async def load_transfer_tasks(self, shard_id: int, after_task_id: int, limit: int) -> list[TransferTask]: ...

    @abc.abstractmethod
    async def load_timer_tasks(self, shard_id: int, until_ms: int, after: tuple[int, int], limit: int) -> list[TimerTask]:
        """Timer tasks with (fire_time_ms, task_id) > after and fire_time_ms < until_ms, in order."""

    @abc.abstractmethod
    async def load_backlog(self, namespace_id: str, task_queue: str, kind: int, limit: int) -> list[BacklogTask]: ...

    @abc.abstractmethod
    async def list_backlog_queues(self) -> list[tuple[str, str, int]]: ...

    # -- visibility ----------------------------------------------------------------
    @abc.abstractmethod
    async def query_visibility(
        self, namespace_id: str, where: str, params: dict[str, object], order_by: str, limit: int, offset: int
    ) -> list[VisibilityRow]: ...

    @abc.abstractmethod
    async def count_visibility(
        self, namespace_id: str, where: str, params: dict[str, object], group_by: Sequence[str]
    ) -> list[tuple[tuple[object, ...], int]]: ...

    @abc.abstractmethod
    async def list_closed_before(self, namespace_id: str, close_before_ms: int, limit: int) -> list[VisibilityRow]: ...

    @abc.abstractmethod
    async def count_running(self, namespace_id: str) -> int: ...

    @abc.abstractmethod
    async def list_running(self, namespace_id: str, limit: int) -> list[CurrentRow]:
        """Current runs still running in the namespace (from the execution store, not visibility)."""


__all__ = [
    "Store",
    "BatchJobRow",
    "NexusEndpointRow",
    "ApiKeyRow",
    "ServerSecret",
    "BacklogTask",
    "CurrentRow",
    "ExecutionRow",
    "LoadedExecution",
    "Mutation",
    "NamespaceRow",
    "ScheduleRow",
    "TimerTask",
    "TransferTask",
    "VisibilityRow",
]
