"""Erasure jobs (StartBatchOperation with a deletion, issue 26): what a query selects goes, nothing else.

A job over ``CustomerId = 'c-42'`` among other customers' runs: the selected runs (closed, running,
with large payloads, archived only) are gone everywhere, the others are untouched byte for byte;
a bad query creates no job; the same job id twice is one job; the progress is readable.
"""

from __future__ import annotations

import json
import logging

from pathlib import Path
from typing import Any

import grpc
import pytest

from _erasure_world import NS, QUEUE, World, big, erasure_world
from waiting import until

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc

QUERY = "CustomerId = 'c-42'"


def start_req(job_id: str, query: str = QUERY, reason: str = "GDPR request 17") -> svc.StartBatchOperationRequest:
    return svc.StartBatchOperationRequest(namespace=NS, job_id=job_id, visibility_query=query, reason=reason,
                                          deletion_operation=svc.BatchOperationDeletion(identity="dpo@example.com"))


async def describe(w: World, job_id: str) -> svc.DescribeBatchOperationResponse:
    return await w.stub.DescribeBatchOperation(svc.DescribeBatchOperationRequest(namespace=NS, job_id=job_id),
                                               timeout=10)


async def finished(w: World, job_id: str, timeout: float = 20) -> svc.DescribeBatchOperationResponse:
    async def done() -> svc.DescribeBatchOperationResponse | None:
        d = await describe(w, job_id)
        return d if d.state != svc.BATCH_OPERATION_STATE_RUNNING else None

    return await until(done, f"job {job_id} finished", timeout=timeout)


def job_rows(w: World) -> list[tuple[object, ...]]:
    import sqlite3

    conn = sqlite3.connect(f"file:{w.db}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT namespace_id, job_id, state FROM batch_jobs").fetchall()
    finally:
        conn.close()


async def test_a_job_erases_what_its_query_selects_and_nothing_else(tmp_path: Path,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="spindle.audit")
    async with erasure_world(tmp_path, archive_uri=f"file://{tmp_path}/archive") as w:
        # c42-3 and c7-2 stay running (their queue has no worker); the others are closed
        selected = {f"c42-{i}": await w.start(f"c42-{i}", "c-42", big(f"secret-{i}") if i % 2 else "card 4111",
                                              queue="idle-q" if i == 3 else QUEUE) for i in range(4)}
        others = {f"c7-{i}": await w.start(f"c7-{i}", "c-7", big(f"other-{i}") if i % 2 else "x",
                                           queue="idle-q" if i == 2 else QUEUE) for i in range(3)}
        others["plain"] = await w.start("plain")
        for _ in range(6):
            await w.complete_next()
        # archived copies: one of a selected live run, one run only the archive holds (c-42), one of c-7
        ns = w.cp.namespaces.get(NS)
        archiver = w.cp.engine.archival.archiver_for(ns)
        assert archiver is not None

        async def events(wid: str) -> list[pb.HistoryEvent]:
            resp = await w.stub.GetWorkflowExecutionHistory(svc.GetWorkflowExecutionHistoryRequest(
                namespace=NS, execution=pb.WorkflowExecution(workflow_id=wid)), timeout=10)
            return list(resp.history.events)

        closed_c42, closed_c7 = "c42-0", "c7-0"
        await archiver.archive(ns.id, closed_c42, selected[closed_c42], await events(closed_c42), 1)
        await archiver.archive(ns.id, "archived-only", "0b7c2f4e-0000-4000-8000-000000000001",
                               await events(closed_c42), 1)
        await archiver.archive(ns.id, "archived-c7", "0b7c2f4e-0000-4000-8000-000000000002",
                               await events(closed_c7), 1)
        await until(lambda: len(w.rows("visibility", selected["c42-3"])) == 1, timeout=10)
        before = {wid: await w.history(wid, rid) for wid, rid in others.items()}
        other_blobs = {k for rid in others.values() for k in (r[3] for r in w.rows("blob_refs", rid))}
        assert other_blobs and {k for rid in selected.values() for k in (r[3] for r in w.rows("blob_refs", rid))}
        assert await w.history("archived-only") != grpc.StatusCode.NOT_FOUND  # served from the archive
        archived_rid = "0b7c2f4e-0000-4000-8000-000000000001"
        assert await w.history("archived-only", archived_rid) != grpc.StatusCode.NOT_FOUND  # (and kept in memory)

        await w.stub.StartBatchOperation(start_req("erase-c42"), timeout=10)
        d = await finished(w, "erase-c42")

        assert d.state == svc.BATCH_OPERATION_STATE_COMPLETED, d
        assert d.operation_type == svc.BATCH_OPERATION_TYPE_DELETE
        assert (d.complete_operation_count, d.total_operation_count, d.failure_operation_count) == (5, 5, 0), d
        assert (d.terminated_count, d.archived_count) == (1, 1), d
        assert d.close_time_ms >= d.start_time_ms > 0
        assert (d.visibility_query, d.reason, d.identity) == (QUERY, "GDPR request 17", "dpo@example.com")
        for wid, rid in selected.items():
            assert await w.history(wid, rid) == grpc.StatusCode.NOT_FOUND, wid
            for table in ("executions", "events", "visibility", "blob_refs", "current_executions"):
                assert w.rows(table, rid) == [], (wid, table)
        assert await w.history("archived-only") == grpc.StatusCode.NOT_FOUND
        assert await w.history("archived-only", archived_rid) == grpc.StatusCode.NOT_FOUND
        assert await archiver.read(ns.id, "archived-c7", "0b7c2f4e-0000-4000-8000-000000000002") is not None
        assert not set(selected.values()) & await w.listed()
        assert set(others.values()) <= await w.listed()
        assert {wid: await w.history(wid, rid) for wid, rid in others.items()} == before
        # the selected runs' blobs are gone, the others' are all there
        left = w.blobs()
        assert all(any(f.endswith(k.rpartition("/")[2]) for f in left) for k in other_blobs)
        assert len(left) == len(other_blobs)
        # audit: a line at the start and one at the end with the counts, never the data
        lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == "spindle.audit"]
        job_lines = [x for x in lines if x["target"] == f"batch/{NS}/erase-c42"]
        # the RPC's own line ("ok": written when the call returns) and the job's start line, then its end line
        assert sorted(x["outcome"] for x in job_lines[:2]) == ["ok", "started"] and len(job_lines) == 3, job_lines
        assert job_lines[-1]["outcome"] == "completed", job_lines
        assert job_lines[-1]["details"]["erased"] == 5 and job_lines[-1]["details"]["query"] == QUERY
        assert not any("secret" in r.getMessage() or "4111" in r.getMessage() for r in caplog.records)


async def test_a_bad_query_is_refused_with_its_position_and_creates_no_job(tmp_path: Path) -> None:
    async with erasure_world(tmp_path) as w:
        cases = {
            "CustomerId = ": "position",
            "NoSuchField = 'x'": "NoSuchField",
            "CustomerId = 'c-42' GROUP BY ExecutionStatus": "GROUP BY",
            "   ": "required",
        }
        for query, words in cases.items():
            with pytest.raises(grpc.aio.AioRpcError) as e:
                await w.stub.StartBatchOperation(start_req("bad", query), timeout=10)
            assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT, query
            assert "visibility_query" in (e.value.details() or "") and words in (e.value.details() or ""), \
                e.value.details()
        no_deletion = start_req("bad")
        no_deletion.ClearField("deletion_operation")
        with pytest.raises(grpc.aio.AioRpcError) as e:
            await w.stub.StartBatchOperation(no_deletion, timeout=10)
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "deletion_operation" in (e.value.details() or "")
        with pytest.raises(grpc.aio.AioRpcError) as e:
            await w.stub.StartBatchOperation(start_req(""), timeout=10)
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "job_id" in (e.value.details() or "")
        assert job_rows(w) == []
        with pytest.raises(grpc.aio.AioRpcError) as e:
            await describe(w, "bad")
        assert e.value.code() == grpc.StatusCode.NOT_FOUND


async def test_the_same_job_id_twice_is_one_job_and_another_request_under_it_is_refused(tmp_path: Path) -> None:
    async with erasure_world(tmp_path) as w:
        rid = await w.start("c42-0", "c-42")
        await w.stub.StartBatchOperation(start_req("job-1"), timeout=10)
        await w.stub.StartBatchOperation(start_req("job-1"), timeout=10)  # a client's retry: OK, nothing new
        first = await finished(w, "job-1")
        assert first.complete_operation_count == 1 and first.terminated_count == 1
        assert w.rows("executions", rid) == []
        await w.stub.StartBatchOperation(start_req("job-1"), timeout=10)  # even after it finished
        assert await describe(w, "job-1") == first
        with pytest.raises(grpc.aio.AioRpcError) as e:
            await w.stub.StartBatchOperation(start_req("job-1", "CustomerId = 'c-7'"), timeout=10)
        assert e.value.code() == grpc.StatusCode.ALREADY_EXISTS and "job-1" in (e.value.details() or "")
        assert len(job_rows(w)) == 1


async def test_progress_is_readable_while_running_and_later_runs_are_not_touched(tmp_path: Path) -> None:
    async with erasure_world(tmp_path) as w:
        rids = [await w.start(f"c42-{i}", "c-42") for i in range(12)]
        w.cp.erasure.page_size = 4
        w.cp.erasure.max_rate = 8.0  # ~1.5 s for the 12 runs
        await w.stub.StartBatchOperation(start_req("slow"), timeout=10)
        later = await w.start("c42-later", "c-42")  # started after the job: not selected

        async def midway() -> svc.DescribeBatchOperationResponse | None:
            d = await describe(w, "slow")
            return d if 0 < d.complete_operation_count < 12 else None

        mid = await until(midway, timeout=10)
        assert mid.state == svc.BATCH_OPERATION_STATE_RUNNING and mid.close_time_ms == 0
        listed = await w.stub.ListBatchOperations(svc.ListBatchOperationsRequest(namespace=NS), timeout=10)
        assert [o.job_id for o in listed.operation_info] == ["slow"]
        d = await finished(w, "slow")
        assert d.complete_operation_count == 12 and d.terminated_count == 12
        assert all(w.rows("executions", rid) == [] for rid in rids)
        assert len(w.rows("executions", later)) == 1 and await w.history("c42-later", later) != grpc.StatusCode.NOT_FOUND


async def test_a_run_whose_erasure_fails_is_counted_and_retried_until_it_is_gone(tmp_path: Path) -> None:
    from spindle.controlplane.errors import Unavailable

    async with erasure_world(tmp_path) as w:
        rids = {f"c42-{i}": await w.start(f"c42-{i}", "c-42") for i in range(3)}
        runner = w.cp.erasure
        runner.retry_delay = 0.2
        erase, failures = runner.erase, []

        async def flaky(ns: Any, wid: str, rid: str, reason: str, identity: str) -> None:
            if wid == "c42-1" and len(failures) < 2:
                failures.append(wid)
                raise Unavailable("the blob store is down")
            await erase(ns, wid, rid, reason, identity)

        runner.erase = flaky
        await w.stub.StartBatchOperation(start_req("flaky"), timeout=10)
        d = await finished(w, "flaky")
        assert d.state == svc.BATCH_OPERATION_STATE_COMPLETED and failures == ["c42-1", "c42-1"]
        assert (d.complete_operation_count, d.total_operation_count, d.failure_operation_count) == (3, 3, 2), d
        assert "c42-1" in d.last_error and "blob store is down" in d.last_error
        assert all(w.rows("executions", rid) == [] for rid in rids.values())
