"""``client.list_workflows(query).map_histories()`` fed to ``Replayer.replay_workflows``, as Temporal's replay sample does.

The sample lists the runs of one workflow id, maps them to their histories and replays them
with ``raise_on_replay_failure=False``, printing the results. Here: the same calls on a
real (embedded) server, then a changed workflow whose replay reports the failure.
"""

from __future__ import annotations

import asyncio

from datetime import timedelta

from spindle import activity, workflow
from spindle.testing import WorkflowEnvironment
from spindle.worker import Replayer, Worker


@activity.defn
async def say(name: str) -> str:
    return f"hi {name}"


@workflow.defn(name="TimerThenActivity")
class TimerThenActivity:
    @workflow.run
    async def run(self, name: str) -> str:
        await workflow.sleep(timedelta(milliseconds=10))
        return await workflow.execute_activity(say, name, start_to_close_timeout=timedelta(seconds=10))


@workflow.defn(name="TimerThenActivity")
class ActivityOnly:  # the same type changed: the timer was removed
    @workflow.run
    async def run(self, name: str) -> str:
        return await workflow.execute_activity(say, name, start_to_close_timeout=timedelta(seconds=10))


async def test_the_replay_sample_calls_replay_the_listed_runs() -> None:
    async with await WorkflowEnvironment.start_local() as env:
        client = env.client
        async with Worker(client, task_queue="replay", workflows=[TimerThenActivity], activities=[say]):
            for _ in range(2):  # two runs of one id, as the sample's starter makes
                await client.execute_workflow(TimerThenActivity.run, "ada", id="replayer-workflow-id",
                                              task_queue="replay")
        for _ in range(100):  # visibility is written with the next acknowledgement batch
            if len([w async for w in client.list_workflows('WorkflowId="replayer-workflow-id"')]) == 2:
                break
            await asyncio.sleep(0.05)

        workflows = client.list_workflows('WorkflowId="replayer-workflow-id"')
        histories = workflows.map_histories()
        replayer = Replayer(workflows=[TimerThenActivity])
        results = await replayer.replay_workflows(histories, raise_on_replay_failure=False)
        assert len(results.results) == 2 and results.replay_failures == {}

        changed = Replayer(workflows=[ActivityOnly])
        results = await changed.replay_workflows(
            client.list_workflows('WorkflowId="replayer-workflow-id"').map_histories(), raise_on_replay_failure=False)
        assert len(results.replay_failures) == 2
