"""list_workflows reports a running run's current history length (issue 13), not its length at start."""

from __future__ import annotations

import asyncio
import time

from datetime import timedelta

import pytest

from spindle import activity, workflow
from spindle.client import WorkflowExecutionStatus
from spindle.testing import WorkflowEnvironment
from spindle.worker import Worker

pytestmark = pytest.mark.timeout(60)


@activity.defn
async def step(i: int) -> int:
    return i + 1


@workflow.defn
class StepsThenWaits:
    def __init__(self) -> None:
        self.done = False

    @workflow.run
    async def run(self, steps: int) -> int:
        n = 0
        for i in range(steps):
            n = await workflow.execute_activity(step, i, start_to_close_timeout=timedelta(seconds=10))
        await workflow.wait_condition(lambda: self.done)
        return n

    @workflow.signal
    def finish(self) -> None:
        self.done = True


async def _listed_length(env: WorkflowEnvironment, wid: str) -> int | None:
    """The listed history length of ``wid``, None while its visibility row is not written yet."""
    infos = [w async for w in env.client.list_workflows(f"WorkflowId = '{wid}'")]
    assert len(infos) <= 1, infos
    return infos[0].history_length if infos else None


async def _until_listed(env: WorkflowEnvironment, wid: str, expected: int) -> None:
    """Wait until the listing shows ``expected`` (rows and lengths are written with the ack batches)."""
    end = time.monotonic() + 30
    while (listed := await _listed_length(env, wid)) != expected:
        assert time.monotonic() < end, f"listed {listed}, describe says {expected}"
        await asyncio.sleep(0.05)


async def test_a_running_runs_listed_history_length_follows_its_history() -> None:
    async with await WorkflowEnvironment.start_local() as env:
        async with Worker(env.client, task_queue="vis-len", workflows=[StepsThenWaits], activities=[step]):
            handle = await env.client.start_workflow(StepsThenWaits.run, 20, id="long", task_queue="vis-len")
            # wait until it blocks on the signal: 20 activities done and the length steady (between
            # two activities there is no pending activity either, so one look is not enough)
            end = time.monotonic() + 30
            lengths: list[int] = []
            while len(lengths) < 3 or len(set(lengths[-3:])) != 1:
                desc = await handle.describe()
                if desc.history_length > 100 and not desc.pending_activities:
                    lengths.append(desc.history_length)
                else:
                    lengths.clear()
                assert time.monotonic() < end, "the workflow never got through its activities"
                await asyncio.sleep(0.1)
            expected = desc.history_length
            await _until_listed(env, "long", expected)
            assert desc.status is WorkflowExecutionStatus.RUNNING
            await handle.signal(StepsThenWaits.finish)
            assert await handle.result() == 20
        final = (await handle.describe()).history_length
        assert final > expected
        await _until_listed(env, "long", final)
