"""``@workflow.defn(failure_exception_types=[...])`` as Temporal code uses it: an exception of a listed
type raised by workflow code fails the workflow (not the workflow task, which would retry it)."""

from __future__ import annotations

import uuid

from collections.abc import AsyncIterator

import pytest

from spindle import workflow
from spindle.client import WorkflowFailureError
from spindle.testing import Replayer, WorkflowEnvironment
from spindle.worker import Worker


class PoolExhausted(Exception):
    pass


@workflow.defn(failure_exception_types=[PoolExhausted])
class FailsOnPoolExhausted:
    @workflow.run
    async def run(self, n: int) -> int:
        if n > 2:
            raise PoolExhausted(f"no resource left for {n}")
        return n


@workflow.defn(failure_exception_types=[PoolExhausted])
class FailsFromSignal:
    def __init__(self) -> None:
        self.done = False

    @workflow.run
    async def run(self) -> str:
        await workflow.wait_condition(lambda: self.done)
        return "released"

    @workflow.signal
    def release(self, ok: bool) -> None:
        if not ok:
            raise PoolExhausted("released a resource that was never taken")
        self.done = True


@pytest.fixture
async def env() -> AsyncIterator[WorkflowEnvironment]:
    async with await WorkflowEnvironment.start_time_skipping() as e:
        yield e


async def test_listed_exception_fails_the_workflow_and_replays(env: WorkflowEnvironment) -> None:
    tq = f"tq-{uuid.uuid4()}"
    async with Worker(env.client, task_queue=tq, workflows=[FailsOnPoolExhausted]):
        handle = await env.client.start_workflow(FailsOnPoolExhausted.run, 3, id=f"wf-{uuid.uuid4()}", task_queue=tq)
        with pytest.raises(WorkflowFailureError) as raised:
            await handle.result()
        assert "no resource left for 3" in str(raised.value.cause)
        history = await handle.fetch_history()
        ok = await env.client.execute_workflow(FailsOnPoolExhausted.run, 1, id=f"wf-{uuid.uuid4()}", task_queue=tq)
    assert ok == 1
    await Replayer(workflows=[FailsOnPoolExhausted]).replay_workflow(history)


async def test_listed_exception_from_a_signal_handler_fails_the_workflow(env: WorkflowEnvironment) -> None:
    tq = f"tq-{uuid.uuid4()}"
    async with Worker(env.client, task_queue=tq, workflows=[FailsFromSignal]):
        handle = await env.client.start_workflow(FailsFromSignal.run, id=f"wf-{uuid.uuid4()}", task_queue=tq)
        await handle.signal(FailsFromSignal.release, False)
        with pytest.raises(WorkflowFailureError) as raised:
            await handle.result()
        assert "never taken" in str(raised.value.cause)
        history = await handle.fetch_history()
    await Replayer(workflows=[FailsFromSignal]).replay_workflow(history)


def test_failure_exception_types_must_be_exception_classes() -> None:
    with pytest.raises(TypeError, match="'oops' is not an exception class"):
        workflow.defn(failure_exception_types=["oops"])  # type: ignore[list-item,unused-ignore]
