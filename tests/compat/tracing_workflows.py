"""The workflows and activities of the tracing tests, shared by the in-process tests
(``test_compat_opentelemetry.py``) and the worker process of the restart test (``_tracing_worker.py``)."""

from __future__ import annotations

import collections

from datetime import timedelta

from spindle import activity, workflow
from spindle.common import RetryPolicy

attempts: collections.Counter[str] = collections.Counter()


@activity.defn
async def greet(name: str) -> str:
    return f"hello {name}"


@activity.defn
async def flaky(key: str) -> str:
    attempts[key] += 1
    if attempts[key] < 2:
        raise RuntimeError("first attempt fails")
    return "ok"


@workflow.defn
class TracedChild:
    @workflow.run
    async def run(self, name: str) -> str:
        return await workflow.execute_activity(greet, name, start_to_close_timeout=timedelta(seconds=10))


@workflow.defn
class TracedParent:
    def __init__(self) -> None:
        self.go = False

    @workflow.signal
    def proceed(self) -> None:
        self.go = True

    @workflow.run
    async def run(self, key: str, wait: bool = True) -> list[str]:
        """An activity, (with ``wait``) the signal ``proceed``, a flaky activity (two attempts), a child."""
        a = await workflow.execute_activity(greet, "a", start_to_close_timeout=timedelta(seconds=10))
        if wait:
            await workflow.wait_condition(lambda: self.go)
        b = await workflow.execute_activity(
            flaky, key, start_to_close_timeout=timedelta(seconds=10),
            retry_policy=RetryPolicy(initial_interval=timedelta(milliseconds=10), maximum_attempts=3))
        c = await workflow.execute_child_workflow(TracedChild.run, "child", id=f"{workflow.info().workflow_id}-child")
        return [a, b, c]
