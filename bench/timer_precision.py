"""Timer precision: how late durable timers fire with N of them pending (issue: p99 <= 100 ms).

Starts N workflows (default 2,000) that each sleep until a wake-up time ahead of the start phase,
so every timer is pending at once; the wake-up times are spread evenly over --spread seconds
(default 10; --spread 0 makes all N fall due at the same instant). Once all are done it reads
each history and measures, on the server's clock, TimerFired.event_time - (TimerStarted.event_time
+ duration): the time from a timer's due time to its TimerFired event being committed.
Prints one JSON line. Runs on `spindle server start-dev` (default) or embedded.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

from bench import _spawn_server, summ  # noqa: E402
from spindle import Client, Worker, workflow  # noqa: E402

QUEUE = "timer-precision"


@workflow.defn(name="sleep_until")
async def sleep_until(wake_at: float) -> None:
    await workflow.sleep(max(0.001, wake_at - workflow.now().timestamp()))


async def run(client: Client, n: int, lead: float, spread: float) -> dict:
    base = time.time() + lead
    sem = asyncio.Semaphore(100)
    handles = []
    t0 = time.perf_counter()

    async def start(i: int) -> None:
        async with sem:
            wake_at = base + spread * i / n
            handles.append(await client.start_workflow("sleep_until", wake_at, id=f"tp-{i}-{base}", task_queue=QUEUE))

    await asyncio.gather(*(start(i) for i in range(n)))
    started_s = time.perf_counter() - t0
    if time.time() > base:
        raise SystemExit(f"starting {n} workflows took {started_s:.1f} s, past the wake-up time: raise --lead")
    await asyncio.gather(*(h.result() for h in handles))
    lags = []
    for h in handles:
        hist = await h.fetch_history()
        started = {e.attributes["timer_id"]: e for e in hist.events if e.event_type == "TimerStarted"}
        for e in hist.events:
            if e.event_type == "TimerFired":
                s = started[e.attributes["timer_id"]]
                due = s.event_time.timestamp() + int(s.attributes["start_to_fire_timeout_ms"]) / 1000
                lags.append(e.event_time.timestamp() - due)
    return {"n": n, "pending_at_once": n, "due_spread_s": spread, "start_phase_s": round(started_s, 2),
            "fire_lag_ms": summ(lags)}


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mode", choices=["start-dev", "embedded"], default="start-dev")
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--lead", type=float, default=20.0, help="seconds from the first start to the first wake-up")
    ap.add_argument("--spread", type=float, default=10.0, help="due times spread over this many seconds (0 = together)")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="spindle-timers-")
    out: dict = {"bench": "timer_precision", "mode": a.mode}
    server = None
    try:
        address = "embedded:" + os.path.join(tmp, "t.db")
        if a.mode == "start-dev":
            server, address, _ = _spawn_server(os.path.join(tmp, "t.db"))
        client = await Client.connect(address)
        worker_client = await Client.connect(address) if a.mode == "start-dev" else client
        async with Worker(worker_client, task_queue=QUEUE, workflows=[sleep_until], max_cached_workflows=a.n + 100):
            out.update(await run(client, a.n, a.lead, a.spread))
        await client.close()
    finally:
        if server is not None:
            server.terminate()
            server.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
