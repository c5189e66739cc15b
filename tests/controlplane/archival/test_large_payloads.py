"""Large payloads: offloaded to the blob store by the frontend, expanded for workers and clients."""

from __future__ import annotations

import dataclasses
import hashlib
import random

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from spindle import activity, workflow
from spindle.controlplane.config import ServerConfig
from spindle.exceptions import RPCError
from spindle.testing import WorkflowEnvironment
from spindle.worker import Worker

TEN_MIB = 10 * 1024 * 1024


def blob_text(n: int, seed: int = 7) -> str:
    """``n`` characters that do not compress to nothing (hex of seeded random bytes)."""
    return random.Random(seed).randbytes(n // 2).hex()


@activity.defn
async def produce(n: int) -> str:
    return blob_text(n)


@workflow.defn
class Digest:
    @workflow.run
    async def run(self, n: int) -> list[Any]:
        data = await workflow.execute_activity(produce, n, start_to_close_timeout=timedelta(seconds=60))
        return [len(data), hashlib.sha256(data.encode()).hexdigest()]


@workflow.defn
class Echo:
    @workflow.run
    async def run(self, text: str) -> int:
        await workflow.sleep(timedelta(seconds=1))  # a second workflow task replays the big input
        return len(text)


def cfg(blob_uri: str, **kw: Any) -> ServerConfig:
    return dataclasses.replace(ServerConfig(), num_shards=1, blob_store_uri=blob_uri, **kw)


async def max_event_bytes(env: WorkflowEnvironment, wid: str, rid: str) -> int:
    ns = env.control_plane.namespaces.get("default").id
    events = await env.control_plane.store.read_events(ns, wid, rid, 1, 10_000)
    return max(len(data) for _, data in events)


@pytest.mark.parametrize("backend", ["file", "gcs"])
async def test_ten_mib_activity_result_round_trips_and_the_store_holds_a_reference(
        backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    if backend == "gcs":
        bucket = request.getfixturevalue("gcs_bucket")
        uri = f"gs://{bucket}/blobs"
    else:
        uri = f"file://{tmp_path}/blobs"
    async with await WorkflowEnvironment.start_time_skipping(config=cfg(uri)) as env:
        async with Worker(env.client, task_queue="q", workflows=[Digest], activities=[produce]):
            handle = await env.client.start_workflow(Digest.run, TEN_MIB, id="big", task_queue="q")
            n, digest = await handle.result()
        expected = blob_text(TEN_MIB)
        assert n == TEN_MIB and digest == hashlib.sha256(expected.encode()).hexdigest()
        rid = (await handle.describe()).run_id
        assert await max_event_bytes(env, "big", rid) < 1024  # only the reference is in the events table
        # clients see the value too (history pages expand references)
        history = await handle.fetch_history()
        done = history.events_of_type("ActivityTaskCompleted")[0]
        payload = done.attributes["result"]["payloads"][0]
        import base64
        import json

        assert json.loads(base64.b64decode(payload["data"])) == expected
    if backend == "file":
        blobs = [p for p in (tmp_path / "blobs").rglob("*") if p.is_file()]
        assert len(blobs) == 1 and blobs[0].stat().st_size > TEN_MIB


async def test_large_workflow_input_over_the_inline_limit_is_accepted(tmp_path: Path) -> None:
    text = blob_text(3 * 1024 * 1024)  # over max_payload_bytes (2 MiB)
    async with await WorkflowEnvironment.start_time_skipping(config=cfg(f"file://{tmp_path}/b")) as env:
        async with Worker(env.client, task_queue="q", workflows=[Echo], max_cached_workflows=0):
            assert await env.client.execute_workflow(Echo.run, text, id="echo", task_queue="q") == len(text)
        rid = (await env.client.get_workflow_handle("echo").describe()).run_id
        assert await max_event_bytes(env, "echo", rid) < 1024
        # a value above the offload limit is still refused
    small_limit = cfg(f"file://{tmp_path}/b", max_offloaded_payload_bytes=1024 * 1024)
    async with await WorkflowEnvironment.start_time_skipping(config=small_limit) as env:
        with pytest.raises(RPCError) as e:
            await env.client.start_workflow(Echo.run, text, id="echo2", task_queue="q")
        assert e.value.status == "RESOURCE_EXHAUSTED"


async def test_without_a_blob_store_the_inline_limit_applies() -> None:
    async with await WorkflowEnvironment.start_time_skipping(config=cfg("")) as env:
        with pytest.raises(RPCError) as e:
            await env.client.start_workflow(Echo.run, blob_text(3 * 1024 * 1024), id="e", task_queue="q")
        assert e.value.status == "RESOURCE_EXHAUSTED"
        # between the threshold and the limit a payload simply stays inline
        async with Worker(env.client, task_queue="q", workflows=[Echo]):
            assert await env.client.execute_workflow(Echo.run, "y" * 500_000, id="e2", task_queue="q") == 500_000
