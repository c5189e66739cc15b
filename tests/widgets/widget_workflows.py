"""Workflows and activities whose recorded histories the widget tests use.

``make_fixtures.py`` runs them on an embedded control plane and saves their
histories; the live-update test and ``examples/notebooks/tour.ipynb`` run them too.
"""

from __future__ import annotations

import asyncio

from datetime import timedelta
from typing import Any

from spindle import activity, workflow
from spindle.common import RetryPolicy
from spindle.exceptions import ActivityError, ApplicationError

__all__ = [
    "ACTIVITIES",
    "WORKFLOWS",
    "Child",
    "Kitchen",
    "Doomed",
    "Fanout",
    "Waiter",
    "DSL_YAML",
    "add_one",
    "always_fails",
    "flaky",
]

FAST_RETRY = RetryPolicy(initial_interval=timedelta(milliseconds=10), backoff_coefficient=1.0, maximum_attempts=5)
_TIMEOUT = timedelta(seconds=30)


@activity.defn
async def add_one(x: int) -> int:
    """x + 1."""
    return x + 1


@activity.defn
async def flaky(key: str) -> str:
    """Fails on attempts 1 and 2, succeeds on the third."""
    attempt = activity.info().attempt
    if attempt < 3:
        raise ApplicationError(f"transient failure on attempt {attempt}", type="Transient")
    return f"ok {key} after {attempt} attempts"


@activity.defn
async def always_fails(reason: str) -> None:
    """Raises a non-retryable error."""
    raise ApplicationError(reason, {"code": 402}, type="CardDeclined", non_retryable=True)


@activity.defn(name="extract_sales")
async def extract_sales(date: str) -> list[int]:
    """A made-up day of sales."""
    return [len(date), 3, 5]


@activity.defn(name="summarise_region")
async def summarise_region(region: str, rows: list[int]) -> dict[str, Any]:
    """A region's total; the region ``bad`` fails."""
    if region == "bad":
        raise ApplicationError("no data for region bad", non_retryable=True)
    return {"region": region, "revenue": sum(rows)}


@activity.defn(name="publish_report")
async def publish_report(summary: Any) -> str:
    """Pretends to publish."""
    return f"published {summary}"


@workflow.defn
class Child:
    """A child workflow: one activity."""

    @workflow.run
    async def run(self, n: int) -> int:
        return await workflow.execute_activity(add_one, n, start_to_close_timeout=_TIMEOUT)


@workflow.defn
class Kitchen:
    """Every kind of node: retried and failed activities, parallel activities, a timer,
    Version and SideEffect markers, a child workflow, a signal and an update."""

    def __init__(self) -> None:
        self.approved_by: str | None = None
        self.discount = 0

    @workflow.run
    async def run(self, order_id: str) -> dict[str, Any]:
        version = workflow.get_version("discount-v2", workflow.DEFAULT_VERSION, 2)
        token = workflow.side_effect(lambda: f"tok-{order_id}")
        charged = await workflow.execute_activity(
            flaky, order_id, start_to_close_timeout=_TIMEOUT, retry_policy=FAST_RETRY
        )
        declined = ""
        try:
            await workflow.execute_activity(always_fails, "card declined", start_to_close_timeout=_TIMEOUT)
        except ActivityError as e:
            declined = str(e.cause)
        a, b = await asyncio.gather(
            workflow.execute_activity(add_one, 1, start_to_close_timeout=_TIMEOUT),
            workflow.execute_activity(add_one, 2, start_to_close_timeout=_TIMEOUT),
        )
        await workflow.sleep(timedelta(milliseconds=50))
        child = await workflow.execute_child_workflow(Child.run, 41, id=f"{workflow.info().workflow_id}-child")
        await workflow.wait_condition(lambda: self.approved_by is not None)
        return {
            "version": version, "token": token, "charged": charged, "declined": declined,
            "sum": a + b, "child": child, "approved_by": self.approved_by, "discount": self.discount,
        }

    @workflow.signal
    def approve(self, who: str) -> None:
        """Let the workflow finish."""
        self.approved_by = who

    @workflow.update
    async def set_discount(self, pct: int) -> int:
        """Change the discount; returns the old one."""
        old, self.discount = self.discount, pct
        return old


@workflow.defn
class Doomed:
    """Its activity fails every attempt, so the workflow fails."""

    @workflow.run
    async def run(self) -> None:
        await workflow.execute_activity(
            flaky, "never", start_to_close_timeout=_TIMEOUT,
            retry_policy=RetryPolicy(initial_interval=timedelta(milliseconds=10), maximum_attempts=2),
        )


@workflow.defn
class Fanout:
    """``batches`` rounds of ``width`` parallel activities: a long history, fast."""

    @workflow.run
    async def run(self, batches: int, width: int) -> int:
        total = 0
        for batch in range(batches):
            results = await asyncio.gather(*(
                workflow.execute_activity(add_one, batch * width + i, start_to_close_timeout=_TIMEOUT)
                for i in range(width)
            ))
            total += sum(results)
        return total


@workflow.defn
class Waiter:
    """Runs an activity, then one more per signal ``step`` until signal ``step`` gets 0."""

    def __init__(self) -> None:
        self.queue: list[int] = []

    @workflow.run
    async def run(self) -> int:
        total = await workflow.execute_activity(add_one, 0, start_to_close_timeout=_TIMEOUT)
        while True:
            await workflow.wait_condition(lambda: bool(self.queue))
            value = self.queue.pop(0)
            if value == 0:
                return total
            total += await workflow.execute_activity(add_one, value, start_to_close_timeout=_TIMEOUT)

    @workflow.signal
    def step(self, value: int) -> None:
        """Queue a value (0 ends the workflow)."""
        self.queue.append(value)


DSL_YAML = """\
name: sales_report
version: 1
task_queue: widgets
inputs:
  date: {type: string, required: true}
  regions: {type: array, default: [eu, us]}
steps:
  - id: extract
    activity: extract_sales
    args: ["${{ inputs.date }}"]
    start_to_close: 30s
  - id: per_region
    activity: summarise_region
    depends_on: [extract]
    for_each: "${{ inputs.regions }}"
    args: ["${{ item }}", "${{ steps.extract.result }}"]
  - id: risky
    activity: summarise_region
    depends_on: [extract]
    args: ["bad", "${{ steps.extract.result }}"]
    on_failure: continue
  - id: totals
    depends_on: [per_region]
    set:
      revenue: "${{ steps.per_region.result | sum(attribute='revenue') }}"
  - id: pause
    sleep: 10ms
    depends_on: [totals]
  - id: approval
    wait_for_signal: approve
    depends_on: [pause]
  - id: publish
    activity: publish_report
    depends_on: [approval]
    when: "${{ steps.approval.result == 'yes' }}"
    args: ["${{ steps.totals.result }}"]
  - id: archive
    activity: publish_report
    depends_on: [approval]
    when: "${{ steps.approval.result == 'never' }}"
    args: ["archive"]
outputs:
  report: "${{ steps.publish.result }}"
"""

ACTIVITIES = [add_one, flaky, always_fails, extract_sales, summarise_region, publish_report]
WORKFLOWS = [Child, Kitchen, Doomed, Fanout, Waiter]
