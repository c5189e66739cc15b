"""The same small workload on the SQLite store and on the Cloud Spanner store (emulator). Prints one JSON line.

Workload: N workflows (default 100, at most 50 in flight), each running 3
activities and a 50 ms timer, on one in-process control plane served over gRPC
(``ControlPlane(store)`` + ``serve``) with a worker in the same process. For each
backend it reports wall time, workflows/s, and where the store's time went: the
count and total time of every Store method the engine called (writes through
``apply``, history loads, queue scans), plus for Spanner the writer's transaction
and mutation counts (group commit). ``ratio`` is Spanner wall time / SQLite wall time.

    .venv/bin/python bench/spanner_vs_sqlite.py [--workflows 100] [--concurrency 50]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import sys
import tempfile
import time
import uuid

from datetime import timedelta
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests", "controlplane"))

from spindle import Client, Worker, activity, workflow  # noqa: E402
from spindle.controlplane.config import ServerConfig  # noqa: E402
from spindle.controlplane.server import ControlPlane, serve  # noqa: E402
from spindle.controlplane.store import Store  # noqa: E402

STORE_METHODS = ("apply", "apply_many", "load_execution", "read_events", "get_current", "get_execution_row",
                 "load_transfer_tasks", "load_timer_tasks", "load_backlog", "query_visibility", "acquire_shard")


@activity.defn
async def step(x: int) -> int:
    return x + 1


@workflow.defn
class Bench:
    @workflow.run
    async def run(self, x: int) -> int:
        for _ in range(3):
            x = await workflow.execute_activity(step, x, start_to_close_timeout=timedelta(seconds=30))
        await workflow.sleep(timedelta(milliseconds=50))
        return x


def instrument(store: Store) -> dict[str, list[float]]:
    """Time every call of the Store methods the engine uses (count, seconds)."""
    stats: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0])
    for name in STORE_METHODS:
        fn = getattr(store, name)

        async def timed(*a: Any, _fn: Any = fn, _n: str = name, **kw: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return await _fn(*a, **kw)
            finally:
                s = stats[_n]
                s[0] += 1
                s[1] += time.perf_counter() - t0

        setattr(store, name, timed)
    return stats


async def run_workload(store: Store, n: int, concurrency: int) -> dict[str, Any]:
    cp = ControlPlane(store, ServerConfig(num_shards=4))
    t_open = time.perf_counter()
    await cp.start()
    open_s = time.perf_counter() - t_open
    stats = instrument(store)
    server, port = await serve(cp, "127.0.0.1", 0)
    client = await Client.connect(f"127.0.0.1:{port}")
    tq = "bench-" + uuid.uuid4().hex[:6]
    sem = asyncio.Semaphore(concurrency)
    latencies: list[float] = []

    async def one(i: int) -> None:
        async with sem:
            t0 = time.perf_counter()
            assert await client.execute_workflow(Bench.run, i, id=f"b-{i}", task_queue=tq) == i + 3
            latencies.append(time.perf_counter() - t0)

    try:
        async with Worker(client, task_queue=tq, workflows=[Bench], activities=[step]):
            t0 = time.perf_counter()
            await asyncio.gather(*(one(i) for i in range(n)))
            wall = time.perf_counter() - t0
    finally:
        await client.close()
        await server.stop(grace=0.5)
        writer = getattr(store, "stats", {}) if store.name == "spanner" else {}
        await cp.stop()
    latencies.sort()
    calls = {k: {"calls": int(v[0]), "seconds": round(v[1], 3)} for k, v in sorted(stats.items()) if v[0]}
    return {
        "wall_s": round(wall, 3), "workflows_per_s": round(n / wall, 1), "open_s": round(open_s, 3),
        "latency_p50_s": round(latencies[len(latencies) // 2], 3),
        "latency_p99_s": round(latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))], 3),
        "store_calls": calls,
        "store_seconds_total": round(sum(v["seconds"] for v in calls.values()), 3),
        **({"writer": {k: (round(v, 3) if isinstance(v, float) else v) for k, v in writer.items()}} if writer else {}),
    }


async def main(args: argparse.Namespace) -> dict[str, Any]:
    from spindle.controlplane.store.sqlite import SqliteStore

    out: dict[str, Any] = {"bench": "spanner_vs_sqlite", "workflows": args.workflows, "concurrency": args.concurrency,
                           "workload": "3 activities + 50 ms timer per workflow, in-process server over gRPC"}
    with tempfile.TemporaryDirectory() as tmp:
        out["sqlite"] = await run_workload(SqliteStore(os.path.join(tmp, "bench.db")), args.workflows, args.concurrency)
    from spanner_emulator import skip_reason, spanner_test_instance

    reason = skip_reason()
    if reason is not None:
        out["spanner_emulator"] = {"skipped": reason}
        return out
    from spindle.controlplane.store.spanner import SpannerStore

    with spanner_test_instance() as inst:
        store = SpannerStore(inst.project, inst.instance_id, inst.new_database_id(), client=inst.client)
        out["spanner_emulator"] = await asyncio.get_running_loop().create_task(
            run_workload(store, args.workflows, args.concurrency))
    sq, sp = out["sqlite"], out["spanner_emulator"]
    out["ratio_wall"] = round(sp["wall_s"] / sq["wall_s"], 2)
    apply_sq = sq["store_calls"].get("apply", {"seconds": 0.0})["seconds"]
    apply_sp = sp["store_calls"].get("apply", {"seconds": 0.0})["seconds"]
    out["where_time_goes"] = {
        "apply_seconds": {"sqlite": apply_sq, "spanner": apply_sp},
        "reads_seconds": {"sqlite": round(sq["store_seconds_total"] - apply_sq, 3),
                          "spanner": round(sp["store_seconds_total"] - apply_sp, 3)},
        "spanner_mutations_per_transaction": round(sp.get("writer", {}).get("mutations", 0)
                                                   / max(1, sp.get("writer", {}).get("transactions", 1)), 2),
        "note": "store seconds are summed over concurrent calls (they overlap); the emulator commits one "
                "read-write transaction at a time, a few ms each, so writes dominate",
    }
    return out


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workflows", type=int, default=100)
    p.add_argument("--concurrency", type=int, default=50)
    print(json.dumps(asyncio.run(main(p.parse_args()))), flush=True)
