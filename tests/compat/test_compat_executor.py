"""``Worker(workflow_task_executor=...)`` as the gevent_async / trio_async samples pass it.

Spindle runs workflow activations on the worker's event loop; the executor is accepted (checked to be
a ``concurrent.futures`` executor) and kept, and sync activities still use ``activity_executor``."""

from __future__ import annotations

import datetime
import uuid

from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from spindle import activity, workflow
from spindle.testing import WorkflowEnvironment
from spindle.worker import Worker


@activity.defn
def compose_greeting_sync(name: str) -> str:
    return f"Hello, {name}!"


@workflow.defn
class GreetingWorkflow:
    @workflow.run
    async def run(self, name: str) -> str:
        return await workflow.execute_activity(compose_greeting_sync, name,
                                               start_to_close_timeout=datetime.timedelta(seconds=10))


@pytest.fixture
async def env() -> AsyncIterator[WorkflowEnvironment]:
    async with await WorkflowEnvironment.start_time_skipping() as e:
        yield e


async def test_one_executor_for_activities_and_workflow_tasks(env: WorkflowEnvironment) -> None:
    tq = f"exec-{uuid.uuid4().hex[:6]}"
    with ThreadPoolExecutor(max_workers=8) as executor:
        worker = Worker(env.client, task_queue=tq, workflows=[GreetingWorkflow], activities=[compose_greeting_sync],
                        activity_executor=executor, workflow_task_executor=executor,
                        max_concurrent_activities=4, max_concurrent_workflow_tasks=4)
        assert worker.workflow_task_executor is executor
        async with worker:
            result = await env.client.execute_workflow(GreetingWorkflow.run, "World", id=f"g-{tq}", task_queue=tq)
    assert result == "Hello, World!"


async def test_something_else_is_refused(env: WorkflowEnvironment) -> None:
    with pytest.raises(TypeError, match=r"workflow_task_executor=...\) takes a concurrent.futures executor, got str"):
        Worker(env.client, task_queue="tq", workflows=[GreetingWorkflow], workflow_task_executor="threads")
