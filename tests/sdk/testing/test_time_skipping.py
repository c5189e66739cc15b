"""WorkflowEnvironment: time skipping on the in-process control plane."""

from __future__ import annotations

import asyncio
import random
import time
import uuid

from datetime import datetime, timedelta

import pytest

from spindle import activity, workflow
from spindle.client import WorkflowExecutionStatus
from spindle.common import RetryPolicy
from spindle.exceptions import ApplicationError, WorkflowFailureError
from spindle.exceptions import TimeoutError as SpindleTimeoutError
from spindle.testing import WorkflowEnvironment
from spindle.worker import Worker


def _q() -> str:
    return f"q-{uuid.uuid4().hex[:8]}"


# ---------------------------------------------------------------------- workflows


@workflow.defn
class YearSleeper:
    @workflow.run
    async def run(self) -> list[str]:
        start = workflow.now()
        await workflow.sleep(timedelta(days=365))
        return [start.isoformat(), workflow.now().isoformat()]


@workflow.defn
class SignalWaiter:
    @workflow.run
    async def run(self, days: int) -> list[str | None]:
        start = workflow.now()
        got = await workflow.wait_for_signal("approve", timeout=timedelta(days=days))
        return [got, start.isoformat(), workflow.now().isoformat()]


recorded: list[tuple[str, datetime]] = []


@activity.defn
async def record(key: str) -> None:
    recorded.append((key, activity.info().scheduled_time))


@workflow.defn
class TimerThenRecord:
    @workflow.run
    async def run(self, key: str, seconds: int) -> None:
        await workflow.sleep(timedelta(seconds=seconds))
        await workflow.execute_activity(record, key, start_to_close_timeout=timedelta(seconds=10))


@activity.defn
async def flaky() -> int:
    attempt = activity.info().attempt
    if attempt < 10:
        raise ApplicationError(f"attempt {attempt} fails")
    return attempt


@workflow.defn
class RetryingWorkflow:
    @workflow.run
    async def run(self) -> list[float]:
        start = workflow.now()
        attempt = await workflow.execute_activity(
            flaky, start_to_close_timeout=timedelta(seconds=10),
            retry_policy=RetryPolicy(initial_interval=timedelta(seconds=1), backoff_coefficient=2.0,
                                     maximum_attempts=10))
        return [float(attempt), (workflow.now() - start).total_seconds()]


@activity.defn
async def slow_real_work() -> str:
    await asyncio.sleep(0.2)  # real time: the virtual clock must not move meanwhile
    return "activity"


@workflow.defn
class ActivityRacesTimer:
    @workflow.run
    async def run(self) -> list[str]:
        start = workflow.now()
        try:
            winner = await asyncio.wait_for(
                workflow.execute_activity(slow_real_work, start_to_close_timeout=timedelta(hours=2)),
                timeout=timedelta(hours=1).total_seconds())
        except TimeoutError:
            winner = "timer"
        return [winner, str((workflow.now() - start).total_seconds())]


@workflow.defn
class ShortSleeper:
    @workflow.run
    async def run(self, seconds: float) -> str:
        await workflow.sleep(seconds)
        return workflow.now().isoformat()


# ---------------------------------------------------------------------- tests


async def test_year_long_timer_completes_in_milliseconds() -> None:
    async with await WorkflowEnvironment.start_time_skipping() as env:
        q = _q()
        async with Worker(env.client, task_queue=q, workflows=[YearSleeper]):
            t0 = env.now()
            wall = time.monotonic()
            start, end = await env.client.execute_workflow(YearSleeper.run, id="year", task_queue=q)
            wall = time.monotonic() - wall
        assert wall < 1.0, f"a 365-day timer took {wall:.2f} s of wall time"
        elapsed = datetime.fromisoformat(end) - datetime.fromisoformat(start)
        assert abs(elapsed.total_seconds() - 365 * 86400) < 1.0
        assert abs((datetime.fromisoformat(start) - t0).total_seconds()) < 1.0
        assert env.now() - t0 >= timedelta(days=365)


async def test_signal_wait_times_out_after_14_virtual_days() -> None:
    async with await WorkflowEnvironment.start_time_skipping() as env:
        q = _q()
        async with Worker(env.client, task_queue=q, workflows=[SignalWaiter]):
            wall = time.monotonic()
            got, start, end = await env.client.execute_workflow(SignalWaiter.run, 14, id="wait", task_queue=q)
            wall = time.monotonic() - wall
        assert got is None  # wait_for_signal returns None on timeout
        assert wall < 1.0
        elapsed = datetime.fromisoformat(end) - datetime.fromisoformat(start)
        assert abs(elapsed.total_seconds() - 14 * 86400) < 1.0


async def test_hundred_staggered_timers_fire_in_due_order() -> None:
    recorded.clear()
    # 1 s .. 100 days, geometrically spaced, all distinct; started in shuffled order
    durations: dict[str, int] = {}
    prev = 0
    for i in range(100):
        prev = max(prev + 1, round((100 * 86400) ** (i / 99)))
        durations[f"w{i:03d}"] = prev
    assert durations["w000"] == 1 and durations["w099"] == 100 * 86400
    order = list(durations)
    random.Random(7).shuffle(order)
    async with await WorkflowEnvironment.start_time_skipping() as env:
        q = _q()
        async with Worker(env.client, task_queue=q, workflows=[TimerThenRecord], activities=[record]):
            t0 = env.now()
            handles = [await env.client.start_workflow(TimerThenRecord.run, k, durations[k], id=k, task_queue=q)
                       for k in order]
            await asyncio.gather(*(h.result() for h in handles))
    assert [k for k, _ in recorded] == sorted(durations, key=durations.__getitem__)
    for k, scheduled in recorded:
        assert abs((scheduled - t0).total_seconds() - durations[k]) < 1.0, k


async def test_activity_retry_backoff_runs_in_virtual_time() -> None:
    async with await WorkflowEnvironment.start_time_skipping() as env:
        q = _q()
        async with Worker(env.client, task_queue=q, workflows=[RetryingWorkflow], activities=[flaky]):
            wall = time.monotonic()
            attempt, elapsed = await env.client.execute_workflow(RetryingWorkflow.run, id="retry", task_queue=q)
            wall = time.monotonic() - wall
        history = await env.client.get_workflow_handle("retry").fetch_history()
    assert attempt == 10
    # backoff after attempt n is 2^(n-1) s, capped at the default maximum interval (100 x 1 s)
    expected = sum(min(2 ** (n - 1), 100) for n in range(1, 10))
    assert expected == 327
    assert abs(elapsed - expected) < 1.0
    # retried attempts write no events; the last attempt's Started event carries its number
    assert history.events_of_type("ActivityTaskFailed") == []
    [started] = history.events_of_type("ActivityTaskStarted")
    assert int(started.attributes["attempt"]) == 10
    assert wall < 5.0


async def test_time_does_not_skip_while_an_activity_runs() -> None:
    async with await WorkflowEnvironment.start_time_skipping() as env:
        q = _q()
        async with Worker(env.client, task_queue=q, workflows=[ActivityRacesTimer], activities=[slow_real_work]):
            winner, elapsed = await env.client.execute_workflow(ActivityRacesTimer.run, id="race", task_queue=q)
    assert winner == "activity"
    assert float(elapsed) < 3600


async def test_env_sleep_lets_a_test_signal_a_waiting_workflow() -> None:
    async with await WorkflowEnvironment.start_time_skipping() as env:
        q = _q()
        async with Worker(env.client, task_queue=q, workflows=[SignalWaiter]):
            t0 = env.now()
            handle = await env.client.start_workflow(SignalWaiter.run, 14, id="approve-me", task_queue=q)
            await asyncio.sleep(0.1)  # real time passes; virtual time does not without a result() await
            assert env.now() == t0
            await env.sleep(timedelta(days=13))
            assert env.now() - t0 == timedelta(days=13)
            assert (await handle.describe()).status == WorkflowExecutionStatus.RUNNING
            await handle.signal("approve", "yes")
            got, start, end = await handle.result()
    assert got == "yes"
    elapsed = datetime.fromisoformat(end) - datetime.fromisoformat(start)
    assert abs(elapsed.total_seconds() - 13 * 86400) < 1.0


async def test_env_sleep_fires_timers_on_the_way_in_order() -> None:
    async with await WorkflowEnvironment.start_time_skipping() as env:
        q = _q()
        async with Worker(env.client, task_queue=q, workflows=[ShortSleeper]):
            t0 = env.now()
            handles = [await env.client.start_workflow(ShortSleeper.run, float(days * 86400), id=f"s{days}",
                                                       task_queue=q) for days in (3, 1, 2)]
            await env.sleep(timedelta(days=10))
            assert env.now() - t0 == timedelta(days=10)
            for h in handles:
                assert (await h.describe()).status == WorkflowExecutionStatus.COMPLETED
            with env.auto_time_skipping_disabled():  # results are already there
                ends = {h.id: datetime.fromisoformat(await h.result()) for h in handles}
    for days in (1, 2, 3):
        assert abs((ends[f"s{days}"] - t0).total_seconds() - days * 86400) < 1.0


async def test_auto_time_skipping_disabled_blocks_jumps() -> None:
    async with await WorkflowEnvironment.start_time_skipping() as env:
        q = _q()
        async with Worker(env.client, task_queue=q, workflows=[ShortSleeper]):
            handle = await env.client.start_workflow(ShortSleeper.run, 86400.0, id="day", task_queue=q)
            t0 = env.now()
            with env.auto_time_skipping_disabled():
                with pytest.raises(asyncio.TimeoutError):
                    await asyncio.wait_for(handle.result(), 0.3)
                assert env.now() == t0
            end = datetime.fromisoformat(await handle.result())
    assert end - t0 >= timedelta(days=1)


async def test_workflow_execution_timeout_follows_virtual_time() -> None:
    async with await WorkflowEnvironment.start_time_skipping() as env:
        q = _q()
        async with Worker(env.client, task_queue=q, workflows=[ShortSleeper]):
            t0 = env.now()
            with pytest.raises(WorkflowFailureError) as info:
                await env.client.execute_workflow(ShortSleeper.run, 30 * 86400.0, id="too-long", task_queue=q,
                                                  execution_timeout=timedelta(days=2))
    assert isinstance(info.value.cause, SpindleTimeoutError)
    assert timedelta(days=2) <= env.now() - t0 < timedelta(days=30)


async def test_local_environment_uses_the_real_clock() -> None:
    async with await WorkflowEnvironment.start_local() as env:
        assert not env.supports_time_skipping
        q = _q()
        async with Worker(env.client, task_queue=q, workflows=[ShortSleeper]):
            wall = time.monotonic()
            await env.client.execute_workflow(ShortSleeper.run, 0.3, id="real", task_queue=q)
            assert time.monotonic() - wall >= 0.3
        before = env.now()
        await env.sleep(0.05)
        assert env.now() > before


async def test_env_sleep_moves_time_even_when_no_worker_polls() -> None:
    async with await WorkflowEnvironment.start_time_skipping() as env:
        q = _q()
        t0 = env.now()
        handle = await env.client.start_workflow(ShortSleeper.run, 60.0, id="no-worker-yet", task_queue=q)
        await env.sleep(timedelta(hours=1))  # the first workflow task waits in the queue meanwhile
        assert env.now() - t0 == timedelta(hours=1)
        async with Worker(env.client, task_queue=q, workflows=[ShortSleeper]):
            end = datetime.fromisoformat(await handle.result())
    # the workflow started its 60 s timer only when a worker picked its first task up
    assert abs((end - t0).total_seconds() - 3660) < 1.0
