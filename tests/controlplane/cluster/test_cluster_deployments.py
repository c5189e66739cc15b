"""Worker build versioning on a three-member cluster: routing set on one member holds on the others,
and pins hold while a member leaves in the middle of a deployment change (its shards move)."""

from __future__ import annotations

import asyncio

import grpc
import pytest

from test_cluster_inprocess import cluster  # noqa: F401  (the three-member fixture)
from versioned_wire import PINNED, Wire

from spindle.api import service_pb2 as svc
from spindle.api import service_pb2_grpc
from spindle.controlplane.cluster import ClusterNode

pytestmark = pytest.mark.timeout(120)


async def collect(w: Wire, build: str, want: set[str], timeout: float = 15.0, *, complete: bool = False
                  ) -> dict[str, svc.PollWorkflowTaskQueueResponse]:
    """Poll as ``build`` until a task of every id in ``want`` came (a fan-out poll can end empty while a peer
    hands a reserved task back, so one empty poll does not mean none is left); fails on a task of another id.
    With ``complete``, each task is completed (pinned) as it comes, as a worker would: holding the first tasks
    until the last one came can outlast their 10 s workflow task timeout on a loaded machine."""
    got: dict[str, svc.PollWorkflowTaskQueueResponse] = {}
    end = asyncio.get_running_loop().time() + timeout
    while set(got) != want:
        assert asyncio.get_running_loop().time() < end, f"tasks that never reached {build}: {want - set(got)}"
        t = await w.poll(build, wait=1.0)
        if t.task_token:
            wid = t.workflow_execution.workflow_id
            assert wid in want, f"{build} got a task of {wid}"
            got[wid] = t
            if complete:
                await w.complete(t, build, PINNED)
    return got


async def nothing_for(w: Wire, build: str, seconds: float) -> None:
    end = asyncio.get_running_loop().time() + seconds
    while asyncio.get_running_loop().time() < end:
        t = await w.poll(build, wait=1.0)
        assert not t.task_token, f"{build} got a task of {t.workflow_execution.workflow_id} it must not run"


async def test_pins_and_routing_hold_across_members_and_a_shard_move(cluster: list[ClusterNode]) -> None:  # noqa: F811
    a, b, c = cluster
    async with grpc.aio.insecure_channel(a.address) as ca, grpc.aio.insecure_channel(b.address) as cb, \
            grpc.aio.insecure_channel(c.address) as cc:
        ops_a, workers_b, ops_c = (Wire(service_pb2_grpc.WorkflowServiceStub(ch)) for ch in (ca, cb, cc))
        await nothing_for(workers_b, "1.0", 0.5)  # the versions become known (a poll reaches every member)
        await nothing_for(workers_b, "2.0", 0.5)
        await ops_a.set_current("1.0")
        await asyncio.sleep(1.5)  # the other members reload the routing within a second
        ids = {f"cl-{i}" for i in range(8)}
        for wid in sorted(ids):
            await ops_a.start(wid)
        await collect(workers_b, "1.0", ids, complete=True)
        await ops_c.set_current("2.0")  # changed on another member ...
        await c.stop()  # ... which then leaves: its shards move to a and b
        await asyncio.sleep(1.5)
        for wid in sorted(ids):
            await ops_a.signal(wid)
        await nothing_for(workers_b, "2.0", 3.0)  # pinned: none of them on 2.0, before or after the move
        await collect(workers_b, "1.0", ids)
        fresh = {f"new-{i}" for i in range(4)}
        for wid in sorted(fresh):
            await ops_a.start(wid)
        await collect(workers_b, "2.0", fresh)
