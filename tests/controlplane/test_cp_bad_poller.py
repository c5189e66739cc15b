"""A poller that takes workflow tasks and never answers delays a workflow by one task timeout at most.

Found (issue 16): a raw gRPC "worker" that polls and never answers, next to a healthy
worker, delayed 4 of 10 workflows by 10-21 s (task timeout 10 s): a task it let time out
could go back to it, again and again. As in Temporal, a started task waits for its
start-to-close timeout (the workflow's task timeout); then its retry goes to another poller
first (``TaskRef.avoid``), and only after the sticky schedule-to-start timeout to whoever
polls. A poller whose connection closes before its task is started leaves the task to the
next poller at once (``ops/poll.start_polled``). An unstarted task on a dead worker's sticky
queue moves to the normal queue after the sticky schedule-to-start timeout
(tests/controlplane/test_cp_sticky.py).
"""

from __future__ import annotations

import asyncio
import time

from datetime import timedelta
from pathlib import Path

import grpc
import pytest

from spindle import activity, workflow
from spindle.api import service_pb2 as svc
from spindle.api import service_pb2_grpc
from spindle.client import Client
from spindle.controlplane.config import ServerConfig
from spindle.controlplane.matching import KIND_WORKFLOW, TaskQueue, TaskRef
from spindle.controlplane.server import ControlPlane, serve
from spindle.controlplane.store.sqlite import SqliteStore
from spindle.worker import Worker

pytestmark = pytest.mark.timeout(90)

TASK_TIMEOUT = 2.0


@activity.defn
async def double(x: int) -> int:
    return 2 * x


@workflow.defn
class Doubler:
    @workflow.run
    async def run(self, x: int) -> int:
        return await workflow.execute_activity(double, x, start_to_close_timeout=timedelta(seconds=10))


async def _server(tmp_path: Path, **cfg: float) -> tuple[ControlPlane, grpc.aio.Server, str]:
    cp = ControlPlane(SqliteStore(str(tmp_path / "bad.db")), ServerConfig(num_shards=2, **cfg))  # type: ignore[arg-type]
    await cp.start()
    server, port = await serve(cp, "127.0.0.1", 0)
    return cp, server, f"127.0.0.1:{port}"


async def _bad_poller(address: str, taken: list[tuple[str, int]]) -> None:
    """Polls the normal queue for ever; takes every task and never answers."""
    async with grpc.aio.insecure_channel(address, options=[("grpc.use_local_subchannel_pool", 1)]) as ch:
        stub = service_pb2_grpc.WorkflowServiceStub(ch)
        while True:
            try:
                r = await stub.PollWorkflowTaskQueue(svc.PollWorkflowTaskQueueRequest(
                    namespace="default", task_queue="q", identity="bad-worker"), timeout=30)
            except grpc.aio.AioRpcError:
                await asyncio.sleep(0.1)
                continue
            if r.task_token:
                taken.append((r.workflow_execution.workflow_id, r.attempt))


async def test_a_poller_that_never_answers_delays_each_workflow_by_one_task_timeout_at_most(tmp_path: Path) -> None:
    cp, server, address = await _server(tmp_path)
    taken: list[tuple[str, int]] = []
    bad = [asyncio.ensure_future(_bad_poller(address, taken)) for _ in range(6)]  # more bad pollers than good ones
    client = await Client.connect(address)
    try:
        await asyncio.sleep(0.3)  # the bad polls wait first
        async with Worker(client, task_queue="q", workflows=[Doubler], activities=[double]):
            async def one(i: int) -> float:
                t0 = time.monotonic()
                assert await client.execute_workflow(Doubler.run, i, id=f"w{i}", task_queue="q",
                                                     task_timeout=timedelta(seconds=TASK_TIMEOUT)) == 2 * i
                return time.monotonic() - t0

            took = await asyncio.wait_for(asyncio.gather(*[one(i) for i in range(10)]), 60)
        assert taken, "the bad poller took no task: the test proves nothing"
        per_workflow: dict[str, int] = {}
        for wf, _attempt in taken:
            per_workflow[wf] = per_workflow.get(wf, 0) + 1
        assert max(per_workflow.values()) == 1, f"a timed-out task went back to the poller that let it time out: {taken}"
        assert max(took) < TASK_TIMEOUT + 5, f"workflow latencies {sorted(took)} (task timeout {TASK_TIMEOUT} s)"
    finally:
        for b in bad:
            b.cancel()
        await asyncio.gather(*bad, return_exceptions=True)
        await client.close()
        await server.stop(0)
        await cp.stop()


async def test_a_poller_whose_connection_closes_before_the_start_leaves_the_task_to_the_next(tmp_path: Path) -> None:
    cp, server, address = await _server(tmp_path)
    try:
        ns_id = cp.namespaces.get("default").id
        async with grpc.aio.insecure_channel(address) as good:
            stub = service_pb2_grpc.WorkflowServiceStub(good)
            await stub.StartWorkflowExecution(svc.StartWorkflowExecutionRequest(
                namespace="default", workflow_id="w", workflow_type="T", task_queue="q", request_id="w"), timeout=10)
            await asyncio.sleep(0.1)
            gone = grpc.aio.insecure_channel(address, options=[("grpc.use_local_subchannel_pool", 1)])
            async with cp.engine.cache.locked(ns_id, "w"):  # the start of the task waits here
                poll = asyncio.ensure_future(service_pb2_grpc.WorkflowServiceStub(gone).PollWorkflowTaskQueue(
                    svc.PollWorkflowTaskQueueRequest(namespace="default", task_queue="q", identity="gone"), timeout=30))
                for _ in range(50):
                    await asyncio.sleep(0.05)
                    if cp.engine.matching.total_backlog() == 0:
                        break
                assert cp.engine.matching.total_backlog() == 0, "the poller did not take the task"
                await gone.close()  # the connection closes: the server cancels the poll
                await asyncio.sleep(0.3)
            with pytest.raises((grpc.aio.AioRpcError, asyncio.CancelledError)):
                await poll
            t0 = time.monotonic()
            task = await stub.PollWorkflowTaskQueue(svc.PollWorkflowTaskQueueRequest(
                namespace="default", task_queue="q", identity="next"), timeout=10)
            assert task.task_token and task.workflow_execution.workflow_id == "w"
            assert task.attempt == 1, "the task was started (and timed out) instead of being put back"
            assert time.monotonic() - t0 < 5
    finally:
        await server.stop(0)
        await cp.stop()


async def test_a_task_avoiding_a_poller_goes_to_others_first_then_to_anyone() -> None:
    q = TaskQueue("ns", "q", KIND_WORKFLOW)
    avoiding = TaskRef(KIND_WORKFLOW, "ns", "w1", "r1", 5, 2, avoid="bad", avoid_for=0.5)
    plain = TaskRef(KIND_WORKFLOW, "ns", "w2", "r2", 2, 1)
    bad_wait = asyncio.ensure_future(q.take(10, "bad"))
    await asyncio.sleep(0)
    assert not q.offer(avoiding), "handed to the poller it avoids"
    q.push(avoiding)
    q.push(plain)  # a task without preference goes to the waiting poller, past the one it cannot take
    assert await asyncio.wait_for(bad_wait, 1) is plain
    assert await q.take(0.05, "bad") is None
    assert await q.take(1, "good") is avoiding  # another poller takes it at once

    again = TaskRef(KIND_WORKFLOW, "ns", "w1", "r1", 8, 3, avoid="bad", avoid_for=0.3)
    q.push(again)
    t0 = time.monotonic()
    assert await q.take(10, "bad") is again, "nobody else polled: after avoid_for the avoided poller gets it"
    assert time.monotonic() - t0 >= 0.25
    assert q.backlog == 0
