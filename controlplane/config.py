"""Every number an operator may tune, in one place, with documented defaults.

``ServerConfig`` is passed to the control plane (``spindle server start-dev`` builds
one from its flags; ``spindle server start --config FILE`` from YAML). Durations are
seconds (floats) unless the name says otherwise.
"""

from __future__ import annotations

import math

from dataclasses import dataclass, field, fields

from spindle.controlplane._uri_roots import archival_root_problem


@dataclass
class ServerConfig:
    """Tunable limits and timings of the control plane."""

    #: Number of history shards. Fixed for the life of a database: workflow ids hash to
    #: shards permanently (changing it for an existing database is refused).
    num_shards: int = 16
    #: How long a worker's poll waits for a task before returning empty.
    long_poll_timeout: float = 60.0
    #: Default start-to-close timeout of a workflow task.
    default_workflow_task_timeout: float = 10.0
    #: How long a task offered to a worker's sticky queue waits before it falls back
    #: to the normal task queue (unless the worker asks for another value).
    sticky_schedule_to_start_timeout: float = 5.0
    #: Largest accepted payload (one request's payloads together), bytes.
    max_payload_bytes: int = 2 * 1024 * 1024
    #: Payloads larger than this (serialized, bytes) are moved to the blob store and the
    #: history holds a reference (only when ``blob_store_uri`` is set). See docs/ARCHIVAL.md.
    large_payload_threshold_bytes: int = 256 * 1024
    #: With a blob store, the largest accepted request payloads that get offloaded (each
    #: and together); ``max_payload_bytes`` then applies to what stays inline. gRPC
    #: messages are limited to 64 MiB (controlplane/server.py).
    max_offloaded_payload_bytes: int = 64 * 1024 * 1024
    #: Blob store for large payloads: ``file:///dir`` or ``gs://bucket/prefix`` ("" = none;
    #: ``spindle server start-dev`` defaults to a folder next to the database).
    blob_store_uri: str = ""
    #: Archive of closed runs for namespaces without their own ``archival_uri``
    #: (``file:///dir`` or ``gs://bucket/prefix``; "" = delete without archiving).
    archive_uri: str = ""
    #: Seconds before a retention whose archive write failed is tried again (the run
    #: is never deleted unarchived).
    archival_retry_interval: float = 60.0
    #: Seconds one object-store request (archive or blob, retries included) may take.
    object_store_timeout: float = 30.0
    #: Longest accepted workflow id, activity id, type name, task queue name, etc.
    max_id_length: int = 1000
    #: History length at which a warning is logged for an execution.
    history_warn_events: int = 10_000
    #: History length at which the execution is failed unless it continues as new.
    history_max_events: int = 50_000
    #: History size (serialized events, a large payload's blob reference counting as its
    #: ~150-byte reference) at which the execution is failed unless it continues as new:
    #: checked, like ``history_max_events``, on every write that adds events, buffered
    #: ones included. Temporal's default is the same 50 MiB.
    history_max_bytes: int = 50 * 1024 * 1024
    #: Largest history page the server sends (GetWorkflowExecutionHistory, the history in a
    #: workflow task), counting large payloads at their expanded size; a page always holds
    #: at least one event. Well below the 64 MiB gRPC message limit of the server.
    history_page_max_bytes: int = 4 * 1024 * 1024
    #: Default retention of closed executions for new namespaces, days.
    default_retention_days: float = 3.0
    #: Timers due within this many seconds are held in memory; later ones stay in
    #: the store and are loaded as their time approaches.
    timer_preload_window: float = 30.0
    #: Default timeout of a query routed to a worker.
    query_timeout: float = 10.0
    #: Default time an update call waits for its outcome.
    update_timeout: float = 60.0
    #: Back-pressure on new starts, per namespace, so that the work of a namespace's running
    #: executions goes before its new starts: a start waits while timers of its namespace
    #: are due but not yet written, or while more of its namespace's workflow tasks are
    #: unfinished than ``max(start_admission_max_pending, start_admission_per_worker x
    #: workers polling that namespace in the last 2 minutes)``. Each namespace has its own
    #: budget and its own first-come-first-served queue, so starts waiting in one never
    #: delay another's. A start never waits longer than ``start_admission_wait`` seconds.
    start_admission_wait: float = 5.0
    start_admission_max_pending: int = 8
    start_admission_per_worker: int = 8
    #: Requests per second a namespace may make (``rps_limit``) when it is created without
    #: one, and for namespaces stored before the setting existed (0 = unlimited). Counted
    #: per frontend process, over the calls a client makes about workflows (start, signal,
    #: query, update, cancel, terminate, describe, history, list, count); worker polls and
    #: task responses are not counted (worker slots and task-queue dispatch rates bound
    #: them), nor namespace administration. A call over the limit gets RESOURCE_EXHAUSTED
    #: with the delay after which it would pass (``google.rpc.RetryInfo``).
    namespace_rps_limit: float = 2400.0
    #: The largest ``rps_limit`` a namespace may be given; 0 = ``namespace_rps_limit`` (by
    #: default a namespace may be given at most what a new one gets; with both 0 there is no
    #: cap). With a cap, ``rps_limit`` 0 (unlimited) is refused too. Limits are the operator's:
    #: only a system admin (or anyone, without auth) may raise a namespace's ``rps_limit``, up
    #: to the cap (INVALID_ARGUMENT over it); a namespace admin may only lower it (a value more
    #: than 0 and at most the current one; raising it is PERMISSION_DENIED).
    namespace_rps_limit_max: float = 0.0
    #: Most schedules a namespace may have (0 = no limit); CreateSchedule beyond it is
    #: RESOURCE_EXHAUSTED naming this setting. Each schedule is a row and a durable timer that
    #: fires on its own: 1,000 is far more than a team's cron jobs, and keeps a namespace's
    #: timers, its schedule list and the count at create time (a read of its schedules) small.
    namespace_max_schedules: int = 1_000
    #: Most schedule actions that may wait to start at once in a namespace, across its
    #: schedules (0 = no limit): backfills, triggers, catch-up after an outage, actions held by
    #: their overlap policy or paced by ``rps_limit``. A backfill or trigger that would go over is
    #: RESOURCE_EXHAUSTED naming this setting and changes nothing; a schedule's timer buffers at
    #: most this many (later times due while it is full are counted as missed). Waiting actions
    #: are started at the namespace's ``rps_limit`` (and through start admission): 10,000 is
    #: about 4 s of starts at the default limit, and a schedule record of ~200 KB.
    namespace_max_buffered_actions: int = 10_000
    #: Floor and ceiling of a task queue's dispatch rate (a poll's ``max_tasks_per_second``,
    #: tasks per second): a rate asked for outside them is clamped to them, so one poll
    #: cannot freeze a queue for every worker (a negative or non-finite rate is refused with
    #: INVALID_ARGUMENT). The rate a poll sets lapses when no poll has asked for it for
    #: ``max(60, 2 x long_poll_timeout)`` seconds.
    task_queue_min_rate: float = 0.1
    task_queue_max_rate: float = 100_000.0
    #: Where namespaces may archive (a namespace's ``archival_uri`` must be one of these or
    #: under one): ``file:///abs/dir`` roots and ``gs://bucket`` or ``gs://bucket/prefix``.
    #: Empty: namespaces cannot set an archival URI (the server-wide ``archive_uri`` still
    #: applies). ``spindle server start-dev`` allows the database's folder by default.
    archival_allowed_roots: tuple[str, ...] = ()
    #: Connections and long polls (docs/LIMITS.md; ``controlplane/_connections.py``). Most client
    #: connections a server process accepts at once; lowered at start to what the open-files
    #: limit leaves (the soft limit is first raised to the hard one; both are logged). A
    #: connection over it is closed as soon as it is accepted (the client sees UNAVAILABLE and
    #: reconnects with backoff).
    max_connections: int = 10_000
    #: Seconds after which a connection with no call in flight is closed (gRPC GOAWAY; clients
    #: reconnect on their next call). 0 = never.
    max_connection_idle: float = 300.0
    #: Seconds after which any connection is asked to close (its calls in flight, long polls
    #: included, may finish); spreads clients over the members behind a load balancer. 0 = never.
    max_connection_age: float = 0.0
    #: Seconds a new connection has to complete its handshake (TLS and HTTP/2) before it is closed.
    connection_handshake_timeout: float = 20.0
    #: Seconds between the server's keepalive pings on a connection, and how long it waits for the
    #: answer before closing it: a peer that vanished without closing its connection is found,
    #: and its long polls are cancelled.
    keepalive_time: float = 60.0
    keepalive_timeout: float = 10.0
    #: Most long polls (PollWorkflowTaskQueue, PollActivityTaskQueue, GetWorkflowExecutionHistory
    #: waiting for a new event) a server process holds at once, and per client (its principal
    #: when it authenticated, else its address; whatever ``identity`` a worker declares). A
    #: poll over either gets RESOURCE_EXHAUSTED naming the limit, with a retry delay. 0 = no limit.
    max_long_polls: int = 20_000
    max_long_polls_per_client: int = 2_000
    #: A namespace's share of the long-poll slots: it may hold at most this share of the slots
    #: the other namespaces leave (``held < share x (max_long_polls - held by the others)``), so a
    #: namespace that floods leaves room for the rest, and one that holds none gets a slot while
    #: any is free (``controlplane/_long_polls.py``). In (0, 1]; 1 = no per-namespace cap.
    long_poll_namespace_share: float = 0.5
    #: Distinct task-queue names of one namespace that get their own ``task_queue`` label in the
    #: server's metrics; a namespace's further task queues are reported as ``"other"``, so a worker
    #: polling invented names cannot blow up the metrics store (docs/OBSERVABILITY.md).
    metrics_task_queue_labels_per_namespace: int = 100
    #: Executions whose mutable state is kept in memory (LRU).
    execution_cache_size: int = 20_000
    #: Largest number of state changes written in one SQLite transaction (group commit).
    max_commit_batch: int = 512
    #: Default retry policy of activities that set none (maximum_attempts 0 = unlimited).
    default_activity_retry_initial_interval: float = 1.0
    default_activity_retry_backoff: float = 2.0
    default_activity_retry_maximum_interval_factor: float = 100.0

    def __post_init__(self) -> None:
        if self.num_shards < 1 or self.num_shards > 65536:
            raise ValueError(f"num_shards must be between 1 and 65536, got {self.num_shards}")
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, (int, float)) and not isinstance(v, bool) and not v >= 0:
                raise ValueError(f"{f.name} must not be negative, got {v}")
        for name in ("namespace_rps_limit", "namespace_rps_limit_max", "task_queue_min_rate", "task_queue_max_rate"):
            if not math.isfinite(getattr(self, name)):
                raise ValueError(f"{name} must be a finite number, got {getattr(self, name)}")
        if not 0 < self.long_poll_namespace_share <= 1:
            raise ValueError(f"long_poll_namespace_share must be in (0, 1], got {self.long_poll_namespace_share}")
        if self.max_connections < 1:
            raise ValueError(f"max_connections must be at least 1, got {self.max_connections}")
        if not 0 < self.task_queue_min_rate <= self.task_queue_max_rate:
            raise ValueError(f"task_queue_min_rate ({self.task_queue_min_rate}) must be positive and at most "
                             f"task_queue_max_rate ({self.task_queue_max_rate})")
        if self.namespace_rps_limit_max and not 0 < self.namespace_rps_limit <= self.namespace_rps_limit_max:
            raise ValueError(f"namespace_rps_limit ({self.namespace_rps_limit}) must be positive and at most "
                             f"namespace_rps_limit_max ({self.namespace_rps_limit_max})")
        if isinstance(self.archival_allowed_roots, str) or not all(
                isinstance(r, str) for r in self.archival_allowed_roots):
            raise ValueError(f"archival_allowed_roots must be a list of URIs, got {self.archival_allowed_roots!r}")
        self.archival_allowed_roots = tuple(self.archival_allowed_roots)
        for root in self.archival_allowed_roots:
            problem = archival_root_problem(root)
            if problem:
                raise ValueError(f"archival_allowed_roots: {problem}")

    @classmethod
    def from_dict(cls, data: dict[str, object], *, where: str = "config") -> "ServerConfig":
        """Build a config from a mapping; unknown keys raise ValueError naming them."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"{where}: unknown setting(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})")
        return cls(**data)  # type: ignore[arg-type]


DEFAULTS = ServerConfig()
__all__ = ["ServerConfig", "DEFAULTS", "field"]
