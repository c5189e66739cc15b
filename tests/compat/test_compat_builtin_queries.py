"""The built-in queries Temporal's CLI and UI send (``__stack_trace``, ``__enhanced_stack_trace``,
``__temporal_workflow_metadata``), asked the way a ported tool asks them: ``handle.query("__stack_trace")``."""

from __future__ import annotations

import uuid

from collections.abc import AsyncIterator

import pytest

from spindle import workflow
from spindle.exceptions import QueryFailedError
from spindle.testing import Replayer, WorkflowEnvironment
from spindle.worker import Worker


@workflow.defn
class WaitingWorkflow:
    def __init__(self) -> None:
        self.go = False

    @workflow.run
    async def run(self) -> str:
        await self.wait_here()
        return "done"

    async def wait_here(self) -> None:
        await workflow.wait_condition(lambda: self.go)

    @workflow.signal
    def proceed(self) -> None:
        self.go = True

    @workflow.query
    def status(self) -> str:
        return "waiting" if not self.go else "going"


@pytest.fixture
async def env() -> AsyncIterator[WorkflowEnvironment]:
    async with await WorkflowEnvironment.start_time_skipping() as e:
        yield e


async def test_builtin_queries_answer_and_replay(env: WorkflowEnvironment) -> None:
    tq = f"tq-{uuid.uuid4()}"
    async with Worker(env.client, task_queue=tq, workflows=[WaitingWorkflow]):
        handle = await env.client.start_workflow(WaitingWorkflow.run, id=f"wf-{uuid.uuid4()}", task_queue=tq)
        assert await handle.query(WaitingWorkflow.status) == "waiting"
        trace = await handle.query("__stack_trace")
        assert "wait_here" in trace and "test_compat_builtin_queries.py" in trace
        enhanced = await handle.query("__enhanced_stack_trace")
        assert enhanced["sdk"]["name"] == "spindle-python"
        functions = [loc["functionName"] for s in enhanced["stacks"] for loc in s["locations"]]
        assert "wait_here" in functions
        assert any("class WaitingWorkflow" in src["content"] for src in enhanced["sources"].values())
        meta = await handle.query("__temporal_workflow_metadata")
        assert meta["definition"]["type"] == "WaitingWorkflow"
        assert {"name": "proceed", "description": ""} in meta["definition"]["signalDefinitions"]
        assert "status" in [q["name"] for q in meta["definition"]["queryDefinitions"]]
        with pytest.raises(QueryFailedError, match="no query handler 'nope'"):
            await handle.query("nope")
        await handle.signal(WaitingWorkflow.proceed)
        assert await handle.result() == "done"
        history = await handle.fetch_history()
    # The queries left no trace in the history: it replays without non-determinism.
    await Replayer(workflows=[WaitingWorkflow]).replay_workflow(history)
