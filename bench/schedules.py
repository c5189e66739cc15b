"""Schedules under load: N schedules firing every minute on ``spindle server start-dev``; action lag p50/p99.

    python bench/schedules.py --minutes 3 [--schedules 1000] [--spread 0]

Starts start-dev on a fresh SQLite file and a worker process (a workflow that completes at
once), creates ``--schedules`` schedules (interval one minute; with ``--spread S`` schedule i
gets a phase offset of ``i * S / N`` seconds, rounded down to a whole second, by default they all fire on the minute), waits
for the first full minute, measures for ``--minutes`` minutes, then pauses them all and reads
every run they started from visibility.

Action lag = the run's start time (the server's clock when it wrote the run) minus its
intended fire time (``ScheduledStartTime``, the nominal time: no jitter). Prints one JSON line.
Issue 17's target: p99 under 200 ms for 1,000 schedules.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import grpc

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.api import service_pb2_grpc

TASK_QUEUE = "bench-sched"


# ---------------------------------------------------------------------------- the worker process
def worker_main(address: str) -> None:
    from spindle import Client, Worker, workflow

    @workflow.defn(name="noop")
    class Noop:
        @workflow.run
        async def run(self) -> None:
            return None

    async def main() -> None:
        import signal

        client = await Client.connect(address)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for s in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(s, stop.set)
        async with Worker(client, task_queue=TASK_QUEUE, workflows=[Noop], max_concurrent_workflow_tasks=200,
                          max_cached_workflows=2000):
            print("worker ready", flush=True)
            await stop.wait()
        await client.close()

    asyncio.run(main())


# ---------------------------------------------------------------------------- the driver
def pct(xs: list[float], p: float) -> float | None:
    if not xs:
        return None
    s = sorted(xs)
    return round(s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))], 1)


def spawn_server(db: str) -> tuple[subprocess.Popen, str]:
    exe = shutil.which("spindle") or os.path.join(os.path.dirname(sys.executable), "spindle")
    proc = subprocess.Popen([exe, "server", "start-dev", "--db", db, "--port", "0", "--log-level", "warning"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    line = ""
    while True:
        line = proc.stdout.readline()
        if not line or "listening on" in line:
            break
    m = re.search(r"listening on (\S+)", line)
    if not m:
        proc.kill()
        raise RuntimeError(f"server did not start: {line!r}")
    return proc, m.group(1)


def cpu_seconds(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except OSError:
        return None


async def run(a: argparse.Namespace) -> dict:
    folder = tempfile.mkdtemp(prefix="spindle-bench-sched-")
    server, address = spawn_server(os.path.join(folder, "sched.db"))
    worker = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker", address], stdout=subprocess.PIPE,
                              text=True)
    try:
        assert worker.stdout is not None
        if "worker ready" not in worker.stdout.readline():
            raise RuntimeError("worker did not start")
        channel = grpc.aio.insecure_channel(address)
        stub = service_pb2_grpc.WorkflowServiceStub(channel)
        n = a.schedules
        sem = asyncio.Semaphore(50)

        async def create(i: int) -> None:
            offset = int(i * a.spread / n) * 1000 if a.spread else 0  # whole seconds
            async with sem:
                await stub.CreateSchedule(svc.CreateScheduleRequest(
                    namespace="default", schedule_id=f"b-{i}", request_id=f"b-{i}",
                    schedule=pb.Schedule(
                        spec=pb.ScheduleSpec(intervals=[pb.ScheduleIntervalSpec(every_ms=60_000, offset_ms=offset)]),
                        action=pb.ScheduleActionStartWorkflow(workflow_id=f"b-{i}", workflow_type="noop",
                                                              task_queue=TASK_QUEUE),
                        policies=pb.SchedulePolicies(overlap_policy=pb.SCHEDULE_OVERLAP_POLICY_ALLOW_ALL))),
                    timeout=60)

        t = time.time()
        await asyncio.gather(*(create(i) for i in range(n)))
        create_s = time.time() - t
        # measure the actions due from the next full minute on, for a.minutes minutes
        start_ms = (int(time.time()) // 60 + 1) * 60_000
        end_ms = start_ms + a.minutes * 60_000
        cpu0 = {"server": cpu_seconds(server.pid), "worker": cpu_seconds(worker.pid)}
        await asyncio.sleep(max(0.0, (end_ms + 5_000) / 1000 - time.time()))
        cpu1 = {"server": cpu_seconds(server.pid), "worker": cpu_seconds(worker.pid)}
        for i in range(n):  # stop them so the reading below is not racing new actions
            await stub.PatchSchedule(svc.PatchScheduleRequest(namespace="default", schedule_id=f"b-{i}",
                                                              patch=svc.SchedulePatch(pause="bench over")))
        lags: list[float] = []
        token = b""
        while True:
            r = await stub.ListWorkflowExecutions(svc.ListWorkflowExecutionsRequest(
                namespace="default", page_size=1000, next_page_token=token,
                query=f"ScheduledStartTime >= {start_ms} AND ScheduledStartTime < {end_ms}"), timeout=60)
            for e in r.executions:
                nominal = json.loads(e.search_attributes.indexed_fields["ScheduledStartTime"].data)
                lags.append(e.start_time_ms - nominal)
            token = r.next_page_token
            if not token:
                break
        await channel.close()
        expected = n * a.minutes
        return {
            "bench": "schedules", "schedules": n, "minutes": a.minutes, "spread_s": a.spread,
            "create_s": round(create_s, 2), "actions_expected": expected, "actions_measured": len(lags),
            "lag_ms": {"p50": pct(lags, 50), "p90": pct(lags, 90), "p99": pct(lags, 99),
                       "max": round(max(lags), 1) if lags else None, "min": round(min(lags), 1) if lags else None},
            "target_p99_ms": 200,
            "cpu_s": {k: (round(cpu1[k] - cpu0[k], 1) if cpu0[k] is not None and cpu1[k] is not None else None)
                      for k in cpu0},
            "cores": os.cpu_count(),
        }
    finally:
        worker.terminate()
        server.terminate()
        try:
            worker.wait(10)
            server.wait(15)
        except subprocess.TimeoutExpired:
            worker.kill()
            server.kill()
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=int, default=3, help="minutes measured (after the first full minute)")
    ap.add_argument("--schedules", type=int, default=1000)
    ap.add_argument("--spread", type=float, default=0.0,
                    help="seconds over which the schedules' phase offsets spread (0: all fire on the minute)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        worker_main(a.worker)
        return
    print(json.dumps(asyncio.run(run(a))), flush=True)


if __name__ == "__main__":
    main()
