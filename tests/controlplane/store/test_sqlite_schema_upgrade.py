"""A SQLite database made before schema version 2 opens, is upgraded in place and keeps its rows."""

from __future__ import annotations

import sqlite3

from pathlib import Path

from spindle.controlplane.store import Mutation
from spindle.controlplane.store.sqlite import SCHEMA_VERSION, SqliteStore

# executions as schema version 1 made it (before issue 13 added activity_state)
V1_EXECUTIONS = """
CREATE TABLE executions (
  namespace_id TEXT NOT NULL, workflow_id TEXT NOT NULL, run_id TEXT NOT NULL, shard_id INTEGER NOT NULL,
  status INTEGER NOT NULL, next_event_id INTEGER NOT NULL, db_version INTEGER NOT NULL,
  workflow_type TEXT NOT NULL, task_queue TEXT NOT NULL, start_time_ms INTEGER NOT NULL, close_time_ms INTEGER NOT NULL,
  PRIMARY KEY (namespace_id, workflow_id, run_id)) WITHOUT ROWID;
CREATE INDEX executions_running ON executions (shard_id, status);
"""


async def test_a_version_1_database_gets_activity_state(tmp_path: Path) -> None:
    path = str(tmp_path / "v1.db")
    store = SqliteStore(path)
    await store.open(2)
    await store.close()
    conn = sqlite3.connect(path)
    conn.executescript("DROP TABLE executions;" + V1_EXECUTIONS)
    conn.execute("INSERT INTO executions VALUES ('ns', 'w', 'r', 0, 1, 3, 1, 'T', 'q', 1000, 0)")
    conn.execute("UPDATE meta SET value='1' WHERE key='schema_version'")
    conn.commit()
    conn.close()

    store = SqliteStore(path)
    await store.open(2)
    try:
        old = await store.get_execution_row("ns", "w", "r")
        assert old is not None and old.activity_state == b"" and old.next_event_id == 3
        rid = await store.acquire_shard(0, "me")
        old.db_version = 2
        old.activity_state = b"\x08\x01"
        await store.apply(Mutation(shard_id=0, range_id=rid, execution=old, expected_version=1))
        again = await store.get_execution_row("ns", "w", "r")
        assert again is not None and again.activity_state == b"\x08\x01"
    finally:
        await store.close()
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() == (str(SCHEMA_VERSION),)
    conn.close()
    store = SqliteStore(path)  # opening again changes nothing
    await store.open(2)
    await store.close()


async def test_custom_search_attribute_indexes_are_partial_and_serve_filters(tmp_path: Path) -> None:
    """Rows without the attribute cost the index nothing (dev namespaces register eight); filters still use it."""
    import json

    from spindle.controlplane.store import NamespaceRow
    from spindle.controlplane.visibility import compile_query

    path = str(tmp_path / "sa.db")
    store = SqliteStore(path)
    await store.open(1)
    try:
        await store.create_namespace(NamespaceRow("nsid", "ns", json.dumps({"search_attributes": {"CustomIntField": 2}})))
    finally:
        await store.close()
    conn = sqlite3.connect(path)
    try:
        [(sql,)] = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'vis_sa_CustomIntField'").fetchall()
        assert "IS NOT NULL" in sql
        q = compile_query("CustomIntField > 3 AND CustomIntField <= 10", search_attributes={"CustomIntField": "Int"},
                          dialect="sqlite")
        params = dict(q.params, __ns="nsid", __limit=10, __offset=0)
        plan = conn.execute(f"EXPLAIN QUERY PLAN SELECT run_id FROM visibility WHERE namespace_id = :__ns AND ({q.where}) "
                            f"ORDER BY {q.order_by or 'start_time_ms DESC, run_id'} LIMIT :__limit OFFSET :__offset",
                            params).fetchall()
        assert any("vis_sa_CustomIntField" in str(row) for row in plan), plan
    finally:
        conn.close()


async def test_a_version_2_database_gets_the_api_key_and_secret_tables(tmp_path: Path) -> None:
    """Schema 3 (issue 15): a database from before API keys opens, keeps its rows and can store keys."""
    from spindle.controlplane.store import ApiKeyRow, NamespaceRow, ServerSecret

    path = str(tmp_path / "v2.db")
    store = SqliteStore(path)
    await store.open(2)
    await store.create_namespace(NamespaceRow("nsid", "ns", "{}"))
    await store.close()
    conn = sqlite3.connect(path)
    conn.executescript("DROP TABLE api_keys; DROP TABLE server_secrets;")
    conn.execute("UPDATE meta SET value='2' WHERE key='schema_version'")
    conn.commit()
    conn.close()

    store = SqliteStore(path)
    await store.open(2)
    try:
        assert [n.name for n in await store.list_namespaces()] == ["ns"]
        row = ApiKeyRow("k", "n", b"h", "{}", True, 1)
        await store.create_api_key(row)
        assert await store.get_api_key("k") == row
        assert (await store.add_server_secret(ServerSecret("s", b"v", 1))).value == b"v"
    finally:
        await store.close()
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() == (str(SCHEMA_VERSION),)
    assert SCHEMA_VERSION == 8
    conn.close()


async def test_a_version_4_database_gets_the_schedules_table(tmp_path: Path) -> None:
    """Issue 17: a database made before schedules opens, gains the table and keeps its rows."""
    from spindle.controlplane.store import ScheduleRow

    path = str(tmp_path / "v4.db")
    store = SqliteStore(path)
    await store.open(2)
    rid = await store.acquire_shard(0, "me")
    await store.close()
    conn = sqlite3.connect(path)
    conn.execute("DROP TABLE schedules")
    conn.execute("UPDATE meta SET value='4' WHERE key='schema_version'")
    conn.commit()
    conn.close()

    store = SqliteStore(path)
    await store.open(2)
    try:
        assert await store.get_range_id(0) == rid
        assert await store.get_schedule("ns", "s") is None
        rid = await store.acquire_shard(0, "me")
        await store.apply(Mutation(shard_id=0, range_id=rid, schedule=ScheduleRow("ns", "s", 0, 1, b"x")))
        assert await store.get_schedule("ns", "s") == ScheduleRow("ns", "s", 0, 1, b"x")
    finally:
        await store.close()
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() == (str(SCHEMA_VERSION),) == ("8",)
    conn.close()


async def test_a_version_5_database_gets_the_deployments_table(tmp_path: Path) -> None:
    """Issue 25: a database made before worker deployments opens, gains the table in place and keeps its rows."""
    from spindle.controlplane.store import DeploymentRow, NamespaceRow, ScheduleRow

    path = str(tmp_path / "v5.db")
    store = SqliteStore(path)
    await store.open(2)
    await store.create_namespace(NamespaceRow("nsid", "ns", "{}"))
    rid = await store.acquire_shard(0, "me")
    await store.apply(Mutation(shard_id=0, range_id=rid, schedule=ScheduleRow("nsid", "s", 0, 1, b"x")))
    await store.close()
    conn = sqlite3.connect(path)
    conn.execute("DROP TABLE deployments")  # the file as schema version 5 left it
    conn.execute("UPDATE meta SET value='5' WHERE key='schema_version'")
    conn.commit()
    assert conn.execute("SELECT name FROM sqlite_master WHERE name='deployments'").fetchall() == []
    conn.close()

    store = SqliteStore(path)
    await store.open(2)
    try:
        assert [n.name for n in await store.list_namespaces()] == ["ns"]
        assert await store.get_range_id(0) == rid
        assert await store.get_schedule("nsid", "s") == ScheduleRow("nsid", "s", 0, 1, b"x")
        assert await store.get_deployment("nsid", "orders") is None
        row = DeploymentRow("nsid", "orders", 0, '{"current": "orders.1.0"}')
        await store.put_deployment(row, 0)
        assert await store.get_deployment("nsid", "orders") == row and row.version == 1
    finally:
        await store.close()
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() == (str(SCHEMA_VERSION),)
    conn.close()
    store = SqliteStore(path)  # opening again keeps the row
    await store.open(2)
    try:
        assert await store.get_deployment("nsid", "orders") == DeploymentRow("nsid", "orders", 1,
                                                                             '{"current": "orders.1.0"}')
    finally:
        await store.close()


async def test_a_version_6_database_gets_key_task_queues_and_batch_jobs(tmp_path):
    """Schema 7 adds api_keys.task_queues (existing keys: '' = every task queue) and the batch_jobs table."""
    path = str(tmp_path / "v6.db")
    store = SqliteStore(path)
    await store.open(2)
    await store.close()
    conn = sqlite3.connect(path)
    conn.execute("DROP TABLE batch_jobs")  # the file as schema version 6 left it
    conn.execute("ALTER TABLE api_keys DROP COLUMN task_queues")
    conn.execute("INSERT INTO api_keys VALUES ('k1', 'old', x'00', '{\"ns\": \"worker\"}', 0, 1, 0, 0, 'me')")
    conn.execute("UPDATE meta SET value='6' WHERE key='schema_version'")
    conn.commit()
    conn.close()

    store = SqliteStore(path)
    await store.open(2)
    await store.close()
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() == (str(SCHEMA_VERSION),)
        assert conn.execute("SELECT key_id, task_queues FROM api_keys").fetchall() == [("k1", "")]
        assert conn.execute("SELECT count(*) FROM batch_jobs").fetchone() == (0,)
    finally:
        conn.close()


async def test_a_version_7_database_gets_the_nexus_endpoint_registry(tmp_path):
    """Schema 8 adds the nexus_endpoints table (issue 30); nothing else changes."""
    path = str(tmp_path / "v7.db")
    store = SqliteStore(path)
    await store.open(2)
    await store.close()
    conn = sqlite3.connect(path)
    conn.execute("DROP TABLE nexus_endpoints")  # the file as schema version 7 left it
    conn.execute("UPDATE meta SET value='7' WHERE key='schema_version'")
    conn.commit()
    conn.close()

    store = SqliteStore(path)
    await store.open(2)
    await store.close()
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() == ("8",)
        assert conn.execute("SELECT count(*) FROM nexus_endpoints").fetchone() == (0,)
    finally:
        conn.close()
