"""``setup_schema``: creates the database, applies every version once, and is a no-op when run again."""

from __future__ import annotations

from spanner_emulator import SpannerTestInstance

from spindle.controlplane.store._spanner_schema import LATEST_VERSION, current_version, load_ddl, setup_schema


def test_ddl_file_parses() -> None:
    stmts = load_ddl("spanner_v1.sql")
    assert any(s.startswith("CREATE TABLE Executions") and "INTERLEAVE IN PARENT Shards" in s for s in stmts)
    assert any(s.startswith("CREATE TABLE Events") and "INTERLEAVE IN PARENT Executions ON DELETE CASCADE" in s
               for s in stmts)
    assert any("PRIMARY KEY (ShardId, FireTimeMs, TaskId)" in s for s in stmts)
    assert all(";" not in s and not s.startswith("--") for s in stmts)


def test_setup_creates_then_upgrade_is_a_no_op(spanner_instance: SpannerTestInstance) -> None:
    db = spanner_instance.instance.database(spanner_instance.new_database_id())
    first = setup_schema(db)
    assert first.created_database and first.from_version == 0 and first.to_version == LATEST_VERSION
    assert first.applied == tuple(range(1, LATEST_VERSION + 1))
    db.reload()
    ddl_before = list(db.ddl_statements)
    second = setup_schema(db)
    assert not second.created_database and second.applied == () and second.to_version == LATEST_VERSION
    db.reload()
    assert list(db.ddl_statements) == ddl_before
    assert current_version(db) == LATEST_VERSION
    with db.snapshot() as snap:
        assert [r[0] for r in snap.execute_sql("SELECT Version FROM SchemaVersion ORDER BY Version")] == [1]
