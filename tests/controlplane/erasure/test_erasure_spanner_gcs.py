"""Erasure (issue 26) on the Spanner emulator and fake-gcs-server: a ``spindle server start`` process whose blob store
and archive are GCS buckets, runs of a customer live (some with large payloads in the blob bucket) and already
archived by a short retention, an erasure job, kill -9 of the server mid-job, a restart: the job completes, and nothing
of the customer remains in the store, visibility, the blob bucket or the archive bucket, while another customer's runs
are untouched."""

from __future__ import annotations

import asyncio
import gzip
import importlib.util
import json
import signal
import time

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from spanner_emulator import SpannerTestInstance, spanner_instance_fixture

from spindle.api import service_pb2 as svc
from spindle.client import BatchOperationState, Client, ErasureJob
from spindle.exceptions import RPCError


def _load(relative: str, name: str) -> Any:
    """A helper module of another test folder, loaded by path (no sys.path change, no name clash)."""
    spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().parents[1] / relative)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_members = _load("cluster/_members.py", "cluster_members_for_erasure")  # spindle server start child processes
Member, setup_schema, write_config = _members.Member, _members.setup_schema, _members.write_config


spanner_instance = spanner_instance_fixture()
pytestmark = [pytest.mark.serial, pytest.mark.timeout(240)]

NS = "gdpr"
SECRET, KEEP = "SECRET-of-c42-", "KEEP-of-c7-"
Q = "CustomerId = 'c-42'"
THRESHOLD = 1024


@pytest.fixture
def gcs(monkeypatch: pytest.MonkeyPatch) -> Any:
    fixtures = _load("archival/conftest.py", "archival_fixtures_for_erasure")
    pytest.importorskip("google.cloud.storage")
    server = fixtures.FakeGcs(fixtures.free_port())
    server.start()
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", server.url)
    try:
        yield server
    finally:
        server.stop()


def bucket_objects(bucket: str) -> dict[str, bytes]:
    """Every object of ``bucket`` (archived histories gunzipped), by name."""
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import storage

    out = {}
    for blob in storage.Client(project="spindle", credentials=AnonymousCredentials()).list_blobs(bucket):
        data = blob.download_as_bytes()
        out[blob.name] = gzip.decompress(data) if blob.name.endswith(".gz") else data
    return out


def rows_naming(database: Any, marker: str) -> dict[str, int]:
    """Rows of every table that holds a run's data and names a workflow id containing ``marker``."""
    like = f"%{marker}%"
    queries = {t: f"SELECT COUNT(*) FROM {t} WHERE WorkflowId LIKE @m" for t in
               ("Executions", "Events", "BufferedEvents", "CurrentExecutions", "BlobRefs")}
    queries["Visibility"] = "SELECT COUNT(*) FROM Visibility WHERE workflow_id LIKE @m"
    queries["TransferTasks"] = "SELECT COUNT(*) FROM TransferTasks WHERE Data LIKE @m"
    from google.cloud.spanner_v1 import param_types

    counts = {}
    for table, sql in queries.items():
        with database.snapshot() as snap:
            counts[table] = list(snap.execute_sql(sql, params={"m": like}, param_types={"m": param_types.STRING}))[0][0]
    return counts


def timer_rows(database: Any, marker: str) -> list[str]:
    """The Data of the timer rows that name a workflow id containing ``marker``."""
    from google.cloud.spanner_v1 import param_types

    with database.snapshot() as snap:
        return [r[0] for r in snap.execute_sql("SELECT Data FROM TimerTasks WHERE Data LIKE @m",
                                               params={"m": f"%{marker}%"}, param_types={"m": param_types.STRING})]


def job_state(database: Any, job_id: str) -> int:
    from google.cloud.spanner_v1 import param_types

    with database.snapshot() as snap:
        rows = list(snap.execute_sql("SELECT State FROM BatchJobs WHERE JobId = @j", params={"j": job_id},
                                     param_types={"j": param_types.STRING}))
    assert len(rows) == 1, rows
    return int(rows[0][0])


async def until(what: str, check: Any, timeout: float = 60.0) -> Any:
    end = time.monotonic() + timeout
    while True:
        got = await check()
        if got:
            return got
        assert time.monotonic() < end, f"timed out waiting for {what}"
        await asyncio.sleep(0.2)


async def gone(client: Client, wid: str) -> bool:
    """The run is neither in the store nor in the archive (describe falls back to the archive)."""
    try:
        await client.get_workflow_handle(wid).describe()
    except RPCError as e:
        return e.status == "NOT_FOUND"
    return False


def test_erasure_job_survives_kill_9_on_spanner_and_gcs(spanner_instance: SpannerTestInstance, gcs: Any,
                                                        tmp_path: Path) -> None:
    inst = spanner_instance
    blob_bucket, archive_bucket = gcs.create_bucket(), gcs.create_bucket()
    database_id = inst.new_database_id()
    config = write_config(
        tmp_path / "m0.yaml", project=inst.project, instance=inst.instance_id, database=database_id, member_id="m0",
        num_shards=4, ttl=2.0, renew=0.4, large_payload_threshold_bytes=THRESHOLD, start_admission_max_pending=1000,
        sections={"archival": {"uri": f"gs://{archive_bucket}/arch", "blob_store_uri": f"gs://{blob_bucket}/blobs"}})
    env = {**inst.emulator.client_env(), "STORAGE_EMULATOR_HOST": gcs.url}
    setup_schema(config, env)
    member = Member(config, env).start().wait_listening()
    database = inst.instance.database(database_id)
    try:
        asyncio.run(_scenario(member, database, blob_bucket, archive_bucket))
    finally:
        member.stop()


async def _scenario(member: Any, database: Any, blob_bucket: str, archive_bucket: str) -> None:
    admin = await Client.connect(member.address)
    await admin.create_namespace(NS, retention=timedelta(seconds=2), search_attributes={"CustomerId": "Keyword"})
    client = await Client.connect(member.address, namespace=NS)

    async def start(wid: str, customer: str, value: str) -> None:
        await client.start_workflow("Order", value, id=wid, task_queue="nobody",
                                    search_attributes={"CustomerId": customer})

    # archived already: closed runs retention moved to the archive bucket (their blobs deleted with them)
    for i in range(4):
        await start(f"arch-c42-{i}", "c-42", SECRET + "x" * 2 * THRESHOLD)
        await start(f"arch-c7-{i}", "c-7", KEEP + "x" * 2 * THRESHOLD)
    for i in range(4):
        await client.get_workflow_handle(f"arch-c42-{i}").terminate("done")
        await client.get_workflow_handle(f"arch-c7-{i}").terminate("done")

    async def archived() -> bool:
        histories = [v for k, v in (await asyncio.to_thread(bucket_objects, archive_bucket)).items()
                     if k.endswith(".history.pb.gz")]
        return len(histories) == 8 and await client.count_workflows("WorkflowId STARTS_WITH 'arch-'") == 0

    await until("retention to archive the closed runs", archived, 30)
    assert sum(SECRET.encode() in v for v in bucket_objects(archive_bucket).values()) == 4

    # live: running runs of both customers, some with large payloads in the blob bucket
    for i in range(30):
        await start(f"live-c42-{i}", "c-42", (SECRET + "x" * 2 * THRESHOLD) if i % 3 == 0 else "small")
    for i in range(4):
        await start(f"live-c7-{i}", "c-7", (KEEP + "x" * 2 * THRESHOLD) if i % 2 == 0 else "small")

    async def listed() -> bool:
        return await client.count_workflows(Q) == 30

    await until("visibility", listed, 30)
    blobs_before = bucket_objects(blob_bucket)
    assert sum(SECRET.encode() in v for v in blobs_before.values()) == 10
    assert sum(KEEP.encode() in v for v in blobs_before.values()) == 2
    count = await client.count_erasure(Q)
    assert (count.total, count.running) == (30, 30)

    # the job, paced by the namespace's request rate after its burst; killed once a few runs are gone
    await admin.update_namespace(NS, rps_limit=8)
    await client.start_erasure(Q, reason="gdpr request 42", job_id="gdpr-42")

    async def some_erased() -> int:
        left = await client.count_workflows(Q)  # the job's counters move a page (100 runs) at a time
        return left if left <= 26 else 0

    left = await until("the job to erase a few runs", some_erased, 60)
    member.signal(signal.SIGKILL)
    member.proc.wait(10)  # type: ignore[union-attr]
    assert 0 < left < 30, left
    assert job_state(database, "gdpr-42") == svc.BATCH_OPERATION_STATE_RUNNING  # killed mid-job
    await client.close()
    await admin.close()

    member.start().wait_listening()
    client = await Client.connect(member.address, namespace=NS)
    final = await ErasureJob(client, "gdpr-42").wait(poll_interval=0.5, timeout=120)
    assert final.state is BatchOperationState.COMPLETED, final
    # a run a later listing still shows right after its erasure is erased again and counted again (seen here:
    # 35 and 37), so total and completed may exceed the 34 runs (docs/ERASURE.md)
    assert final.total == final.completed >= 34 and final.failed == 0, final
    assert (final.terminated, final.archived) == (30, 4), final
    await asyncio.sleep(1.0)  # anything written back after the job's last page would show now

    # nothing of c-42 remains: store rows, visibility, blob bucket, archive bucket
    assert await client.count_workflows(Q) == 0
    for prefix in ("live-c42-", "arch-c42-"):
        rows = rows_naming(database, prefix)
        assert set(rows.values()) == {0}, {t: n for t, n in rows.items() if n}
    # by design (controlplane/history/ops/erase.py) a terminated-then-erased run's timer rows (its retention
    # timer: ids, no data) stay until due, when they find nothing: docs/ERASURE.md says so
    assert all(json.loads(d)[0] == "retention" and SECRET not in d for d in timer_rows(database, "c42-"))
    for wid in [f"live-c42-{i}" for i in range(30)] + [f"arch-c42-{i}" for i in range(4)]:
        assert await gone(client, wid), wid
    assert not [k for k, v in bucket_objects(blob_bucket).items() if SECRET.encode() in v]
    archive_now = bucket_objects(archive_bucket)
    assert not [k for k, v in archive_now.items() if SECRET.encode() in v]
    assert not [k for k in archive_now if "c42" in k]
    # everything of c-7 is untouched
    assert await client.count_workflows("CustomerId = 'c-7'") == 4
    assert sum(KEEP.encode() in v for v in bucket_objects(blob_bucket).values()) == 2
    assert sum(KEEP.encode() in v for v in archive_now.values()) == 4
    for i in range(4):
        assert (await client.get_workflow_handle(f"arch-c7-{i}").describe()).id == f"arch-c7-{i}"  # from the archive
        assert (await client.get_workflow_handle(f"live-c7-{i}").describe()).status is not None
    await client.close()
