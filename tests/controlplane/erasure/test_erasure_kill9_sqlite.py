"""An erasure job survives kill -9 of the server (issue 26), on SQLite: ``spindle server start-dev`` with a blob
folder, 60 runs of customer c-42 (every third with a large payload in the blob folder) among another customer's runs,
an erasure job paced by the namespace's request rate, SIGKILL mid-job, a restart on the same file: the job resumes and
completes with exact counts and no failure, nothing of c-42 remains (store rows, visibility, blobs), nothing of c-7
changed (histories byte for byte, blobs)."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
import uuid

from pathlib import Path
from typing import Any

import grpc
import pytest

from spindle_procs import DevServer

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.api import service_pb2_grpc

pytestmark = [pytest.mark.serial, pytest.mark.timeout(120)]

NS = "default"
SECRET, KEEP = "SECRET-of-c42-", "KEEP-of-c7-"
THRESHOLD = 1024
SELECTED, OTHERS = 60, 6
RUN_TABLES = ("executions", "events", "buffered_events", "current_executions", "blob_refs", "visibility")


def read(db: str, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def blob_contents(blob_dir: Path) -> dict[str, bytes]:
    return {str(p.relative_to(blob_dir)): p.read_bytes() for p in blob_dir.rglob("*") if p.is_file()}


def job(db: str) -> svc.BatchJobRecord | None:
    rows = read(db, "SELECT data FROM batch_jobs WHERE job_id = 'gdpr-42'")
    return svc.BatchJobRecord.FromString(rows[0][0]) if rows else None


async def histories(stub: Any) -> dict[str, list[bytes]]:
    """The other customer's histories, serialized event by event."""
    out = {}
    for i in range(OTHERS):
        resp = await stub.GetWorkflowExecutionHistory(svc.GetWorkflowExecutionHistoryRequest(
            namespace=NS, execution=pb.WorkflowExecution(workflow_id=f"c7-{i}")), timeout=10)
        out[f"c7-{i}"] = [e.SerializeToString() for e in resp.history.events]
    return out


async def wait_for(what: str, check: Any, timeout: float) -> Any:
    end = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        assert time.monotonic() < end, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


def test_an_erasure_job_resumes_after_kill_9_and_erases_exactly_its_selection(tmp_path: Path) -> None:
    db = str(tmp_path / "kill9.db")
    config = tmp_path / "server.yaml"
    config.write_text(f"large_payload_threshold_bytes: {THRESHOLD}\nstart_admission_max_pending: 1000\n")
    server = DevServer(db, "--config", str(config)).start()
    try:
        asyncio.run(_scenario(server, db, Path(db + ".blobs")))
    finally:
        server.kill()


async def _scenario(server: DevServer, db: str, blob_dir: Path) -> None:
    async with grpc.aio.insecure_channel(server.address) as ch:
        stub = service_pb2_grpc.WorkflowServiceStub(ch)
        await stub.AddSearchAttributes(svc.AddSearchAttributesRequest(
            namespace=NS, search_attributes={"CustomerId": 1}), timeout=10)

        async def start(wid: str, customer: str, value: str) -> None:
            req = svc.StartWorkflowExecutionRequest(
                namespace=NS, workflow_id=wid, workflow_type="Order", task_queue="nobody", request_id=uuid.uuid4().hex,
                input=pb.Payloads(payloads=[pb.Payload(metadata={"encoding": b"json/plain"},
                                                       data=json.dumps(value).encode())]))
            req.search_attributes.indexed_fields["CustomerId"].metadata["encoding"] = b"json/plain"
            req.search_attributes.indexed_fields["CustomerId"].data = json.dumps(customer).encode()
            await stub.StartWorkflowExecution(req, timeout=10)

        await asyncio.gather(*(start(f"c42-{i}", "c-42", SECRET + "x" * 2 * THRESHOLD if i % 3 == 0 else "small")
                               for i in range(SELECTED)))
        for i in range(OTHERS):
            await start(f"c7-{i}", "c-7", KEEP + "x" * 2 * THRESHOLD if i % 2 == 0 else "small")
        await wait_for("visibility rows", lambda: len(read(db, "SELECT 1 FROM visibility")) == SELECTED + OTHERS, 20)

        kept_before = await histories(stub)
        blobs_before = blob_contents(blob_dir)
        assert sum(SECRET.encode() in v for v in blobs_before.values()) == SELECTED // 3
        assert sum(KEEP.encode() in v for v in blobs_before.values()) == OTHERS // 2

        # the job erases at the namespace's request rate (10 a second after a burst of 10): ~5 s in all
        await stub.UpdateNamespace(svc.UpdateNamespaceRequest(name=NS, update_mask=["rps_limit"], rps_limit=10),
                                   timeout=10)
        await stub.StartBatchOperation(svc.StartBatchOperationRequest(
            namespace=NS, job_id="gdpr-42", visibility_query="CustomerId = 'c-42'", reason="gdpr request 42",
            deletion_operation=svc.BatchOperationDeletion(identity="dpo")), timeout=10)

        def midway() -> bool:
            left = len(read(db, "SELECT 1 FROM executions WHERE workflow_id LIKE 'c42-%'"))
            return 0 < left <= SELECTED - 15

    await wait_for("the job to erase some runs", midway, 30)
    server.kill()
    progress = job(db)
    assert progress is not None and progress.progress.state == svc.BATCH_OPERATION_STATE_RUNNING
    assert progress.progress.complete_operation_count < SELECTED
    server.start()

    await wait_for("the job to complete after the restart",
                   lambda: (j := job(db)) is not None and j.progress.state != svc.BATCH_OPERATION_STATE_RUNNING, 40)
    async with grpc.aio.insecure_channel(server.address) as ch:
        stub = service_pb2_grpc.WorkflowServiceStub(ch)
        await stub.UpdateNamespace(svc.UpdateNamespaceRequest(name=NS, update_mask=["rps_limit"], rps_limit=1000),
                                   timeout=10)
        d = await stub.DescribeBatchOperation(svc.DescribeBatchOperationRequest(namespace=NS, job_id="gdpr-42"),
                                              timeout=10)
        assert d.state == svc.BATCH_OPERATION_STATE_COMPLETED, d
        # every selected run counted once, erased once, none failed (a run erased again after the crash is a no-op)
        assert (d.complete_operation_count, d.total_operation_count, d.terminated_count) == (SELECTED,) * 3, d
        assert (d.failure_operation_count, d.last_error) == (0, ""), d
        # nothing of c-42 remains: no store rows, no visibility rows, no blobs
        for table in RUN_TABLES:
            assert read(db, f"SELECT COUNT(*) FROM {table} WHERE workflow_id LIKE 'c42-%'") == [(0,)], table
        # the terminations' transfer rows are acknowledged by the shards' ack batches
        await wait_for("transfer rows acknowledged",
                       lambda: not [r for r in read(db, "SELECT data FROM transfer_tasks") if "c42-" in r[0]], 5)
        assert not [r for r in read(db, "SELECT data FROM task_backlog") if "c42-" in r[0]]  # their workflow tasks
        assert len([r for r in read(db, "SELECT data FROM task_backlog") if "c7-" in r[0]]) == OTHERS
        # a terminated-then-erased run's retention timer (ids only, no data) stays until due, then finds nothing
        assert all(json.loads(r[0])[0] == "retention" and SECRET not in r[0]
                   for r in read(db, "SELECT data FROM timer_tasks") if "c42-" in r[0])
        blobs_after = blob_contents(blob_dir)
        assert not [k for k, v in blobs_after.items() if SECRET.encode() in v]
        # nothing of c-7 changed
        assert {k: v for k, v in blobs_after.items() if KEEP.encode() in v} == \
            {k: v for k, v in blobs_before.items() if KEEP.encode() in v}
        assert await histories(stub) == kept_before
        resp = await stub.ListWorkflowExecutions(svc.ListWorkflowExecutionsRequest(namespace=NS, page_size=1000),
                                                 timeout=10)
        assert sorted(e.execution.workflow_id for e in resp.executions) == sorted(f"c7-{i}" for i in range(OTHERS))
    assert "Traceback" not in server.log()
