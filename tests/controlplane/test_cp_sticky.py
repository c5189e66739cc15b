"""Sticky queue fallback: a worker holding an execution in its cache dies; another worker takes over."""

from __future__ import annotations

import asyncio
import time

from collections.abc import Iterator
from datetime import timedelta

import pytest

from _cp_server import DevServer, assert_gapless, raw_history

from spindle import workflow
from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.client import Client
from spindle.worker import Worker

pytestmark = pytest.mark.timeout(60)


@workflow.defn
class Bumps:
    def __init__(self) -> None:
        self.n = 0

    @workflow.run
    async def run(self, target: int) -> int:
        await workflow.wait_condition(lambda: self.n >= target)
        return self.n

    @workflow.signal
    def bump(self) -> None:
        self.n += 1


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    s = DevServer(tmp_path_factory.mktemp("sticky") / "spindle.db").start()
    yield s
    s.stop()


async def completed_tasks(client: Client, wid: str) -> list[pb.HistoryEvent]:
    return [e for e in await raw_history(client.stub, wid) if e.event_type == pb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED]


async def wait_completed_tasks(client: Client, wid: str, n: int, timeout: float = 10.0) -> None:
    end = time.monotonic() + timeout
    while len(await completed_tasks(client, wid)) < n:
        assert time.monotonic() < end, f"{wid}: fewer than {n} completed workflow tasks"
        await asyncio.sleep(0.05)


def task_starts(events: list[pb.HistoryEvent]) -> list[pb.HistoryEvent]:
    return [e for e in events if e.event_type == pb.EVENT_TYPE_WORKFLOW_TASK_STARTED]


@pytest.mark.parametrize("how", ["cancel-run-task", "close-channel"])
async def test_dead_sticky_worker_falls_back_to_the_normal_queue(server: DevServer, how: str) -> None:
    tq, wid = f"sticky-{how}", f"bumps-{how}"
    client_a = await Client.connect(server.address, identity="worker-A")
    client_b = await Client.connect(server.address, identity="worker-B")
    try:
        worker_a = Worker(client_a, task_queue=tq, workflows=[Bumps],
                          sticky_schedule_to_start_timeout=timedelta(seconds=1))
        run_a = asyncio.create_task(worker_a.run())
        h = await client_b.start_workflow(Bumps.run, 2, id=wid, task_queue=tq)
        await wait_completed_tasks(client_b, wid, 1)
        await h.signal(Bumps.bump)
        await wait_completed_tasks(client_b, wid, 2)
        events = await raw_history(client_b.stub, wid)
        assert {e.workflow_task_started_event_attributes.identity for e in task_starts(events)} == {"worker-A"}

        # worker A dies without a goodbye: the execution's sticky queue now has no poller
        if how == "cancel-run-task":
            run_a.cancel()
        else:
            await client_a.close()
            run_a.cancel()
        try:
            await asyncio.wait_for(run_a, 5)
        except (asyncio.CancelledError, Exception):  # noqa: BLE001
            pass

        async with Worker(client_b, task_queue=tq, workflows=[Bumps]):
            t0 = time.monotonic()
            await h.signal(Bumps.bump)
            assert await asyncio.wait_for(h.result(), 15) == 2
            took = time.monotonic() - t0
        events = await raw_history(client_b.stub, wid)
        assert_gapless(events)
        last = task_starts(events)[-1].workflow_task_started_event_attributes
        assert last.identity == "worker-B"
        # it went to A's sticky queue first and fell back after the 1 s sticky timeout, not the 10 s task timeout
        assert 0.9 <= took < 5, took
        types = [e.event_type for e in events]
        assert pb.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT not in types
        assert pb.EVENT_TYPE_WORKFLOW_TASK_FAILED not in types
    finally:
        await client_a.close()
        await client_b.close()


async def test_sticky_poll_gets_only_new_events(server: DevServer) -> None:
    """With raw stubs: a sticky task carries the events after the previous task; a normal one carries them all."""
    from _cp_server import raw_stub

    ch, stub = raw_stub(server.address)
    try:
        tq, sticky_q = "raw-sticky", "raw-sticky-worker-1"
        await stub.StartWorkflowExecution(svc.StartWorkflowExecutionRequest(
            namespace="default", workflow_id="raw-sticky-wf", workflow_type="T", task_queue=tq, request_id="r1"))
        t1 = await stub.PollWorkflowTaskQueue(svc.PollWorkflowTaskQueueRequest(namespace="default", task_queue=tq),
                                              timeout=10)
        assert len(t1.history.events) == 3 and t1.previous_started_event_id == 0
        await stub.RespondWorkflowTaskCompleted(svc.RespondWorkflowTaskCompletedRequest(
            task_token=t1.task_token, namespace="default",
            sticky_attributes=svc.StickyExecutionAttributes(worker_task_queue=sticky_q, schedule_to_start_timeout_ms=800)))
        await stub.SignalWorkflowExecution(svc.SignalWorkflowExecutionRequest(
            namespace="default", workflow_execution=pb.WorkflowExecution(workflow_id="raw-sticky-wf"), signal_name="s"))
        t2 = await stub.PollWorkflowTaskQueue(svc.PollWorkflowTaskQueueRequest(
            namespace="default", task_queue=sticky_q, sticky=True), timeout=10)
        assert t2.task_token
        assert t2.previous_started_event_id == 3
        # after previous_started_event_id: WorkflowTaskCompleted, Signaled, WorkflowTaskScheduled, WorkflowTaskStarted
        assert [e.event_id for e in t2.history.events] == [4, 5, 6, 7]
        assert t2.history.events[-1].event_type == pb.EVENT_TYPE_WORKFLOW_TASK_STARTED
        await stub.RespondWorkflowTaskCompleted(svc.RespondWorkflowTaskCompletedRequest(
            task_token=t2.task_token, namespace="default",
            sticky_attributes=svc.StickyExecutionAttributes(worker_task_queue=sticky_q, schedule_to_start_timeout_ms=800)))
        # nobody polls the sticky queue now: after 0.8 s the next task goes to the normal queue, with full history
        await stub.SignalWorkflowExecution(svc.SignalWorkflowExecutionRequest(
            namespace="default", workflow_execution=pb.WorkflowExecution(workflow_id="raw-sticky-wf"), signal_name="s"))
        t0 = time.monotonic()
        t3 = await stub.PollWorkflowTaskQueue(svc.PollWorkflowTaskQueueRequest(namespace="default", task_queue=tq),
                                              timeout=10)
        assert t3.task_token and time.monotonic() - t0 >= 0.7
        assert [e.event_id for e in t3.history.events] == list(range(1, t3.started_event_id + 1))
    finally:
        await ch.close()
