"""Every number an operator may tune, in one place, with documented defaults.

``ServerConfig`` is passed to the control plane (``spindle server start-dev`` builds
one from its flags; ``spindle server start --config FILE`` from YAML). Durations are
seconds (floats) unless the name says otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields


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
    #: Default retention of closed executions for new namespaces, days.
    default_retention_days: float = 3.0
    #: Timers due within this many seconds are held in memory; later ones stay in
    #: the store and are loaded as their time approaches.
    timer_preload_window: float = 30.0
    #: Default timeout of a query routed to a worker.
    query_timeout: float = 10.0
    #: Default time an update call waits for its outcome.
    update_timeout: float = 60.0
    #: Back-pressure on new starts, so that the work of running executions goes first: a
    #: start waits while timers are due but not yet written, or while more workflow tasks
    #: are unfinished than ``max(start_admission_max_pending, start_admission_per_worker x
    #: workers polling in the last 2 minutes)``. A start never waits longer than
    #: ``start_admission_wait`` seconds.
    start_admission_wait: float = 5.0
    start_admission_max_pending: int = 8
    start_admission_per_worker: int = 8
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
            if isinstance(v, (int, float)) and not isinstance(v, bool) and v < 0:
                raise ValueError(f"{f.name} must not be negative, got {v}")

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
