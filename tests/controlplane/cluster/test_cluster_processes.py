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

import pytest

import grpc
from spindle.controlplane.store._spanner_schema import MIGRATIONS
from google.cloud.spanner_v1 import param_types as spanner_param_types
from spanner_emulator import SpannerTestInstance

from _members import Member, setup_schema, write_config
from spindle.controlplane.api import messages_pb2 as pb
from spindle.controlplane._tls import MemberTLS
from spindle.controlplane.auth._keys import format_secret, new_secret
from spindle.controlplane.cluster._peers import METHOD, Peers
from spindle import Client, RetryPolicy, TLSConfig, Worker, activity, workflow
from spindle.exceptions import RPCError
from tls_certs import CertificateAuthority

NUM_SHARDS = 12
TTL = 3.0
RENEW = 0.5
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


# ---------------------------------------------------------------------------------------------- helpers
def leases(db: Any) -> dict[int, tuple[str, int, int]]:
    """shard -> (owner, range id, lease expiry ms) as stored."""
    with db.snapshot() as snap:
        return leases_in(snap)


def wait_owned(db: Any, owners: set[str], timeout: float) -> float:
    """Seconds until every shard's live lease is held by one of ``owners`` (and all of them hold some)."""
    t0 = time.monotonic()
    while True:
        now = int(time.time() * 1000)
        cur = leases(db)
        held = {o for o, _, exp in cur.values() if exp > now}
        if len(cur) == NUM_SHARDS and all(o in owners and exp > now for o, _, exp in cur.values()) and held == owners:
            return time.monotonic() - t0
        if time.monotonic() - t0 > timeout:
            raise AssertionError(f"shards not owned by {owners} after {timeout}s: {cur}")
        time.sleep(0.1)


def check_histories(db: Any) -> int:
    """Every run's events are 1..n (each event's own id matches its key) and next_event_id is n+1. Returns runs seen."""
    with db.snapshot(multi_use=True) as snap:
        nxt = {(r[0], r[1]): int(r[2]) for r in snap.execute_sql("SELECT WorkflowId, RunId, NextEventId FROM Executions")}
        events: dict[tuple[str, str], list[int]] = {}
        for wid, rid, eid, data in snap.execute_sql(
                "SELECT WorkflowId, RunId, EventId, Data FROM Events ORDER BY WorkflowId, RunId, EventId"):
            import base64

            ev = pb.HistoryEvent.FromString(base64.b64decode(data))
            assert ev.event_id == eid, f"{wid}/{rid}: event stored under id {eid} says {ev.event_id}"
            events.setdefault((wid, rid), []).append(int(eid))
    for key, ids in events.items():
        assert ids == list(range(1, len(ids) + 1)), f"{key}: gap or repeat in {ids}"
        assert nxt[key] == len(ids) + 1, f"{key}: next_event_id {nxt[key]} after {len(ids)} events"
    assert set(nxt) == set(events)
    return len(events)


async def result(client: Client, wid: str, timeout: float = 180.0) -> Any:
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        try:
            return await client.get_workflow_handle(wid).result()
        except RPCError as e:
            if e.status not in ("UNAVAILABLE", "DEADLINE_EXCEEDED", "INTERNAL") or \
                    asyncio.get_running_loop().time() > deadline:
                raise
            await asyncio.sleep(0.5)


def stored_traces(db: Any, wid: str) -> str:
    """What the store holds for ``wid`` (execution rows, its transfer, timer and backlog rows, shard leases)."""
    out = []
    with db.snapshot(multi_use=True) as snap:
        for table, cols in (("Executions", "ShardId, RunId, Status, NextEventId, DbVersion"),
                            ("TransferTasks", "ShardId, TaskId, Data"), ("TimerTasks", "ShardId, FireTimeMs, TaskId, Data"),
                            ("TaskBacklog", "TaskQueue, Kind, ShardId, TaskId, Data")):
            cond = "WorkflowId = @w" if table == "Executions" else "STRPOS(Data, @w) > 0"
            rows = list(snap.execute_sql(f"SELECT {cols} FROM {table} WHERE {cond}", params={"w": wid},
                                         param_types={"w": spanner_param_types.STRING}))
            out.append(f"{table}: {rows}")
        out.append(f"leases: {leases_in(snap)}")
    return "; ".join(out)


def leases_in(snap: Any) -> dict[int, tuple[str, int, int]]:
    return {int(r[0]): (r[1], int(r[2]), int(r[3]))
            for r in snap.execute_sql("SELECT ShardId, Owner, RangeId, LeaseExpiryMs FROM Shards")}


async def results_or_report(client: Client, ids: list[str], timeout: float, *, db: Any = None,
                            members: list[Member] | None = None) -> list[Any]:
    """Every workflow's result; on timeout, fail naming the stuck ones with their histories and stored traces."""
    tasks = {wid: asyncio.ensure_future(result(client, wid)) for wid in ids}
    _, pending = await asyncio.wait(tasks.values(), timeout=timeout)
    if pending:
        stuck = [wid for wid, t in tasks.items() if not t.done()]
        for t in pending:
            t.cancel()
        tails = []
        for wid in stuck[:3]:
            for w in (wid, f"{wid}-leaf"):
                try:
                    hist = await client.get_workflow_handle(w).fetch_history()
                except Exception as e:  # noqa: BLE001 - a diagnostic: report and go on
                    tails.append(f"{w}: {e}")
                    continue
                tails.append(f"{w}: {[e.event_type for e in hist.events][-8:]}")
                if db is not None:
                    tails.append(stored_traces(db, w))
                for m in members or []:
                    lines = [ln for ln in m.log().splitlines() if w + " " in ln or w + "'" in ln or w + "," in ln]
                    tails.append(f"{m.member_id} log: {lines[-10:]}")
        raise AssertionError(f"{len(stuck)} workflows did not finish in {timeout}s: {stuck[:10]}; " + "\n".join(tails))
    return [tasks[wid].result() for wid in ids]


class Cluster:
    """N member processes on a fresh database (schema made by ``spindle admin setup-schema``), with mutual TLS.

    Member certificates name ``spindle-member`` only (``internal.tls.server_name``), so peers
    check each other against that name rather than the address they dial.

    Hook for API keys (issue 15, auth): ``Cluster(..., sections={"auth": {...}},
    connect_options={"api_key": key})`` writes the section into every member's configuration
    and makes every client of the tests (``connect``) send the key; ``cluster3`` is the
    fixture that runs with API keys on.
    """

    def __init__(self, inst: SpannerTestInstance, tmp: Path, n: int, *, sections: dict[str, Any] | None = None,
                 connect_options: dict[str, Any] | None = None) -> None:
        """``sections``: extra top-level sections of every member's configuration (e.g. ``auth:``);
        ``connect_options``: extra ``Client.connect`` arguments of every client (e.g. ``api_key``)."""
        self.db_id = inst.new_database_id()
        self.db = inst.instance.database(self.db_id)
        env = inst.emulator.client_env()
        pki = tmp / "pki"
        self.cluster_ca, self.client_ca = CertificateAuthority("Cluster CA"), CertificateAuthority("Client CA")
        cluster_ca_file, client_ca_file = self.cluster_ca.write(pki, "cluster-ca"), self.client_ca.write(pki, "client-ca")
        scert, skey = self.client_ca.issue_server().write(pki, "server")
        client = self.client_ca.issue("load-driver")
        #: What every client of this cluster connects with (the public listeners require a client certificate).
        self.client_tls = TLSConfig(server_root_ca_cert=self.client_ca.cert_pem, client_cert=client.cert,
                                    client_private_key=client.key)
        member_files = [self.cluster_ca.issue(f"m{i}", dns_names=["spindle-member"]).write(pki, f"m{i}")
                        for i in range(n)]
        #: A member's credentials (for the test's own internal calls: stats, probe_write).
        self.member_tls = MemberTLS(str(member_files[0][0]), str(member_files[0][1]), str(cluster_ca_file),
                                    server_name="spindle-member")
        cfgs = [write_config(tmp / f"m{i}.yaml", project=inst.project, instance=inst.instance_id, database=self.db_id,
                             member_id=f"m{i}", num_shards=NUM_SHARDS, ttl=TTL, renew=RENEW,
                             tls={"cert_file": str(scert), "key_file": str(skey), "client_ca_file": str(client_ca_file)},
                             internal={"listen": "127.0.0.1:0", "tls": {
                                 "cert_file": str(member_files[i][0]), "key_file": str(member_files[i][1]),
                                 "ca_file": str(cluster_ca_file), "server_name": "spindle-member"}},
                             sections=sections, default_workflow_task_timeout=3.0) for i in range(n)]
        #: Every client of the test connects with these (``connect``): TLS, and whatever ``connect_options`` adds.
        self.connect_options: dict[str, Any] = {"tls": self.client_tls, **(connect_options or {})}
        out = setup_schema(cfgs[0], env)
        assert f"schema version 0 -> {MIGRATIONS[-1][0]}" in out
        assert "up to date" in setup_schema(cfgs[0], env)  # running it again changes nothing
        self.members = [Member(c, env).start() for c in cfgs]
        for m in self.members:
            m.wait_listening()
            assert m.internal_address and m.internal_address != m.address

    async def connect(self, member: Member) -> Client:
        """A client of ``member``'s public listener (the only way the tests connect)."""
        return await Client.connect(member.address, **self.connect_options)

    def stop(self) -> None:
        for m in self.members:
            m.stop()


@pytest.fixture
def cluster3(spanner_instance: SpannerTestInstance, tmp_path: Path) -> Any:
    """Three members with mutual TLS between them and API keys required of every client.

    The bootstrap admin key is written before the members start (each makes sure it exists
    as a system_admin key); the tests' clients send it.
    """
    key_file = tmp_path / "admin-key"
    admin_key = format_secret(new_secret())
    key_file.write_text(admin_key + "\n")
    key_file.chmod(0o600)
    c = Cluster(spanner_instance, tmp_path, 3,
                sections={"auth": {"mode": "api_keys", "bootstrap_admin_key_file": str(key_file)}},
                connect_options={"api_key": admin_key})
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
