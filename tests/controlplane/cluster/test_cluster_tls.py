"""Three members in one process with mutual TLS between them, TLS for clients, and the internal RPC for members only.

Two CAs made by the test (tests/tls_certs.py): the cluster CA signs the members'
certificates (internal listener), the client CA signs the server certificate and the
clients' certificates (public listener, mutual TLS). A third, unrelated CA stands for
anyone else. What the issue found: the internal RPC was served on the public port and took
whatever it was sent (a 100,000-character workflow id, a 10 MB input).
"""

from __future__ import annotations

import asyncio
import json
import uuid

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest

from _workload import ChildWf, MainWf, double, expected, result_with_retry, signal_when_running
from spanner_emulator import SpannerTestInstance
from tls_certs import CertificateAuthority, CertKey

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.client import Client
from spindle.controlplane._tls import MemberTLS, ServerTLS
from spindle.controlplane.cluster import ClusterConfig, ClusterNode, InternalConfig, StoreConfig
from spindle.controlplane.cluster._peers import METHOD, Peers, b64, unb64
from spindle.controlplane.errors import InvalidArgument, ResourceExhausted
from spindle.controlplane.matching import KIND_WORKFLOW
from spindle.service import TLSConfig
from spindle.worker import Worker

SHARDS = 6


@dataclass
class Pki:
    dir: Path
    cluster_ca: CertificateAuthority
    client_ca: CertificateAuthority
    other_ca: CertificateAuthority
    member_tls: MemberTLS
    server_tls: ServerTLS
    client: CertKey  # a client certificate for the public listener

    def client_tls(self) -> TLSConfig:
        return TLSConfig(server_root_ca_cert=self.client_ca.cert_pem, client_cert=self.client.cert,
                         client_private_key=self.client.key)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    d = tmp_path_factory.mktemp("cluster-pki")
    cluster_ca, client_ca = CertificateAuthority("Cluster CA"), CertificateAuthority("Client CA")
    mcert, mkey = cluster_ca.issue("member", ip_addresses=["127.0.0.1"]).write(d, "member")
    scert, skey = client_ca.issue_server().write(d, "server")
    return Pki(d, cluster_ca, client_ca, CertificateAuthority("Unrelated CA"),
               MemberTLS(str(mcert), str(mkey), str(cluster_ca.write(d, "cluster-ca"))),
               ServerTLS(str(scert), str(skey), str(client_ca.write(d, "client-ca"))), client_ca.issue("app"))


def node(inst: SpannerTestInstance, db: str, name: str, pki: Pki) -> ClusterNode:
    from spindle.controlplane.store.spanner import SpannerStore

    cfg = ClusterConfig(store=StoreConfig("spanner", inst.project, inst.instance_id, db), num_shards=SHARDS,
                        listen="127.0.0.1:0", member_id=name, lease_ttl=2.0, lease_renew_interval=0.3,
                        tls=pki.server_tls, internal=InternalConfig(listen="127.0.0.1:0", tls=pki.member_tls))
    return ClusterNode(cfg, store=SpannerStore(inst.project, inst.instance_id, db, client=inst.client))


async def wait_balanced(nodes: list[ClusterNode], timeout: float = 20.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        owned = [set(n.engine.shards) for n in nodes]
        if len(set().union(*owned)) == SHARDS and sum(map(len, owned)) == SHARDS and all(owned):
            return
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"shards never balanced: {owned}")
        await asyncio.sleep(0.1)


@pytest.fixture
async def cluster(spanner_instance: SpannerTestInstance, pki: Pki) -> AsyncIterator[list[ClusterNode]]:
    db = spanner_instance.new_database_id()
    nodes = [node(spanner_instance, db, f"m{i}", pki) for i in range(3)]
    await nodes[0].start()
    await asyncio.gather(*(n.start() for n in nodes[1:]))
    try:
        await wait_balanced(nodes)
        yield nodes
    finally:
        for n in nodes:
            if n.server is not None:
                await n.stop()


async def raw_internal_call(address: str, creds: grpc.ChannelCredentials | None, payload: dict[str, object],
                            ) -> bytes:
    """One call of the internal method at ``address`` (TLS with ``creds``, else plaintext)."""
    ch = grpc.aio.secure_channel(address, creds) if creds is not None else grpc.aio.insecure_channel(address)
    async with ch:
        return await ch.unary_unary(METHOD)(json.dumps(payload).encode(), timeout=5)  # type: ignore[no-any-return]


async def test_a_workload_across_members_over_mutual_tls(cluster: list[ClusterNode], pki: Pki) -> None:
    a, b, c = cluster
    members = await a.store.list_members()  # type: ignore[attr-defined]
    # the membership rows hold the internal addresses: peers never dial the public port
    assert {m.member_id: m.address for m in members} == {n.member_id: n.internal_address for n in cluster}
    assert not {n.address for n in cluster} & {m.address for m in members}
    tq = "tq-" + uuid.uuid4().hex[:6]
    starter = await Client.connect(a.address, tls=pki.client_tls())
    worker_client = await Client.connect(b.address, tls=pki.client_tls())  # polls fan out to every member
    try:
        async with Worker(worker_client, task_queue=tq, workflows=[MainWf, ChildWf], activities=[double]):
            ids = [f"wf-{i}" for i in range(8)]
            for i, wid in enumerate(ids):
                await starter.start_workflow(MainWf.run, i, 2, True, id=wid, task_queue=tq)
            for wid in ids:
                await signal_when_running(starter, wid, 1)
            assert [await result_with_retry(starter, wid) for wid in ids] == [expected(i) for i in range(8)]
    finally:
        await starter.close()
        await worker_client.close()


async def test_the_public_port_does_not_serve_the_internal_rpc(cluster: list[ClusterNode], pki: Pki) -> None:
    a = cluster[0]
    creds = grpc.ssl_channel_credentials(pki.client_ca.cert_pem, pki.client.key, pki.client.cert)
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await raw_internal_call(a.address, creds, {"op": "stats"})
    assert err.value.code() == grpc.StatusCode.UNIMPLEMENTED


async def test_only_members_reach_the_internal_listener(cluster: list[ClusterNode], pki: Pki) -> None:
    a = cluster[0]
    cluster_ca = pki.cluster_ca.cert_pem
    stranger = pki.other_ca.issue("member", ip_addresses=["127.0.0.1"])
    refused = {
        "plaintext": None,
        "no certificate": grpc.ssl_channel_credentials(cluster_ca),
        "a client certificate of the public listener": grpc.ssl_channel_credentials(cluster_ca, pki.client.key,
                                                                                     pki.client.cert),
        "a certificate from another CA": grpc.ssl_channel_credentials(cluster_ca, stranger.key, stranger.cert),
    }
    for what, creds in refused.items():
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await raw_internal_call(a.internal_address, creds, {"op": "stats"})
        assert err.value.code() == grpc.StatusCode.UNAVAILABLE, what  # refused at the handshake
    member = pki.cluster_ca.issue("member-x", ip_addresses=["127.0.0.1"])
    ok = await raw_internal_call(a.internal_address,
                                 grpc.ssl_channel_credentials(cluster_ca, member.key, member.cert), {"op": "stats"})
    assert json.loads(ok)["member_id"] == a.member_id


def attacks(victim: str, queue: str, ns_id: str) -> dict[str, dict[str, object]]:
    """The internal calls the issue made from outside, aimed at ``victim`` (a running workflow on ``queue``)."""
    long_req = svc.StartWorkflowExecutionRequest(namespace="default", workflow_id="x" * 100_000, workflow_type="T",
                                                 task_queue=queue, request_id=uuid.uuid4().hex)
    big = pb.Payloads(payloads=[pb.Payload(metadata={"encoding": b"binary/plain"}, data=b"\0" * 10_000_000)])
    big_req = svc.StartWorkflowExecutionRequest(namespace="default", workflow_id="big-input", workflow_type="T",
                                                task_queue=queue, request_id=uuid.uuid4().hex, input=big)
    return {
        "terminate": {"op": "terminate", "ns": "default",
                      "execution": b64(pb.WorkflowExecution(workflow_id=victim).SerializeToString()),
                      "reason": "pwned", "details": "", "identity": "attacker"},
        "probe_write": {"op": "probe_write", "shard_id": 0, "range_id": 1},
        "start_workflow (100,000-character id)": {"op": "start_workflow", "ns": "default",
                                                  "req": b64(long_req.SerializeToString()), "parent": None},
        "start_workflow (10 MB input)": {"op": "start_workflow", "ns": "default",
                                         "req": b64(big_req.SerializeToString()), "parent": None},
        "reserve": {"op": "reserve", "kind": KIND_WORKFLOW, "ns_id": ns_id, "queue": queue, "timeout": 1},
        "start (a guessed reservation)": {"op": "start", "id": "m0:1", "identity": "attacker"},
    }


async def test_the_issues_attacks_fail_from_outside_and_change_nothing(cluster: list[ClusterNode], pki: Pki) -> None:
    """terminate, probe_write, start_workflow and reserve+start, sent as the issue sent them, to every member.

    The public port does not serve the method (UNIMPLEMENTED); the internal listener
    refuses the connection before reading a byte of it (UNAVAILABLE at the handshake) for
    plaintext, for a client without a certificate, for a client certificate of the public
    listener and for a member-named certificate from another CA. The victim keeps running
    and its first workflow task is still there for the real worker.
    """
    ns = cluster[0].engine.namespaces.get("default")
    tq, victim = "victim-" + uuid.uuid4().hex[:6], "victim-" + uuid.uuid4().hex[:6]
    client = await Client.connect(cluster[0].address, tls=pki.client_tls())
    try:
        handle = await client.start_workflow(ChildWf.run, 21, id=victim, task_queue=tq)
        cluster_ca = pki.cluster_ca.cert_pem
        stranger = pki.other_ca.issue("member", ip_addresses=["127.0.0.1"])
        outsiders = {
            "plaintext": None,
            "no certificate": grpc.ssl_channel_credentials(cluster_ca),
            "a client certificate": grpc.ssl_channel_credentials(cluster_ca, pki.client.key, pki.client.cert),
            "another CA's certificate": grpc.ssl_channel_credentials(cluster_ca, stranger.key, stranger.cert),
        }
        public = grpc.ssl_channel_credentials(pki.client_ca.cert_pem, pki.client.key, pki.client.cert)
        for name, payload in attacks(victim, tq, ns.id).items():
            for n in cluster:
                with pytest.raises(grpc.aio.AioRpcError) as err:
                    await raw_internal_call(n.address, public, payload)
                assert err.value.code() == grpc.StatusCode.UNIMPLEMENTED, (name, n.member_id)
                for who, creds in outsiders.items():
                    with pytest.raises(grpc.aio.AioRpcError) as err:
                        await raw_internal_call(n.internal_address, creds, payload)
                    assert err.value.code() == grpc.StatusCode.UNAVAILABLE, (name, who, n.member_id)
        desc = await handle.describe()
        assert desc.status.name == "RUNNING"
        assert await cluster[0].store.count_running(ns.id) == 1  # the victim only: nothing was started
        assert await cluster[0].store.get_current(ns.id, "big-input") is None
        history = await handle.fetch_history()  # nobody took its first workflow task
        assert [e.event_type for e in history] == ["WorkflowExecutionStarted", "WorkflowTaskScheduled"]
        async with Worker(client, task_queue=tq, workflows=[ChildWf], activities=[double]):
            assert await handle.result() == 42  # its first task was still queued for a real worker
    finally:
        await client.close()


async def test_a_reserved_task_is_started_only_with_its_reservation_id(cluster: list[ClusterNode], pki: Pki) -> None:
    """reserve + start is how a poll takes a task from another member; a guessed id takes nothing."""
    ns = cluster[0].engine.namespaces.get("default")
    tq, wid = "res-" + uuid.uuid4().hex[:6], "res-" + uuid.uuid4().hex[:6]
    client = await Client.connect(cluster[0].address, tls=pki.client_tls())
    peers = Peers(tls=pki.member_tls)
    try:
        await client.start_workflow(ChildWf.run, 1, id=wid, task_queue=tq)
        owner = next(n for n in cluster if cluster[0].engine.shard_id_of(ns.id, wid) in n.engine.shards)
        reserve = {"op": "reserve", "kind": KIND_WORKFLOW, "ns_id": ns.id, "queue": tq, "timeout": 10}
        rid = (await peers.call(owner.internal_address, reserve, timeout=30))["id"]
        member, counter = rid.split(":")[:2]
        for guess in (f"{member}:{counter}", f"{member}:{counter}:{'A' * 22}"):
            assert await peers.call(owner.internal_address, {"op": "start", "id": guess}, timeout=30) == {}, guess
        with pytest.raises(InvalidArgument, match="id: required"):
            await peers.call(owner.internal_address, {"op": "start"}, timeout=30)
        assert [e.event_type for e in await client.get_workflow_handle(wid).fetch_history()] == [
            "WorkflowExecutionStarted", "WorkflowTaskScheduled"]
        out = await peers.call(owner.internal_address, {"op": "start", "id": rid, "identity": "m-test"}, timeout=30)
        resp = svc.PollWorkflowTaskQueueResponse.FromString(unb64(out["response"]))
        assert resp.workflow_execution.workflow_id == wid
    finally:
        await peers.close()
        await client.close()


async def test_the_internal_rpc_checks_what_it_runs_like_the_frontend(cluster: list[ClusterNode], pki: Pki) -> None:
    """Even a member's certificate does not get an over-long id or an oversized input past the checks."""
    a = cluster[0]
    ns = a.engine.namespaces.get("default")
    peers = Peers(tls=pki.member_tls)
    try:
        async def start(req: svc.StartWorkflowExecutionRequest) -> dict[str, object]:
            return await peers.call(a.internal_address, {"op": "start_workflow", "ns": "default",
                                                         "req": b64(req.SerializeToString()), "parent": None},
                                    timeout=30)

        def req(**kw: object) -> svc.StartWorkflowExecutionRequest:
            base: dict[str, object] = dict(namespace="default", workflow_id="w", workflow_type="T", task_queue="q",
                                           request_id=uuid.uuid4().hex)
            return svc.StartWorkflowExecutionRequest(**{**base, **kw})  # type: ignore[arg-type]

        with pytest.raises(InvalidArgument, match="workflow_id: 100000 characters is over the limit of 1000"):
            await start(req(workflow_id="x" * 100_000))
        big = pb.Payloads(payloads=[pb.Payload(metadata={"encoding": b"binary/plain"}, data=b"\0" * 10_000_000)])
        with pytest.raises(ResourceExhausted, match="input: .* bytes is over the payload limit"):
            await start(req(workflow_id="big", input=big))
        with pytest.raises(InvalidArgument, match="execution_timeout_ms: must not be negative"):
            await start(req(workflow_id="neg", execution_timeout_ms=-1))
        # forwarded frontend RPCs run the frontend's own checks
        with pytest.raises(InvalidArgument, match="workflow_id: 100000 characters"):
            await peers.call(a.internal_address, {"op": "forward", "rpc": "StartWorkflowExecution",
                                                  "request": b64(req(workflow_id="y" * 100_000).SerializeToString())},
                             timeout=30)
        with pytest.raises(InvalidArgument, match="rpc: 'Nope' is not a WorkflowService method"):
            await peers.call(a.internal_address, {"op": "forward", "rpc": "Nope", "request": ""}, timeout=30)
        # the other cross-shard operations check their ids and payloads
        long_ex = pb.WorkflowExecution(workflow_id="z" * 5000)
        with pytest.raises(InvalidArgument, match="execution.workflow_id: 5000 characters"):
            await peers.call(a.internal_address, {"op": "terminate", "ns": "default",
                                                  "execution": b64(long_ex.SerializeToString()), "reason": "",
                                                  "details": b64(big.SerializeToString()), "identity": ""}, timeout=30)
        ok_ex = pb.WorkflowExecution(workflow_id="t")
        with pytest.raises(ResourceExhausted, match="details: .* over the payload limit"):
            await peers.call(a.internal_address, {"op": "terminate", "ns": "default",
                                                  "execution": b64(ok_ex.SerializeToString()), "reason": "",
                                                  "details": b64(big.SerializeToString()), "identity": ""}, timeout=30)
        with pytest.raises(ResourceExhausted, match="payloads: .* over the payload limit"):
            await peers.call(a.internal_address, {
                "op": "deliver_external_signal", "ns": "default", "target": b64(ok_ex.SerializeToString()),
                "name": "s", "payloads": b64(big.SerializeToString()), "header": "", "request_id": "r",
                "source": b64(ok_ex.SerializeToString())}, timeout=30)
        # malformed operations are INVALID_ARGUMENT naming the parameter, not internal errors
        with pytest.raises(InvalidArgument, match="op: unknown internal operation 'drop_tables'"):
            await peers.call(a.internal_address, {"op": "drop_tables"}, timeout=30)
        with pytest.raises(InvalidArgument, match="kind: required"):
            await peers.call(a.internal_address, {"op": "reserve", "ns_id": ns.id, "queue": "q", "timeout": 0},
                             timeout=30)
        with pytest.raises(InvalidArgument, match="rate: must be a finite number >= 0"):
            await peers.call(a.internal_address, {"op": "reserve", "kind": 1, "ns_id": ns.id, "queue": "q",
                                                  "timeout": 0, "rate": -1}, timeout=30)
        with pytest.raises(InvalidArgument, match=r"shard_id: 99 is not a shard \(0\.\.5\)"):
            await peers.call(a.internal_address, {"op": "probe_write", "shard_id": 99, "range_id": 1}, timeout=30)
        with pytest.raises(InvalidArgument, match="range_id: expected an integer, got str"):
            await peers.call(a.internal_address, {"op": "probe_write", "shard_id": 0, "range_id": "1"}, timeout=30)
        # a range id that is not the shard's current one is fenced by the store: the write does not happen
        stale = await peers.call(a.internal_address, {"op": "probe_write", "shard_id": 0, "range_id": 10**9},
                                 timeout=30)
        assert stale["error"] is not None, stale
        with pytest.raises(InvalidArgument, match="req: not a serialized StartWorkflowExecutionRequest"):
            await peers.call(a.internal_address, {"op": "start_workflow", "ns": "default", "req": b64(b"\xff\xff")},
                             timeout=30)
    finally:
        await peers.close()
    assert await a.store.count_running(ns.id) == 0  # nothing was started
    for wid in ("big", "neg", "t"):
        assert await a.store.get_current(ns.id, wid) is None
