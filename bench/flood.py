"""Tenant isolation under a flood: does a flood of starts into namespace A slow namespace B's starts?

`spindle server start-dev` runs on a durable SQLite file. Namespace A (``--a-rps-limit``,
no worker) gets ``--starts`` starts fired all at once by a separate flood process (the SDK
client, which waits out RESOURCE_EXHAUSTED retry delays within its retry budget); meanwhile
this process serves namespace B with a worker and starts B workflows at ``--b-rate`` per
second, timing each start. Prints one JSON line: B's start latency idle and during the
flood (p50/p99/max, ms), B's end-to-end results, and A's outcome (started, refused after
retries, throttled answers seen, A's accepted rate).

    python bench/flood.py [--starts 5000] [--a-rps-limit 100] [--b-rate 20]

The issue's target: B's start p99 under 50 ms during the flood.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid

from typing import Any

import grpc
import grpc.aio

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from spindle import workflow  # noqa: E402
from spindle.api import service_pb2_grpc  # noqa: E402
from spindle.client import Client  # noqa: E402 - after the sys.path set-up above
from spindle.exceptions import RPCError  # noqa: E402
from spindle.worker import Worker  # noqa: E402 - after the sys.path set-up above

NS_A, NS_B = "flood-a", "flood-b"
QUEUE_A, QUEUE_B = "flood-a-q", "flood-b-q"


@workflow.defn(name="FloodNoop")
class FloodNoop:
    @workflow.run
    async def run(self, i: int) -> int:
        return i


def pct(xs: list[float], p: float) -> float | None:
    if not xs:
        return None
    s = sorted(xs)
    return s[max(0, min(len(s) - 1, math.ceil(p / 100.0 * len(s)) - 1))]


def summ(xs: list[float]) -> dict[str, Any]:
    if not xs:
        return {"n": 0}
    return {"n": len(xs), "p50": round(pct(xs, 50) * 1000, 1), "p99": round(pct(xs, 99) * 1000, 1),  # type: ignore[operator]
            "max": round(max(xs) * 1000, 1)}


class CountingStub:
    """The WorkflowService stub, counting RESOURCE_EXHAUSTED answers (the client retries them)."""

    def __init__(self, stub: Any) -> None:
        self._stub = stub
        self.throttled = 0

    def __getattr__(self, name: str) -> Any:
        fn = getattr(self._stub, name)

        async def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return await fn(*args, **kwargs)
            except grpc.aio.AioRpcError as e:
                if e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED:
                    self.throttled += 1
                raise

        return call


# ---------------------------------------------------------------------- the flood process
async def flood(address: str, starts: int) -> dict[str, Any]:
    channel = grpc.aio.insecure_channel(address)
    stub = CountingStub(service_pb2_grpc.WorkflowServiceStub(channel))
    client = Client(stub, namespace=NS_A, channel=channel)
    run = uuid.uuid4().hex[:6]
    ok: list[float] = []
    refused = 0
    other: dict[str, int] = {}
    t0 = time.perf_counter()

    async def one(i: int) -> None:
        nonlocal refused
        try:
            await client.start_workflow("FloodNoop", i, id=f"a-{run}-{i}", task_queue=QUEUE_A)
            ok.append(time.perf_counter() - t0)
        except RPCError as e:
            if e.status == "RESOURCE_EXHAUSTED":
                refused += 1
            else:
                other[e.status] = other.get(e.status, 0) + 1

    await asyncio.gather(*(one(i) for i in range(starts)))
    wall = time.perf_counter() - t0
    await client.close()
    span = (max(ok) - min(ok)) if len(ok) > 1 else 0.0
    return {"starts": starts, "started": len(ok), "refused_after_retries": refused, "other_errors": other,
            "throttled_answers": stub.throttled, "wall_s": round(wall, 2),
            "accepted_per_s": round(len(ok) / span, 1) if span > 0 else None}


# ---------------------------------------------------------------------- the measuring process
def spawn_server(db: str) -> tuple[subprocess.Popen[str], str]:
    exe = shutil.which("spindle") or os.path.join(os.path.dirname(sys.executable), "spindle")
    proc = subprocess.Popen([exe, "server", "start-dev", "--db", db, "--port", "0", "--log-level", "error"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    m = re.search(r"listening on (\S+)", line)
    if not m:
        proc.kill()
        raise RuntimeError(f"server did not start: {line!r}")
    return proc, m.group(1)


async def b_starts(client: Client, rate: float, until: asyncio.Event | float, results: list[Any]) -> list[float]:
    """Start B workflows at ``rate`` per second until ``until`` is set (or that many seconds passed)."""
    lat: list[float] = []
    run = uuid.uuid4().hex[:6]
    loop = asyncio.get_running_loop()
    end = loop.time() + until if isinstance(until, float) else None
    i = 0
    next_at = loop.time()
    while (end is None or loop.time() < end) and not (isinstance(until, asyncio.Event) and until.is_set()):
        t = time.perf_counter()
        h = await client.start_workflow(FloodNoop.run, i, id=f"b-{run}-{i}", task_queue=QUEUE_B)
        lat.append(time.perf_counter() - t)
        if os.environ.get("FLOOD_TRACE") and lat[-1] > 0.03:
            print(f"slow B start {lat[-1] * 1000:.0f} ms at {t:.2f}", file=sys.stderr)
        results.append(asyncio.ensure_future(h.result()))
        i += 1
        next_at += 1.0 / rate
        await asyncio.sleep(max(0.0, next_at - loop.time()))
    return lat


async def measure(a: argparse.Namespace) -> dict[str, Any]:
    tmp = tempfile.mkdtemp(prefix="spindle-flood-")
    server, address = spawn_server(os.path.join(tmp, "flood.db"))
    out: dict[str, Any] = {"bench": "flood", "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                           "nproc": os.cpu_count(), "starts": a.starts, "a_rps_limit": a.a_rps_limit,
                           "b_rate_per_s": a.b_rate}
    try:
        admin = await Client.connect(address)
        await admin.create_namespace(NS_A, rps_limit=a.a_rps_limit)
        await admin.create_namespace(NS_B, **({"rps_limit": a.b_rps_limit} if a.b_rps_limit is not None else {}))
        await admin.close()
        client = await Client.connect(address, namespace=NS_B)
        results: list[Any] = []
        async with Worker(client, task_queue=QUEUE_B, workflows=[FloodNoop]):
            await b_starts(client, a.b_rate, 1.0, results)  # warm up
            out["b_start_idle_ms"] = summ(await b_starts(client, a.b_rate, a.idle_seconds, results))
            proc = await asyncio.create_subprocess_exec(
                sys.executable, os.path.abspath(__file__), "--flood", address, "--starts", str(a.starts),
                stdout=asyncio.subprocess.PIPE)
            if os.environ.get("FLOOD_TRACE"):
                print(f"flood starts at {time.perf_counter():.2f}", file=sys.stderr)
            done = asyncio.Event()
            measuring = asyncio.ensure_future(b_starts(client, a.b_rate, done, results))
            stdout, _ = await proc.communicate()
            done.set()
            out["b_start_during_flood_ms"] = summ(await measuring)
            out["flood_a"] = json.loads(stdout.decode().strip().splitlines()[-1])
            t = time.perf_counter()
            values = await asyncio.wait_for(asyncio.gather(*results, return_exceptions=True), 120)
            out["b_workflows_completed"] = sum(1 for v in values if isinstance(v, int))
            out["b_workflows_started"] = len(results)
            out["b_results_drain_s"] = round(time.perf_counter() - t, 2)
        await client.close()
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--starts", type=int, default=5000, help="starts fired into namespace A at once")
    ap.add_argument("--a-rps-limit", type=float, default=100.0, help="namespace A's rps_limit (0 = unlimited)")
    ap.add_argument("--b-rps-limit", type=float, default=None, help="namespace B's rps_limit (default: server's)")
    ap.add_argument("--b-rate", type=float, default=20.0, help="B starts per second while measuring")
    ap.add_argument("--idle-seconds", type=float, default=3.0, help="B measured alone before the flood")
    ap.add_argument("--flood", metavar="ADDRESS", help=argparse.SUPPRESS)  # internal: be the flood process
    a = ap.parse_args()
    if a.flood:
        print(json.dumps(asyncio.run(flood(a.flood, a.starts))), flush=True)
        return
    print(json.dumps(asyncio.run(measure(a))), flush=True)


if __name__ == "__main__":
    main()
