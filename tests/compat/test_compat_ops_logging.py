"""``workflow.logger`` in a live worker: records carry the run's namespace, workflow id and run id
(so ``--log-format json``'s formatter shows them), and a run replayed by a new worker (its cache
lost) does not log again what it logged before."""

from __future__ import annotations

import json
import logging
import uuid

from datetime import timedelta

import pytest

from spindle import workflow
from spindle.client import Client
from spindle.controlplane._log_format import JsonFormatter
from spindle.worker import Worker


@workflow.defn
class Chatty:
    def __init__(self) -> None:
        self.go = False

    @workflow.signal
    def proceed(self) -> None:
        self.go = True

    @workflow.run
    async def run(self) -> str:
        workflow.logger.info("waiting for the signal")
        await workflow.wait_condition(lambda: self.go)
        workflow.logger.info("signalled")
        return "done"


async def test_workflow_logger_tags_records_and_is_silent_while_a_new_worker_replays(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="spindle.workflow")
    client = await Client.connect("embedded::memory:")
    try:
        tq = f"tq-{uuid.uuid4()}"
        wid = f"wf-{uuid.uuid4()}"
        handle = await client.start_workflow(Chatty.run, id=wid, task_queue=tq)
        async with Worker(client, task_queue=tq, workflows=[Chatty],
                          sticky_schedule_to_start_timeout=timedelta(milliseconds=300)):
            async for event in handle.watch_history():
                if event.event_type == "WorkflowTaskCompleted":
                    break
        # a new worker: the run is not cached there, so its next task replays the first one
        async with Worker(client, task_queue=tq, workflows=[Chatty]) as second:
            await handle.signal(Chatty.proceed)
            assert await handle.result() == "done"
            assert second.stats["replays"] == 1
    finally:
        await client.close()
    records = [r for r in caplog.records if r.name == "spindle.workflow"]
    assert [r.getMessage().split(" (")[0] for r in records] == ["waiting for the signal", "signalled"]
    for r in records:
        assert (r.namespace, r.workflow_id, r.run_id) == ("default", wid, handle.result_run_id)  # type: ignore[attr-defined]
        line = json.loads(JsonFormatter().format(r))
        assert (line["namespace"], line["workflow_id"], line["run_id"]) == ("default", wid, handle.result_run_id)
