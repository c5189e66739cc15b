"""A task queue's activity rate limit is enforced by the server across workers."""

from __future__ import annotations

import asyncio
import time

from datetime import timedelta

from spindle import activity, workflow
from spindle.client import Client
from spindle.worker import Worker

STARTS: list[float] = []


@activity.defn
async def stamp(i: int) -> int:
    STARTS.append(time.monotonic())
    return i


@workflow.defn
async def fan_out(n: int) -> int:
    results = await asyncio.gather(*(workflow.execute_activity(stamp, i, start_to_close_timeout=timedelta(seconds=30))
                                     for i in range(n)))
    return sum(results)


async def test_activities_respect_the_queue_rate(tmp_path) -> None:  # type: ignore[no-untyped-def]
    STARTS.clear()
    client = await Client.connect("embedded:" + str(tmp_path / "rate.db"))
    try:
        async with Worker(client, task_queue="rl", workflows=[fan_out], activities=[stamp],
                          max_task_queue_activities_per_second=10):
            assert await client.execute_workflow(fan_out, 12, id="rl", task_queue="rl") == sum(range(12))
    finally:
        await client.close()
    span = max(STARTS) - min(STARTS)
    # 12 starts at 10 per second: the bucket holds at most 10 at once, so at least ~0.2 s pass
    assert len(STARTS) == 12 and span >= 0.15, span


def test_rate_must_be_positive() -> None:
    import pytest

    with pytest.raises(ValueError, match="max_task_queue_activities_per_second"):
        Worker(object(), task_queue="q", activities=[stamp], max_task_queue_activities_per_second=0)
