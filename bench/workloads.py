"""Workflows and activities of the benchmark (the shape the peer engines were measured with)."""

from __future__ import annotations

from datetime import timedelta

from spindle import activity, workflow

TASK_QUEUE = "bench"


@activity.defn
async def add_one(x: int) -> int:
    return x + 1


@workflow.defn(name="chain3")
class Chain3:
    """W1: three trivial activities in sequence."""

    @workflow.run
    async def run(self, x: int) -> int:
        for _ in range(3):
            x = await workflow.execute_activity(add_one, x, start_to_close_timeout=timedelta(seconds=30))
        return x


@workflow.defn(name="timer")
class TimerWf:
    """W2: one durable sleep; returns (time before, time after) as seen by the workflow."""

    @workflow.run
    async def run(self, secs: float) -> list[float]:
        t0 = workflow.now().timestamp()
        await workflow.sleep(secs)
        t1 = workflow.now().timestamp()
        return [t0, t1]


@workflow.defn(name="sigwait")
async def sigwait() -> int:
    """W3: park on a signal, return its payload."""
    v = await workflow.wait_for_signal("go")
    return int(v)


WORKFLOWS = [Chain3, TimerWf, sigwait]
ACTIVITIES = [add_one]
