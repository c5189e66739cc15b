"""Workflows and activities of the fault-injection tests (run by ``fault_worker.py`` and in-process).

``fchain3`` is the benchmark's chain3 (three activities ``x -> x + 1``) with short timeouts so
that work lost in a crash is redone within seconds. The ``blocking_*`` pieces block while the
environment variable ``FAULT_BLOCK`` is set, after writing a marker line to ``FAULT_MARKERS``
(a directory), so that a test can kill -9 the worker while they run.
"""

from __future__ import annotations

import os
import time

from datetime import timedelta

from spindle import activity, workflow
from spindle.common import RetryPolicy

TASK_QUEUE = "fault"

FAST_RETRY = RetryPolicy(initial_interval=timedelta(milliseconds=100), backoff_coefficient=1.0,
                         maximum_interval=timedelta(milliseconds=200))
STEP_TIMEOUT = timedelta(seconds=2)


@activity.defn
async def f_add_one(x: int) -> int:
    return x + 1


@workflow.defn(name="fchain3")
class FChain3:
    """Three activities in sequence; returns x + 3."""

    @workflow.run
    async def run(self, x: int) -> int:
        for _ in range(3):
            x = await workflow.execute_activity(f_add_one, x, start_to_close_timeout=STEP_TIMEOUT,
                                                retry_policy=FAST_RETRY)
        return x


@workflow.defn(name="fsigwait")
async def fsigwait(n: int) -> list[str]:
    """Collects ``n`` signals named "go" and returns their payloads in order."""
    got: list[str] = []
    for _ in range(n):
        got.append(str(await workflow.wait_for_signal("go")))
    return got


@workflow.defn(name="ftimer")
async def ftimer(x: int) -> int:
    """A durable timer between two activities; returns x + 2."""
    x = await workflow.execute_activity(f_add_one, x, start_to_close_timeout=STEP_TIMEOUT, retry_policy=FAST_RETRY)
    await workflow.sleep(0.3)
    return await workflow.execute_activity(f_add_one, x, start_to_close_timeout=STEP_TIMEOUT, retry_policy=FAST_RETRY)


@workflow.defn(name="fparent")
async def fparent(x: int) -> int:
    """``ftimer`` as a child (its start and its close reach another execution); returns x + 2."""
    return int(await workflow.execute_child_workflow(ftimer, x, id=f"{workflow.info().workflow_id}-child"))


# ---------------------------------------------------------------- blocking pieces (worker kill -9)

def _mark(kind: str, key: str) -> None:
    d = os.environ.get("FAULT_MARKERS")
    if not d:
        return
    with open(os.path.join(d, f"{kind}-{key}"), "a") as f:
        f.write(f"{os.getpid()}\n")
        f.flush()
        os.fsync(f.fileno())


def _block() -> None:
    if os.environ.get("FAULT_BLOCK"):
        time.sleep(600)  # until the test kills this process


def marker_count(directory: str, kind: str, key: str) -> int:
    try:
        with open(os.path.join(directory, f"{kind}-{key}")) as f:
            return sum(1 for line in f if line.strip())
    except FileNotFoundError:
        return 0


@activity.defn
def f_blocking_add(key: str, x: int) -> int:
    """Writes a marker, blocks while FAULT_BLOCK is set (thread-pool activity), returns x + 1."""
    _mark("activity", key)
    _block()
    return x + 1


def _side(key: str) -> int:
    _mark("wftask", key)
    _block()
    return 41


@workflow.defn(name="factblock", check_determinism=False)
class FActBlock:
    """One activity that blocks in the first worker; returns its result."""

    @workflow.run
    async def run(self, key: str, x: int) -> int:
        return await workflow.execute_activity(f_blocking_add, key, x, start_to_close_timeout=STEP_TIMEOUT,
                                               retry_policy=FAST_RETRY)


@workflow.defn(name="fwftblock", check_determinism=False)
class FWftBlock:
    """A workflow task that blocks in the first worker (inside a side effect).

    ``after_activity`` puts the blocking task second (after an activity: the worker holds the run in
    its sticky cache then), otherwise it is the first workflow task of the run.
    """

    @workflow.run
    async def run(self, key: str, after_activity: bool) -> int:
        base = 0
        if after_activity:
            base = await workflow.execute_activity(f_add_one, 0, start_to_close_timeout=STEP_TIMEOUT,
                                                   retry_policy=FAST_RETRY)
        v = workflow.side_effect(lambda: _side(key))
        return base + v


WORKFLOWS = [FChain3, fsigwait, ftimer, fparent, FActBlock, FWftBlock]
ACTIVITIES = [f_add_one, f_blocking_add]
