"""Time skipping with activities that hang or ignore cancellation (issue 13).

* ``env.sleep(d)`` always moves the clock by ``d``, also while activities run: a hung
  activity's start-to-close timeout fires in virtual time (``env.sleep`` used to wait for
  the activity to finish, which deadlocked the test).
* Cancelling a workflow whose activity ignores the cancellation must not freeze time
  skipping for the rest of the environment (the engine kept counting the abandoned
  activity as work in progress, so no timer ever fired again).
"""

from __future__ import annotations

import asyncio
import uuid

from datetime import datetime, timedelta

import pytest

from spindle import activity, workflow
from spindle.client import WorkflowExecutionStatus
from spindle.common import RetryPolicy
from spindle.exceptions import ActivityError, WorkflowFailureError
from spindle.testing import WorkflowEnvironment
from spindle.worker import Worker

# Real seconds a call may take before the test calls it a deadlock (they take milliseconds).
DEADLOCK = 15.0

RELEASE = asyncio.Event()  # lets the hung activities end when a test is over (worker shutdown)


def _q() -> str:
    return f"q-{uuid.uuid4().hex[:8]}"


@activity.defn
async def hangs() -> str:
    """Never finishes on its own and never heartbeats (so it never learns of a cancellation)."""
    await RELEASE.wait()
    return "released"


@workflow.defn
class CallsAHungActivity:
    @workflow.run
    async def run(self) -> str:
        try:
            return await workflow.execute_activity(hangs, start_to_close_timeout=timedelta(minutes=10),
                                                   retry_policy=RetryPolicy(maximum_attempts=1))
        except ActivityError as e:
            return f"{type(e.cause).__name__} at {workflow.now().isoformat()}"


@workflow.defn
class WaitsOnAHungActivity:
    @workflow.run
    async def run(self) -> str:
        return await workflow.execute_activity(hangs, start_to_close_timeout=timedelta(days=30))


@workflow.defn
class Sleeper:
    @workflow.run
    async def run(self, seconds: float) -> str:
        await workflow.sleep(seconds)
        return workflow.now().isoformat()


async def _activity_started(handle: object) -> None:
    while True:
        pending = (await handle.describe()).pending_activities  # type: ignore[attr-defined]
        if pending and pending[0].state == "STARTED":
            return
        await asyncio.sleep(0.01)


@pytest.fixture(autouse=True)
def _release_hung_activities() -> object:
    global RELEASE
    RELEASE = asyncio.Event()  # one per test: an asyncio.Event binds to the loop that first waits on it
    yield
    RELEASE.set()


async def test_env_sleep_moves_past_a_hung_activitys_start_to_close_timeout() -> None:
    async with await WorkflowEnvironment.start_time_skipping() as env:
        q = _q()
        async with Worker(env.client, task_queue=q, workflows=[CallsAHungActivity], activities=[hangs],
                          graceful_shutdown_timeout=timedelta(milliseconds=100)):
            t0 = env.now()
            handle = await env.client.start_workflow(CallsAHungActivity.run, id="hung", task_queue=q)
            await asyncio.wait_for(_activity_started(handle), DEADLOCK)
            await asyncio.wait_for(env.sleep(timedelta(minutes=11)), DEADLOCK)  # used to wait for the activity forever
            assert env.now() - t0 == timedelta(minutes=11)
            with env.auto_time_skipping_disabled():  # the timeout already fired during the sleep
                outcome = await asyncio.wait_for(handle.result(), DEADLOCK)
            RELEASE.set()
    cause, _, when = outcome.partition(" at ")
    assert cause == "TimeoutError"
    # the timeout fired 10 virtual minutes after the start, not at the end of the sleep
    assert abs((datetime.fromisoformat(when) - t0).total_seconds() - 600) < 1.0


async def test_env_sleep_moves_time_by_exactly_d_while_an_activity_runs() -> None:
    async with await WorkflowEnvironment.start_time_skipping() as env:
        q = _q()
        async with Worker(env.client, task_queue=q, workflows=[WaitsOnAHungActivity], activities=[hangs],
                          graceful_shutdown_timeout=timedelta(milliseconds=100)):
            handle = await env.client.start_workflow(WaitsOnAHungActivity.run, id="busy", task_queue=q)
            await asyncio.wait_for(_activity_started(handle), DEADLOCK)
            t0 = env.now()
            await asyncio.wait_for(env.sleep(timedelta(days=2)), DEADLOCK)
            assert env.now() - t0 == timedelta(days=2)
            assert (await handle.describe()).status is WorkflowExecutionStatus.RUNNING
            RELEASE.set()
            with env.auto_time_skipping_disabled():
                assert await asyncio.wait_for(handle.result(), DEADLOCK) == "released"


async def test_cancelling_a_workflow_whose_activity_ignores_it_does_not_freeze_time() -> None:
    async with await WorkflowEnvironment.start_time_skipping() as env:
        q = _q()
        async with Worker(env.client, task_queue=q, workflows=[WaitsOnAHungActivity, Sleeper], activities=[hangs],
                          graceful_shutdown_timeout=timedelta(milliseconds=100)):
            stuck = await env.client.start_workflow(WaitsOnAHungActivity.run, id="stuck", task_queue=q)
            await asyncio.wait_for(_activity_started(stuck), DEADLOCK)
            await stuck.cancel()
            with pytest.raises(WorkflowFailureError):
                await asyncio.wait_for(stuck.result(), DEADLOCK)
            assert (await stuck.describe()).status is WorkflowExecutionStatus.CANCELED
            # the activity still runs in the worker, ignoring the cancellation; time must still skip
            t0 = env.now()
            end = await asyncio.wait_for(env.client.execute_workflow(Sleeper.run, 86400.0, id="after", task_queue=q),
                                         DEADLOCK)
            assert datetime.fromisoformat(end) - t0 >= timedelta(days=1)
            t1 = env.now()
            await asyncio.wait_for(env.sleep(timedelta(hours=1)), DEADLOCK)
            assert env.now() - t1 == timedelta(hours=1)


async def test_terminating_a_workflow_whose_activity_runs_does_not_freeze_time() -> None:
    async with await WorkflowEnvironment.start_time_skipping() as env:
        q = _q()
        async with Worker(env.client, task_queue=q, workflows=[WaitsOnAHungActivity, Sleeper], activities=[hangs],
                          graceful_shutdown_timeout=timedelta(milliseconds=100)):
            stuck = await env.client.start_workflow(WaitsOnAHungActivity.run, id="stuck", task_queue=q)
            await asyncio.wait_for(_activity_started(stuck), DEADLOCK)
            await stuck.terminate("enough")
            t0 = env.now()
            end = await asyncio.wait_for(env.client.execute_workflow(Sleeper.run, 3600.0, id="after", task_queue=q),
                                         DEADLOCK)
            assert datetime.fromisoformat(end) - t0 >= timedelta(hours=1)
