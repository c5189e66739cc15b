"""DeleteWorkflowExecution (issue 26): one run deleted for good, everything of it, nothing else.

A closed run; a running run (terminated first, its tasks in matching dropped when polled); a run
with an offloaded large payload (its blob deleted, a blob another run shares kept); a run that
does not exist (OK, twice in a row too).
"""

from __future__ import annotations

import asyncio

from pathlib import Path
from typing import Any

import grpc
import pytest

from _erasure_world import NS, QUEUE, World, big, erasure_world, payloads
from waiting import until

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc

TABLES = ("executions", "events", "buffered_events", "current_executions", "visibility", "blob_refs")


def rows_of_table(db: str, table: str) -> list[tuple[Any, ...]]:
    import sqlite3

    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute(f"SELECT * FROM {table}").fetchall()
    finally:
        conn.close()


def assert_gone(w: World, wid: str, rid: str) -> None:
    """No table holds a row of the run, and the process caches nothing of it."""
    for table in TABLES:
        assert w.rows(table, rid) == [], f"{table} still holds rows of run {rid}"
    ns_id = w.cp.namespaces.get(NS).id
    assert w.cp.engine.cache.get((ns_id, wid, rid)) is None
    assert not [q for q in w.cp.engine.matching.queues() for t in q.tasks if t.run_id == rid]
    assert not [r for r in rows_of_table(w.db, "task_backlog") if rid in str(r)]  # no column names the run


async def assert_tasks_acked(w: World, rid: str) -> None:
    """The transfer rows the termination wrote are acknowledged (deleted) by the shard's ack batch."""
    await until(lambda: not [r for r in rows_of_table(w.db, "transfer_tasks") if rid in str(r)], timeout=5)


async def test_a_closed_run_is_gone_and_another_run_untouched(tmp_path: Path) -> None:
    async with erasure_world(tmp_path) as w:
        gone = await w.start("order-1", "c-42")
        kept = await w.start("order-2", "c-7")
        await w.complete_next()
        await w.complete_next()
        await until(lambda: w.rows("visibility", gone) and w.rows("visibility", gone)[0][4] == 2, timeout=10)
        kept_history = await w.history("order-2")
        await w.delete("order-1", gone)
        assert await w.history("order-1", gone) == grpc.StatusCode.NOT_FOUND
        assert await w.history("order-1") == grpc.StatusCode.NOT_FOUND  # no current-run pointer left
        assert gone not in await w.listed()
        assert_gone(w, "order-1", gone)
        assert await w.history("order-2") == kept_history
        assert kept in await w.listed()
        # erasing again (a client's retry) answers OK and changes nothing
        await w.delete("order-1", gone)
        assert await w.history("order-2") == kept_history


async def test_a_running_run_is_terminated_first_and_its_tasks_are_dropped(tmp_path: Path) -> None:
    async with erasure_world(tmp_path, long_poll_timeout=1.0) as w:
        rid = await w.start("running-1", "c-42")  # its first workflow task waits in matching
        await until(lambda: w.rows("visibility", rid), timeout=10)
        # (written to the durable backlog: nobody polled)
        await until(lambda: [r for r in rows_of_table(w.db, "task_backlog") if rid in str(r)], timeout=10)
        await w.delete("running-1")  # run_id "" = the current run
        assert await w.history("running-1", rid) == grpc.StatusCode.NOT_FOUND
        assert_gone(w, "running-1", rid)
        await assert_tasks_acked(w, rid)
        # the workflow task that was waiting is dropped when polled: the poll gets nothing, no error
        task = await w.stub.PollWorkflowTaskQueue(svc.PollWorkflowTaskQueueRequest(
            namespace=NS, task_queue=QUEUE, identity="w"), timeout=5)
        assert not task.task_token
        # the workflow id is free again
        again = await w.start("running-1", "c-42")
        assert again != rid
        assert await w.complete_next() == "running-1"


async def test_a_visibility_row_queued_when_the_delete_is_written_does_not_come_back(tmp_path: Path) -> None:
    """The terminated run's visibility row waits in the shard's ack batch; the ack loop's turn comes while
    the delete is on its way to the store: the row must not be written after the delete."""
    async with erasure_world(tmp_path, blob_store_uri="") as w:
        rid = await w.start("raced-1", "c-42")
        await until(lambda: w.rows("visibility", rid), timeout=10)
        store = w.cp.store
        shard = w.cp.engine.shards[w.cp.engine.shard_id_of(w.cp.namespaces.get(NS).id, "raced-1")]
        write = store.apply

        async def apply_with_an_ack_batch_meanwhile(m: Any) -> None:
            if m.delete_execution is None:
                return await write(m)
            on_its_way = asyncio.ensure_future(write(m))
            await asyncio.sleep(0)  # the delete is queued at the writer
            await shard.flush(store)  # the shard's ack batch, as the ack loop would write it now
            await on_its_way

        store.apply = apply_with_an_ack_batch_meanwhile  # type: ignore[method-assign]
        try:
            await w.delete("raced-1", rid)
        finally:
            store.apply = write  # type: ignore[method-assign]
        await shard.flush(store)
        assert w.rows("visibility", rid) == []
        assert rid not in await w.listed()


async def test_an_activity_task_of_an_erased_run_is_dropped_when_polled(tmp_path: Path) -> None:
    async with erasure_world(tmp_path, long_poll_timeout=1.0) as w:
        rid = await w.start("act-1")
        await w.complete_next([pb.Command(
            command_type=pb.COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK,
            schedule_activity_task_command_attributes=pb.ScheduleActivityTaskCommandAttributes(
                activity_id="a", activity_type="Charge", task_queue=QUEUE, start_to_close_timeout_ms=60_000,
                schedule_to_close_timeout_ms=60_000))])
        await w.delete("act-1", rid)
        task = await w.stub.PollActivityTaskQueue(svc.PollActivityTaskQueueRequest(
            namespace=NS, task_queue=QUEUE, identity="w"), timeout=5)
        assert not task.task_token
        assert_gone(w, "act-1", rid)
        await assert_tasks_acked(w, rid)


async def test_large_payload_blobs_are_deleted_and_a_shared_blob_is_kept(tmp_path: Path) -> None:
    async with erasure_world(tmp_path) as w:
        alone = await w.start("big-1", "c-42", big("alone"))
        await w.complete_next()
        own_blobs = {r[3] for r in w.rows("blob_refs", alone)}
        assert own_blobs, "the large input was not offloaded"
        # a parent whose child gets its large input: the child's start copies the reference (one shared blob)
        parent = await w.start("parent-1", "c-42")
        await w.complete_next([pb.Command(
            command_type=pb.COMMAND_TYPE_START_CHILD_WORKFLOW_EXECUTION,
            start_child_workflow_execution_command_attributes=pb.StartChildWorkflowExecutionCommandAttributes(
                workflow_id="child-1", workflow_type="Child", input=payloads(big("shared"))))])
        child_rid = ""

        async def child_started() -> bool:
            nonlocal child_rid
            try:
                d = await w.stub.DescribeWorkflowExecution(svc.DescribeWorkflowExecutionRequest(
                    namespace=NS, execution=pb.WorkflowExecution(workflow_id="child-1")), timeout=5)
            except grpc.aio.AioRpcError:
                return False
            child_rid = d.workflow_execution_info.execution.run_id
            return True

        await until(child_started, timeout=10)
        parent_blobs = {r[3] for r in w.rows("blob_refs", parent)}
        child_blobs = {r[3] for r in w.rows("blob_refs", child_rid)}
        shared = parent_blobs & child_blobs
        assert shared, (parent_blobs, child_blobs)
        before = w.blobs()

        await w.delete("big-1", alone)
        after = w.blobs()
        assert not any(k.endswith(b.rpartition("/")[2]) for k in after for b in own_blobs)
        assert len(before) - len(after) == len(own_blobs)

        await w.delete("parent-1", parent)  # the child still refers to the shared blob: kept
        assert w.blobs() == after
        assert await w.history("child-1", child_rid) != grpc.StatusCode.NOT_FOUND

        await w.delete("child-1", child_rid)  # its last run gone: the blob goes
        assert not any(k.endswith(b.rpartition("/")[2]) for k in w.blobs() for b in shared)


async def test_a_missing_run_is_ok(tmp_path: Path) -> None:
    async with erasure_world(tmp_path) as w:
        await w.delete("never-was")
        await w.delete("never-was", "6c0a5a43-4f7e-4f39-a3c1-5b2a5d6b0e11")
        with pytest.raises(grpc.aio.AioRpcError) as e:
            await w.stub.DeleteWorkflowExecution(svc.DeleteWorkflowExecutionRequest(namespace=NS), timeout=10)
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "workflow_id" in (e.value.details() or "")
        with pytest.raises(grpc.aio.AioRpcError) as e:
            await w.stub.DeleteWorkflowExecution(svc.DeleteWorkflowExecutionRequest(
                namespace="nope", workflow_execution=pb.WorkflowExecution(workflow_id="x")), timeout=10)
        assert e.value.code() == grpc.StatusCode.NOT_FOUND


async def test_an_archived_copy_read_before_is_not_served_after_the_erasure(tmp_path: Path) -> None:
    async with erasure_world(tmp_path, archive_uri=f"file://{tmp_path}/archive") as w:
        await w.start("src", "c-42", "card 4111")
        await w.complete_next()
        events = await w.stub.GetWorkflowExecutionHistory(svc.GetWorkflowExecutionHistoryRequest(
            namespace=NS, execution=pb.WorkflowExecution(workflow_id="src")), timeout=10)
        ns = w.cp.namespaces.get(NS)
        archiver = w.cp.engine.archival.archiver_for(ns)
        assert archiver is not None
        rid = "0b7c2f4e-0000-4000-8000-00000000000a"
        await archiver.archive(ns.id, "archived-only", rid, list(events.history.events), 1)
        assert await w.history("archived-only", rid) != grpc.StatusCode.NOT_FOUND  # read (and cached) from the archive
        await w.delete("archived-only", rid)
        assert await w.history("archived-only", rid) == grpc.StatusCode.NOT_FOUND
        assert await w.history("archived-only") == grpc.StatusCode.NOT_FOUND
