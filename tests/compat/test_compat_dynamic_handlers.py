"""Handlers set at run time, as Temporal code sets them: ``workflow.set_query_handler``, ``set_update_handler``,
``workflow.get_query_handler``, ``workflow.get_signal_handler`` (and ``set_signal_handler`` with buffered signals)."""

from __future__ import annotations

import uuid

from collections.abc import AsyncIterator

import pytest

from spindle import workflow
from spindle.client import WorkflowUpdateFailedError
from spindle.exceptions import QueryFailedError
from spindle.testing import Replayer, WorkflowEnvironment
from spindle.worker import Worker


@workflow.defn
class RuntimeHandlersWorkflow:
    def __init__(self) -> None:
        self.values: list[str] = []

    @workflow.run
    async def run(self) -> list[str]:
        assert workflow.get_query_handler("count") is None
        workflow.set_query_handler("count", lambda plus: len(self.values) + int(plus))
        workflow.set_query_handler("gone", lambda: "never")
        workflow.set_query_handler("gone", None)
        await workflow.wait_condition(lambda: len(self.values) >= 1)  # "add" arrives before a handler exists
        workflow.set_signal_handler("add", self.values.append)  # the buffered signal is delivered now
        assert workflow.get_signal_handler("add") is not None
        assert workflow.get_query_handler("count") is not None
        workflow.set_update_handler("push", self.push, validator=self.check)
        assert workflow.get_update_handler("push") == self.push
        await workflow.wait_condition(lambda: len(self.values) >= 4)
        return self.values

    def check(self, value: str) -> None:
        if not value:
            raise ValueError("empty value")

    async def push(self, value: str) -> int:
        self.values.append(value)
        return len(self.values)

    @workflow.signal
    def first(self, value: str) -> None:
        self.values.append(value)


@pytest.fixture
async def env() -> AsyncIterator[WorkflowEnvironment]:
    async with await WorkflowEnvironment.start_time_skipping() as e:
        yield e


async def test_set_query_handler_and_buffered_signal(env: WorkflowEnvironment) -> None:
    tq = f"tq-{uuid.uuid4()}"
    async with Worker(env.client, task_queue=tq, workflows=[RuntimeHandlersWorkflow]):
        handle = await env.client.start_workflow(RuntimeHandlersWorkflow.run, id=f"wf-{uuid.uuid4()}", task_queue=tq)
        await handle.signal("add", "buffered")
        await handle.signal(RuntimeHandlersWorkflow.first, "a")
        assert await handle.query("count", 10) == 12  # "a", then the buffered "add"
        with pytest.raises(QueryFailedError, match="no query handler 'gone'"):
            await handle.query("gone")
        await handle.signal("add", "b")
        assert await handle.query("count", 0) == 3
        with pytest.raises(WorkflowUpdateFailedError):
            await handle.execute_update("push", "")  # the validator rejects it
        assert await handle.execute_update("push", "c") == 4
        assert await handle.result() == ["a", "buffered", "b", "c"]
        history = await handle.fetch_history()
    await Replayer(workflows=[RuntimeHandlersWorkflow]).replay_workflow(history)
