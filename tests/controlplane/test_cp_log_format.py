"""``spindle server start-dev --log-format json``: one JSON object per stderr line, with the run's ids where known."""

from __future__ import annotations

import json
import logging

from datetime import timedelta
from pathlib import Path

import pytest

from spindle_procs import DevServer

from spindle import activity, workflow
from spindle.client import Client
from spindle.controlplane._log_format import JsonFormatter, configure_logging
from spindle.worker import Worker

pytestmark = pytest.mark.timeout(120)


@activity.defn
async def step(i: int) -> int:
    return i


@workflow.defn
class Steps:
    @workflow.run
    async def run(self, n: int) -> int:
        total = 0
        for i in range(n):
            total += await workflow.execute_activity(step, i, start_to_close_timeout=timedelta(seconds=10))
        return total


async def test_start_dev_writes_json_lines_with_run_ids(tmp_path: Path) -> None:
    cfg = tmp_path / "server.yaml"
    cfg.write_text("history_warn_events: 5\n")  # the history-length warning names the run
    server = DevServer(tmp_path / "j.db", "--log-format", "json", "--log-level", "info", "--config", str(cfg)).start()
    try:
        client = await Client.connect(server.address)
        async with Worker(client, task_queue="logs", workflows=[Steps], activities=[step]):
            handle = await client.start_workflow(Steps.run, 3, id="log-me", task_queue="logs")
            assert await handle.result() == 3
        await client.close()
    finally:
        server.stop()
    lines = [ln for ln in server.log().splitlines() if ln and not ln.startswith("---- ")]  # DevServer's markers
    assert lines, "the server wrote no log lines"
    records = [json.loads(ln) for ln in lines]  # every line is one JSON object
    for r in records:
        assert {"time", "level", "logger", "message"} <= set(r), r
        assert r["time"].endswith("Z") and r["level"] in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
    warned = [r for r in records if "consider continue-as-new" in r["message"]]
    assert len(warned) == 1, records
    assert warned[0]["workflow_id"] == "log-me" and warned[0]["run_id"] == handle.result_run_id
    assert warned[0]["namespace"] == "default" and warned[0]["logger"].startswith("spindle.")


def test_multiline_messages_and_exceptions_stay_on_one_line() -> None:
    try:
        raise ValueError("boom\nsecond line")
    except ValueError:
        rec = logging.LogRecord("spindle.x", logging.ERROR, __file__, 1, "a\nb %s", ("c",), exc_info=True)
        import sys
        rec.exc_info = sys.exc_info()
    out = JsonFormatter().format(rec)
    assert "\n" not in out
    parsed = json.loads(out)
    assert parsed["message"] == "a\nb c" and "ValueError: boom" in parsed["exception"]
    assert "workflow_id" not in parsed


def test_unknown_format_is_refused() -> None:
    with pytest.raises(ValueError, match="log format 'xml' is not one of text, json"):
        configure_logging("info", "xml")


async def test_retention_lines_name_the_namespace_and_the_run(tmp_path: Path) -> None:
    import asyncio

    archive = tmp_path / "archive"
    server = DevServer(tmp_path / "r.db", "--log-format", "json", "--log-level", "info",
                       "--archive-uri", f"file://{archive}").start()
    try:
        client = await Client.connect(server.address)
        await client.create_namespace("brief", retention=timedelta(seconds=1))
        brief = await Client.connect(server.address, namespace="brief")
        async with Worker(brief, task_queue="logs", workflows=[Steps], activities=[step]):
            handle = await brief.start_workflow(Steps.run, 1, id="short-lived", task_queue="logs")
            assert await handle.result() == 0
        for _ in range(300):
            if "retention: deleted" in server.log():
                break
            await asyncio.sleep(0.1)
        await client.close()
        await brief.close()
    finally:
        server.stop()
    records = [json.loads(ln) for ln in server.log().splitlines() if ln and not ln.startswith("---- ")]
    deleted = [r for r in records if r["message"].startswith("retention: deleted")]
    assert len(deleted) == 1, records
    assert deleted[0]["namespace"] == "brief" and deleted[0]["workflow_id"] == "short-lived"
    assert deleted[0]["run_id"] == handle.result_run_id
