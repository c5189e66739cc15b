"""Retention end to end on the time-skipping environment: archive (file:// and fake GCS), delete, read back.

The retention timer is durable; ``env.sleep`` moves virtual time past it. Nothing in
these tests waits for real days: the environment's clock is virtual.
"""

from __future__ import annotations

import asyncio
import dataclasses
import gzip

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from spindle import activity, workflow
from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.controlplane.config import ServerConfig
from spindle.testing import WorkflowEnvironment
from spindle.worker import Worker

RETENTION = timedelta(days=3)  # the default namespace's retention (ServerConfig.default_retention_days)


@activity.defn
async def shout(text: str) -> str:
    return text.upper()


@workflow.defn
class Shouter:
    @workflow.run
    async def run(self, text: str) -> str:
        loud = await workflow.execute_activity(shout, text, start_to_close_timeout=timedelta(seconds=30))
        await workflow.sleep(timedelta(hours=1))
        return loud + "!"


def config(**kw: Any) -> ServerConfig:
    return dataclasses.replace(ServerConfig(), num_shards=1, archival_retry_interval=5.0, object_store_timeout=2.0, **kw)


@pytest.fixture
async def file_env(tmp_path: Path) -> AsyncIterator[WorkflowEnvironment]:
    cfg = config(archive_uri=f"file://{tmp_path}/archive", blob_store_uri=f"file://{tmp_path}/blobs")
    async with await WorkflowEnvironment.start_time_skipping(config=cfg) as env:
        yield env


def ns_id(env: WorkflowEnvironment) -> str:
    return str(env.control_plane.namespaces.get("default").id)


async def in_store(env: WorkflowEnvironment, wid: str, rid: str) -> bool:
    return await env.control_plane.store.get_execution_row(ns_id(env), wid, rid) is not None


async def timer_rows_of(env: WorkflowEnvironment, rid: str) -> list[Any]:
    """Timer rows of every shard that belong to run ``rid``."""
    store, out = env.control_plane.store, []
    for shard_id in range(env.control_plane.config.num_shards):
        out += [r for r in await store.load_timer_tasks(shard_id, 2**62, (0, 0), 10_000) if rid in r.data]
    return out


async def in_visibility(env: WorkflowEnvironment, rid: str) -> bool:
    return await env.client.count_workflows(f"RunId = '{rid}'") > 0


async def wait_deleted(env: WorkflowEnvironment, wid: str, rid: str, timeout: float = 10.0) -> None:
    """Retention runs in the background after the clock passed it; wait (real time) for the delete."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while await in_store(env, wid, rid) or await in_visibility(env, rid):
        assert loop.time() < end, f"{wid}/{rid} was not deleted by retention"
        await asyncio.sleep(0.02)


async def wait_visible(env: WorkflowEnvironment, rid: str, timeout: float = 10.0) -> None:
    """Visibility rows are written from the transfer queue shortly after the close."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not await in_visibility(env, rid):
        assert loop.time() < end, f"{rid} never became visible"
        await asyncio.sleep(0.02)


async def raw_history_response(env: WorkflowEnvironment, wid: str, rid: str) -> svc.GetWorkflowExecutionHistoryResponse:
    return await env.control_plane.frontend.GetWorkflowExecutionHistory(
        svc.GetWorkflowExecutionHistoryRequest(namespace="default",
                                               execution=pb.WorkflowExecution(workflow_id=wid, run_id=rid)), None)


async def run_one(env: WorkflowEnvironment, wid: str, text: str = "hi") -> Any:
    async with Worker(env.client, task_queue="q", workflows=[Shouter], activities=[shout]):
        handle = await env.client.start_workflow(Shouter.run, text, id=wid, task_queue="q")
        assert await handle.result() == text.upper() + "!"
    return handle


async def test_retention_archives_to_a_folder_then_deletes_and_reads_back(file_env: WorkflowEnvironment,
                                                                          tmp_path: Path) -> None:
    env = file_env
    handle = await run_one(env, "wf-file")
    rid = handle.result_run_id or (await handle.describe()).run_id
    before = await handle.fetch_history()
    described = await handle.describe()
    assert await in_store(env, "wf-file", rid)
    await wait_visible(env, rid)

    await env.sleep(RETENTION - timedelta(minutes=5))  # not yet
    assert await in_store(env, "wf-file", rid)
    await env.sleep(timedelta(minutes=10))
    await wait_deleted(env, "wf-file", rid)

    # the archived object is gzip(History) of exactly the events that were in the store
    files = list((tmp_path / "archive").rglob("*.history.pb.gz"))
    assert len(files) == 1
    archived = pb.History.FromString(gzip.decompress(files[0].read_bytes()))
    assert [e.event_id for e in archived.events] == [e.event_id for e in before.events]

    # transparent reads: the SDK, by run id and by workflow id only
    assert await env.client.get_workflow_handle("wf-file", run_id=rid).fetch_history() == before
    assert await env.client.get_workflow_handle("wf-file").fetch_history() == before
    resp = await raw_history_response(env, "wf-file", rid)
    assert resp.archived and len(resp.history.events) == len(before.events)
    assert await env.client.get_workflow_handle("wf-file").result() == "HI!"
    d = await env.client.get_workflow_handle("wf-file").describe()
    assert (d.run_id, d.status, d.workflow_type) == (rid, described.status, "Shouter")
    assert d.close_time == described.close_time and d.start_time == described.start_time
    # the workflow id is free again, and its new run is served from the store
    h2 = await run_one(env, "wf-file", "again")
    assert (await h2.describe()).run_id != rid
    resp2 = await raw_history_response(env, "wf-file", "")
    assert not resp2.archived


async def test_retention_archives_to_gcs_and_reads_back(fake_gcs: Any, gcs_bucket: str, tmp_path: Path) -> None:
    async with await WorkflowEnvironment.start_time_skipping(
            config=config(archival_allowed_roots=(f"gs://{gcs_bucket}",))) as env:
        await env.client.update_namespace(archival_uri=f"gs://{gcs_bucket}/spindle-archive", retention=timedelta(days=1))
        handle = await run_one(env, "wf-gcs")
        rid = (await handle.describe()).run_id
        before = await handle.fetch_history()
        await env.sleep(timedelta(days=1, minutes=1))
        await wait_deleted(env, "wf-gcs", rid)
        from google.cloud import storage

        names = [b.name for b in storage.Client(project="spindle").list_blobs(gcs_bucket)]
        assert any(n.startswith("spindle-archive/histories/") and n.endswith(".history.pb.gz") for n in names), names
        assert await env.client.get_workflow_handle("wf-gcs", run_id=rid).fetch_history() == before
        assert await env.client.get_workflow_handle("wf-gcs").fetch_history() == before


async def test_failing_archive_never_deletes_and_is_retried(fake_gcs: Any, gcs_bucket: str) -> None:
    async with await WorkflowEnvironment.start_time_skipping(
            config=config(archival_allowed_roots=(f"gs://{gcs_bucket}",))) as env:
        await env.client.update_namespace(archival_uri=f"gs://{gcs_bucket}/a", retention=timedelta(days=1))
        handle = await run_one(env, "wf-down")
        rid = (await handle.describe()).run_id
        before = await handle.fetch_history()
        fake_gcs.stop()  # GCS is down
        await env.sleep(timedelta(days=1, minutes=1))
        await asyncio.sleep(3)  # a few real seconds for archive attempts to fail (2 s client timeout)
        assert await in_store(env, "wf-down", rid)
        await wait_visible(env, rid)
        assert await handle.fetch_history() == before
        assert not (await raw_history_response(env, "wf-down", rid)).archived
        await env.sleep(timedelta(minutes=1))  # more retries, still down
        assert await in_store(env, "wf-down", rid)

        fake_gcs.start()  # back (a fresh in-memory server: recreate the bucket)
        fake_gcs.create_bucket(gcs_bucket)
        await env.sleep(timedelta(seconds=10))  # past archival_retry_interval
        await wait_deleted(env, "wf-down", rid)
        assert (await raw_history_response(env, "wf-down", rid)).archived
        assert await env.client.get_workflow_handle("wf-down", run_id=rid).fetch_history() == before
        # the retried retention timer's row went with the run (a retry must not change the row's key)
        assert await timer_rows_of(env, rid) == []


async def test_without_an_archive_retention_just_deletes(tmp_path: Path) -> None:
    async with await WorkflowEnvironment.start_time_skipping(config=config()) as env:
        handle = await run_one(env, "wf-plain")
        rid = (await handle.describe()).run_id
        await env.sleep(RETENTION + timedelta(minutes=1))
        await wait_deleted(env, "wf-plain", rid)
        from spindle.exceptions import WorkflowNotFoundError

        with pytest.raises(WorkflowNotFoundError):
            await env.client.get_workflow_handle("wf-plain", run_id=rid).fetch_history()
        with pytest.raises(WorkflowNotFoundError):
            await env.client.get_workflow_handle("wf-plain").describe()


@workflow.defn
class Waiter:
    @workflow.run
    async def run(self) -> str:
        return str(await workflow.wait_for_signal("go"))


async def test_auto_time_skipping_does_not_jump_to_retention_timers(file_env: WorkflowEnvironment) -> None:
    env = file_env
    handle = await run_one(env, "wf-skip")
    rid = (await handle.describe()).run_id
    start = env.now()
    # Only a retention timer is pending while the test awaits a result that needs a signal:
    # auto skipping must not jump to it (the closed run would vanish under the test).
    async with Worker(env.client, task_queue="q", workflows=[Waiter]):
        waiter = await env.client.start_workflow(Waiter.run, id="waiter", task_queue="q")

        async def signal_later() -> None:
            await asyncio.sleep(0.5)
            await waiter.signal("go", "yes")

        task = asyncio.create_task(signal_later())
        assert await waiter.result() == "yes"
        await task
    assert env.now() - start < timedelta(days=1)
    assert await in_store(env, "wf-skip", rid)
