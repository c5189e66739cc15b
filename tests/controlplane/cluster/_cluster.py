"""A cluster of ``spindle server start`` processes for the tests and benchmarks: mutual TLS, API keys, checks.

``Cluster(inst, tmp, n)`` makes a fresh database (schema by ``spindle admin setup-schema``),
certificates (a cluster CA for members, a client CA for the public listeners) and n member
processes. ``with_api_keys(inst, tmp, n)`` also requires an API key of every client (a
bootstrap admin key the clients send). ``check_histories`` reads every run's events straight
from the database and fails on a gap or a repeat; ``results_or_report`` waits for results and
names the stuck workflows with their stored rows and the members' logs.
"""

from __future__ import annotations

import asyncio
import base64
import time

from pathlib import Path
from typing import Any

from _members import Member, setup_schema, write_config
from _workload import result_with_retry
from google.cloud.spanner_v1 import param_types as spanner_param_types
from spanner_emulator import SpannerTestInstance
from tls_certs import CertificateAuthority

from spindle.api import messages_pb2 as pb
from spindle.client import Client
from spindle.controlplane._tls import MemberTLS
from spindle.controlplane.auth._keys import format_secret, new_secret
from spindle.controlplane.store._spanner_schema import MIGRATIONS
from spindle.service import TLSConfig

NUM_SHARDS = 12
TTL = 3.0
RENEW = 0.5


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
            ev = pb.HistoryEvent.FromString(base64.b64decode(data))
            assert ev.event_id == eid, f"{wid}/{rid}: event stored under id {eid} says {ev.event_id}"
            events.setdefault((wid, rid), []).append(int(eid))
    for key, ids in events.items():
        assert ids == list(range(1, len(ids) + 1)), f"{key}: gap or repeat in {ids}"
        assert nxt[key] == len(ids) + 1, f"{key}: next_event_id {nxt[key]} after {len(ids)} events"
    assert set(nxt) == set(events)
    return len(events)


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
    tasks = {wid: asyncio.ensure_future(result_with_retry(client, wid, 180.0, ("UNAVAILABLE", "DEADLINE_EXCEEDED",
                                                                                "INTERNAL")))
             for wid in ids}
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
        #: The bootstrap admin key every client sends (``with_api_keys``), else "".
        self.admin_key = ""
        self.pki = pki
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


def with_api_keys(inst: SpannerTestInstance, tmp: Path, n: int) -> Cluster:
    """``n`` members with mutual TLS between them and API keys required of every client.

    The bootstrap admin key is written before the members start (each makes sure it exists
    as a system_admin key); the clients of ``connect`` send it (``admin_key``).
    """
    key_file = tmp / "admin-key"
    admin_key = format_secret(new_secret())
    key_file.write_text(admin_key + "\n")
    key_file.chmod(0o600)
    c = Cluster(inst, tmp, n, sections={"auth": {"mode": "api_keys", "bootstrap_admin_key_file": str(key_file)}},
                connect_options={"api_key": admin_key})
    c.admin_key = admin_key
    return c
