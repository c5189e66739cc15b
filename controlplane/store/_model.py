"""Rows and mutations exchanged between the history engine and a Store.

A ``Mutation`` is everything one state change writes, applied in ONE transaction:
events appended, the execution row updated under an optimistic version check, the
current-run pointer moved, buffered events added or cleared, transfer and timer
tasks written or deleted (transactional outbox), backlog and visibility rows. The
whole mutation is fenced by its shard's ``range_id``.
"""

from __future__ import annotations

import json

from dataclasses import dataclass, field, replace


class StoreError(Exception):
    """Base class of store failures."""


class ConditionFailedError(StoreError):
    """An optimistic check failed (execution version, current run, unique key)."""


class ShardOwnershipLostError(StoreError):
    """The shard's range_id moved on: another owner took it; this write was refused."""


class StoreUnavailableError(StoreError):
    """The store could not be written (disk full, I/O error).

    Nothing was applied, unless ``outcome_unknown`` is set: then the write may have
    committed (the failure came after the commit was sent).
    """

    def __init__(self, message: str, *, outcome_unknown: bool = False) -> None:
        super().__init__(message)
        self.outcome_unknown = outcome_unknown


@dataclass
class NamespaceRow:
    id: str
    name: str
    data: str  # JSON: description, owner_email, retention_ms, search_attributes, archival_uri, times
    state: str = "REGISTERED"
    version: int = 0


@dataclass
class ExecutionRow:
    namespace_id: str
    workflow_id: str
    run_id: str
    shard_id: int
    status: int
    next_event_id: int
    db_version: int
    workflow_type: str
    task_queue: str
    start_time_ms: int
    close_time_ms: int = 0
    #: Serialized ``ActivityRetryState`` (retried attempts write no history events; their count and
    #: last failure live here). Written with every update of the row; b"" when no activity is retrying.
    activity_state: bytes = b""


@dataclass
class CurrentRow:
    namespace_id: str
    workflow_id: str
    run_id: str
    status: int
    start_request_id: str = ""


@dataclass
class TransferTask:
    task_id: int
    data: str  # JSON: kind, namespace_id, workflow_id, run_id, ...


@dataclass
class TimerTask:
    fire_time_ms: int
    task_id: int
    data: str


@dataclass
class BacklogTask:
    namespace_id: str
    task_queue: str
    kind: int  # 0 workflow task, 1 activity task
    shard_id: int  # task ids are unique per shard; (shard_id, task_id) is unique per queue
    task_id: int
    data: str


@dataclass
class VisibilityRow:
    namespace_id: str
    workflow_id: str
    run_id: str
    workflow_type: str
    status: int
    task_queue: str
    start_time_ms: int
    close_time_ms: int | None
    execution_duration_ms: int | None
    history_length: int
    search_attributes: str  # JSON object
    memo: bytes = b""
    parent_workflow_id: str = ""
    parent_run_id: str = ""


@dataclass
class DeploymentRow:
    """A worker deployment (issue 25): its versions and routing as one JSON document (the store never reads ``doc``).
    ``version`` rises by one with every write (optimistic updates)."""

    namespace_id: str
    name: str
    version: int
    doc: str


@dataclass
class ScheduleRow:
    """A schedule (issue 17): keyed by namespace and schedule id, on the shard of its schedule id.

    ``data`` is the serialized ``spindle.v1.ScheduleRecord`` (its spec, state, info and
    pending timer); the store never reads it. ``version`` rises by one with every write
    (optimistic updates: ``Mutation.schedule_expected_version``).
    """

    namespace_id: str
    schedule_id: str
    shard_id: int
    version: int
    data: bytes


@dataclass
class Mutation:
    """One transaction's worth of writes. Empty lists mean "nothing of that kind"."""

    shard_id: int
    range_id: int
    #: Insert (expected_version None) or update (expected_version = current db_version).
    execution: ExecutionRow | None = None
    expected_version: int | None = None
    #: Upsert of the current-run pointer; ``current_expect`` guards it:
    #: ``None`` = no check; ``""`` = must not exist; a run id = must point at it.
    current: CurrentRow | None = None
    current_expect: str | None = None
    events: list[tuple[int, bytes]] = field(default_factory=list)
    add_buffered: list[bytes] = field(default_factory=list)
    clear_buffered: bool = False
    transfer_insert: list[TransferTask] = field(default_factory=list)
    transfer_delete: list[int] = field(default_factory=list)
    timer_insert: list[TimerTask] = field(default_factory=list)
    timer_delete: list[tuple[int, int]] = field(default_factory=list)
    backlog_insert: list[BacklogTask] = field(default_factory=list)
    #: (namespace_id, task_queue, kind, shard_id, task_id)
    backlog_delete: list[tuple[str, str, int, int, int]] = field(default_factory=list)
    visibility: list[VisibilityRow] = field(default_factory=list)
    #: (namespace_id, run_id, history_length): raise the history length of a visibility row, applied
    #: after ``visibility``. Never lowers it (updates may arrive late or twice); a missing row is skipped.
    visibility_history_length: list[tuple[str, str, int]] = field(default_factory=list)
    visibility_delete: list[tuple[str, str]] = field(default_factory=list)  # (namespace_id, run_id)
    #: Delete a whole execution (retention): (namespace_id, workflow_id, run_id); its blob
    #: references (``blob_refs``) go with it.
    delete_execution: tuple[str, str, str] | None = None
    #: Large-payload blobs the written rows refer to: (namespace_id, workflow_id, run_id, blob key),
    #: inserted if absent. A blob no row refers to may be deleted (``Store.blob_is_referenced``).
    blob_refs: list[tuple[str, str, str, str]] = field(default_factory=list)
    #: Insert (``schedule_expected_version`` None: the id must be free) or replace (the stored
    #: version must equal ``schedule_expected_version``) a schedule row, in the same transaction
    #: as the timer rows of this mutation; a failed check raises ConditionFailedError.
    schedule: ScheduleRow | None = None
    schedule_expected_version: int | None = None
    #: Delete a schedule row: (namespace_id, schedule_id, expected version); ConditionFailedError
    #: if it is missing or has another version.
    schedule_delete: tuple[str, str, int] | None = None
    #: More executions of the same shard written in the same transaction (continue-as-new
    #: closes one run and creates the next atomically).
    also: list["Mutation"] = field(default_factory=list)

    def is_empty(self) -> bool:
        return not (
            self.execution or self.current or self.events or self.add_buffered or self.clear_buffered
            or self.transfer_insert or self.transfer_delete or self.timer_insert or self.timer_delete
            or self.backlog_insert or self.backlog_delete or self.visibility or self.visibility_history_length
            or self.visibility_delete or self.blob_refs
            or self.delete_execution or self.also or self.schedule or self.schedule_delete
        )


@dataclass
class ApiKeyRow:
    """An API key as stored: never the secret, only its keyed hash (``spindle.controlplane.auth._keys``).

    ``grants`` is JSON ``{namespace name: role}``. ``task_queues`` is JSON ``{namespace
    name: [task queue, ...]}``, the task queues the key's worker grant on that namespace is
    confined to; '' (or a namespace missing from it) means every task queue. Times are
    epoch milliseconds; 0 means never (``expire_time_ms``) or not revoked (``revoke_time_ms``).
    """

    key_id: str
    name: str
    secret_hash: bytes
    grants: str
    system_admin: bool
    create_time_ms: int
    expire_time_ms: int = 0
    revoke_time_ms: int = 0
    created_by: str = ""
    task_queues: str = ""

    def without_namespace(self, namespace: str, now_ms: int) -> ApiKeyRow | None:
        """This key once ``namespace`` is deleted (None: it has nothing there, unchanged).

        The grant and the task queues on ``namespace`` go; a key left with no grant that is
        not ``system_admin`` is revoked at ``now_ms`` (an earlier revocation is kept).
        Both stores apply it in the transaction that deletes the namespace.
        """
        grants = json.loads(self.grants or "{}")
        queues = json.loads(self.task_queues or "{}")
        if namespace not in grants and namespace not in queues:
            return None
        grants.pop(namespace, None)
        queues.pop(namespace, None)
        revoked = self.revoke_time_ms or (now_ms if not grants and not self.system_admin else 0)
        return replace(self, grants=json.dumps(grants, sort_keys=True),
                       task_queues=json.dumps(queues, sort_keys=True) if queues else "", revoke_time_ms=revoked)


@dataclass
class ServerSecret:
    """A per-deployment secret every member of a cluster shares (task-token keys, the API-key pepper).

    Created once (insert if absent) and never changed: ``value`` is raw bytes.
    """

    name: str
    value: bytes
    create_time_ms: int


@dataclass
class LoadedExecution:
    row: ExecutionRow
    events: list[bytes]
    buffered: list[bytes]
