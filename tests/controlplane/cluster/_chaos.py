"""A chaos run on a three-member cluster: what a platform team tries before trusting it (issue 24).

Three ``spindle server start`` members on the Spanner emulator (mutual TLS between members, TLS
and API keys for clients), a worker in its own process, and N ``Chaos`` workflows (three
activities, a timer, then a signal; the result depends on the signal). While they run, member m1
is SIGSTOPped for a few lease TTLs and continued, member m2 is killed with kill -9 and started
again, and the worker is killed with kill -9 and started again (each optional, on a timeline).

Every client call goes through member m0 (the one never harmed), as through a load balancer that
took the others out; m0 forwards to the shards' owners. A start or a signal counts as
*acknowledged* when its call returned OK; the driver retries a failed one with the same request id
until it does, as a client would. At the end every acknowledged start has its run, every
acknowledged signal is in its history exactly once, every workflow returned the right result,
and no history has a gap or a repeat (``check_histories``); ``run_chaos`` raises otherwise.

It returns the figures: per incident the takeover (until the live members hold every shard) and
the first progress on the victim's shards (the first event written there after the incident);
signal latency (first send to acknowledgement) and activity completion latency (the activity
returned in the worker -> its completion event), overall and while a member was paused; start
to close of the workflows (including the signal's deliberate delay).
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import time
import zlib

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from _chaos_workload import TASK_QUEUE, Chaos, bonus_of, expected
from _cluster import NUM_SHARDS, RENEW, TTL, Cluster, check_histories, leases, results_or_report, wait_owned
from _members import Member
from google.cloud.spanner_v1 import param_types
from spindle_procs import raw_history

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.exceptions import RPCError

HERE = Path(__file__).resolve().parent
RETRYABLE = ("UNAVAILABLE", "DEADLINE_EXCEEDED")


@dataclass
class Plan:
    """What happens, in seconds after the first start."""

    workflows: int = 360
    #: SIGSTOP member m1 at this time (None: never) ...
    pause_at: float | None = 3.0
    #: ... for this many lease TTLs, then SIGCONT.
    pause_ttls: float = 3.0
    #: kill -9 member m2 at this time (None: never); started again ``restart_after`` later.
    kill_member_at: float | None = 18.0
    #: kill -9 the worker at this time (None: never); started again ``restart_after`` later.
    kill_worker_at: float | None = 8.0
    restart_after: float = 1.0
    start_concurrency: int = 30
    #: Each workflow's signal is sent this long (uniform, seconds) after its start was acknowledged.
    signal_delay: tuple[float, float] = (2.0, 12.0)
    result_timeout: float = 240.0
    seed: int = 1


@dataclass
class Incident:
    what: str
    at: float
    victim: str = ""
    victim_shards: set[int] = field(default_factory=set)
    takeover_s: float | None = None
    until: float | None = None  # the end of a pause (SIGCONT)


def _pct(xs: list[float], p: float) -> float | None:
    if not xs:
        return None
    s = sorted(xs)
    return round(s[min(len(s) - 1, int(p / 100 * len(s)))], 3)


def _summary(xs: list[float]) -> dict[str, Any]:
    return {"n": len(xs), "p50": _pct(xs, 50), "p99": _pct(xs, 99), "max": round(max(xs), 3) if xs else None}


class WorkerProcess:
    """``_chaos_worker.py`` connected to one member with the cluster's client TLS and key."""

    def __init__(self, cluster: Cluster, address: str, completions: Path, log: Path) -> None:
        self.env = {**os.environ, "CHAOS_CA": str(cluster.pki / "client-ca.crt"), "CHAOS_API_KEY": cluster.admin_key,
                    "CHAOS_CERT": str(cluster.pki / "chaos-worker.crt"), "CHAOS_KEY": str(cluster.pki / "chaos-worker.key"),
                    "CHAOS_COMPLETIONS": str(completions), "PYTHONUNBUFFERED": "1"}
        self.address = address
        self.log = log
        self.proc: subprocess.Popen[str] | None = None

    def start(self) -> None:
        with open(self.log, "a") as log:
            self.proc = subprocess.Popen([sys.executable, str(HERE / "_chaos_worker.py"), self.address], env=self.env,
                                         stdout=subprocess.PIPE, stderr=log, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if "worker ready" not in line:
            raise RuntimeError(f"the chaos worker did not start: {line!r}\n{self.log.read_text()[-3000:]}")

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()


def _client_files(cluster: Cluster) -> None:
    """The worker process's client certificate (from the cluster's client CA) and the CA file, in the PKI folder."""
    cert, key = cluster.client_ca.issue("chaos-worker").write(cluster.pki, "chaos-worker")
    assert Path(cert) == cluster.pki / "chaos-worker.crt" and Path(key) == cluster.pki / "chaos-worker.key"


async def _retry_until_ok(call: Callable[[], Awaitable[Any]]) -> None:
    """Call until it returns OK; retryable failures (a shard moving, a deadline) are retried at once."""
    while True:
        try:
            await call()
            return
        except grpc.aio.AioRpcError as e:
            if e.code().name not in RETRYABLE:
                raise
        except RPCError as e:
            if e.status not in RETRYABLE:
                raise
        await asyncio.sleep(0.1)


def _namespace_id(db: Any, name: str = "default") -> str:
    with db.snapshot() as snap:
        rows = list(snap.execute_sql("SELECT Id FROM Namespaces WHERE Name = @n", params={"n": name},
                                     param_types={"n": param_types.STRING}))
    return str(rows[0][0])


async def run_chaos(cluster: Cluster, workdir: Path, plan: Plan) -> dict[str, Any]:
    """Run ``plan`` against ``cluster`` (three members, with API keys); the figures. Raises AssertionError on a loss."""
    m0, m1, m2 = cluster.members
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, wait_owned, cluster.db, {m.member_id for m in cluster.members}, 60)
    rng = random.Random(plan.seed)
    _client_files(cluster)
    completions = workdir / "completions.txt"
    worker = WorkerProcess(cluster, m0.address, completions, workdir / "worker.log")
    await loop.run_in_executor(None, worker.start)
    client = await cluster.connect(m0)
    ns_id = _namespace_id(cluster.db)
    ids = [f"chaos-{i}" for i in range(plan.workflows)]
    started_at: dict[str, float] = {}
    signal_sent: dict[str, float] = {}
    signal_acked: dict[str, float] = {}
    incidents: list[Incident] = []
    t0 = time.time()

    async def start_one(i: int, gate: asyncio.Semaphore) -> None:
        async with gate:
            await _retry_until_ok(lambda: client.start_workflow(Chaos.run, i, id=ids[i], task_queue=TASK_QUEUE,
                                                                request_id=f"chaos-start-{i}"))
            started_at[ids[i]] = time.time()
        await asyncio.sleep(rng.uniform(*plan.signal_delay))
        req = svc.SignalWorkflowExecutionRequest(
            namespace="default", workflow_execution=pb.WorkflowExecution(workflow_id=ids[i]), signal_name="bonus",
            input=client.data_converter.to_payloads([bonus_of(i)]), request_id=f"chaos-signal-{i}", identity="chaos")
        signal_sent[ids[i]] = time.time()
        await _retry_until_ok(lambda: client.stub.SignalWorkflowExecution(req, timeout=30))
        signal_acked[ids[i]] = time.time()

    def owners_now() -> dict[int, tuple[str, int]]:
        """shard -> (owner, range id) of the live leases."""
        now = int(time.time() * 1000)
        return {s: (o, r) for s, (o, r, exp) in leases(cluster.db).items() if exp > now}

    def victim_of(before: dict[int, tuple[str, int]], member: Member) -> dict[int, int]:
        return {s: r for s, (o, r) in before.items() if o == member.member_id}

    async def at(seconds: float) -> None:
        await asyncio.sleep(max(0.0, t0 + seconds - time.time()))

    def wait_taken(shards: dict[int, int], timeout: float) -> None:
        """Until each of ``shards`` (id -> the victim's range id) is held again by a live process (a newer claim)."""
        deadline = time.monotonic() + timeout
        while True:
            now = int(time.time() * 1000)
            cur = leases(cluster.db)
            if all(cur[s][1] > r and cur[s][2] > now for s, r in shards.items()):
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"shards {sorted(shards)} not taken over after {timeout} s: {cur}")
            time.sleep(0.05)

    async def takeover(inc: Incident, shards: dict[int, int]) -> None:
        await loop.run_in_executor(None, wait_taken, shards, TTL + 20)
        inc.takeover_s = round(time.time() - inc.at, 3)

    async def pause() -> None:
        assert plan.pause_at is not None
        await at(plan.pause_at)
        victim = victim_of(await loop.run_in_executor(None, owners_now), m1)
        m1.signal(signal.SIGSTOP)
        inc = Incident("SIGSTOP m1", time.time(), m1.member_id, set(victim))
        incidents.append(inc)
        await takeover(inc, victim)
        await asyncio.sleep(max(0.0, inc.at + plan.pause_ttls * TTL - time.time()))
        m1.signal(signal.SIGCONT)
        inc.until = time.time()

    async def kill_member() -> None:
        assert plan.kill_member_at is not None
        await at(plan.kill_member_at)
        victim = victim_of(await loop.run_in_executor(None, owners_now), m2)
        m2.signal(signal.SIGKILL)
        assert m2.proc is not None
        m2.proc.wait()
        inc = Incident("kill -9 m2", time.time(), m2.member_id, set(victim))
        incidents.append(inc)
        restart = asyncio.ensure_future(restart_member(inc.at + plan.restart_after))
        await takeover(inc, victim)
        await restart

    async def restart_member(when: float) -> None:
        await asyncio.sleep(max(0.0, when - time.time()))
        fresh = Member(m2.config, m2.env).start()
        await loop.run_in_executor(None, fresh.wait_listening)
        cluster.members[2] = fresh

    async def kill_worker() -> None:
        assert plan.kill_worker_at is not None
        await at(plan.kill_worker_at)
        worker.kill()
        incidents.append(Incident("kill -9 worker", time.time()))
        await asyncio.sleep(plan.restart_after)
        await loop.run_in_executor(None, worker.start)

    gate = asyncio.Semaphore(plan.start_concurrency)
    load = [asyncio.ensure_future(start_one(i, gate)) for i in range(plan.workflows)]
    chaos = [asyncio.ensure_future(fn()) for when, fn in ((plan.pause_at, pause), (plan.kill_member_at, kill_member),
                                                          (plan.kill_worker_at, kill_worker)) if when is not None]
    try:
        await asyncio.gather(*chaos)
        await asyncio.gather(*load)
        got = await results_or_report(client, ids, timeout=plan.result_timeout, db=cluster.db, members=cluster.members)
        assert got == [expected(i) for i in range(plan.workflows)], "a workflow returned a wrong result"
        t_done = time.time()
        # every member back: shards rebalanced over the three of them
        await loop.run_in_executor(None, wait_owned, cluster.db, {m.member_id for m in cluster.members}, 60)
        histories = {wid: await raw_history(client.stub, wid) for wid in ids}
    finally:
        for t in load + chaos:
            t.cancel()
        worker.stop()
        await client.close()
    runs = check_histories(cluster.db)
    return _figures(plan, ns_id, ids, histories, started_at, signal_sent, signal_acked, incidents, completions, runs,
                    t0, t_done)


def _figures(plan: Plan, ns_id: str, ids: list[str], histories: dict[str, list[pb.HistoryEvent]],
             started_at: dict[str, float], signal_sent: dict[str, float], signal_acked: dict[str, float],
             incidents: list[Incident], completions: Path, runs: int, t0: float, t_done: float) -> dict[str, Any]:
    """Check each history against what was acknowledged, and compute the figures."""
    missing = [wid for wid in ids if wid not in signal_acked or wid not in started_at]
    assert not missing, f"calls never acknowledged: {missing[:5]}"
    paused = [(i.at, i.until) for i in incidents if i.until is not None]

    def during_pause(t: float) -> bool:
        return any(a <= t <= b for a, b in paused)

    ended: dict[tuple[str, str, int], float] = {}  # (workflow id, activity id, attempt) -> when the activity returned
    for line in completions.read_text().splitlines() if completions.exists() else []:
        wid, activity_id, attempt, ts = line.split()
        key = (wid, activity_id, int(attempt))
        ended[key] = max(float(ts), ended.get(key, 0.0))
    completion_lat: list[float] = []
    completion_lat_paused: list[float] = []
    first_event_after: dict[int, float] = {}  # incident index -> first event written on its victim's shards
    for n, wid in enumerate(ids):
        events = histories[wid]
        types = [e.event_type for e in events]
        signals = [e.workflow_execution_signaled_event_attributes for e in events
                   if e.event_type == pb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED]
        assert [s.request_id for s in signals] == [f"chaos-signal-{n}"], \
            f"{wid}: the acknowledged signal is not in the history exactly once: {[s.request_id for s in signals]}"
        assert types.count(pb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED) == 3, f"{wid}: {types}"
        assert types.count(pb.EVENT_TYPE_TIMER_FIRED) == 1, f"{wid}: {types}"
        assert types[-1] == pb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, f"{wid}: {types[-3:]}"
        activity_ids = {e.event_id: e.activity_task_scheduled_event_attributes.activity_id for e in events
                        if e.event_type == pb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED}
        attempts = {e.activity_task_started_event_attributes.scheduled_event_id:
                    e.activity_task_started_event_attributes.attempt for e in events
                    if e.event_type == pb.EVENT_TYPE_ACTIVITY_TASK_STARTED}
        for e in events:
            if e.event_type == pb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
                sched = e.activity_task_completed_event_attributes.scheduled_event_id
                end = ended.get((wid, activity_ids[sched], attempts.get(sched, 0)))
                if end is not None:
                    lat = e.event_time_ms / 1000.0 - end
                    completion_lat.append(lat)
                    if during_pause(end):
                        completion_lat_paused.append(lat)
        shard = zlib.crc32(f"{ns_id}/{wid}".encode()) % NUM_SHARDS
        for k, inc in enumerate(incidents):
            if shard in inc.victim_shards:
                after = [e.event_time_ms / 1000.0 for e in events if e.event_time_ms / 1000.0 > inc.at + 0.05]
                if after:
                    first_event_after[k] = min(first_event_after.get(k, after[0]), after[0])
    sig_lat = [signal_acked[w] - signal_sent[w] for w in ids]
    sig_lat_paused = [signal_acked[w] - signal_sent[w] for w in ids if during_pause(signal_sent[w])]
    closes = {w: histories[w][-1].event_time_ms / 1000.0 for w in ids}
    return {
        "workflows": plan.workflows, "runs_checked": runs, "held": True, "seconds": round(t_done - t0, 1),
        "lease_ttl_s": TTL, "renew_interval_s": RENEW,
        "incidents": [{"what": i.what, "at_s": round(i.at - t0, 2), "takeover_s": i.takeover_s,
                       "first_progress_s": round(first_event_after[k] - i.at, 3) if k in first_event_after else None,
                       "paused_s": round(i.until - i.at, 2) if i.until else None}
                      for k, i in enumerate(incidents)],
        "signal_latency_s": _summary(sig_lat), "signal_latency_while_paused_s": _summary(sig_lat_paused),
        "completion_latency_s": _summary(completion_lat),
        "completion_latency_while_paused_s": _summary(completion_lat_paused),
        "start_to_close_s": _summary([closes[w] - started_at[w] for w in ids]),
    }
