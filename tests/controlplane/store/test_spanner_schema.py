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
        assert [r[0] for r in snap.execute_sql("SELECT Version FROM SchemaVersion ORDER BY Version")] == \
            list(range(1, LATEST_VERSION + 1))


def test_a_version_1_database_is_upgraded_and_keeps_its_rows(spanner_instance: SpannerTestInstance) -> None:
    """Version 2 adds Executions.ActivityState (issue 13): rows written before read as "no retry state"."""
    import asyncio

    from google.cloud import spanner

    from spindle.controlplane.store.spanner import SpannerStore

    db_id = spanner_instance.new_database_id()
    db = spanner_instance.instance.database(db_id)
    db.create().result(300)
    db.update_ddl(load_ddl("spanner_v1.sql")).result(300)

    def seed(txn: object) -> None:
        txn.insert("SchemaVersion", ["Version", "Description", "AppliedAt"],  # type: ignore[attr-defined]
                   [[1, "v1", spanner.COMMIT_TIMESTAMP]])
        txn.insert("Shards", ["ShardId", "RangeId", "Owner", "LeaseExpiryMs"], [[0, 1, "", 0]])  # type: ignore[attr-defined]
        txn.insert("Executions", ["ShardId", "NamespaceId", "WorkflowId", "RunId", "Status", "NextEventId",  # type: ignore[attr-defined]
                                  "DbVersion", "WorkflowType", "TaskQueue", "StartTimeMs", "CloseTimeMs"],
                   [[0, "ns", "w", "r", 1, 3, 1, "T", "q", 1000, 0]])

    db.run_in_transaction(seed)
    assert current_version(db) == 1
    result = setup_schema(db)
    assert result.from_version == 1 and result.applied == tuple(range(2, LATEST_VERSION + 1))

    async def read() -> object:
        store = SpannerStore(spanner_instance.project, spanner_instance.instance_id, db_id, client=spanner_instance.client)
        await store.open(1)
        try:
            return await store.get_execution_row("ns", "w", "r")
        finally:
            await store.close()

    ex = asyncio.run(read())
    assert ex is not None and ex.activity_state == b"" and ex.next_event_id == 3  # type: ignore[attr-defined]


def test_a_version_5_database_gets_worker_deployments(spanner_instance: SpannerTestInstance) -> None:
    """Version 6 (issue 25) adds WorkerDeployments to a version-5 database: its rows stay; deployments can be written."""
    import asyncio

    from google.cloud import spanner

    from spindle.controlplane.store import DeploymentRow, Mutation, ScheduleRow
    from spindle.controlplane.store.spanner import SpannerStore

    db_id = spanner_instance.new_database_id()
    db = spanner_instance.instance.database(db_id)
    db.create().result(300)
    for v in range(1, 6):
        db.update_ddl(load_ddl(f"spanner_v{v}.sql")).result(300)

    def seed(txn: object) -> None:
        txn.insert("SchemaVersion", ["Version", "Description", "AppliedAt"],  # type: ignore[attr-defined]
                   [[v, f"v{v}", spanner.COMMIT_TIMESTAMP] for v in range(1, 6)])
        txn.insert("Shards", ["ShardId", "RangeId", "Owner", "LeaseExpiryMs"], [[0, 1, "", 0]])  # type: ignore[attr-defined]
        txn.insert("Namespaces", ["Name", "Id", "Data", "State", "Version"],  # type: ignore[attr-defined]
                   [["ns", "nsid", "{}", "REGISTERED", 0]])

    db.run_in_transaction(seed)
    assert current_version(db) == 5
    result = setup_schema(db)
    assert result.from_version == 5 and result.applied == (6, 7, 8) and result.to_version == LATEST_VERSION == 8

    async def use() -> tuple[object, object, object]:
        store = SpannerStore(spanner_instance.project, spanner_instance.instance_id, db_id,
                             client=spanner_instance.client)
        await store.open(1)
        try:
            rid = await store.acquire_shard(0, "me")
            await store.apply(Mutation(shard_id=0, range_id=rid, schedule=ScheduleRow("nsid", "s", 0, 1, b"x")))
            row = DeploymentRow("nsid", "orders", 0, '{"current": "orders.1.0"}')
            await store.put_deployment(row, 0)
            return ([n.name for n in await store.list_namespaces()], await store.get_schedule("nsid", "s"),
                    await store.list_deployments("nsid", "", 10))
        finally:
            await store.close()

    names, schedule, deployments = asyncio.run(use())
    assert names == ["ns"] and schedule == ScheduleRow("nsid", "s", 0, 1, b"x")
    assert deployments == [DeploymentRow("nsid", "orders", 1, '{"current": "orders.1.0"}')]
