"""Visibility list latency: first-page p99 of indexed list queries over 100,000 closed executions.

Setup: an embedded control plane on a fresh SQLite file (``--db``, default a temp dir).
100,000 closed executions' visibility rows are written directly through the store
(``Store.apply`` with visibility rows, 1,000 per mutation) for speed, plus a few real
executions run by a worker, so the table holds both kinds. Then each query below is
sent ``--reps`` times through the real frontend (``ListWorkflowExecutions`` on the
embedded stub, or over gRPC with ``--grpc``), first page of ``--page-size`` rows,
and its latency percentiles are reported. Target: every first page p99 < 50 ms.

Prints one JSON line: {"rows": ..., "insert_s": ..., "queries": {name: {"p50_ms", "p99_ms",
"rows"}}, "worst_p99_ms": ..., "target_ms": 50, "ok": ...}.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import sys
import tempfile
import time

from datetime import timedelta
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from spindle import Client, Worker, activity, workflow  # noqa: E402
from spindle.api import service_pb2 as svc  # noqa: E402
from spindle.controlplane import embedded  # noqa: E402
from spindle.controlplane.config import ServerConfig  # noqa: E402
from spindle.controlplane.store import Mutation, VisibilityRow  # noqa: E402

BASE_MS = 1_704_067_200_000  # 2024-01-01T00:00:00Z
SPAN_MS = 30 * 86_400_000  # starts spread over 30 days
TYPES = [f"Type{i}" for i in range(20)]
CUSTOMERS = 1000
STATUSES = [2] * 16 + [3, 3, 4, 5, 7]  # mostly Completed

QUERIES = {
    "all": "",
    "by_type": "WorkflowType = 'Type7'",
    "by_status": "ExecutionStatus = 'Failed'",
    "by_start_range": "StartTime BETWEEN '2024-01-10T00:00:00Z' AND '2024-01-11T00:00:00Z'",
    "by_keyword": "CustomerId = 'cust-42'",
    "type_and_status": "WorkflowType = 'Type3' AND ExecutionStatus = 'Completed'",
    "order_by_start_asc": "WorkflowType = 'Type11' ORDER BY StartTime ASC",
    "keyword_and_range": "CustomerId = 'cust-7' AND StartTime >= '2024-01-20T00:00:00Z'",
}


@activity.defn
async def noop(x: int) -> int:
    return x


@workflow.defn
class BenchWf:
    @workflow.run
    async def run(self, x: int) -> int:
        return await workflow.execute_activity(noop, x, start_to_close_timeout=timedelta(seconds=10))


def pct(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[max(0, min(len(s) - 1, math.ceil(p / 100.0 * len(s)) - 1))]


def synthetic_rows(ns_id: str, n: int, seed: int = 1) -> list[VisibilityRow]:
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        start = BASE_MS + rng.randrange(SPAN_MS)
        dur = rng.randrange(100, 600_000)
        rows.append(VisibilityRow(
            namespace_id=ns_id, workflow_id=f"bench-{i}", run_id=f"{rng.getrandbits(128):032x}",
            workflow_type=rng.choice(TYPES), status=rng.choice(STATUSES), task_queue="bench",
            start_time_ms=start, close_time_ms=start + dur, execution_duration_ms=dur,
            history_length=rng.randrange(5, 60),
            search_attributes=json.dumps({"CustomerId": f"cust-{rng.randrange(CUSTOMERS)}"})))
    return rows


async def populate(cp: embedded.EmbeddedControlPlane, n: int) -> float:
    """Write ``n`` visibility rows through the store; returns seconds taken."""
    store = cp.control_plane.store
    ns_id = cp.control_plane.namespaces.get("default").id
    range_id = await store.get_range_id(0)
    rows = synthetic_rows(ns_id, n)
    t0 = time.perf_counter()
    for i in range(0, n, 1000):
        await store.apply(Mutation(shard_id=0, range_id=range_id, visibility=rows[i:i + 1000]))
    return time.perf_counter() - t0


async def run_real(client: Client, n: int) -> None:
    async with Worker(client, task_queue="bench-real", workflows=[BenchWf], activities=[noop]):
        handles = [await client.start_workflow(BenchWf.run, i, id=f"real-{i}", task_queue="bench-real",
                                               search_attributes={"CustomerId": "cust-42"}) for i in range(n)]
        for h in handles:
            await h.result()


async def measure(stub: Any, reps: int, page_size: int) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for name, query in QUERIES.items():
        lat: list[float] = []
        rows = 0
        for _ in range(reps):
            t0 = time.perf_counter()
            resp = await stub.ListWorkflowExecutions(svc.ListWorkflowExecutionsRequest(
                namespace="default", query=query, page_size=page_size))
            lat.append((time.perf_counter() - t0) * 1000)
            rows = len(resp.executions)
        out[name] = {"p50_ms": round(pct(lat, 50), 2), "p99_ms": round(pct(lat, 99), 2), "rows": rows}
    return out


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    tmp = None
    db = args.db
    if db is None:
        tmp = tempfile.mkdtemp(prefix="spindle-vis-bench-")
        db = os.path.join(tmp, "vis.db")
    cp = await embedded.start(db, config=ServerConfig(num_shards=4))
    server = channel = None
    try:
        stub: Any = cp.stub
        await stub.AddSearchAttributes(svc.AddSearchAttributesRequest(
            namespace="default", search_attributes={"CustomerId": svc.SEARCH_ATTRIBUTE_TYPE_KEYWORD}))
        insert_s = await populate(cp, args.rows)
        client = Client(cp.stub, namespace="default")
        await run_real(client, args.real)
        await asyncio.sleep(0.2)  # visibility rows of the real runs are flushed in the ack batch
        if args.grpc:
            import grpc

            from spindle.api import service_pb2_grpc
            from spindle.controlplane.server import serve

            server, port = await serve(cp.control_plane, "127.0.0.1", 0)
            channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
            stub = service_pb2_grpc.WorkflowServiceStub(channel)
        await measure(stub, 5, args.page_size)  # warm the page cache and the query compiler
        queries = await measure(stub, args.reps, args.page_size)
        worst = max(q["p99_ms"] for q in queries.values())
        return {"bench": "visibility_list", "rows": args.rows + args.real, "real_executions": args.real,
                "page_size": args.page_size, "reps": args.reps, "transport": "grpc" if args.grpc else "embedded",
                "insert_s": round(insert_s, 2), "queries": queries, "worst_p99_ms": worst, "target_ms": 50,
                "ok": worst < 50}
    finally:
        if channel is not None:
            await channel.close()
        if server is not None:
            await server.stop(None)
        await cp.stop()
        if tmp is not None:
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=100_000, help="synthetic closed executions (default 100000)")
    p.add_argument("--real", type=int, default=20, help="real executions run by a worker (default 20)")
    p.add_argument("--reps", type=int, default=200, help="requests per query (default 200)")
    p.add_argument("--page-size", type=int, default=100, help="first page size (default 100)")
    p.add_argument("--grpc", action="store_true", help="query over gRPC instead of the embedded stub")
    p.add_argument("--db", default=None, help="SQLite file (default: a fresh temp file)")
    args = p.parse_args()
    print(json.dumps(asyncio.run(main_async(args))), flush=True)


if __name__ == "__main__":
    main()
