"""What the worker logs when activity attempts and workflow tasks fail (nothing used to be logged
for a failed activity attempt, so an activity retried forever looked like a silent hang)."""

from __future__ import annotations

import asyncio
import logging
import uuid

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest

from spindle import activity, workflow
from spindle.client import Client
from spindle.common import RetryPolicy
from spindle.exceptions import WorkflowFailureError
from spindle.worker import Worker


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[Client]:
    c = await Client.connect("embedded:" + str(tmp_path / "s.db"))
    try:
        yield c
    finally:
        await c.close()


@activity.defn
def charge_card(amount: int) -> str:
    raise RuntimeError(f"card service unreachable (amount {amount})")


@workflow.defn
class Checkout:
    @workflow.run
    async def run(self, amount: int) -> str:
        return await workflow.execute_activity(
            charge_card, amount, start_to_close_timeout=timedelta(seconds=10),
            retry_policy=RetryPolicy(initial_interval=timedelta(milliseconds=20), maximum_attempts=3))


@workflow.defn
class BrokenWorkflow:
    @workflow.run
    async def run(self) -> None:
        raise KeyError("a bug in the workflow code")


def worker_records(caplog: pytest.LogCaptureFixture, needle: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "spindle.worker" and needle in r.getMessage()]


async def test_each_failed_activity_attempt_is_logged_at_warning_with_its_traceback(
        client: Client, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="spindle.worker")
    tq = f"tq-{uuid.uuid4().hex[:8]}"
    async with Worker(client, task_queue=tq, workflows=[Checkout], activities=[charge_card]):
        with pytest.raises(WorkflowFailureError):
            await client.execute_workflow(Checkout.run, 42, id="checkout-1", task_queue=tq)
    records = worker_records(caplog, "card service unreachable")
    assert [r.levelno for r in records] == [logging.WARNING] * 3
    for attempt, r in enumerate(records, start=1):
        message = r.getMessage()
        assert "'charge_card'" in message and f"attempt {attempt}" in message
        assert "RuntimeError: card service unreachable (amount 42)" in message
        assert r.exc_info is not None and isinstance(r.exc_info[1], RuntimeError)  # the traceback is logged
        assert r.activity_type == "charge_card" and r.attempt == attempt  # type: ignore[attr-defined]
        assert r.workflow_id == "checkout-1"  # type: ignore[attr-defined]
    assert "in charge_card" in caplog.text  # the frame that raised


async def test_each_workflow_task_failure_is_logged_at_error_with_its_traceback(
        client: Client, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="spindle.worker")
    tq = f"tq-{uuid.uuid4().hex[:8]}"
    async with Worker(client, task_queue=tq, workflows=[BrokenWorkflow]):
        await client.start_workflow(BrokenWorkflow.run, id="broken-1", task_queue=tq)
        for _ in range(100):
            if worker_records(caplog, "broken-1"):
                break
            await asyncio.sleep(0.05)
    records = worker_records(caplog, "broken-1")
    assert records, "the workflow task failure was not logged"
    r = records[0]
    assert r.levelno == logging.ERROR
    assert "BrokenWorkflow" in r.getMessage()
    assert r.exc_info is not None and isinstance(r.exc_info[1], KeyError)
    assert "a bug in the workflow code" in caplog.text
