"""The Store contract, run on every backend (SQLite and Cloud Spanner on the emulator)."""

from __future__ import annotations

import json

from typing import Any

import pytest

from spindle.controlplane.store import (
    BacklogTask,
    ConditionFailedError,
    CurrentRow,
    ExecutionRow,
    Mutation,
    NamespaceRow,
    ScheduleRow,
    ShardOwnershipLostError,
    Store,
    TimerTask,
    TransferTask,
    VisibilityRow,
)
from spindle.controlplane.visibility import compile_query

NS = "ns-1"


def row(wid: str = "w", rid: str = "r1", *, shard: int = 1, version: int = 1, next_event_id: int = 3, status: int = 1,
        close: int = 0) -> ExecutionRow:
    return ExecutionRow(namespace_id=NS, workflow_id=wid, run_id=rid, shard_id=shard, status=status,
                        next_event_id=next_event_id, db_version=version, workflow_type="Order", task_queue="q",
                        start_time_ms=1000, close_time_ms=close)


async def start(store: Store, range_id: int, wid: str = "w", rid: str = "r1", *, shard: int = 1,
                events: int = 2) -> None:
    """Create a run with ``events`` events and make it current."""
    await store.apply(Mutation(
        shard_id=shard, range_id=range_id, execution=row(wid, rid, shard=shard, next_event_id=events + 1),
        current=CurrentRow(NS, wid, rid, 1, "req-1"), current_expect="",
        events=[(i, f"e{i}".encode()) for i in range(1, events + 1)]))


# ---------------------------------------------------------------------------- executions and histories
async def test_append_events_and_load(store: Store) -> None:
    rid = await store.acquire_shard(1, "me")
    await start(store, rid)
    loaded = await store.load_execution(NS, "w", "r1")
    assert loaded is not None
    assert loaded.row == row()
    assert loaded.events == [b"e1", b"e2"]
    await store.apply(Mutation(shard_id=1, range_id=rid, execution=row(version=2, next_event_id=5),
                               expected_version=1, events=[(3, b"\x00\xff\x01"), (4, b"abcd")]))
    loaded = await store.load_execution(NS, "w", "r1")
    assert loaded is not None and loaded.row.db_version == 2 and loaded.row.next_event_id == 5
    assert loaded.events == [b"e1", b"e2", b"\x00\xff\x01", b"abcd"]  # binary-safe (no base64 leaks)
    assert await store.get_execution_row(NS, "w", "r1") == loaded.row
    assert await store.get_current(NS, "w") == CurrentRow(NS, "w", "r1", 1, "req-1")
    assert await store.load_execution(NS, "w", "nope") is None
    assert await store.get_execution_row(NS, "nope", "r1") is None


async def test_activity_state_travels_with_the_execution_row(store: Store) -> None:
    """Retried activity attempts write no events; their state rides on the row (issue 13)."""
    rid = await store.acquire_shard(1, "me")
    await start(store, rid)
    loaded = await store.load_execution(NS, "w", "r1")
    assert loaded is not None and loaded.row.activity_state == b""
    state = b"\x0a\x04\x08\x05\x10\x03\x00\xff"  # binary-safe (no base64 leaks)
    ex = row(version=2)
    ex.activity_state = state
    await store.apply(Mutation(shard_id=1, range_id=rid, execution=ex, expected_version=1))  # no event written
    loaded = await store.load_execution(NS, "w", "r1")
    assert loaded is not None and loaded.row.activity_state == state and loaded.row.db_version == 2
    assert loaded.events == [b"e1", b"e2"]
    assert await store.get_execution_row(NS, "w", "r1") == loaded.row
    assert [r.activity_state for r in await store.list_running_executions(1)] == [state]
    await store.apply(Mutation(shard_id=1, range_id=rid, execution=row(version=3), expected_version=2))
    again = await store.get_execution_row(NS, "w", "r1")
    assert again is not None and again.activity_state == b""
    new = row(wid="w2", version=1)
    new.activity_state = b"\x01"
    await store.apply(Mutation(shard_id=1, range_id=rid, execution=new, events=[(1, b"e1")]))
    inserted = await store.get_execution_row(NS, "w2", "r1")
    assert inserted is not None and inserted.activity_state == b"\x01"


async def test_read_events_pages(store: Store) -> None:
    rid = await store.acquire_shard(1, "me")
    await start(store, rid, events=25)
    first = await store.read_events(NS, "w", "r1", 1, 10)
    assert [e for e, _ in first] == list(range(1, 11))
    rest = await store.read_events(NS, "w", "r1", 11, 100)
    assert [e for e, _ in rest] == list(range(11, 26))
    assert rest[0][1] == b"e11"
    assert await store.read_events(NS, "w", "r1", 26, 10) == []


async def test_optimistic_version_conflict_changes_nothing(store: Store) -> None:
    rid = await store.acquire_shard(1, "me")
    await start(store, rid)
    stale = Mutation(shard_id=1, range_id=rid, execution=row(version=2, next_event_id=4), expected_version=7,
                     events=[(3, b"x")], transfer_insert=[TransferTask(10, "{}")])
    with pytest.raises(ConditionFailedError):
        await store.apply(stale)
    loaded = await store.load_execution(NS, "w", "r1")
    assert loaded is not None and loaded.row.db_version == 1 and len(loaded.events) == 2
    assert await store.load_transfer_tasks(1, 0, 10) == []


async def test_insert_existing_execution_fails(store: Store) -> None:
    rid = await store.acquire_shard(1, "me")
    await start(store, rid)
    with pytest.raises(ConditionFailedError):
        await store.apply(Mutation(shard_id=1, range_id=rid, execution=row(), events=[(1, b"again")]))
    loaded = await store.load_execution(NS, "w", "r1")
    assert loaded is not None and loaded.events == [b"e1", b"e2"]


async def test_current_run_checks(store: Store) -> None:
    rid = await store.acquire_shard(1, "me")
    await start(store, rid)
    with pytest.raises(ConditionFailedError):  # "" = must not exist
        await store.apply(Mutation(shard_id=1, range_id=rid, execution=row(rid="r2"), current=CurrentRow(NS, "w", "r2", 1),
                                   current_expect=""))
    assert await store.get_execution_row(NS, "w", "r2") is None
    with pytest.raises(ConditionFailedError):  # must point at a given run
        await store.apply(Mutation(shard_id=1, range_id=rid, execution=row(rid="r2"), current=CurrentRow(NS, "w", "r2", 1),
                                   current_expect="other"))
    await store.apply(Mutation(shard_id=1, range_id=rid, execution=row(rid="r2"), current=CurrentRow(NS, "w", "r2", 1),
                               current_expect="r1"))
    cur = await store.get_current(NS, "w")
    assert cur is not None and cur.run_id == "r2"


async def test_fencing_rejects_stale_range_id(store: Store) -> None:
    old = await store.acquire_shard(2, "a")
    new = await store.acquire_shard(2, "b")
    assert new > old and await store.get_range_id(2) == new
    with pytest.raises(ShardOwnershipLostError):
        await start(store, old, shard=2)
    assert await store.get_execution_row(NS, "w", "r1") is None
    assert await store.get_current(NS, "w") is None
    with pytest.raises(ShardOwnershipLostError):  # even a write with no execution row is fenced
        await store.apply(Mutation(shard_id=2, range_id=old, transfer_insert=[TransferTask(1, "{}")]))
    assert await store.load_transfer_tasks(2, 0, 10) == []
    await start(store, new, shard=2)
    assert await store.get_execution_row(NS, "w", "r1") is not None


async def test_buffered_events(store: Store) -> None:
    rid = await store.acquire_shard(1, "me")
    await start(store, rid)
    await store.apply(Mutation(shard_id=1, range_id=rid, execution=row(version=2), expected_version=1,
                               add_buffered=[b"b1", b"b2"]))
    await store.apply(Mutation(shard_id=1, range_id=rid, execution=row(version=3), expected_version=2,
                               add_buffered=[b"b3"]))
    loaded = await store.load_execution(NS, "w", "r1")
    assert loaded is not None and loaded.buffered == [b"b1", b"b2", b"b3"]
    await store.apply(Mutation(shard_id=1, range_id=rid, execution=row(version=4, next_event_id=4), expected_version=3,
                               events=[(3, b"e3")], clear_buffered=True))
    loaded = await store.load_execution(NS, "w", "r1")
    assert loaded is not None and loaded.buffered == [] and loaded.events[-1] == b"e3"


async def test_also_is_atomic(store: Store) -> None:
    """Continue-as-new: close one run and create the next in one transaction, or neither."""
    rid = await store.acquire_shard(1, "me")
    await start(store, rid)

    def can(next_expect: str) -> Mutation:
        m = Mutation(shard_id=1, range_id=rid, execution=row(version=2, status=6, next_event_id=4, close=2000),
                     expected_version=1, events=[(3, b"continued")])
        m.also.append(Mutation(shard_id=1, range_id=rid, execution=row(rid="r2"), events=[(1, b"started")],
                               current=CurrentRow(NS, "w", "r2", 1), current_expect=next_expect,
                               transfer_insert=[TransferTask(7, "{}")]))
        return m

    with pytest.raises(ConditionFailedError):
        await store.apply(can("not-r1"))
    loaded = await store.load_execution(NS, "w", "r1")
    assert loaded is not None and loaded.row.status == 1 and len(loaded.events) == 2
    assert await store.get_execution_row(NS, "w", "r2") is None
    assert await store.load_transfer_tasks(1, 0, 10) == []
    await store.apply(can("r1"))
    loaded = await store.load_execution(NS, "w", "r1")
    assert loaded is not None and loaded.row.status == 6 and loaded.events[-1] == b"continued"
    new = await store.load_execution(NS, "w", "r2")
    assert new is not None and new.events == [b"started"]
    assert (await store.get_current(NS, "w")).run_id == "r2"  # type: ignore[union-attr]
    assert [t.task_id for t in await store.load_transfer_tasks(1, 0, 10)] == [7]


async def test_apply_many_failures_are_independent(store: Store) -> None:
    rid = await store.acquire_shard(1, "me")
    await start(store, rid, "a")
    await start(store, rid, "b")
    results = await store.apply_many([
        Mutation(shard_id=1, range_id=rid, execution=row("a", version=2, next_event_id=4), expected_version=1,
                 events=[(3, b"a3")]),
        Mutation(shard_id=1, range_id=rid, execution=row("b", version=2, next_event_id=4), expected_version=5,
                 events=[(3, b"b3")]),
        Mutation(shard_id=1, range_id=rid - 1, transfer_insert=[TransferTask(3, "{}")]),
        Mutation(shard_id=1, range_id=rid, execution=row("b", version=2, next_event_id=4), expected_version=1,
                 events=[(3, b"b3-ok")]),
        Mutation(shard_id=1, range_id=rid, execution=row("c"), events=[(1, b"c1")]),
        Mutation(shard_id=1, range_id=rid, execution=row("c"), events=[(1, b"c1-dup")]),
    ])
    assert results[0] is None
    assert isinstance(results[1], ConditionFailedError)
    assert isinstance(results[2], ShardOwnershipLostError)
    assert results[3] is None
    assert results[4] is None and isinstance(results[5], ConditionFailedError)
    assert (await store.load_execution(NS, "a", "r1")).events[-1] == b"a3"  # type: ignore[union-attr]
    assert (await store.load_execution(NS, "b", "r1")).events[-1] == b"b3-ok"  # type: ignore[union-attr]
    assert (await store.load_execution(NS, "c", "r1")).events == [b"c1"]  # type: ignore[union-attr]
    assert await store.load_transfer_tasks(1, 0, 10) == []


async def test_delete_execution(store: Store) -> None:
    rid = await store.acquire_shard(1, "me")
    await start(store, rid)
    await store.apply(Mutation(shard_id=1, range_id=rid, delete_execution=(NS, "w", "r1")))
    assert await store.load_execution(NS, "w", "r1") is None
    assert await store.read_events(NS, "w", "r1", 1, 10) == []
    assert await store.get_current(NS, "w") is None


async def test_blob_refs_are_written_with_a_run_and_deleted_with_it(store: Store) -> None:
    """Large-payload blobs a run refers to (issue 16): retention deletes a blob once no run refers to it."""
    rid = await store.acquire_shard(1, "me")
    await start(store, rid, "w", "r1")
    await start(store, rid, "w2", "r2")
    await store.apply(Mutation(shard_id=1, range_id=rid, blob_refs=[(NS, "w", "r1", "k-shared"), (NS, "w", "r1", "k-own")]))
    await store.apply(Mutation(shard_id=1, range_id=rid, blob_refs=[(NS, "w2", "r2", "k-shared"),
                                                                    (NS, "w", "r1", "k-own")]))  # again: no error
    assert await store.list_blob_refs(NS, "w", "r1") == ["k-own", "k-shared"]
    assert await store.blob_is_referenced(NS, "k-own") and await store.blob_is_referenced(NS, "k-shared")
    assert not await store.blob_is_referenced("other-ns", "k-own")
    await store.apply(Mutation(shard_id=1, range_id=rid, delete_execution=(NS, "w", "r1")))
    assert await store.list_blob_refs(NS, "w", "r1") == []
    assert not await store.blob_is_referenced(NS, "k-own")
    assert await store.blob_is_referenced(NS, "k-shared")  # the other run still refers to it
    assert await store.list_blob_refs(NS, "w2", "r2") == ["k-shared"]


async def test_running_executions(store: Store) -> None:
    rid = await store.acquire_shard(1, "me")
    for i in range(3):
        await start(store, rid, f"w{i}")
    await store.apply(Mutation(shard_id=1, range_id=rid, execution=row("w1", version=2, status=2, close=5000),
                               expected_version=1, current=CurrentRow(NS, "w1", "r1", 2, "req-1")))
    running = await store.list_running_executions(1)
    assert sorted(r.workflow_id for r in running) == ["w0", "w2"]
    assert await store.list_running_executions(0) == []
    assert await store.count_running(NS) == 2
    assert sorted(r.workflow_id for r in await store.list_running(NS, 10)) == ["w0", "w2"]
    assert len(await store.list_running(NS, 1)) == 1


# ---------------------------------------------------------------------------- queues
async def test_transfer_task_ranges(store: Store) -> None:
    rid = await store.acquire_shard(1, "me")
    await store.apply(Mutation(shard_id=1, range_id=rid, transfer_insert=[TransferTask(i, f'{{"n":{i}}}')
                                                                           for i in (5, 1, 9, 3, 7)]))
    assert [t.task_id for t in await store.load_transfer_tasks(1, 0, 100)] == [1, 3, 5, 7, 9]
    assert [t.task_id for t in await store.load_transfer_tasks(1, 3, 2)] == [5, 7]
    assert (await store.load_transfer_tasks(1, 8, 10))[0].data == '{"n":9}'
    assert await store.load_transfer_tasks(2, 0, 10) == []
    await store.apply(Mutation(shard_id=1, range_id=rid, transfer_delete=[1, 7, 1000]))
    assert [t.task_id for t in await store.load_transfer_tasks(1, 0, 100)] == [3, 5, 9]


async def test_timer_task_ranges(store: Store) -> None:
    rid = await store.acquire_shard(3, "me")
    timers = [TimerTask(2000, 4, "d"), TimerTask(1000, 9, "b"), TimerTask(1000, 2, "a"), TimerTask(3000, 1, "e"),
              TimerTask(2000, 3, "c")]
    await store.apply(Mutation(shard_id=3, range_id=rid, timer_insert=timers))
    got = await store.load_timer_tasks(3, 2**62, (0, 0), 100)
    assert [(t.fire_time_ms, t.task_id, t.data) for t in got] == [
        (1000, 2, "a"), (1000, 9, "b"), (2000, 3, "c"), (2000, 4, "d"), (3000, 1, "e")]
    assert [t.data for t in await store.load_timer_tasks(3, 3000, (0, 0), 100)] == ["a", "b", "c", "d"]
    assert [t.data for t in await store.load_timer_tasks(3, 2**62, (1000, 9), 2)] == ["c", "d"]
    assert [t.data for t in await store.load_timer_tasks(3, 2**62, (2000, 3), 100)] == ["d", "e"]
    await store.apply(Mutation(shard_id=3, range_id=rid, timer_delete=[(1000, 2), (2000, 4)]))
    assert [t.data for t in await store.load_timer_tasks(3, 2**62, (0, 0), 100)] == ["b", "c", "e"]


async def test_backlog(store: Store) -> None:
    rid = await store.acquire_shard(0, "me")
    await store.apply(Mutation(shard_id=0, range_id=rid, backlog_insert=[
        BacklogTask(NS, "q1", 0, 0, 3, "t3"), BacklogTask(NS, "q1", 0, 2, 1, "t1"), BacklogTask(NS, "q1", 1, 0, 2, "act"),
        BacklogTask(NS, "q2", 0, 0, 5, "other"), BacklogTask(NS, "q1", 0, 1, 3, "same id, other shard")]))
    got = await store.load_backlog(NS, "q1", 0, 10)
    assert [b.data for b in got][0] == "t1" and sorted(b.data for b in got) == ["same id, other shard", "t1", "t3"]
    assert [b.data for b in await store.load_backlog(NS, "q1", 0, 1)] == ["t1"]
    assert await store.load_backlog(NS, "q1", 1, 10) == [BacklogTask(NS, "q1", 1, 0, 2, "act")]
    assert sorted(await store.list_backlog_queues()) == [(NS, "q1", 0), (NS, "q1", 1), (NS, "q2", 0)]
    await store.apply(Mutation(shard_id=0, range_id=rid, backlog_delete=[(NS, "q1", 0, 2, 1), (NS, "q2", 0, 0, 5),
                                                                           (NS, "q1", 0, 1, 3)]))
    assert [b.data for b in await store.load_backlog(NS, "q1", 0, 10)] == ["t3"]
    assert sorted(await store.list_backlog_queues()) == [(NS, "q1", 0), (NS, "q1", 1)]


# ---------------------------------------------------------------------------- visibility
SA = {"CustomerId": "Keyword", "Priority": "Int"}


def vis(i: int, *, status: int = 1, wtype: str = "Order", customer: str | None = None, priority: int | None = None
        ) -> VisibilityRow:
    attrs: dict[str, Any] = {}
    if customer is not None:
        attrs["CustomerId"] = customer
    if priority is not None:
        attrs["Priority"] = priority
    closed = status != 1
    return VisibilityRow(namespace_id=NS, workflow_id=f"wf-{i}", run_id=f"run-{i:03d}", workflow_type=wtype,
                         status=status, task_queue="q", start_time_ms=10_000 + i * 10,
                         close_time_ms=20_000 + i if closed else None, execution_duration_ms=100 if closed else None,
                         history_length=i, search_attributes=json.dumps(attrs), memo=b"\x01memo" if i % 2 else b"")


async def _fill_visibility(store: Store) -> list[VisibilityRow]:
    rid = await store.acquire_shard(0, "me")
    rows = [vis(i, status=1 + i % 3, wtype="Order" if i % 2 else "Payment", customer=["acme", "globex", None][i % 3],
                priority=i % 5) for i in range(30)]
    await store.apply(Mutation(shard_id=0, range_id=rid, visibility=rows))
    other = vis(99)
    other.namespace_id = "other-ns"
    await store.apply(Mutation(shard_id=0, range_id=rid, visibility=[other]))
    return rows


async def _query(store: Store, q: str, limit: int = 100, offset: int = 0) -> list[VisibilityRow]:
    c = compile_query(q, search_attributes=SA, dialect="sqlite" if store.name == "sqlite" else "spanner")
    return await store.query_visibility(NS, c.where, c.params, c.order_by, limit, offset)


async def test_visibility_queries(store: Store) -> None:
    rows = await _fill_visibility(store)
    all_rows = await _query(store, "")
    assert [r.run_id for r in all_rows] == [r.run_id for r in sorted(rows, key=lambda r: -r.start_time_ms)]
    got = all_rows[0]
    want = max(rows, key=lambda r: r.start_time_ms)
    assert (got.workflow_id, got.status, got.close_time_ms, got.memo, got.history_length) == \
        (want.workflow_id, want.status, want.close_time_ms, want.memo, want.history_length)
    assert json.loads(got.search_attributes) == json.loads(want.search_attributes)
    running = await _query(store, "ExecutionStatus = 'Running' AND WorkflowType = 'Order'")
    assert {r.run_id for r in running} == {r.run_id for r in rows if r.status == 1 and r.workflow_type == "Order"}
    acme = await _query(store, "CustomerId = 'acme' AND Priority >= 2 ORDER BY StartTime ASC")
    expect = [r for r in rows if json.loads(r.search_attributes).get("CustomerId") == "acme"
              and json.loads(r.search_attributes).get("Priority", -1) >= 2]
    assert [r.run_id for r in acme] == [r.run_id for r in sorted(expect, key=lambda r: r.start_time_ms)]


async def test_visibility_paging_and_counts(store: Store) -> None:
    rows = await _fill_visibility(store)
    pages: list[str] = []
    offset = 0
    while True:
        page = await _query(store, "ORDER BY StartTime DESC", limit=7, offset=offset)
        pages += [r.run_id for r in page]
        offset += len(page)
        if len(page) < 7:
            break
    assert pages == [r.run_id for r in sorted(rows, key=lambda r: -r.start_time_ms)]
    dialect = "sqlite" if store.name == "sqlite" else "spanner"
    c = compile_query("WorkflowType = 'Order'", search_attributes=SA, dialect=dialect)
    [(key, n)] = await store.count_visibility(NS, c.where, c.params, c.group_by_columns)
    assert key == () and n == sum(1 for r in rows if r.workflow_type == "Order")
    g = compile_query("GROUP BY ExecutionStatus", search_attributes=SA, dialect=dialect)
    counts = dict(await store.count_visibility(NS, g.where, g.params, g.group_by_columns))
    assert counts == {(s,): sum(1 for r in rows if r.status == s) for s in (1, 2, 3)}
    closed = await store.list_closed_before(NS, 20_015, 100)
    assert [r.run_id for r in closed] == [r.run_id for r in sorted(rows, key=lambda r: r.close_time_ms or 0)
                                          if r.close_time_ms is not None and r.close_time_ms < 20_015]
    rid = await store.get_range_id(0)
    await store.apply(Mutation(shard_id=0, range_id=rid, visibility_delete=[(NS, rows[0].run_id)]))
    assert len(await _query(store, "")) == len(rows) - 1


async def test_visibility_upsert_replaces(store: Store) -> None:
    rid = await store.acquire_shard(0, "me")
    await store.apply(Mutation(shard_id=0, range_id=rid, visibility=[vis(1)]))
    closed = vis(1, status=2)
    await store.apply(Mutation(shard_id=0, range_id=rid, visibility=[closed]))
    [got] = await _query(store, "")
    assert got.status == 2 and got.close_time_ms == closed.close_time_ms


async def test_visibility_history_length_only_rises(store: Store) -> None:
    """The engine keeps a running run's listed history length current with coalesced, late-tolerant updates."""
    rid = await store.acquire_shard(0, "me")
    await store.apply(Mutation(shard_id=0, range_id=rid, visibility=[vis(2)]))  # history_length 2

    async def length(i: int) -> int | None:
        rows = [r for r in await _query(store, "") if r.run_id == f"run-{i:03d}"]
        return rows[0].history_length if rows else None

    await store.apply(Mutation(shard_id=0, range_id=rid, visibility_history_length=[(NS, "run-002", 40)]))
    assert await length(2) == 40
    await store.apply(Mutation(shard_id=0, range_id=rid, visibility_history_length=[(NS, "run-002", 30)]))  # late
    assert await length(2) == 40
    # a missing row is skipped (the mutation still applies); with a row written by the same mutation, the larger wins
    await store.apply(Mutation(shard_id=0, range_id=rid, visibility=[vis(5), vis(9)],
                               visibility_history_length=[(NS, "nope", 7), (NS, "run-005", 8), (NS, "run-009", 3)]))
    assert (await length(5), await length(9)) == (8, 9)
    assert [r.run_id for r in await _query(store, "")] == ["run-009", "run-005", "run-002"]
    row = await store.query_visibility(NS, "", {}, "", 10, 0)
    assert {r.run_id: r.status for r in row} == {"run-002": 1, "run-005": 1, "run-009": 1}  # nothing else changed


# ---------------------------------------------------------------------------- namespaces and shards
async def test_namespaces(store: Store) -> None:
    await store.create_namespace(NamespaceRow("id-b", "beta", '{"d": 1}'))
    await store.create_namespace(NamespaceRow("id-a", "alpha", "{}"))
    with pytest.raises(ConditionFailedError):
        await store.create_namespace(NamespaceRow("id-c", "alpha", "{}"))
    assert [n.name for n in await store.list_namespaces()] == ["alpha", "beta"]
    beta = await store.get_namespace("beta")
    assert beta == NamespaceRow("id-b", "beta", '{"d": 1}', "REGISTERED", 0)
    await store.update_namespace(NamespaceRow("id-b", "beta", '{"d": 2}', "REGISTERED", 1), expected_version=0)
    with pytest.raises(ConditionFailedError):
        await store.update_namespace(NamespaceRow("id-b", "beta", '{"d": 3}', "REGISTERED", 1), expected_version=0)
    assert (await store.get_namespace("beta")).data == '{"d": 2}'  # type: ignore[union-attr]
    assert await store.delete_namespace("beta", 1) == []  # no key held a grant on it
    assert await store.get_namespace("beta") is None
    assert await store.get_namespace("nope") is None


async def test_reopen_keeps_data_and_checks_shard_count(store_factory: Any) -> None:
    s1 = store_factory()
    await s1.open(4)
    rid = await s1.acquire_shard(1, "me")
    await start(s1, rid)
    await s1.close()
    s2 = store_factory()
    await s2.open(4)
    try:
        assert await s2.get_range_id(1) == rid
        assert (await s2.load_execution(NS, "w", "r1")).events == [b"e1", b"e2"]  # type: ignore[union-attr]
    finally:
        await s2.close()
    s3 = store_factory()
    with pytest.raises(ValueError, match="shards"):
        await s3.open(8)
    await s3.close()


# ---------------------------------------------------------------------------- schedules (issue 17)
def sched(sid: str, version: int, data: bytes, *, shard: int = 2, ns: str = NS) -> ScheduleRow:
    return ScheduleRow(namespace_id=ns, schedule_id=sid, shard_id=shard, version=version, data=data)


async def test_schedule_rows_are_written_with_their_timer_in_one_transaction(store: Store) -> None:
    rid = await store.acquire_shard(2, "me")
    data = b"\x0a\x00\xff\x01binary"  # binary-safe
    await store.apply(Mutation(shard_id=2, range_id=rid, schedule=sched("daily", 1, data),
                               timer_insert=[TimerTask(5000, 7, '{"k": "sched"}')]))
    assert await store.get_schedule(NS, "daily") == sched("daily", 1, data)
    assert [t.task_id for t in await store.load_timer_tasks(2, 10_000, (0, 0), 10)] == [7]
    # an insert of a taken id fails, and its timer row is not written either
    with pytest.raises(ConditionFailedError):
        await store.apply(Mutation(shard_id=2, range_id=rid, schedule=sched("daily", 1, b"other"),
                                   timer_insert=[TimerTask(6000, 8, "{}")]))
    assert await store.get_schedule(NS, "daily") == sched("daily", 1, data)
    assert [t.task_id for t in await store.load_timer_tasks(2, 10_000, (0, 0), 10)] == [7]
    # an update under the right version replaces the row and moves the timer
    await store.apply(Mutation(shard_id=2, range_id=rid, schedule=sched("daily", 2, b"v2"), schedule_expected_version=1,
                               timer_delete=[(5000, 7)], timer_insert=[TimerTask(9000, 9, "{}")]))
    assert await store.get_schedule(NS, "daily") == sched("daily", 2, b"v2")
    assert [t.task_id for t in await store.load_timer_tasks(2, 10_000, (0, 0), 10)] == [9]
    # a stale version changes nothing (two writers raced: the second must re-read)
    with pytest.raises(ConditionFailedError):
        await store.apply(Mutation(shard_id=2, range_id=rid, schedule=sched("daily", 2, b"stale"),
                                   schedule_expected_version=1, timer_delete=[(9000, 9)]))
    assert await store.get_schedule(NS, "daily") == sched("daily", 2, b"v2")
    assert [t.task_id for t in await store.load_timer_tasks(2, 10_000, (0, 0), 10)] == [9]
    # an update of a schedule that does not exist fails
    with pytest.raises(ConditionFailedError):
        await store.apply(Mutation(shard_id=2, range_id=rid, schedule=sched("nope", 2, b"x"), schedule_expected_version=1))
    assert await store.get_schedule(NS, "nope") is None
    # a fenced write (another owner took the shard) is refused
    rid2 = await store.acquire_shard(2, "other")
    with pytest.raises(ShardOwnershipLostError):
        await store.apply(Mutation(shard_id=2, range_id=rid, schedule=sched("late", 1, b"x")))
    assert await store.get_schedule(NS, "late") is None
    # delete under the version, with the timer row
    with pytest.raises(ConditionFailedError):
        await store.apply(Mutation(shard_id=2, range_id=rid2, schedule_delete=(NS, "daily", 1), timer_delete=[(9000, 9)]))
    assert await store.get_schedule(NS, "daily") is not None
    await store.apply(Mutation(shard_id=2, range_id=rid2, schedule_delete=(NS, "daily", 2), timer_delete=[(9000, 9)]))
    assert await store.get_schedule(NS, "daily") is None
    assert await store.load_timer_tasks(2, 10_000, (0, 0), 10) == []
    with pytest.raises(ConditionFailedError):  # deleting again: it is gone
        await store.apply(Mutation(shard_id=2, range_id=rid2, schedule_delete=(NS, "daily", 2)))


async def test_schedules_are_listed_per_namespace_in_id_order_by_page(store: Store) -> None:
    rid = await store.acquire_shard(0, "me")
    for sid in ("c", "a", "b", "d"):
        await store.apply(Mutation(shard_id=0, range_id=rid, schedule=sched(sid, 1, sid.encode(), shard=0)))
    await store.apply(Mutation(shard_id=0, range_id=rid, schedule=sched("a", 1, b"other ns", shard=0, ns="ns-2")))
    first = await store.list_schedules(NS, "", 3)
    assert [r.schedule_id for r in first] == ["a", "b", "c"]
    assert [r.data for r in first] == [b"a", b"b", b"c"]
    assert [r.schedule_id for r in await store.list_schedules(NS, "c", 3)] == ["d"]
    assert await store.list_schedules(NS, "d", 3) == []
    assert await store.list_schedules("ns-2", "", 10) == [sched("a", 1, b"other ns", shard=0, ns="ns-2")]
    assert await store.list_schedules("ns-none", "", 10) == []
