"""The Spanner dialect, run on the Cloud Spanner emulator, agrees with the `matches` evaluator.

Skipped unless ``google-cloud-spanner`` is installed and the emulator binary is found
(``$SPANNER_EMULATOR_BIN`` or the gcloud SDK's ``bin/cloud_spanner_emulator/emulator_main``).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import sqlite3
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controlplane.visibility import compile_query, matches

for _var in ("GOOGLE_CLOUD_SPANNER_MULTIPLEXED_SESSIONS", "GOOGLE_CLOUD_SPANNER_MULTIPLEXED_SESSIONS_FOR_RW",
             "GOOGLE_CLOUD_SPANNER_MULTIPLEXED_SESSIONS_PARTITIONED_OPS"):
    os.environ.setdefault(_var, "false")  # required by emulator 1.5.x (reference/INFRA.md)

spanner = pytest.importorskip("google.cloud.spanner")

SA = {"CustomerId": "Keyword", "Note": "Text", "Priority": "Int", "Amount": "Double", "Vip": "Bool",
      "DueAt": "Datetime", "Tags": "KeywordList"}
Db = tuple[sqlite3.Connection, tuple[dict[str, Any], ...]]

DDL = """CREATE TABLE visibility (
    namespace_id STRING(MAX) NOT NULL,
    workflow_id STRING(MAX) NOT NULL,
    run_id STRING(MAX) NOT NULL,
    workflow_type STRING(MAX) NOT NULL,
    status INT64 NOT NULL,
    task_queue STRING(MAX) NOT NULL,
    start_time_ms INT64 NOT NULL,
    close_time_ms INT64,
    execution_duration_ms INT64,
    history_length INT64 NOT NULL,
    search_attributes JSON,
) PRIMARY KEY (namespace_id, run_id)"""

COLUMNS = ["namespace_id", "workflow_id", "run_id", "workflow_type", "status", "task_queue", "start_time_ms",
           "close_time_ms", "execution_duration_ms", "history_length", "search_attributes"]


def _emulator_bin() -> str | None:
    explicit = os.environ.get("SPANNER_EMULATOR_BIN")
    if explicit:
        return explicit if Path(explicit).exists() else None
    gcloud = shutil.which("gcloud")
    if gcloud is None:
        return None
    try:
        root = subprocess.run([gcloud, "info", "--format=value(installation.sdk_root)"], capture_output=True,
                              text=True, timeout=30, check=True).stdout.strip()
    except (subprocess.SubprocessError, OSError):
        return None
    path = Path(root) / "bin" / "cloud_spanner_emulator" / "emulator_main"
    return str(path) if path.exists() else None


@pytest.fixture(scope="module")
def spanner_db(visibility_db: Db) -> Iterator[Any]:
    binary = _emulator_bin()
    if binary is None:
        pytest.skip("Cloud Spanner emulator not installed")
    proc = subprocess.Popen([binary, "--host_port", "127.0.0.1:0"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    assert proc.stderr is not None
    addr, deadline = None, time.monotonic() + 30
    while addr is None and time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line and proc.poll() is not None:
            break
        m = re.search(r"Server address: (\S+)", line)
        addr = m.group(1) if m else None
    if addr is None:
        proc.kill()
        pytest.fail("spanner emulator did not start")
    stderr = proc.stderr
    threading.Thread(target=lambda: [None for _ in stderr], daemon=True).start()
    old = os.environ.get("SPANNER_EMULATOR_HOST")
    os.environ["SPANNER_EMULATOR_HOST"] = addr
    try:
        client = spanner.Client(project="test-project")
        instance = client.instance("vis-test", configuration_name="projects/test-project/instanceConfigs/emulator-config",
                                   node_count=1)
        instance.create().result(30)
        db = instance.database("v" + uuid.uuid4().hex[:20], ddl_statements=[DDL])
        db.create().result(30)
        _, rows = visibility_db
        from google.cloud.spanner_v1.data_types import JsonObject

        with db.batch() as batch:
            batch.insert("visibility", COLUMNS, [
                ["ns", *(r[c] for c in COLUMNS[1:-1]), JsonObject(r["search_attributes"])] for r in rows
            ])
        yield db
    finally:
        if old is None:
            os.environ.pop("SPANNER_EMULATOR_HOST", None)
        else:
            os.environ["SPANNER_EMULATOR_HOST"] = old
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(10)


def _spanner_queries() -> list[str]:
    from test_visibility_sqlite_exec import QUERIES  # the same corpus as the SQLite test

    return QUERIES


@pytest.mark.parametrize("query", _spanner_queries())
def test_spanner_sql_and_evaluator_agree(query: str, spanner_db: Any, visibility_db: Db) -> None:
    _, rows = visibility_db
    compiled = compile_query(query, search_attributes=SA, dialect="spanner")
    sql = f"SELECT run_id FROM visibility WHERE namespace_id = @ns AND ({compiled.where}) ORDER BY {compiled.order_by}"
    with spanner_db.snapshot() as snap:
        got = [r[0] for r in snap.execute_sql(sql, params={**compiled.params, "ns": "ns"})]
    assert sorted(got) == sorted(r["run_id"] for r in rows if matches(compiled.ast, r)), compiled.where
    sqlite_order = compile_query(query, search_attributes=SA, dialect="sqlite")
    conn, _ = visibility_db
    expected_order = [r[0] for r in conn.execute(
        f"SELECT run_id FROM visibility WHERE {sqlite_order.where} ORDER BY {sqlite_order.order_by}",
        sqlite_order.params)]
    assert got == expected_order
