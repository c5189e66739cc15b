"""Spindle benchmark: W1 chain3 (max and fixed rate), W2 timers, W3 signals. Prints one JSON line.

Modes:
  --mode start-dev   `spindle server start-dev` on a durable SQLite file, the worker and this
                     driver as three separate processes (gRPC between them).
  --mode embedded    one process: Client.connect("embedded:FILE") with the worker in-process.

Workloads match the peers' benchmark (figures in bench/RESULTS.md): W1 = 1,000 workflows of 3
sequential activities with at most 100 in flight, then an open-loop rate at half the measured
maximum for 20 s; W2 = 2,000 workflows sleeping 2 s; W3 = 500 workflows parked on a signal,
one signal each (burst), and W3-seq = single signals on an idle server.

--tls (start-dev only): the server serves mutual TLS with certificates made for the run
(a CA, a server certificate for 127.0.0.1, a client certificate); the driver and the worker
connect with them (the worker reads the SPINDLE_TLS_* variables). Compare with a run without
it, back to back: the issue's target is W1 within 15%.

SPINDLE_BENCH_SERVER_METRICS=1 (start-dev): the server records and serves its metrics (--metrics-port 0);
SPINDLE_BENCH_WORKER_METRICS=1: the worker records spindle_worker_* metrics (bench/worker.py; embedded mode too).
SPINDLE_BENCH_VERSIONING=1 (start-dev): the worker is a versioned build (worker deployment "bench", build "1",
PINNED) and that version is made current before the workloads, so every task goes through versioned routing.
The issue's target: W1 with both on within 5% of both off, back to back.

--auth (start-dev only): the server requires API keys (``start-dev --auth``); the driver and
the worker send the generated system_admin key (the worker reads SPINDLE_API_KEY). With
--tls and --auth together: the issue's "TLS and API keys on" run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

from workloads import ACTIVITIES, TASK_QUEUE, WORKFLOWS  # noqa: E402

from spindle import Client, Worker  # noqa: E402
from spindle.envconfig import ClientConfig  # noqa: E402

CLK = os.sysconf("SC_CLK_TCK")


def pct(xs: list[float], p: float) -> float | None:
    if not xs:
        return None
    s = sorted(xs)
    return s[max(0, min(len(s) - 1, math.ceil(p / 100.0 * len(s)) - 1))]


def summ(xs: list[float]) -> dict[str, float]:
    if not xs:
        return {}
    return {"n": len(xs), "p50": round(pct(xs, 50) * 1000, 1), "p99": round(pct(xs, 99) * 1000, 1),  # type: ignore[operator]
            "max": round(max(xs) * 1000, 1), "mean": round(sum(xs) / len(xs) * 1000, 1)}


def proc_cpu(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            parts = f.read().rsplit(")", 1)[1].split()
        return (int(parts[11]) + int(parts[12])) / CLK
    except OSError:
        return None


def proc_rss_mb(pid: int, key: str = "VmRSS") -> float | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return round(int(line.split()[1]) / 1024.0, 1)
    except OSError:
        return None
    return None


def self_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


class CpuMeter:
    def __init__(self, pids: dict[str, int]) -> None:
        self.pids = pids
        self.result: dict[str, float] = {}

    def __enter__(self) -> "CpuMeter":
        self.t0 = time.perf_counter()
        self.c0 = {k: proc_cpu(p) for k, p in self.pids.items()}
        self.s0 = self_cpu()
        return self

    def __exit__(self, *a: object) -> None:
        out = {"wall_s": round(time.perf_counter() - self.t0, 2)}
        for k, p in self.pids.items():
            c1, c0 = proc_cpu(p), self.c0[k]
            if c1 is not None and c0 is not None:
                out[k + "_cpu_s"] = round(c1 - c0, 2)
        out["starter_cpu_s" if self.pids else "process_cpu_s"] = round(self_cpu() - self.s0, 2)
        self.result = out


async def w1_max(client: Client, prefix: str, n: int, conc: int) -> dict:
    sem = asyncio.Semaphore(conc)
    starts: list[float] = []
    e2es: list[float] = []
    errors = 0

    async def one(i: int) -> None:
        nonlocal errors
        async with sem:
            t0 = time.perf_counter()
            try:
                h = await client.start_workflow("chain3", i, id=f"{prefix}-{i}", task_queue=TASK_QUEUE)
                t1 = time.perf_counter()
                r = await h.result()
                assert r == i + 3, r
                starts.append(t1 - t0)
                e2es.append(time.perf_counter() - t0)
            except Exception as e:  # noqa: BLE001
                errors += 1
                if errors < 5:
                    print("w1 error", repr(e), file=sys.stderr)

    t0 = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(n)))
    wall = time.perf_counter() - t0
    return {"n": n, "concurrency": conc, "errors": errors, "wall_s": round(wall, 3),
            "wf_per_s": round(len(e2es) / wall, 1), "e2e_ms": summ(e2es), "start_ms": summ(starts)}


async def w1_rate(client: Client, prefix: str, rate: float, duration: float) -> dict:
    e2es: list[float] = []
    errors = 0

    async def one(i: int) -> None:
        nonlocal errors
        t0 = time.perf_counter()
        try:
            h = await client.start_workflow("chain3", i, id=f"{prefix}-{i}", task_queue=TASK_QUEUE)
            assert await h.result() == i + 3
            e2es.append(time.perf_counter() - t0)
        except Exception as e:  # noqa: BLE001
            errors += 1
            if errors < 5:
                print("w1rate error", repr(e), file=sys.stderr)

    n = int(rate * duration)
    tasks = []
    t0 = time.perf_counter()
    for i in range(n):
        d = t0 + i / rate - time.perf_counter()
        if d > 0:
            await asyncio.sleep(d)
        tasks.append(asyncio.create_task(one(i)))
    await asyncio.gather(*tasks)
    return {"offered_rate": rate, "duration_s": duration, "n": n, "errors": errors,
            "wall_s": round(time.perf_counter() - t0, 2), "e2e_ms": summ(e2es)}


async def w2_timers(client: Client, prefix: str, n: int, conc: int, secs: float = 2.0) -> dict:
    sem = asyncio.Semaphore(conc)
    inner: list[float] = []
    client_lag: list[float] = []
    errors = 0

    async def one(i: int) -> None:
        nonlocal errors
        try:
            async with sem:
                h = await client.start_workflow("timer", secs, id=f"{prefix}-{i}", task_queue=TASK_QUEUE)
            t_sched, t_wake = await h.result()
            tr = time.time()
            inner.append(t_wake - t_sched - secs)
            client_lag.append(tr - (t_sched + secs))
        except Exception as e:  # noqa: BLE001
            errors += 1
            if errors < 5:
                print("w2 error", repr(e), file=sys.stderr)

    t0 = time.time()
    await asyncio.gather(*(one(i) for i in range(n)))
    wall = time.time() - t0
    return {"n": n, "sleep_s": secs, "errors": errors, "wall_s": round(wall, 2), "wf_per_s": round(len(inner) / wall, 1),
            "lag_inner_ms": summ(inner), "lag_intended_wake_to_client_result_ms": summ(client_lag)}


async def _park(client: Client, prefix: str, n: int, conc: int) -> list:
    sem = asyncio.Semaphore(conc)
    handles = []

    async def start(i: int) -> None:
        async with sem:
            handles.append(await client.start_workflow("sigwait", id=f"{prefix}-{i}", task_queue=TASK_QUEUE))

    await asyncio.gather(*(start(i) for i in range(n)))
    deadline = time.perf_counter() + 120
    while time.perf_counter() < deadline:
        pend = 0
        for h in handles:
            d = await h.describe()
            pend += bool(d.raw.pending_workflow_task) if d.raw is not None else 0  # type: ignore[union-attr]
        if pend == 0:
            break
        await asyncio.sleep(0.2)
    return handles


async def w3_signal(client: Client, prefix: str, n: int, conc: int) -> dict:
    handles = await _park(client, prefix, n, conc)
    await asyncio.sleep(1.0)
    lat: list[float] = []
    errors = 0
    sem = asyncio.Semaphore(conc)

    async def one(h: object) -> None:
        nonlocal errors
        try:
            res = asyncio.create_task(h.result())  # type: ignore[attr-defined]
            await asyncio.sleep(0)
            async with sem:
                ts = time.perf_counter()
                await h.signal("go", 7)  # type: ignore[attr-defined]
            assert await res == 7
            lat.append(time.perf_counter() - ts)
        except Exception as e:  # noqa: BLE001
            errors += 1
            if errors < 5:
                print("w3 error", repr(e), file=sys.stderr)

    t0 = time.perf_counter()
    await asyncio.gather(*(one(h) for h in handles))
    return {"n": n, "errors": errors, "signal_phase_wall_s": round(time.perf_counter() - t0, 2),
            "signal_to_result_ms": summ(lat)}


async def w3_seq(client: Client, prefix: str, n: int) -> dict:
    handles = await _park(client, prefix, n, 50)
    await asyncio.sleep(1.0)
    lat: list[float] = []
    rnd = random.Random(1)
    for h in handles:
        res = asyncio.create_task(h.result())
        await asyncio.sleep(0.01 + rnd.uniform(0, 0.3))
        ts = time.perf_counter()
        await h.signal("go", 7)
        assert await res == 7
        lat.append(time.perf_counter() - ts)
    return {"n": n, "signal_to_result_ms": summ(lat)}


async def run_workloads(client: Client, a: argparse.Namespace, pids: dict[str, int]) -> dict:
    only = set(a.only.split(","))
    run = uuid.uuid4().hex[:8]
    out: dict = {}
    await w1_max(client, f"warm-{run}", 50, 50)
    if "w1" in only:
        with CpuMeter(pids) as m:
            out["w1_chain3_max"] = await w1_max(client, f"w1-{run}", a.n, a.conc)
        out["w1_chain3_max"]["cpu"] = m.result
        out["rss_after_w1_mb"] = {k: proc_rss_mb(p) for k, p in pids.items()} if pids else {"process": proc_rss_mb(os.getpid())}
    if "w1rate" in only:
        rate = a.rate or max(1.0, round(0.5 * out.get("w1_chain3_max", {}).get("wf_per_s", 20)))
        with CpuMeter(pids) as m:
            out["w1_chain3_rate"] = await w1_rate(client, f"w1r-{run}", rate, a.duration)
        out["w1_chain3_rate"]["cpu"] = m.result
    if "w2" in only:
        with CpuMeter(pids) as m:
            out["w2_timers"] = await w2_timers(client, f"w2-{run}", a.timers, a.conc)
        out["w2_timers"]["cpu"] = m.result
    if "w3" in only:
        with CpuMeter(pids) as m:
            out["w3_signal"] = await w3_signal(client, f"w3-{run}", a.signals, a.conc)
        out["w3_signal"]["cpu"] = m.result
    if "w3seq" in only:
        out["w3_signal_seq"] = await w3_seq(client, f"w3s-{run}", a.seq_signals)
    return out


def _make_pki(folder: str) -> tuple[list[str], dict[str, str]]:
    """Certificates for a mutual-TLS run: start-dev's flags and the clients' SPINDLE_TLS_* variables."""
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
    from pathlib import Path

    from tls_certs import CertificateAuthority  # made with ``cryptography``, as the tests do

    d = Path(folder)
    ca = CertificateAuthority("Spindle bench CA")
    ca_file = ca.write(d, "ca")
    scert, skey = ca.issue_server().write(d, "server")
    ccert, ckey = ca.issue("bench-client").write(d, "client")
    flags = ["--tls-cert-file", str(scert), "--tls-key-file", str(skey), "--tls-client-ca-file", str(ca_file)]
    return flags, {"SPINDLE_TLS_CA_FILE": str(ca_file), "SPINDLE_TLS_CERT_FILE": str(ccert),
                   "SPINDLE_TLS_KEY_FILE": str(ckey)}


def _spawn_server(db: str, tls_flags: list[str] | None = None, auth: bool = False) -> tuple[subprocess.Popen, str, str]:
    """start-dev on ``db``: the process, its address and (with ``auth``) the generated admin key."""
    exe = shutil.which("spindle") or os.path.join(os.path.dirname(sys.executable), "spindle")
    log = os.environ.get("SPINDLE_SERVER_LOG")
    extra = ["--config", os.environ["SPINDLE_SERVER_CONFIG"]] if os.environ.get("SPINDLE_SERVER_CONFIG") else []
    extra += tls_flags or []
    extra += ["--auth"] if auth else []
    # SPINDLE_BENCH_SERVER_METRICS=1: the server records and serves its metrics (--metrics-port 0)
    extra += ["--metrics-port", "0"] if os.environ.get("SPINDLE_BENCH_SERVER_METRICS") else []
    proc = subprocess.Popen([exe, "server", "start-dev", "--db", db, "--port", "0", *extra,
                             "--log-level", os.environ.get("SPINDLE_SERVER_LOG_LEVEL", "warning")], stdout=subprocess.PIPE,
                            stderr=open(log, "w") if log else subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    api_key = ""
    while True:  # with --auth the generated admin key comes first, then the listening line
        line = proc.stdout.readline()
        key = re.search(r"\b(spk_[0-9a-f]{16}_[A-Za-z0-9_-]{43})\b", line)
        if key:
            api_key = key.group(1)
        if not line or "listening on" in line:
            break
    m = re.search(r"listening on (\S+)", line)
    if not m or (tls_flags and "TLS with client certificates" not in line) or ("--auth" in extra and not api_key):
        proc.kill()
        raise RuntimeError(f"server did not start as asked ({' '.join(extra)}): {line!r}")
    return proc, m.group(1), api_key


async def _make_current(client: Client, deployment: str, build: str) -> None:
    """Make ``deployment``.``build`` current once its worker has polled (SPINDLE_BENCH_VERSIONING)."""
    from spindle.api.workflowservice import v1 as wsv1

    for _ in range(100):
        info = (await client.workflow_service.describe_worker_deployment(wsv1.DescribeWorkerDeploymentRequest(
            namespace=client.namespace, deployment_name=deployment))).worker_deployment_info \
            if await _deployment_known(client, deployment) else None
        if info is not None and any(v.deployment_version.build_id == build for v in info.version_summaries):
            await client.workflow_service.set_worker_deployment_current_version(
                wsv1.SetWorkerDeploymentCurrentVersionRequest(namespace=client.namespace, deployment_name=deployment,
                                                              build_id=build))
            return
        await asyncio.sleep(0.1)
    raise RuntimeError(f"the worker of {deployment}.{build} never polled")


async def _deployment_known(client: Client, deployment: str) -> bool:
    from spindle.api.workflowservice import v1 as wsv1

    resp = await client.workflow_service.list_worker_deployments(
        wsv1.ListWorkerDeploymentsRequest(namespace=client.namespace))
    return any(d.name == deployment for d in resp.worker_deployments)


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mode", choices=["start-dev", "embedded"], default="start-dev")
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--conc", type=int, default=100)
    ap.add_argument("--rate", type=float, default=0, help="0 = 50%% of the measured W1 maximum")
    ap.add_argument("--duration", type=float, default=20)
    ap.add_argument("--timers", type=int, default=2000)
    ap.add_argument("--signals", type=int, default=500)
    ap.add_argument("--seq-signals", type=int, default=50)
    ap.add_argument("--only", default="w1,w1rate,w2,w3,w3seq")
    ap.add_argument("--tls", action="store_true", help="start-dev serves mutual TLS (certificates made for the run)")
    ap.add_argument("--auth", action="store_true", help="start-dev requires API keys (start-dev --auth)")
    a = ap.parse_args()
    if (a.tls or a.auth) and a.mode != "start-dev":
        ap.error("--tls, --auth: only with --mode start-dev (embedded mode has no network)")
    tmp = tempfile.mkdtemp(prefix="spindle-bench-")
    db = os.path.join(tmp, "bench.db")
    out: dict = {"engine": "spindle", "mode": a.mode, "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                 "nproc": os.cpu_count(), "tls": a.tls, "auth": a.auth,
                 "server_metrics": bool(os.environ.get("SPINDLE_BENCH_SERVER_METRICS")),
                 "worker_metrics": bool(os.environ.get("SPINDLE_BENCH_WORKER_METRICS")),
                 "versioning": bool(os.environ.get("SPINDLE_BENCH_VERSIONING"))}
    try:
        if a.mode == "embedded":
            client = await Client.connect("embedded:" + db)
            wm = None
            if os.environ.get("SPINDLE_BENCH_WORKER_METRICS"):
                from prometheus_client import CollectorRegistry

                from spindle.worker import WorkerMetrics

                wm = WorkerMetrics(CollectorRegistry())
            async with Worker(client, task_queue=TASK_QUEUE, workflows=WORKFLOWS, activities=ACTIVITIES,
                              max_cached_workflows=4000, max_concurrent_workflow_tasks=200, max_concurrent_activities=200,
                              metrics=wm):
                out.update(await run_workloads(client, a, {}))
            await client.close()
        else:
            tls_flags, tls_env = _make_pki(tmp) if a.tls else ([], {})
            server, addr, api_key = _spawn_server(db, tls_flags, a.auth)
            if api_key:
                tls_env["SPINDLE_API_KEY"] = api_key
            worker = subprocess.Popen([sys.executable, os.path.join(HERE, "worker.py"), addr], stdout=subprocess.PIPE,
                                      text=True, env={**os.environ, **tls_env})
            try:
                assert worker.stdout is not None
                if "worker ready" not in worker.stdout.readline():
                    raise RuntimeError("worker did not start")
                tls = ClientConfig.load_client_connect_config(override_env_vars=tls_env).get("tls", False)
                client = await Client.connect(addr, tls=tls, api_key=api_key or None)
                if os.environ.get("SPINDLE_BENCH_VERSIONING"):
                    await _make_current(client, "bench", "1")
                out.update(await run_workloads(client, a, {"server": server.pid, "worker": worker.pid}))
                out["rss_end_mb"] = {"server": proc_rss_mb(server.pid), "worker": proc_rss_mb(worker.pid)}
                await client.close()
            finally:
                worker.terminate()
                server.terminate()
                worker.wait(10)
                server.wait(10)
    finally:
        if os.environ.get("SPINDLE_BENCH_KEEP_DB"):
            out["db"] = db  # kept for a look at the histories (event times of each step)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
