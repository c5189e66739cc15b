"""kill -9 the dev server again and again under a chain3 load; nothing acknowledged is lost or doubled.

Each cycle: the test starts ``fchain3`` workflows continuously (stable ids, a stable request id per
id, conflict policy USE_EXISTING, so a retried start is idempotent) against a server that a worker
subprocess serves; after a random 0.2-1.5 s the server gets SIGKILL and is restarted on the same
file (on the same port when it can be had, so the worker reconnects by itself; otherwise the worker
is restarted). Starts whose reply was lost are retried in the next cycle. At the end every started
execution must have completed exactly once with x + 3, with a sound history.

``SPINDLE_FAULT_CYCLES`` sets the number of cycles (default 20); ``SPINDLE_FAULT_SEED`` the seed.
"""

from __future__ import annotations

import asyncio
import collections
import os
import random
import sqlite3
import time

from datetime import timedelta
from pathlib import Path

import pytest

from fault_helpers import CYCLES, DevServer, WorkerProc, check_db, check_history, payload_value, raw_history
from fault_workloads import TASK_QUEUE, FChain3

from spindle.api import messages_pb2 as pb
from spindle.client import Client
from spindle.common import WorkflowIDConflictPolicy
from spindle.exceptions import RPCError, WorkflowNotFoundError

pytestmark = pytest.mark.timeout(max(240, CYCLES * 12))

STARTERS = 8          # concurrent starter loops in the test process
START_GAP = 0.06      # seconds between one starter's starts (about 130 starts/s in all)


def wid(n: int) -> str:
    return f"kill-{n}"


def x_of(n: int) -> int:
    return n * 1000


async def test_kill9_server_loop(tmp_path: Path) -> None:
    seed = int(os.environ.get("SPINDLE_FAULT_SEED", str(int(time.time()))))
    rng = random.Random(seed)
    print(f"seed {seed}, {CYCLES} cycles")
    db = str(tmp_path / "kill.db")
    server = DevServer(db).start()
    worker = WorkerProc(server.address, tmp_path / "worker.log").start()
    acked: dict[int, str] = {}          # n -> run id the server acknowledged
    unacked: set[int] = set()           # start sent, reply lost (or refused)
    errors: collections.Counter[str] = collections.Counter()
    counter = iter(range(10**9))
    worker_restarts = 0
    found_on_retry = 0                  # unacknowledged starts that turned out to be committed
    client: Client | None = None

    async def start(n: int) -> None:
        assert client is not None
        try:
            h = await client.start_workflow(
                FChain3.run, x_of(n), id=wid(n), task_queue=TASK_QUEUE, request_id=f"req-{n}",
                id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING, task_timeout=timedelta(seconds=2))
        except RPCError as e:
            unacked.add(n)
            errors[getattr(e, "status", None) or type(e).__name__] += 1
            return
        acked[n] = h.run_id or ""
        unacked.discard(n)

    async def retry_unacked() -> None:
        nonlocal found_on_retry
        assert client is not None
        for n in sorted(unacked):
            try:
                await client.get_workflow_handle(wid(n)).describe()
                found_on_retry += 1
            except WorkflowNotFoundError:
                pass
            except RPCError:
                continue
            await start(n)

    try:
        for _cycle in range(CYCLES):
            client = await Client.connect(server.address)
            stop = asyncio.Event()

            async def starter() -> None:
                while not stop.is_set():  # noqa: B023 - the closure runs and is awaited within this iteration
                    await start(next(counter))
                    await asyncio.sleep(START_GAP)

            # first the starts whose reply was lost in earlier cycles (same id, same request id)
            await retry_unacked()
            tasks = [asyncio.create_task(starter()) for _ in range(STARTERS)]
            await asyncio.sleep(rng.uniform(0.2, 1.5))
            server.kill()
            stop.set()
            await asyncio.wait_for(asyncio.gather(*tasks), 30)
            await client.close()
            old_port = server.port
            server.start()
            if server.port != old_port or not worker.alive():
                worker.kill()
                worker_restarts += 1
                worker = WorkerProc(server.address, tmp_path / "worker.log").start()

        # the last server stays up: retry what is still unacknowledged, then wait for everything
        client = await Client.connect(server.address)
        await retry_unacked()
        assert not unacked, f"starts still refused with the server up: {sorted(unacked)[:10]}"
        total = len(acked)
        # A guard against a load that did not run (0 starts), not a speed target: most of each short cycle goes
        # to the restarted server's first calls; 404-427 starts were seen on a busy 2-core machine.
        assert total > CYCLES * 10, f"only {total} workflows were started: the load did not run"
        print(f"{total} workflows started; {found_on_retry} starts whose reply was lost had been committed; "
              f"start errors {dict(errors)}; worker restarts {worker_restarts}")

        sem = asyncio.Semaphore(200)

        async def result(n: int) -> int:
            async with sem:
                return await asyncio.wait_for(client.get_workflow_handle(wid(n)).result(), 120)

        t0 = time.monotonic()
        ns = sorted(acked)
        results = await asyncio.gather(*(result(n) for n in ns))
        wrong = [(n, r) for n, r in zip(ns, results) if r != x_of(n) + 3]
        assert not wrong, f"wrong results: {wrong[:10]}"
        print(f"all results in {time.monotonic() - t0:.1f} s after the last restart")

        problems: list[str] = []
        for n in ns:
            events = await raw_history(client.stub, wid(n))
            problems += check_history(events, what=wid(n))
            closes = [e for e in events if e.event_type == pb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED]
            if len(closes) != 1 or payload_value(closes[0].workflow_execution_completed_event_attributes.result) != x_of(n) + 3:
                problems.append(f"{wid(n)}: {len(closes)} completion events")
            if sum(1 for e in events if e.event_type == pb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED) != 3:
                problems.append(f"{wid(n)}: not 3 completed activities")
            if acked[n] and events[0].workflow_execution_started_event_attributes.original_execution_run_id != acked[n]:
                problems.append(f"{wid(n)}: acknowledged run {acked[n]} is not the run that ran")
        assert not problems, "\n".join(problems[:30])
        for _ in range(50):  # visibility is written by the ack loop just after the close
            count = await client.count_workflows("WorkflowType = 'fchain3' AND ExecutionStatus = 'Completed'")
            if count == total:
                break
            await asyncio.sleep(0.1)
        assert count == total, f"visibility counts {count} completed fchain3 executions, {total} were started"
        await client.close()
        worker.stop()
        assert server.stop() == 0
        conn = sqlite3.connect(db)
        try:
            runs = conn.execute("SELECT workflow_id, COUNT(*) FROM executions GROUP BY workflow_id HAVING COUNT(*) > 1").fetchall()
        finally:
            conn.close()
        assert not runs, f"workflow ids with more than one run: {runs[:10]}"
        problems = check_db(db)
        assert not problems, "\n".join(problems[:30])
        log = server.log()
        bad = [line for line in log.splitlines() if " ERROR " in line or "Traceback" in line]
        assert not bad, "server log has errors:\n" + "\n".join(bad[:40])
    finally:
        worker.kill()
        server.kill()


async def test_a_task_redispatched_after_a_crash_survives_the_next_crash(tmp_path: Path) -> None:
    """A workflow task started just before a crash is re-offered when its timeout fires after the restart.

    That re-offer must be durable: the timeout timer's row is deleted when it fires, so if the
    server dies again before a worker takes the task, nothing else would say the task exists
    (it used to be an in-memory dispatch only: the run then waited forever).
    """
    import grpc

    from spindle.api import service_pb2 as svc
    from spindle.api import service_pb2_grpc

    db = str(tmp_path / "redispatch.db")
    server = DevServer(db).start()
    worker = None
    try:
        client = await Client.connect(server.address)
        await client.start_workflow(FChain3.run, 1, id="redispatch", task_queue=TASK_QUEUE,
                                        task_timeout=timedelta(seconds=1))
        async with grpc.aio.insecure_channel(server.address) as ch:  # a "worker" that takes the task and dies
            task = await service_pb2_grpc.WorkflowServiceStub(ch).PollWorkflowTaskQueue(
                svc.PollWorkflowTaskQueueRequest(namespace="default", task_queue=TASK_QUEUE, identity="doomed"), timeout=10)
            assert task.task_token
        await client.close()

        def timeout_timer_rows() -> int:
            conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            try:
                return conn.execute("SELECT COUNT(*) FROM timer_tasks WHERE data LIKE '[\"wttimeout\"%'").fetchone()[0]
            finally:
                conn.close()

        def transfer_rows() -> int:
            conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            try:
                return conn.execute("SELECT COUNT(*) FROM transfer_tasks").fetchone()[0]
            finally:
                conn.close()

        end = time.monotonic() + 10  # the start of the task (its timeout timer, the transfer ack) is on disk
        while (not timeout_timer_rows() or transfer_rows()) and time.monotonic() < end:
            await asyncio.sleep(0.02)
        assert timeout_timer_rows() == 1 and transfer_rows() == 0
        server.kill()
        server.start()  # the task's timeout timer fires 1 s after the start and re-offers it
        # a poller is waiting when it does: it gets the task, and the server dies at once, before
        # the write that records the new start (and its new timeout timer) is likely on disk
        async with grpc.aio.insecure_channel(server.address) as ch:
            task = await service_pb2_grpc.WorkflowServiceStub(ch).PollWorkflowTaskQueue(
                svc.PollWorkflowTaskQueueRequest(namespace="default", task_queue=TASK_QUEUE, identity="doomed-2"),
                timeout=15)
            server.kill()
        assert task.task_token, "the task was not offered again after the restart"
        server.start()
        worker = WorkerProc(server.address, tmp_path / "worker.log").start()
        client = await Client.connect(server.address)
        assert await asyncio.wait_for(client.get_workflow_handle("redispatch").result(), 20) == 4
        events = await raw_history(client.stub, "redispatch")
        assert not check_history(events, what="redispatch")
        await client.close()
    finally:
        if worker is not None:
            worker.kill()
        server.kill()
