"""Record real histories of the "Order" workflow versions in a time-skipping environment."""

from __future__ import annotations

import asyncio
import uuid

from typing import Any

from spindle_testing_wfs import ACTIVITIES

from spindle.client import History
from spindle.testing import WorkflowEnvironment
from spindle.worker import Worker


async def _record(defn: Any, order_ids: list[str]) -> list[History]:
    out = []
    async with await WorkflowEnvironment.start_time_skipping() as env:
        q = f"orders-{uuid.uuid4().hex[:8]}"
        async with Worker(env.client, task_queue=q, workflows=[defn], activities=ACTIVITIES):
            for oid in order_ids:
                handle = await env.client.start_workflow(defn.run, oid, id=f"order-{oid}", task_queue=q)
                await handle.result()
                out.append(await handle.fetch_history())
    return out


def record_histories(defn: Any, order_ids: list[str]) -> list[History]:
    """Run ``defn`` once per order id to completion and return the histories (sync, for fixtures)."""
    return asyncio.run(_record(defn, order_ids))
