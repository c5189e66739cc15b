"""Three cluster members in one process on one emulator database: leases, routing, poll fan-out, handover."""

from __future__ import annotations

import asyncio
import uuid

from collections.abc import AsyncIterator
from typing import Any

import pytest

from _workload import ChildWf, MainWf, double, expected, result_with_retry, signal_when_running
from spanner_emulator import SpannerTestInstance

from spindle.client import Client
from spindle.controlplane.cluster import ClusterConfig, ClusterNode, StoreConfig, assign_shards, rendezvous_owner
from spindle.worker import Worker

SHARDS = 8


def node(inst: SpannerTestInstance, db: str, name: str) -> ClusterNode:
    from spindle.controlplane.store.spanner import SpannerStore

    cfg = ClusterConfig(store=StoreConfig("spanner", inst.project, inst.instance_id, db), num_shards=SHARDS,
                        listen="127.0.0.1:0", member_id=name, lease_ttl=2.0, lease_renew_interval=0.3)
    return ClusterNode(cfg, store=SpannerStore(inst.project, inst.instance_id, db, client=inst.client))


async def wait_balanced(nodes: list[ClusterNode], timeout: float = 20.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        owned = [set(n.engine.shards) for n in nodes]
        union = set().union(*owned)
        if len(union) == SHARDS and sum(len(o) for o in owned) == SHARDS and all(owned):
            return
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"shards never balanced: {owned}")
        await asyncio.sleep(0.1)


@pytest.fixture
async def cluster(spanner_instance: SpannerTestInstance) -> AsyncIterator[list[ClusterNode]]:
    db = spanner_instance.new_database_id()
    nodes = [node(spanner_instance, db, f"m{i}") for i in range(3)]
    await nodes[0].start()  # creates the schema, takes every shard
    await asyncio.gather(*(n.start() for n in nodes[1:]))
    try:
        await wait_balanced(nodes)
        yield nodes
    finally:
        for n in nodes:
            if n.server is not None:
                await n.stop()


def test_assignment_is_balanced_and_mostly_stable() -> None:
    plan = assign_shards(16, ["a", "b", "c"])
    counts = sorted(list(plan.values()).count(m) for m in "abc")
    assert counts == [5, 5, 6] and set(plan) == set(range(16))
    assert assign_shards(16, ["c", "b", "a"]) == plan  # every member computes the same
    after = assign_shards(16, ["a", "b"])
    assert sorted(list(after.values()).count(m) for m in "ab") == [8, 8]
    moved = sum(1 for s in range(16) if plan[s] != "c" and after[s] != plan[s])
    assert moved <= 4  # mostly only c's shards move
    assert rendezvous_owner(3, []) is None and assign_shards(4, []) == {}


async def test_workflows_across_members_and_a_handover(cluster: list[ClusterNode]) -> None:
    a, b, c = cluster
    tq = "tq-" + uuid.uuid4().hex[:6]
    starter = await Client.connect(a.address)  # starts and signals go through member a only
    worker_client = await Client.connect(b.address)  # the worker polls member b only (fan-out finds every task)
    try:
        async with Worker(worker_client, task_queue=tq, workflows=[MainWf, ChildWf], activities=[double]):
            ids = [f"wf-{i}" for i in range(12)]
            for i, wid in enumerate(ids):
                await starter.start_workflow(MainWf.run, i, 2, True, id=wid, task_queue=tq)
            for wid in ids:
                await signal_when_running(starter, wid, 1)
            assert [await result_with_retry(starter, wid) for wid in ids[:6]] == [expected(i) for i in range(6)]
            # member c leaves gracefully: a and b take its shards; the rest still finish
            await c.stop()
            await wait_balanced([a, b])
            assert [await result_with_retry(starter, wid) for wid in ids[6:]] == [expected(i) for i in range(6, 12)]
            more = [f"late-{i}" for i in range(4)]
            for i, wid in enumerate(more):
                await starter.start_workflow(MainWf.run, i, 1, False, id=wid, task_queue=tq)
            assert [await result_with_retry(starter, w) for w in more] == [4 * i for i in range(4)]
        hist = await starter.get_workflow_handle("wf-3").fetch_history()
        assert [e.event_id for e in hist.events] == list(range(1, len(hist.events) + 1))
        assert any(e.event_type == "ChildWorkflowExecutionCompleted" for e in hist.events)
    finally:
        await starter.close()
        await worker_client.close()


async def test_a_forwarded_start_refusal_keeps_the_running_run_id(cluster: list[ClusterNode]) -> None:
    """WorkflowAlreadyStartedError.run_id survives the forward from the member a client talks to to the owner."""
    from spindle.exceptions import WorkflowAlreadyStartedError

    a = cluster[0]
    ns_id = a.engine.namespaces.get("default").id
    wid = next(w for w in (f"fwd-{i}" for i in range(1000)) if a.engine.shard_id_of(ns_id, w) not in a.engine.shards)
    client = await Client.connect(a.address)
    try:
        first = await client.start_workflow(MainWf.run, 1, 1, False, id=wid, task_queue="nobody")
        with pytest.raises(WorkflowAlreadyStartedError) as err:
            await client.start_workflow(MainWf.run, 1, 1, False, id=wid, task_queue="nobody")
        assert err.value.run_id == first.result_run_id and err.value.workflow_id == wid
        await first.terminate("done")
    finally:
        await client.close()


async def test_concurrent_view_refreshes_share_one_read(cluster: list[ClusterNode]) -> None:
    """While a member is down every request for its shards refreshes the view: one store read serves them all."""
    a = cluster[0]
    router = a.engine.cross_shard.router  # type: ignore[attr-defined]
    store = a.leases.store  # type: ignore[union-attr]
    reads = 0
    list_leases = store.list_leases
    here = asyncio.get_running_loop()

    async def counting_list_leases() -> Any:
        nonlocal reads
        if asyncio.get_running_loop() is here:  # the lease manager's own rounds run on another loop
            reads += 1
        return await list_leases()

    store.list_leases = counting_list_leases
    try:
        await asyncio.gather(*(router.refresh() for _ in range(50)))
        assert reads == 1
        assert set(router.leases.view.leases) == set(range(SHARDS))
        await router.refresh()  # a later call reads again
        assert reads == 2
    finally:
        del store.list_leases


async def test_bad_input_is_refused_by_every_path_of_a_cluster(cluster: list[ClusterNode]) -> None:
    """Issue 16: the field rules hold at a member's public port (before routing) and on the internal RPC.

    A start for a workflow id another member owns, with a NUL byte in the id or a timeout of
    2**63-1, is INVALID_ARGUMENT naming the field; so are a poll with a 1 MB identity (the
    cluster frontend's own poll) and internal operations a peer could send with such values.
    """
    import grpc

    from spindle.api import messages_pb2 as pb
    from spindle.api import service_pb2 as svc
    from spindle.api import service_pb2_grpc
    from spindle.controlplane.cluster._peers import b64
    from spindle.controlplane.errors import InvalidArgument

    a, b = cluster[0], cluster[1]
    ns_id = a.engine.namespaces.get("default").id
    remote = [w for w in (f"bad-{i}\x00" for i in range(1000)) if a.engine.shard_id_of(ns_id, w) not in a.engine.shards]
    ch = grpc.aio.insecure_channel(a.address)
    stub = service_pb2_grpc.WorkflowServiceStub(ch)
    try:
        cases = [
            (stub.StartWorkflowExecution(svc.StartWorkflowExecutionRequest(
                namespace="default", workflow_id=remote[0], workflow_type="T", task_queue="q")), "workflow_id: control"),
            (stub.StartWorkflowExecution(svc.StartWorkflowExecutionRequest(
                namespace="default", workflow_id=remote[0].rstrip("\x00"), workflow_type="T", task_queue="q",
                execution_timeout_ms=2**63 - 1)), "execution_timeout_ms: 9223372036854775807 ms is over"),
            (stub.PollWorkflowTaskQueue(svc.PollWorkflowTaskQueueRequest(
                namespace="default", task_queue="q", identity="x" * 1_000_000)), "identity: 1000000 characters"),
            (stub.PollActivityTaskQueue(svc.PollActivityTaskQueueRequest(
                namespace="default", task_queue="q\x00")), "task_queue: control"),
        ]
        for call, needle in cases:
            with pytest.raises(grpc.aio.AioRpcError) as ei:
                await call
            assert ei.value.code() == grpc.StatusCode.INVALID_ARGUMENT and needle in (ei.value.details() or ""), \
                (ei.value.code(), ei.value.details())
    finally:
        await ch.close()
    # the internal RPC, as a peer would send it to the owner
    owned_by_b = next(w for w in (f"int-{i}" for i in range(1000)) if b.engine.shard_id_of(ns_id, w) in b.engine.shards)
    start = svc.StartWorkflowExecutionRequest(namespace="default", workflow_id=owned_by_b, workflow_type="T",
                                              task_queue="q", execution_timeout_ms=2**63 - 1)
    with pytest.raises(InvalidArgument, match="execution_timeout_ms"):
        await a.peers.call(b.internal_address, {"op": "start_workflow", "ns": "default",
                                                "req": b64(start.SerializeToString())}, timeout=10)
    ex = pb.WorkflowExecution(workflow_id=owned_by_b)
    with pytest.raises(InvalidArgument, match="identity: 1000000 characters"):
        await a.peers.call(b.internal_address, {"op": "terminate", "ns": "default", "execution": b64(ex.SerializeToString()),
                                                "details": b64(pb.Payloads().SerializeToString()),
                                                "identity": "x" * 1_000_000}, timeout=10)
    client = await Client.connect(a.address)
    try:  # still serving: a workflow on b's shard starts through a
        h = await client.start_workflow(MainWf.run, 1, 1, False, id=owned_by_b, task_queue="nobody")
        await h.terminate("done")
    finally:
        await client.close()


async def test_a_schedule_on_one_member_is_woken_by_the_close_of_its_run_on_another(cluster: list[ClusterNode]) -> None:
    """BUFFER_ONE: the second backfilled action waits for the first run; that run lives on another member's
    shard, and its close reaches the schedule's owner through the internal op ``schedule_run_closed``."""
    from datetime import datetime, timezone

    from spindle import workflow
    from spindle.api import messages_pb2 as pb
    from spindle.api import service_pb2 as svc

    @workflow.defn(name="sched_waiter")
    class Waiter:
        def __init__(self) -> None:
            self.go = False

        @workflow.run
        async def run(self) -> None:
            await workflow.wait_condition(lambda: self.go)

        @workflow.signal
        def release(self) -> None:
            self.go = True

    a, b, _ = cluster
    ns_id = a.engine.namespaces.get("default").id
    sid = next(s for s in (f"sched-{i}" for i in range(1000)) if a.engine.shard_id_of(ns_id, s) in a.engine.shards)
    first = "2020-01-01T00:00:00Z"
    prefix = next(p for p in (f"cross-{i}" for i in range(1000))
                  if a.engine.shard_id_of(ns_id, f"{p}-{first}") not in a.engine.shards)
    tq = "tq-" + uuid.uuid4().hex[:6]
    client = await Client.connect(b.address)
    try:
        stub = client.stub
        await stub.CreateSchedule(svc.CreateScheduleRequest(namespace="default", schedule_id=sid, schedule=pb.Schedule(
            spec=pb.ScheduleSpec(intervals=[pb.ScheduleIntervalSpec(every_ms=3_600_000)],
                                 end_at_ms=int(datetime(2020, 1, 2, tzinfo=timezone.utc).timestamp() * 1000)),
            action=pb.ScheduleActionStartWorkflow(workflow_id=prefix, workflow_type="sched_waiter", task_queue=tq),
            policies=pb.SchedulePolicies(overlap_policy=pb.SCHEDULE_OVERLAP_POLICY_BUFFER_ONE))))
        t0 = int(datetime(2020, 1, 1, tzinfo=timezone.utc).timestamp() * 1000)
        await stub.PatchSchedule(svc.PatchScheduleRequest(namespace="default", schedule_id=sid, patch=svc.SchedulePatch(
            backfill_request=[svc.ScheduleBackfillRequest(start_time_ms=t0, end_time_ms=t0 + 3_600_000)])))

        async def described() -> svc.DescribeScheduleResponse:
            return await stub.DescribeSchedule(svc.DescribeScheduleRequest(namespace="default", schedule_id=sid))

        async with Worker(client, task_queue=tq, workflows=[Waiter]):
            for _ in range(200):
                if (await described()).info.action_count == 1:
                    break
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.5)
            d = await described()
            assert d.info.action_count == 1 and [e.workflow_id for e in d.info.running_workflows] == [f"{prefix}-{first}"]
            await client.get_workflow_handle(f"{prefix}-{first}").signal(Waiter.release)
            for _ in range(400):
                d = await described()
                if d.info.action_count == 2:
                    break
                await asyncio.sleep(0.05)
            assert [a_.workflow_id for a_ in d.info.recent_actions] == [f"{prefix}-{first}",
                                                                        f"{prefix}-2020-01-01T01:00:00Z"]
            await client.get_workflow_handle(f"{prefix}-2020-01-01T01:00:00Z").signal(Waiter.release)
    finally:
        await client.close()


async def test_a_call_forwarded_to_a_paused_owner_moves_to_the_new_owner(cluster: list[ClusterNode],
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 24: a member that stops answering (paused) past its lease no longer holds calls forwarded to it.

    Member c is "paused": its internal RPCs hang and it stops renewing (its engine still believes it
    owns its shards, as a SIGSTOPped process does). A signal sent through member a for a workflow on
    c's shard is re-routed to the shard's new owner once a's view shows the move, and answered
    within the lease TTL plus a few renewal rounds, not after the route timeout; it is in the history once.
    """
    import grpc

    from spindle.api import messages_pb2 as pb
    from spindle.api import service_pb2 as svc
    from spindle.api import service_pb2_grpc
    from spindle.controlplane.cluster._internal import InternalService

    a, b, c = cluster
    ns_id = a.engine.namespaces.get("default").id
    wid = next(w for w in (f"paused-{i}" for i in range(1000)) if a.engine.shard_id_of(ns_id, w) in c.engine.shards)
    client = await Client.connect(a.address)
    ch = grpc.aio.insecure_channel(a.address)
    stub = service_pb2_grpc.WorkflowServiceStub(ch)
    try:
        await client.start_workflow(MainWf.run, 1, 1, True, id=wid, task_queue="nobody-" + uuid.uuid4().hex[:6])
        paused = asyncio.Event()  # never set: calls to c hang as they would on a stopped process
        real_dispatch = InternalService.dispatch

        async def dispatch(self: InternalService, p: dict[str, Any], remaining: float | None) -> dict[str, Any]:
            if self.member_id == c.member_id and p.get("op") != "stats":
                await paused.wait()
            return await real_dispatch(self, p, remaining)

        monkeypatch.setattr(InternalService, "dispatch", dispatch)
        assert c.leases is not None
        await c.leases.stop(release=False)  # no more heartbeats or renewals; c keeps serving in its own mind
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        await stub.SignalWorkflowExecution(svc.SignalWorkflowExecutionRequest(
            namespace="default", workflow_execution=pb.WorkflowExecution(workflow_id=wid), signal_name="add",
            input=client.data_converter.to_payloads([5]), request_id="paused-signal-1"), timeout=25)
        took = loop.time() - t0
        ttl = c.config.lease_ttl
        assert took < ttl + 3.0, f"the signal waited {took:.1f} s for the paused owner (lease TTL {ttl} s)"
        new_owner = next(n for n in (a, b) if a.engine.shard_id_of(ns_id, wid) in n.engine.shards)
        hist = await client.get_workflow_handle(wid).fetch_history()
        signals = [e for e in hist.events if e.event_type == "WorkflowExecutionSignaled"]
        assert len(signals) == 1, [e.event_type for e in hist.events]
        print(f"signal answered by {new_owner.member_id} {took:.2f} s after the owner paused (ttl {ttl} s)")
        await client.get_workflow_handle(wid).terminate("done")
    finally:
        await ch.close()
        await client.close()
