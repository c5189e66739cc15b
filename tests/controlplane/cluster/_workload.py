"""Workflows and checks shared by the cluster tests (activities, timers, signals, children, continue-as-new)."""

from __future__ import annotations

import asyncio

from datetime import timedelta
from typing import Any

from spindle import activity, workflow
from spindle.client import Client
from spindle.common import RetryPolicy

FAST = timedelta(seconds=20)
RETRY = RetryPolicy(initial_interval=timedelta(milliseconds=100), maximum_attempts=0)


@activity.defn
async def double(x: int) -> int:
    return 2 * x


@workflow.defn
class ChildWf:
    @workflow.run
    async def run(self, x: int) -> int:
        return await workflow.execute_activity(double, x, start_to_close_timeout=FAST, retry_policy=RETRY)


@workflow.defn
class MainWf:
    """activity -> timer -> child (often on another member's shard) -> wait for a signal -> continue-as-new once."""

    def __init__(self) -> None:
        self.bonus: int | None = None

    @workflow.run
    async def run(self, x: int, rounds: int = 1, signal: bool = True) -> int:
        a = await workflow.execute_activity(double, x, start_to_close_timeout=FAST, retry_policy=RETRY)
        await workflow.sleep(timedelta(milliseconds=200))
        c = await workflow.execute_child_workflow(ChildWf.run, a, id=f"{workflow.info().workflow_id}-child-{rounds}")
        if signal:
            await workflow.wait_condition(lambda: self.bonus is not None)
        total = c + (self.bonus or 0)
        if rounds > 1:
            workflow.continue_as_new(total, rounds - 1, False)
        return total

    @workflow.signal
    def add(self, n: int) -> None:
        self.bonus = n


def expected(x: int) -> int:
    """MainWf(x, rounds=2, signal=True) with signal 1: round 1 gives 4x+1, round 2 (no signal) gives 4*(4x+1)."""
    return 4 * (4 * x + 1)


async def signal_when_running(client: Client, wid: str, value: int, timeout: float = 120.0) -> None:
    """Send the signal, retrying while the workflow's shard moves."""
    from spindle.exceptions import RPCError

    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        try:
            await client.get_workflow_handle(wid).signal(MainWf.add, value)
            return
        except RPCError as e:
            if e.status != "UNAVAILABLE" or asyncio.get_running_loop().time() > deadline:
                raise
            await asyncio.sleep(0.5)


async def result_with_retry(client: Client, wid: str, timeout: float = 240.0,
                            retry_on: tuple[str, ...] = ("UNAVAILABLE", "DEADLINE_EXCEEDED")) -> Any:
    """The workflow's result, retrying the statuses ``retry_on`` (a member died while we waited)."""
    from spindle.exceptions import RPCError

    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        try:
            return await client.get_workflow_handle(wid).result()
        except RPCError as e:
            if e.status not in retry_on or asyncio.get_running_loop().time() > deadline:
                raise
            await asyncio.sleep(0.5)


async def check_history(client: Client, wid: str) -> None:
    """Every run of ``wid``'s chain has event ids 1..n with no gap and no repeat."""
    h = client.get_workflow_handle(wid)
    hist = await h.fetch_history()
    ids = [e.event_id for e in hist.events]
    assert ids == list(range(1, len(ids) + 1)), f"{wid}: event ids {ids}"
