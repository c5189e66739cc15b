"""Erasure on a cluster (issue 26): three members in one process on one Spanner emulator database.

DeleteWorkflowExecution sent to any member runs on the owner of the run's shard; an erasure job
started through any member runs on exactly one member (the owner of its job id's shard) and erases
what its query selects, whichever members own the runs.
"""

from __future__ import annotations

import asyncio
import json
import uuid

from collections.abc import AsyncIterator

import grpc
import pytest

from spanner_emulator import SpannerTestInstance, spanner_instance_fixture

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.api import service_pb2_grpc
from spindle.controlplane.cluster import ClusterConfig, ClusterNode, StoreConfig

spanner_instance = spanner_instance_fixture()
SHARDS = 8
NS = "gdpr"


def node(inst: SpannerTestInstance, db: str, name: str) -> ClusterNode:
    from spindle.controlplane.store.spanner import SpannerStore

    cfg = ClusterConfig(store=StoreConfig("spanner", inst.project, inst.instance_id, db), num_shards=SHARDS,
                        listen="127.0.0.1:0", member_id=name, lease_ttl=2.0, lease_renew_interval=0.3)
    return ClusterNode(cfg, store=SpannerStore(inst.project, inst.instance_id, db, client=inst.client))


@pytest.fixture
async def cluster(spanner_instance: SpannerTestInstance) -> AsyncIterator[list[ClusterNode]]:
    db = spanner_instance.new_database_id()
    nodes = [node(spanner_instance, db, f"m{i}") for i in range(3)]
    await nodes[0].start()
    await asyncio.gather(*(n.start() for n in nodes[1:]))
    try:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 20
        while not (all(n.engine.shards for n in nodes) and sum(len(n.engine.shards) for n in nodes) == SHARDS):
            assert loop.time() < deadline, "shards never balanced"
            await asyncio.sleep(0.1)
        yield nodes
    finally:
        for n in nodes:
            if n.server is not None:
                await n.stop()


async def test_deletes_and_a_job_run_on_the_owners(cluster: list[ClusterNode]) -> None:
    a, b, c = cluster
    chans = [grpc.aio.insecure_channel(n.address) for n in cluster]
    sa, sb, sc = (service_pb2_grpc.WorkflowServiceStub(ch) for ch in chans)
    try:
        await sa.CreateNamespace(svc.CreateNamespaceRequest(name=NS, search_attributes={"CustomerId": 1}), timeout=20)
        for n in cluster:  # (members refresh their namespaces periodically; not waited for here)
            await n.namespaces.load()

        async def start(wid: str, customer: str) -> str:
            req = svc.StartWorkflowExecutionRequest(namespace=NS, workflow_id=wid, workflow_type="Order",
                                                    task_queue="nobody", request_id=uuid.uuid4().hex)
            req.search_attributes.indexed_fields["CustomerId"].metadata["encoding"] = b"json/plain"
            req.search_attributes.indexed_fields["CustomerId"].data = json.dumps(customer).encode()
            return str((await sa.StartWorkflowExecution(req, timeout=20)).run_id)

        selected = {f"c42-{i}": await start(f"c42-{i}", "c-42") for i in range(12)}
        kept = {f"c7-{i}": await start(f"c7-{i}", "c-7") for i in range(4)}
        ns_id = a.namespaces.get(NS).id
        owners = {a.engine.shard_id_of(ns_id, wid) for wid in selected}
        assert len({n.member_id for n in cluster for s in owners if s in n.engine.shards}) > 1

        async def describe(stub: service_pb2_grpc.WorkflowServiceStub, wid: str) -> grpc.StatusCode:
            try:
                await stub.DescribeWorkflowExecution(svc.DescribeWorkflowExecutionRequest(
                    namespace=NS, execution=pb.WorkflowExecution(workflow_id=wid)), timeout=20)
            except grpc.aio.AioRpcError as e:
                return e.code()
            return grpc.StatusCode.OK

        # one run, through a member that does not own it (forwarded), then a job through another member
        wid0 = next(w for w in selected if a.engine.shard_id_of(ns_id, w) not in b.engine.shards)
        await sb.DeleteWorkflowExecution(svc.DeleteWorkflowExecutionRequest(
            namespace=NS, workflow_execution=pb.WorkflowExecution(workflow_id=wid0)), timeout=20)
        assert await describe(sc, wid0) == grpc.StatusCode.NOT_FOUND

        job_shard = a.engine.shard_id_of(ns_id, "job-42")
        await sc.StartBatchOperation(svc.StartBatchOperationRequest(
            namespace=NS, job_id="job-42", visibility_query="CustomerId = 'c-42'",
            deletion_operation=svc.BatchOperationDeletion(identity="dpo")), timeout=20)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 30
        while True:
            d = await sa.DescribeBatchOperation(svc.DescribeBatchOperationRequest(namespace=NS, job_id="job-42"),
                                                timeout=20)
            if d.state != svc.BATCH_OPERATION_STATE_RUNNING:
                break
            assert loop.time() < deadline, d
            await asyncio.sleep(0.2)
        assert d.state == svc.BATCH_OPERATION_STATE_COMPLETED and d.complete_operation_count == 11, d
        ran = [n.member_id for n in cluster if n.erasure is not None and (ns_id, "job-42") in n.erasure.jobs_run]
        assert ran == [n.member_id for n in cluster if job_shard in n.engine.shards], ran
        for wid in selected:
            assert await describe(sb, wid) == grpc.StatusCode.NOT_FOUND, wid
        for wid in kept:
            assert await describe(sb, wid) == grpc.StatusCode.OK, wid
    finally:
        for ch in chans:
            await ch.close()
