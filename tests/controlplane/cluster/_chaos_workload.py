"""The chaos run's workflow and activity (imported by the driver and by the worker process).

``Chaos(x)``: three activities ``x -> x + 1``, a 1 s durable timer, then it waits for the
signal ``bonus`` and returns ``(x + 3) * 1000 + bonus``: the result proves that every step
and the signal reached the history. ``step`` appends ``workflow_id activity_id attempt end_time`` to the
file named by ``CHAOS_COMPLETIONS`` as it returns, so the driver can tell how long the server
took to record each completion (the worker's completion latency).
"""

from __future__ import annotations

import os
import time

from datetime import timedelta

from spindle import activity, workflow
from spindle.common import RetryPolicy

TASK_QUEUE = "chaos"
RETRY = RetryPolicy(initial_interval=timedelta(milliseconds=200), backoff_coefficient=1.5,
                    maximum_interval=timedelta(seconds=1))


def expected(x: int) -> int:
    return (x + 3) * 1000 + bonus_of(x)


def bonus_of(x: int) -> int:
    return x % 997 + 1


@activity.defn
async def step(x: int) -> int:
    path = os.environ.get("CHAOS_COMPLETIONS")
    if path:
        info = activity.info()
        with open(path, "a") as f:
            f.write(f"{info.workflow_id} {info.activity_id} {info.attempt} {time.time():.6f}\n")
    return x + 1


@workflow.defn(name="chaos")
class Chaos:
    def __init__(self) -> None:
        self.bonus: int | None = None

    @workflow.run
    async def run(self, x: int) -> int:
        for _ in range(3):
            x = await workflow.execute_activity(step, x, start_to_close_timeout=timedelta(seconds=4), retry_policy=RETRY)
        await workflow.sleep(timedelta(seconds=1))
        await workflow.wait_condition(lambda: self.bonus is not None)
        assert self.bonus is not None
        return x * 1000 + self.bonus

    @workflow.signal
    def bonus(self, n: int) -> None:
        if self.bonus is None:
            self.bonus = n
