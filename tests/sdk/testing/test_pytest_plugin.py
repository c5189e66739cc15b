"""The `spindle` pytest plugin's fixtures (loaded through the pytest11 entry point)."""

from __future__ import annotations

from datetime import timedelta

from spindle import workflow
from spindle.client import Client
from spindle.testing import WorkflowEnvironment
from spindle.worker import Worker


@workflow.defn
async def fortnight() -> str:
    await workflow.sleep(timedelta(days=14))
    return "done"


async def test_fixtures_give_a_time_skipping_env_and_its_client(spindle_env: WorkflowEnvironment,
                                                                 spindle_client: Client) -> None:
    assert spindle_env.supports_time_skipping
    assert spindle_client is spindle_env.client
    t0 = spindle_env.now()
    async with Worker(spindle_client, task_queue="plugin", workflows=[fortnight]):
        assert await spindle_client.execute_workflow(fortnight, id="f", task_queue="plugin") == "done"
    assert spindle_env.now() - t0 >= timedelta(days=14)
