"""grpc.health.v1 on cluster members: NOT_SERVING while a member owns no shard, SERVING once it owns one."""

from __future__ import annotations

from functools import partial

import grpc
import pytest

from grpc_health.v1 import health_pb2, health_pb2_grpc
from spanner_emulator import SpannerTestInstance
from waiting import until as _wait_until

from spindle.controlplane.cluster import ClusterConfig, ClusterNode, StoreConfig

pytestmark = pytest.mark.timeout(120)

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


def member(inst: SpannerTestInstance, db: str, name: str) -> ClusterNode:
    from spindle.controlplane.store.spanner import SpannerStore

    cfg = ClusterConfig(store=StoreConfig("spanner", inst.project, inst.instance_id, db), num_shards=1,
                        listen="127.0.0.1:0", member_id=name, lease_ttl=2.0, lease_renew_interval=0.3)
    return ClusterNode(cfg, store=SpannerStore(inst.project, inst.instance_id, db, client=inst.client))


async def status(node: ClusterNode) -> int:
    async with grpc.aio.insecure_channel(node.address) as ch:
        return (await health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(), timeout=5)).status


until = partial(_wait_until, timeout=30.0, interval=0.1)


async def test_a_member_serves_only_while_it_owns_shards(spanner_instance: SpannerTestInstance) -> None:
    db = spanner_instance.new_database_id()
    a, b = member(spanner_instance, db, "a"), member(spanner_instance, db, "b")
    await a.start()
    await b.start()
    try:
        # one shard, two members: exactly one owns it and serves, the other does not
        async def settled() -> bool:
            owners = [n for n in (a, b) if n.engine.shards]
            return len(owners) == 1 and await status(owners[0]) == SERVING
        await until(settled)
        owner, idle = (a, b) if a.engine.shards else (b, a)
        assert not idle.engine.shards
        await idle.health.check()
        assert await status(idle) == NOT_SERVING
        await owner.stop()  # hands its shard over: the other member takes it and starts serving

        async def took_over() -> bool:
            return bool(idle.engine.shards) and await status(idle) == SERVING
        await until(took_over)
    finally:
        for n in (a, b):
            if n.server is not None:
                try:
                    await n.stop()
                except Exception:  # noqa: BLE001 - already stopped
                    pass
