"""Three control-plane processes on loopback over one emulator database, with mutual TLS.

Members talk on their internal listeners with certificates from a cluster CA (each checks
the other's); clients reach the public listeners over TLS with client certificates from a
separate client CA. Certificates are made by the test (tests/tls_certs.py).

- the internal listener answers members only, and the public port does not serve the
  internal method;
- kill -9 of one member mid-run: its shards move within the lease expiry, every
  workflow completes with the right result, no history has a gap or a repeat.
- a member paused past its lease (SIGSTOP ... SIGCONT) cannot write to the shards
  it lost: its write with the old range id is rejected by the store.

500 workflows by default (SPINDLE_CLUSTER_TEST_WORKFLOWS to change it); the emulator runs
one read-write transaction at a time for the whole machine, and three members contend for it.
A stuck workflow is reported with its stored rows and the members' logs.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
import uuid

from datetime import timedelta
from pathlib import Path
from typing import Any

import grpc
import pytest

from _cluster import RENEW, TTL, Cluster, check_histories, leases, results_or_report, wait_owned, with_api_keys
from spanner_emulator import SpannerTestInstance
from tls_certs import CertificateAuthority

from spindle import activity, workflow
from spindle.client import Client
from spindle.common import RetryPolicy
from spindle.controlplane.cluster._peers import METHOD, Peers
from spindle.exceptions import RPCError
from spindle.worker import Worker

WORKFLOWS = int(os.environ.get("SPINDLE_CLUSTER_TEST_WORKFLOWS", "500"))


@activity.defn
async def triple(x: int) -> int:
    return 3 * x


@workflow.defn
class Leaf:
    @workflow.run
    async def run(self, x: int) -> int:
        return x + 1


@workflow.defn
class Load:
    """activity -> 1 s timer -> activity (every tenth: and a child)."""

    @workflow.run
    async def run(self, x: int) -> int:
        opts: dict[str, Any] = dict(start_to_close_timeout=timedelta(seconds=5),
                                    retry_policy=RetryPolicy(initial_interval=timedelta(milliseconds=200)))
        a = await workflow.execute_activity(triple, x, **opts)
        await workflow.sleep(timedelta(seconds=1))
        b = await workflow.execute_activity(triple, a, **opts)
        if x % 10 == 0:
            b = await workflow.execute_child_workflow(Leaf.run, b, id=f"{workflow.info().workflow_id}-leaf")
        return b


def expected(x: int) -> int:
    return 9 * x + (1 if x % 10 == 0 else 0)


@pytest.fixture
def cluster3(spanner_instance: SpannerTestInstance, tmp_path: Path) -> Any:
    """Three members with mutual TLS between them and API keys required of every client (``_cluster.with_api_keys``)."""
    c = with_api_keys(spanner_instance, tmp_path, 3)
    try:
        yield c
    finally:
        c.stop()


# ---------------------------------------------------------------------------------------------- tests
def test_members_only_reach_each_other_over_mutual_tls(cluster3: Cluster) -> None:
    m0, m1, m2 = cluster3.members
    wait_owned(cluster3.db, {"m0", "m1", "m2"}, 30)
    with cluster3.db.snapshot() as snap:  # peers dial the internal listeners: that is what membership advertises
        advertised = {r[0]: r[1] for r in snap.execute_sql("SELECT MemberId, Address FROM ClusterMembers")}
    assert advertised == {m.member_id: m.internal_address for m in cluster3.members}

    async def call(address: str, creds: grpc.ChannelCredentials | None, name: str | None = None) -> bytes:
        opts = [("grpc.ssl_target_name_override", name)] if name else []
        ch = grpc.aio.secure_channel(address, creds, options=opts) if creds else grpc.aio.insecure_channel(address)
        async with ch:
            return await ch.unary_unary(METHOD)(b'{"op": "stats"}', timeout=10)  # type: ignore[no-any-return]

    async def scenario() -> None:
        ca = cluster3.cluster_ca.cert_pem
        driver = cluster3.client_tls
        stranger = CertificateAuthority("Unrelated CA").issue("m9", dns_names=["spindle-member"])
        for what, creds in (("plaintext", None), ("no certificate", grpc.ssl_channel_credentials(ca)),
                            ("a client certificate", grpc.ssl_channel_credentials(
                                ca, driver.client_private_key, driver.client_cert)),
                            ("another CA's certificate", grpc.ssl_channel_credentials(ca, stranger.key, stranger.cert))):
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await call(m1.internal_address, creds, "spindle-member")
            assert err.value.code() == grpc.StatusCode.UNAVAILABLE, what
        # the public port serves the WorkflowService only, even to a client with a valid certificate
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await call(m1.address, grpc.ssl_channel_credentials(cluster3.client_ca.cert_pem, driver.client_private_key,
                                                                driver.client_cert))
        assert err.value.code() == grpc.StatusCode.UNIMPLEMENTED
        peers = Peers(tls=cluster3.member_tls)
        try:
            assert (await peers.call(m1.internal_address, {"op": "stats"}, timeout=10))["member_id"] == "m1"
        finally:
            await peers.close()
        # a client certificate alone is not a principal here (no certificate_subjects): a key is needed
        anonymous = await Client.connect(m0.address, tls=cluster3.client_tls)
        try:
            with pytest.raises(RPCError) as denied:
                await anonymous.count_workflows()
            assert denied.value.status == "UNAUTHENTICATED"
        finally:
            await anonymous.close()
        # and the members work together through it: starts on m0, a worker on m2 with a worker-role key
        # created through m1, children everywhere
        tq = "mtls-" + uuid.uuid4().hex[:6]
        admin = await cluster3.connect(m1)
        try:
            worker_key = await admin.create_api_key("mtls worker", grants={"default": "worker"})
        finally:
            await admin.close()
        client = await cluster3.connect(m0)
        worker_client = await Client.connect(m2.address, tls=cluster3.client_tls, api_key=worker_key.secret)
        try:
            with pytest.raises(RPCError) as low:  # a worker key may not start workflows
                await worker_client.start_workflow(Load.run, 0, id="mtls-by-worker", task_queue=tq)
            assert low.value.status == "PERMISSION_DENIED"
            async with Worker(worker_client, task_queue=tq, workflows=[Load, Leaf], activities=[triple]):
                for i in range(20):
                    await client.start_workflow(Load.run, i, id=f"mtls-{i}", task_queue=tq)
                got = await results_or_report(client, [f"mtls-{i}" for i in range(20)], timeout=90)
                assert got == [expected(i) for i in range(20)]
        finally:
            await client.close()
            await worker_client.close()

    asyncio.run(scenario())
    check_histories(cluster3.db)


def test_kill_9_one_member_mid_run(cluster3: Cluster) -> None:
    m0, m1, m2 = cluster3.members
    wait_owned(cluster3.db, {"m0", "m1", "m2"}, 30)
    victim_shards = {s for s, (o, _, _) in leases(cluster3.db).items() if o == "m2"}
    assert victim_shards

    async def scenario() -> float:
        tq = "load-" + uuid.uuid4().hex[:6]
        client = await cluster3.connect(m0)
        worker_clients = [await cluster3.connect(m) for m in (m0, m1, m2)]
        workers = [Worker(c, task_queue=tq, workflows=[Load, Leaf], activities=[triple],
                          graceful_shutdown_timeout=timedelta(seconds=1)) for c in worker_clients]
        runs = [asyncio.ensure_future(w.run()) for w in workers]
        try:
            gate = asyncio.Semaphore(50)

            async def start(i: int) -> None:
                async with gate:
                    await client.start_workflow(Load.run, i, id=f"load-{i}", task_queue=tq)

            await asyncio.gather(*(start(i) for i in range(WORKFLOWS)))
            await asyncio.sleep(1.0)  # mid-run: activities, timers and children in flight everywhere
            m2.signal(signal.SIGKILL)
            t_kill = time.monotonic()
            moved = await asyncio.get_running_loop().run_in_executor(
                None, wait_owned, cluster3.db, {"m0", "m1"}, TTL + 10)
            takeover = time.monotonic() - t_kill
            # Expected ~TTL + RENEW (3.3-4.5 s on a quiet machine). The margin allows for a loaded CI machine
            # (mTLS and API keys add CPU to every member: 7.0 s seen while other jobs ran); it still catches a
            # takeover that waits on anything longer than the lease, such as a 10 s task timeout.
            assert moved <= TTL + 3 * RENEW + 4.5, f"shards of the killed member took {moved:.1f}s to move"
            got = await results_or_report(client, [f"load-{i}" for i in range(WORKFLOWS)], timeout=150,
                                          db=cluster3.db, members=cluster3.members)
            assert got == [expected(i) for i in range(WORKFLOWS)]
            return takeover
        finally:
            for w in workers[:2]:
                await w.shutdown()
            for r in runs:
                r.cancel()
            await asyncio.gather(*runs, return_exceptions=True)
            for c in [client, *worker_clients]:
                await c.close()

    takeover = asyncio.run(scenario())
    runs = check_histories(cluster3.db)
    assert runs >= WORKFLOWS + WORKFLOWS // 10
    print(f"takeover after kill -9: {takeover:.2f}s (lease ttl {TTL}s); {runs} runs checked")


def test_member_paused_past_its_lease_cannot_write(spanner_instance: SpannerTestInstance, tmp_path: Path) -> None:
    cluster = Cluster(spanner_instance, tmp_path, 2)
    try:
        a, b = cluster.members
        wait_owned(cluster.db, {"m0", "m1"}, 30)

        async def scenario() -> None:
            peers = Peers(tls=cluster.member_tls)
            client = await cluster.connect(a)
            worker_client = await cluster.connect(a)
            tq = "pause-" + uuid.uuid4().hex[:6]
            try:
                before = await peers.call(b.internal_address, {"op": "stats"}, timeout=10)
                held_by_b = {int(s): r for s, r in before["held"].items()}
                assert held_by_b
                b.signal(signal.SIGSTOP)  # b keeps believing it owns its shards
                await asyncio.get_running_loop().run_in_executor(None, wait_owned, cluster.db, {"m0"}, TTL + 10)
                stored = leases(cluster.db)
                assert all(stored[s][1] > r for s, r in held_by_b.items())  # a took them: range ids moved on
                async with Worker(worker_client, task_queue=tq, workflows=[Load, Leaf], activities=[triple]):
                    for i in range(10):
                        await client.start_workflow(Load.run, i, id=f"p-{i}", task_queue=tq)
                    b.signal(signal.SIGCONT)
                    shard, old_range = next(iter(held_by_b.items()))
                    probe = await peers.call(b.internal_address, {"op": "probe_write", "shard_id": shard, "range_id": old_range},
                                             timeout=10)
                    assert probe["error"] == "ShardOwnershipLostError", probe  # the stale write was refused
                    got = await results_or_report(client, [f"p-{i}" for i in range(10)], timeout=90)
                    assert got == [expected(i) for i in range(10)]
                await asyncio.get_running_loop().run_in_executor(None, wait_owned, cluster.db, {"m0", "m1"}, 30)
                after = await peers.call(b.internal_address, {"op": "stats"}, timeout=10)
                assert after["lease_stats"]["lost"] >= 1 or after["lease_stats"]["claimed"] > len(held_by_b)
                assert all(int(s) not in held_by_b or r != held_by_b[int(s)] for s, r in after["held"].items())
            finally:
                await client.close()
                await worker_client.close()
                await peers.close()

        asyncio.run(scenario())
        check_histories(cluster.db)
        assert "lost shard" in b.log() or "lost" in b.log()
    finally:
        cluster.stop()
