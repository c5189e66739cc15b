"""Reset in a cluster: the call reaches whichever member owns the workflow's shard (the new run lives there too)."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from test_cluster_inprocess import cluster  # noqa: F401  (the three-member fixture)

from spindle import workflow
from spindle.client import Client, ResetType, WorkflowExecutionStatus
from spindle.controlplane.cluster import ClusterNode
from spindle.worker import Worker

pytestmark = pytest.mark.timeout(120)


@workflow.defn
class Gather:
    def __init__(self) -> None:
        self.got: list[str] = []

    @workflow.run
    async def run(self) -> list[str]:
        await workflow.wait_condition(lambda: "done" in self.got)
        return self.got

    @workflow.signal
    def add(self, item: str) -> None:
        self.got.append(item)

    @workflow.query
    def items(self) -> list[str]:
        return self.got


async def test_reset_is_routed_to_the_owner_of_the_workflow(cluster: list[ClusterNode]) -> None:  # noqa: F811
    a, b, _ = cluster
    ns_id = a.engine.namespaces.get("default").id
    # a workflow id whose shard member a does not own: a's frontend must forward the reset
    wid = next(w for w in (f"rst-{i}" for i in range(1000)) if a.engine.shard_id_of(ns_id, w) not in a.engine.shards)
    tq = "tq-" + uuid.uuid4().hex[:6]
    client = await Client.connect(a.address)
    worker_client = await Client.connect(b.address)
    try:
        async with Worker(worker_client, task_queue=tq, workflows=[Gather]):
            handle = await client.start_workflow(Gather.run, id=wid, task_queue=tq)
            await handle.signal(Gather.add, "a")
            for _ in range(200):
                try:
                    if await handle.query(Gather.items) == ["a"]:
                        break
                except Exception:  # noqa: BLE001 - the first task may still be in flight
                    pass
                await asyncio.sleep(0.05)
            new_run = await handle.reset(type=ResetType.FIRST_WORKFLOW_TASK, reason="cluster reset")
            assert new_run != handle.result_run_id
            current = client.get_workflow_handle(wid)
            await current.signal(Gather.add, "done")
            assert await current.result() == ["a", "done"]
        old = await client.get_workflow_handle(wid, run_id=handle.result_run_id).describe()
        assert old.status is WorkflowExecutionStatus.TERMINATED
        assert (await current.describe()).run_id == new_run
    finally:
        await client.close()
        await worker_client.close()
