"""Tests written like the Temporal samples' tests, with ``temporalio`` renamed to ``spindle``.

The ``env`` fixture is the samples' ``conftest.py``: ``start_local`` with a
dev-server option Spindle ignores, ``start_time_skipping``, or ``from_client`` for an
existing server; tests use ``env.client``, ``await env.get_current_time()``,
``env.supports_time_skipping`` and ``(await handle.describe()).raw_description``.
"""

from __future__ import annotations

import asyncio
import time
import uuid

from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import NoReturn

import pytest

from spindle import activity, workflow
from spindle.client import Client, PendingActivityState, WorkflowExecutionStatus, WorkflowFailureError
from spindle.common import SearchAttributeKey, SearchAttributePair, TypedSearchAttributes
from spindle.exceptions import CancelledError
from spindle.testing import WorkflowEnvironment
from spindle.worker import Worker

# ---------------------------------------------------------------------- hello_cancellation, as in the samples


@activity.defn
def never_complete_activity() -> NoReturn:
    # All long-running activities should heartbeat. Heartbeat is how
    # cancellation is delivered from the server (a plain-def activity sees it
    # through activity.is_cancelled() in Spindle).
    while True:
        activity.heartbeat()
        if activity.is_cancelled():
            raise CancelledError("activity cancelled")
        time.sleep(0.05)


@activity.defn
def cleanup_activity() -> None:
    pass


@workflow.defn
class CancellationWorkflow:
    @workflow.run
    async def run(self) -> None:
        try:
            await workflow.execute_activity(
                never_complete_activity,
                start_to_close_timeout=timedelta(seconds=1000),
                heartbeat_timeout=timedelta(seconds=2),
            )
        finally:
            await workflow.execute_activity(cleanup_activity, start_to_close_timeout=timedelta(seconds=5))


@workflow.defn
class ReminderWorkflow:
    @workflow.run
    async def run(self) -> str:
        await workflow.sleep(timedelta(days=90))
        return "reminded"


# ---------------------------------------------------------------------- the samples' conftest


@pytest.fixture(params=["local", "time-skipping", "existing-server"])
async def env(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[WorkflowEnvironment]:
    existing: Client | None = None
    if request.param == "local":
        env = await WorkflowEnvironment.start_local(dev_server_download_version="v1.7.4-standalone-nexus-operations")
    elif request.param == "time-skipping":
        env = await WorkflowEnvironment.start_time_skipping()
    else:
        existing = await Client.connect("embedded:" + str(tmp_path / "existing.db"))
        env = WorkflowEnvironment.from_client(existing)
    yield env
    await env.shutdown()
    if existing is not None:
        await existing.close()


@pytest.fixture
async def client(env: WorkflowEnvironment) -> Client:
    return env.client


# ---------------------------------------------------------------------- tests


async def test_cancel_workflow(client: Client) -> None:
    task_queue_name = str(uuid.uuid4())

    async with Worker(
        client,
        task_queue=task_queue_name,
        workflows=[CancellationWorkflow],
        activities=[cleanup_activity, never_complete_activity],
        activity_executor=ThreadPoolExecutor(5),
    ):
        handle = await client.start_workflow(
            CancellationWorkflow.run,
            id=(str(uuid.uuid4())),
            task_queue=task_queue_name,
        )

        await asyncio.wait_for(
            wait_for_activity_to_start("never_complete_activity", handle),
            timeout=5,
        )

        await handle.cancel()

        with pytest.raises(WorkflowFailureError) as err:
            await handle.result()
        assert isinstance(err.value.cause, CancelledError)

        assert WorkflowExecutionStatus.CANCELED == (await handle.describe()).status


async def wait_for_activity_to_start(activity_name, handle):  # type: ignore[no-untyped-def]
    while not (await has_activity_started(activity_name, handle)):
        await asyncio.sleep(0.2)


async def has_activity_started(activity_name, handle):  # type: ignore[no-untyped-def]
    pending_activities = (await handle.describe()).raw_description.pending_activities
    for pending_activity in pending_activities:
        if pending_activity.activity_type.name == activity_name:
            return True

    return False


async def test_raw_description_fields_temporal_tests_read(client: Client) -> None:
    task_queue = str(uuid.uuid4())
    async with Worker(client, task_queue=task_queue, workflows=[CancellationWorkflow],
                      activities=[cleanup_activity, never_complete_activity],
                      activity_executor=ThreadPoolExecutor(5)):
        handle = await client.start_workflow(CancellationWorkflow.run, id=str(uuid.uuid4()), task_queue=task_queue)
        await asyncio.wait_for(wait_for_activity_to_start("never_complete_activity", handle), timeout=5)

        async def started() -> object:
            desc = (await handle.describe()).raw_description
            act = desc.pending_activities[0]
            return act if act.state == PendingActivityState.STARTED else None

        act = None
        while act is None:
            act = await started()
        raw = (await handle.describe()).raw_description
        info = raw.workflow_execution_info
        assert info.execution.workflow_id == handle.id
        assert info.execution.run_id == handle.run_id
        assert info.type.name == "CancellationWorkflow"
        assert info.task_queue == task_queue
        assert info.status == WorkflowExecutionStatus.RUNNING
        assert info.history_length > 0
        assert info.start_time.ToDatetime(tzinfo=timezone.utc) <= datetime.now(timezone.utc)
        assert raw.execution_config.task_queue.name == task_queue
        assert act.activity_id
        assert act.attempt == 1
        assert act.last_started_time.ToDatetime(tzinfo=timezone.utc) >= info.start_time.ToDatetime(
            tzinfo=timezone.utc)
        assert raw.pending_children == ()
        await handle.terminate("done")


async def test_workflow_environment_time(env: WorkflowEnvironment, client: Client) -> None:
    task_queue = str(uuid.uuid4())
    start_time = await env.get_current_time()
    assert start_time.tzinfo is not None
    if env.supports_time_skipping:
        async with Worker(client, task_queue=task_queue, workflows=[ReminderWorkflow]):
            assert await client.execute_workflow(ReminderWorkflow.run, id=str(uuid.uuid4()),
                                                 task_queue=task_queue) == "reminded"
        assert (await env.get_current_time() - start_time) >= timedelta(days=90)
    else:
        await env.sleep(0.05)
        assert timedelta(0) < (await env.get_current_time() - start_time) < timedelta(minutes=5)


async def test_start_local_registers_search_attributes() -> None:
    tags = SearchAttributeKey.for_keyword_list("Tags")
    async with await WorkflowEnvironment.start_local(search_attributes=[tags], ui=False, port=None) as env:
        registered = (await env.client.describe_namespace()).search_attributes
        assert registered["Tags"] == "KeywordList"  # beside the dev server's pre-registered Custom*Field ones
        # the attribute is usable at once
        handle = await env.client.start_workflow(
            ReminderWorkflow.run, id="tagged", task_queue="nobody-polls",
            search_attributes=TypedSearchAttributes([SearchAttributePair(tags, ["x"])]))
        assert (await handle.describe()).search_attributes == {"Tags": ["x"]}


async def test_from_client_shutdown_leaves_the_client_open(tmp_path: Path) -> None:
    client = await Client.connect("embedded:" + str(tmp_path / "mine.db"))
    try:
        async with WorkflowEnvironment.from_client(client) as env:
            assert env.client is client
            assert not env.supports_time_skipping
        # the environment is shut down; the client still works
        assert (await client.describe_namespace()).name == "default"
    finally:
        await client.close()
