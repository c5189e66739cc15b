"""A single cluster member on a SQLite store (``spindle server start --config`` with ``store: {sqlite: ...}``).

It owns every shard and has no leases, so no router: its engine keeps the local
cross-shard port. (Before the port existed, the member's engine routed starts, cancels,
terminations and child starts through a router that only a clustered member sets: every
start failed with "internal error: AttributeError".)
"""

from __future__ import annotations

import asyncio
import uuid

from datetime import timedelta
from pathlib import Path

from spindle import workflow
from spindle.client import Client
from spindle.controlplane.cluster import ClusterConfig, ClusterNode, StoreConfig
from spindle.worker import Worker


@workflow.defn
class Child:
    @workflow.run
    async def run(self, n: int) -> int:
        return n * 2


@workflow.defn
class Parent:
    @workflow.run
    async def run(self, n: int) -> int:
        return await workflow.execute_child_workflow(Child.run, n, id=f"{workflow.info().workflow_id}-child")


async def test_a_sqlite_member_starts_workflows_and_children(tmp_path: Path) -> None:
    cfg = ClusterConfig(store=StoreConfig("sqlite", path=str(tmp_path / "m.db")), num_shards=4, listen="127.0.0.1:0",
                        member_id="solo")
    node = ClusterNode(cfg)
    await node.start()
    try:
        client = await Client.connect(node.address)
        q = f"q-{uuid.uuid4().hex[:6]}"
        async with Worker(client, task_queue=q, workflows=[Parent, Child]):
            handle = await client.start_workflow(Parent.run, 21, id="parent", task_queue=q,
                                                 execution_timeout=timedelta(seconds=20))
            assert await asyncio.wait_for(handle.result(), 15) == 42
    finally:
        await node.stop()


@workflow.defn
class Waits:
    @workflow.run
    async def run(self) -> None:
        await workflow.wait_condition(lambda: False)


async def test_spindle_server_start_with_a_sqlite_config(tmp_path: Path) -> None:
    """Issue 16: the documented ``store: {sqlite: {path}}`` config, through the real command.

    Before: every start, terminate and namespace delete failed with ``INTERNAL AttributeError:
    'ClusterEngine' object has no attribute 'router'``. Now: a workflow (with a child) completes,
    one is terminated, and a namespace with a running execution is deleted (force).
    """
    import yaml

    from _members import Member

    cfg = tmp_path / "member.yaml"
    cfg.write_text(yaml.safe_dump({"store": {"sqlite": {"path": str(tmp_path / "m.db")}}, "num_shards": 4,
                                   "listen": "127.0.0.1:0", "member_id": "solo", "namespaces": ["default", "scratch"],
                                   "auth": {"mode": "none"}, "log_level": "info",
                                   "metrics": {"listen": "127.0.0.1:0"}}))
    member = Member(cfg, {}).start().wait_listening()
    try:
        client = await Client.connect(member.address)
        q = f"q-{uuid.uuid4().hex[:6]}"
        async with Worker(client, task_queue=q, workflows=[Parent, Child, Waits]):
            handle = await client.start_workflow(Parent.run, 5, id="sqlite-parent", task_queue=q,
                                                 execution_timeout=timedelta(seconds=20))
            assert await asyncio.wait_for(handle.result(), 15) == 10
            waiting = await client.start_workflow(Waits.run, id="sqlite-waits", task_queue=q)
            await waiting.terminate("done with it")
            desc = await waiting.describe()
            assert desc.status.name == "TERMINATED"
        scratch = await Client.connect(member.address, namespace="scratch")
        await scratch.start_workflow(Waits.run, id="in-scratch", task_queue=q)
        assert await client.delete_namespace("scratch", force=True) == 1  # its running execution terminated
        names = [n.name for n in await client.list_namespaces()]
        assert "scratch" not in names and "default" in names
        assert "INTERNAL" not in member.log() and "Traceback" not in member.log(), member.log()[-3000:]
    finally:
        member.stop()
