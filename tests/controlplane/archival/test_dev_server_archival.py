"""`spindle server start-dev --archive-uri --blob-dir` over gRPC: a 3 MiB input, real-time retention, `workflow show`."""

from __future__ import annotations

import asyncio
import subprocess

from datetime import timedelta
from pathlib import Path

import pytest

from spindle_procs import SPINDLE, DevServer

from spindle import activity, workflow
from spindle.client import Client
from spindle.worker import Worker


@activity.defn
async def measure(text: str) -> int:
    return len(text)


@workflow.defn
class Measure:
    @workflow.run
    async def run(self, text: str) -> int:
        return await workflow.execute_activity(measure, text, start_to_close_timeout=timedelta(seconds=30))


def show(address: str, wid: str, *extra: str) -> str:
    out = subprocess.run([SPINDLE, "workflow", "show", "--address", address, "--namespace", "short",
                          "--workflow-id", wid, "--output", "json", *extra],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.mark.timeout(120)
async def test_dev_server_archives_at_retention_and_show_reads_the_archive(tmp_path: Path) -> None:
    archive, blobs = tmp_path / "archive", tmp_path / "blobs"
    server = DevServer(tmp_path / "dev.db", "--archive-uri", f"file://{archive}", "--blob-dir", str(blobs)).start()
    try:
        client = await Client.connect(server.address, namespace="default")
        await client.create_namespace("short", retention=timedelta(seconds=2))
        short = await Client.connect(server.address, namespace="short")
        text = "z" * (3 * 1024 * 1024)  # over the 2 MiB inline limit: offloaded to --blob-dir
        async with Worker(short, task_queue="q", workflows=[Measure], activities=[measure]):
            h = await short.start_workflow(Measure.run, text, id="m1", task_queue="q")
            assert await h.result() == len(text)
        before = show(server.address, "m1")
        assert any(p.is_file() for p in blobs.rglob("*"))

        loop = asyncio.get_running_loop()
        end = loop.time() + 30
        while await short.count_workflows("WorkflowId = 'm1'"):
            assert loop.time() < end, "retention did not delete the run"
            await asyncio.sleep(0.2)
        assert list(archive.rglob("*.history.pb.gz"))
        assert show(server.address, "m1") == before  # no run id: the archive's latest run
        run_id = (await short.get_workflow_handle("m1").describe()).run_id
        assert show(server.address, "m1", "--run-id", run_id) == before
        await client.close()
        await short.close()
    finally:
        server.stop()
