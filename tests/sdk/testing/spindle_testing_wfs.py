"""Workflow versions used by the Replayer and `spindle replay` tests.

All three register the workflow type name "Order": ``OrderV1`` is the recorded code,
``OrderReordered`` runs the same activities in another order (not replay-safe) and
``OrderPatched`` adds a step guarded by ``workflow.patched`` (replay-safe).
"""

from __future__ import annotations

from datetime import timedelta

from spindle import activity, workflow

TIMEOUT = timedelta(seconds=10)


@activity.defn
async def reserve(order_id: str) -> str:
    return f"reserved-{order_id}"


@activity.defn
async def charge(order_id: str) -> str:
    return f"charged-{order_id}"


@activity.defn
async def notify(order_id: str) -> str:
    return f"notified-{order_id}"


ACTIVITIES = [reserve, charge, notify]


@workflow.defn(name="Order")
class OrderV1:
    @workflow.run
    async def run(self, order_id: str) -> list[str]:
        a = await workflow.execute_activity(reserve, order_id, start_to_close_timeout=TIMEOUT)
        await workflow.sleep(timedelta(days=1))
        b = await workflow.execute_activity(charge, order_id, start_to_close_timeout=TIMEOUT)
        return [a, b]


@workflow.defn(name="Order")
class OrderReordered:
    @workflow.run
    async def run(self, order_id: str) -> list[str]:
        b = await workflow.execute_activity(charge, order_id, start_to_close_timeout=TIMEOUT)
        await workflow.sleep(timedelta(days=1))
        a = await workflow.execute_activity(reserve, order_id, start_to_close_timeout=TIMEOUT)
        return [a, b]


@workflow.defn(name="Order")
class OrderPatched:
    @workflow.run
    async def run(self, order_id: str) -> list[str]:
        out = []
        if workflow.patched("notify-first"):
            out.append(await workflow.execute_activity(notify, order_id, start_to_close_timeout=TIMEOUT))
        out.append(await workflow.execute_activity(reserve, order_id, start_to_close_timeout=TIMEOUT))
        await workflow.sleep(timedelta(days=1))
        out.append(await workflow.execute_activity(charge, order_id, start_to_close_timeout=TIMEOUT))
        return out


NOT_A_WORKFLOW = 42
