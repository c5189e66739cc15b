"""Creating and upgrading the Cloud Spanner schema.

Each schema version is one DDL file, ``schema/spanner_v<N>.sql``, holding the
statements that take a database from version N-1 to N. ``setup_schema`` reads the
highest version recorded in ``SchemaVersion``, applies every later file in order
and records it, so running it again changes nothing.
"""

from __future__ import annotations

import re

from dataclasses import dataclass
from importlib import resources
from typing import Any

#: (version, file name, description), in order.
MIGRATIONS: tuple[tuple[int, str, str], ...] = (
    (1, "spanner_v1.sql", "shards, executions, events, task queues, namespaces, visibility, membership"),
    (2, "spanner_v2.sql", "Executions.ActivityState: retry state of pending activities"),
    (3, "spanner_v3.sql", "ApiKeys and ServerSecrets: API keys (hashed), task-token keys, the key pepper"),
    (4, "spanner_v4.sql", "BlobRefs: the large-payload blobs each run refers to (collected by retention)"),
    (5, "spanner_v5.sql", "Schedules: durable schedules (their timers are TimerTasks rows)"),
    (6, "spanner_v6.sql", "WorkerDeployments: worker build versioning (versions, current and ramping)"),
    (7, "spanner_v7.sql", "ApiKeys.TaskQueues (worker keys confined to task queues) and BatchJobs (erasure jobs)"),
    (8, "spanner_v8.sql", "NexusEndpoints: the Nexus endpoint registry (issue 30)"),
)

LATEST_VERSION = MIGRATIONS[-1][0]


@dataclass(frozen=True)
class SchemaResult:
    """What ``setup_schema`` did."""

    created_database: bool
    from_version: int
    to_version: int
    applied: tuple[int, ...]


def load_ddl(file_name: str) -> list[str]:
    """The statements of one DDL file, without comments or the separating semicolons."""
    text = resources.files("spindle.controlplane.store").joinpath("schema", file_name).read_text(encoding="utf-8")
    lines = [ln for ln in text.splitlines() if not ln.lstrip().startswith("--")]
    stmts = re.split(r";\s*(?:\n|$)", "\n".join(lines))
    return [s.strip() for s in stmts if s.strip()]


def current_version(database: Any) -> int:
    """The highest applied schema version; 0 for an empty database."""
    with database.snapshot() as snap:
        rows = list(snap.execute_sql(
            "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = '' AND table_name = 'SchemaVersion'"))
    if not rows or rows[0][0] == 0:
        return 0
    with database.snapshot() as snap:
        rows = list(snap.execute_sql("SELECT MAX(Version) FROM SchemaVersion"))
    return int(rows[0][0] or 0) if rows else 0


def setup_schema(database: Any, *, timeout: float = 300.0) -> SchemaResult:
    """Create the database if missing and bring its schema to ``LATEST_VERSION``.

    Args:
        database: a ``google.cloud.spanner_v1.database.Database`` (not necessarily existing yet).
        timeout: seconds to wait for each long-running DDL operation.

    Raises:
        RuntimeError: the database has a newer schema than this build knows.
    """
    from google.cloud import spanner

    created = False
    if not database.exists():
        database.create().result(timeout)
        created = True
    start = current_version(database)
    if start > LATEST_VERSION:
        raise RuntimeError(f"database schema is version {start}; this build of spindle knows up to {LATEST_VERSION}")
    applied: list[int] = []
    for version, file_name, description in MIGRATIONS:
        if version <= start:
            continue
        database.update_ddl(load_ddl(file_name)).result(timeout)

        def record(txn: Any, _v: int = version, _d: str = description) -> None:
            txn.insert_or_update("SchemaVersion", ["Version", "Description", "AppliedAt"],
                                 [[_v, _d, spanner.COMMIT_TIMESTAMP]])

        database.run_in_transaction(record)
        applied.append(version)
    return SchemaResult(created, start, max([start, *applied]), tuple(applied))


__all__ = ["LATEST_VERSION", "MIGRATIONS", "SchemaResult", "current_version", "load_ddl", "setup_schema"]
