"""list_workflows reports a running run's current history length (issue 13), not its length at start."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta

import pytest

from spindle import Worker, WorkflowExecutionStatus, activity, workflow
from spindle.testing import WorkflowEnvironment

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


async def _listed_length(env: WorkflowEnvironment, wid: str) -> int:
    [info] = [w async for w in env.client.list_workflows(f"WorkflowId = '{wid}'")]
    return info.history_length


async def test_a_running_runs_listed_history_length_follows_its_history() -> None:
    async with await WorkflowEnvironment.start_local() as env:
        async with Worker(env.client, task_queue="vis-len", workflows=[StepsThenWaits], activities=[step]):
            handle = await env.client.start_workflow(StepsThenWaits.run, 20, id="long", task_queue="vis-len")
            # wait until it blocks on the signal: 20 activities done
            end = time.monotonic() + 20
            while True:
                desc = await handle.describe()
                if desc.history_length > 100 and not desc.pending_activities:
                    break
                assert time.monotonic() < end, "the workflow never got through its activities"
                await asyncio.sleep(0.05)
            expected = desc.history_length
            while await _listed_length(env, "long") != expected:  # written with the next ack batch (50 ms)
                assert time.monotonic() < end, f"listed {await _listed_length(env, 'long')}, describe says {expected}"
                await asyncio.sleep(0.05)
            assert desc.status is WorkflowExecutionStatus.RUNNING
            await handle.signal(StepsThenWaits.finish)
            assert await handle.result() == 20
        final = (await handle.describe()).history_length
        while await _listed_length(env, "long") != final:
            assert time.monotonic() < end + 10
            await asyncio.sleep(0.05)
