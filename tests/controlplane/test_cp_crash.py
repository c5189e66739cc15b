"""Crash test: `kill -9` the dev server while 200 workflows run, restart it on the same file, and finish them all."""

from __future__ import annotations

import asyncio
import collections

from datetime import timedelta
from pathlib import Path

import pytest

from _cp_server import DevServer, assert_gapless, raw_history

from spindle import activity, workflow
from spindle.api import messages_pb2 as pb
from spindle.client import Client
from spindle.common import RetryPolicy
from spindle.worker import Worker

pytestmark = pytest.mark.timeout(120)

N = 200
CALLS: collections.Counter[tuple[int, int]] = collections.Counter()


@activity.defn
async def crash_step(x: int, k: int) -> int:
    CALLS[(x, k)] += 1
    await asyncio.sleep(0.01)
    return x * 10 + k


@workflow.defn
class CrashFlow:
    @workflow.run
    async def run(self, x: int) -> int:
        opts = dict(start_to_close_timeout=timedelta(seconds=3),
                    retry_policy=RetryPolicy(initial_interval=timedelta(milliseconds=100), backoff_coefficient=1.0))
        a = await workflow.execute_activity(crash_step, x, 1, **opts)
        b = await workflow.execute_activity(crash_step, a, 2, **opts)
        await workflow.sleep(1)
        return await workflow.execute_activity(crash_step, b, 3, **opts)


def expected(x: int) -> int:
    return ((x * 10 + 1) * 10 + 2) * 10 + 3


def new_worker(client: Client) -> Worker:
    return Worker(client, task_queue="crash", workflows=[CrashFlow], activities=[crash_step],
                  graceful_shutdown_timeout=timedelta(milliseconds=100))


@pytest.mark.parametrize("kill_after", [(1, N // 3), (2, N * 4 // 5)], ids=["first-activities", "timers-pending"])
async def test_kill_9_mid_run_and_restart(tmp_path: Path, kill_after: tuple[int, int]) -> None:
    CALLS.clear()
    server = DevServer(tmp_path / "crash.db").start()
    try:
        client = await Client.connect(server.address)
        w = new_worker(client)
        run = asyncio.create_task(w.run())
        handles = await asyncio.gather(*(
            client.start_workflow(CrashFlow.run, i, id=f"crash-{i}", task_queue="crash", task_timeout=timedelta(seconds=2))
            for i in range(N)))
        # let them get going: kill once `count` activities of step `step` ran
        step, count = kill_after
        loop = asyncio.get_running_loop()
        end = loop.time() + 20
        while sum(1 for (_, k) in CALLS if k == step) < count and loop.time() < end:
            await asyncio.sleep(0.01)
        server.kill()
        progress_at_kill = sum(CALLS.values())
        run.cancel()
        try:
            await asyncio.wait_for(run, 10)
        except (asyncio.CancelledError, Exception):  # noqa: BLE001 - the worker loses its server
            pass
        await client.close()
        assert progress_at_kill < 3 * N, "the server was killed too late to test anything"


        server.start()
        client = await Client.connect(server.address)
        async with new_worker(client):
            results = await asyncio.wait_for(
                asyncio.gather(*(client.get_workflow_handle(h.id).result() for h in handles)), 60)
        assert results == [expected(i) for i in range(N)]

        for i in range(N):
            events = await raw_history(client.stub, f"crash-{i}")
            assert_gapless(events)
            assert events[-1].event_type == pb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED
            scheduled = [e.event_id for e in events if e.event_type == pb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED]
            completed = [e.activity_task_completed_event_attributes.scheduled_event_id for e in events
                         if e.event_type == pb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED]
            assert len(scheduled) == 3, f"crash-{i}: {len(scheduled)} activities scheduled"
            assert sorted(completed) == scheduled, f"crash-{i}: completions {completed} for {scheduled}"
            for e in events:
                if e.event_type == pb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
                    a = e.activity_task_completed_event_attributes
                    assert events[a.started_event_id - 1].event_type == pb.EVENT_TYPE_ACTIVITY_TASK_STARTED
            assert sum(1 for e in events if e.event_type == pb.EVENT_TYPE_TIMER_FIRED) == 1
            assert sum(1 for e in events if e.event_type == pb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED) == 1
        # at least once: every step ran, some maybe twice because of the crash
        for i in range(N):
            assert CALLS[(i, 1)] >= 1
        await client.close()
        assert server.stop() == 0
        log = server.log()
        assert "Traceback" not in log and " ERROR " not in log, log[-5000:]
    finally:
        server.kill()
