"""Restart durability: stop the dev server (SIGTERM) with work parked in timers, backlogs and transfer queues."""

from __future__ import annotations

import asyncio
import time

from datetime import timedelta
from pathlib import Path

import pytest

from _cp_server import DevServer, assert_gapless, raw_history

from spindle import activity, workflow
from spindle.api import messages_pb2 as pb
from spindle.client import Client
from spindle.worker import Worker

pytestmark = pytest.mark.timeout(90)


@activity.defn
async def double(x: int) -> int:
    return 2 * x


@workflow.defn
class Parked:
    def __init__(self) -> None:
        self.extra: int | None = None

    @workflow.run
    async def run(self, x: int) -> int:
        await workflow.sleep(3)
        await workflow.wait_condition(lambda: self.extra is not None)
        assert self.extra is not None
        return x + self.extra

    @workflow.signal
    def add(self, extra: int) -> None:
        self.extra = extra


@workflow.defn
class UsesLateActivity:
    @workflow.run
    async def run(self, x: int) -> int:
        return await workflow.execute_activity(double, x, task_queue="late-activities",
                                               start_to_close_timeout=timedelta(seconds=10))


def worker(client: Client, tq: str) -> Worker:
    return Worker(client, task_queue=tq, workflows=[Parked, UsesLateActivity], activities=[double],
                  graceful_shutdown_timeout=timedelta(milliseconds=200))


async def wait_for_event(client: Client, wid: str, event_type: int, timeout: float = 10.0) -> list[pb.HistoryEvent]:
    end = time.monotonic() + timeout
    while True:
        events = await raw_history(client.stub, wid)
        if any(e.event_type == event_type for e in events):
            return events
        assert time.monotonic() < end, f"{wid}: no {pb.EventType.Name(event_type)} in {timeout} s"
        await asyncio.sleep(0.05)


async def test_timers_backlog_and_transfer_tasks_survive_a_restart(tmp_path: Path) -> None:
    server = DevServer(tmp_path / "restart.db").start()
    try:
        client = await Client.connect(server.address)
        parked = [f"parked-{i}" for i in range(5)]
        async with worker(client, "main"):
            for i, wid in enumerate(parked):
                await client.start_workflow(Parked.run, i, id=wid, task_queue="main")
            for wid in parked:
                await wait_for_event(client, wid, pb.EVENT_TYPE_TIMER_STARTED)
            # its activity goes to a queue nobody polls yet (activity backlog)
            act = await client.start_workflow(UsesLateActivity.run, 21, id="late-activity", task_queue="main")
            await wait_for_event(client, act.id, pb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
        # started while no worker polls its queue (workflow task backlog)
        await client.start_workflow(Parked.run, 100, id="orphan", task_queue="nobody-yet")
        await client.close()
        assert server.stop() == 0, server.log()

        server.start()
        client = await Client.connect(server.address)
        # with no worker at all, the durable timers still fire after the restart
        for wid in parked:
            events = await wait_for_event(client, wid, pb.EVENT_TYPE_TIMER_FIRED)
            started = next(e for e in events if e.event_type == pb.EVENT_TYPE_TIMER_STARTED)
            fired = next(e for e in events if e.event_type == pb.EVENT_TYPE_TIMER_FIRED)
            assert fired.event_time_ms - started.event_time_ms >= 3000
        for wid in parked:
            await client.get_workflow_handle(wid).signal(Parked.add, 1000)
        await client.get_workflow_handle("orphan").signal(Parked.add, 1)
        async with worker(client, "main"), worker(client, "nobody-yet"), worker(client, "late-activities"):
            results = await asyncio.wait_for(asyncio.gather(
                *(client.get_workflow_handle(w).result() for w in parked),
                client.get_workflow_handle("late-activity").result(),
                client.get_workflow_handle("orphan").result()), 30)
        assert results == [1000 + i for i in range(5)] + [42, 101]
        for wid in parked + ["late-activity", "orphan"]:
            events = await raw_history(client.stub, wid)
            assert_gapless(events)
            assert events[-1].event_type == pb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED
        late = await raw_history(client.stub, "late-activity")
        assert [e.event_type for e in late].count(pb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED) == 1
        await client.close()
        assert server.stop() == 0
        assert "Traceback" not in server.log(), server.log()
    finally:
        server.kill()


async def test_restart_keeps_closed_histories_and_ids(tmp_path: Path) -> None:
    """Run ids, statuses and histories read the same after a restart; a reused id gets a new run."""
    server = DevServer(tmp_path / "closed.db").start()
    try:
        client = await Client.connect(server.address)
        async with worker(client, "main"):
            h = await client.start_workflow(UsesLateActivity.run, 1, id="closed-1", task_queue="main")
            async with worker(client, "late-activities"):
                assert await asyncio.wait_for(h.result(), 10) == 2
        before = await raw_history(client.stub, "closed-1")
        desc = await h.describe()
        await client.close()
        assert server.stop() == 0

        server.start()
        client = await Client.connect(server.address)
        assert await raw_history(client.stub, "closed-1") == before
        again = await client.get_workflow_handle("closed-1").describe()
        assert (again.run_id, again.status, again.history_length) == (desc.run_id, desc.status, desc.history_length)
        assert await client.count_workflows("WorkflowId = 'closed-1'") == 1
        async with worker(client, "main"), worker(client, "late-activities"):
            h2 = await client.start_workflow(UsesLateActivity.run, 5, id="closed-1", task_queue="main")
            assert h2.run_id != desc.run_id
            assert await asyncio.wait_for(h2.result(), 10) == 10
        await client.close()
    finally:
        server.kill()


async def test_start_request_id_is_idempotent_across_a_restart(tmp_path: Path) -> None:
    """A client that retries a start after the server restarted (same request_id) gets the same run."""
    from _cp_server import raw_stub

    from spindle.api import service_pb2 as svc

    server = DevServer(tmp_path / "idem.db").start()
    try:
        req = svc.StartWorkflowExecutionRequest(namespace="default", workflow_id="idem", workflow_type="Parked",
                                                task_queue="nobody", request_id="req-1")
        ch, stub = raw_stub(server.address)
        first = await stub.StartWorkflowExecution(req)
        assert first.started
        await ch.close()
        assert server.stop() == 0
        server.start()
        ch, stub = raw_stub(server.address)
        again = await stub.StartWorkflowExecution(req)
        assert (again.run_id, again.started) == (first.run_id, False)
        # the run closes after the restart; a retry of the same start still names it (no second run)
        task = await stub.PollWorkflowTaskQueue(svc.PollWorkflowTaskQueueRequest(namespace="default", task_queue="nobody"),
                                                timeout=10)
        await stub.RespondWorkflowTaskCompleted(svc.RespondWorkflowTaskCompletedRequest(
            task_token=task.task_token, namespace="default", commands=[pb.Command(
                command_type=pb.COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION,
                complete_workflow_execution_command_attributes=pb.CompleteWorkflowExecutionCommandAttributes())]))
        await ch.close()
        for _ in range(2):  # once from the cache, once after another restart
            ch, stub = raw_stub(server.address)
            third = await stub.StartWorkflowExecution(req)
            assert (third.run_id, third.started) == (first.run_id, False)
            await ch.close()
            assert server.stop() == 0
            server.start()
    finally:
        server.kill()


HEARTBEAT_ATTEMPTS: list[int] = []


@activity.defn
async def long_heartbeater(seconds: float) -> int:
    HEARTBEAT_ATTEMPTS.append(activity.info().attempt)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        activity.heartbeat()
        await asyncio.sleep(0.2)
    return activity.info().attempt


@workflow.defn
class Heartbeating:
    @workflow.run
    async def run(self) -> int:
        return await workflow.execute_activity(long_heartbeater, 7.0, start_to_close_timeout=timedelta(seconds=60),
                                               heartbeat_timeout=timedelta(seconds=5))


async def test_heartbeats_after_a_restart_keep_the_attempt_alive(tmp_path: Path) -> None:
    """The server restarts (same port) while an activity heartbeats: its heartbeats reach the new process,
    so the attempt is not timed out."""
    HEARTBEAT_ATTEMPTS.clear()
    server = DevServer(tmp_path / "hb.db").start()
    port = server.port
    try:
        client = await Client.connect(server.address)
        async with Worker(client, task_queue="hb", workflows=[Heartbeating], activities=[long_heartbeater],
                          graceful_shutdown_timeout=timedelta(milliseconds=200)):
            await client.start_workflow(Heartbeating.run, id="hb", task_queue="hb")
            end = time.monotonic() + 10
            while not HEARTBEAT_ATTEMPTS:
                assert time.monotonic() < end
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.5)
            assert server.stop() == 0
            server.start(port=port)
            result = await asyncio.wait_for(client.get_workflow_handle("hb").result(), 30)
        assert result == 1, f"attempts: {HEARTBEAT_ATTEMPTS}"
        events = await raw_history(client.stub, "hb")
        assert pb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT not in [e.event_type for e in events]
        await client.close()
    finally:
        server.kill()
