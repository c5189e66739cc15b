"""Cancelling an activity ends it with exactly one terminal event (issue 13).

(The race where the activity's completion arrives while the cancelling workflow task
runs is in tests/sdk/replay/test_replay_history_shapes.py, with a replay.)
"""

from __future__ import annotations

import asyncio

from datetime import timedelta
from pathlib import Path

import grpc
import pytest

from _cp_server import raw_history

from spindle import activity, workflow
from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.client import Client
from spindle.common import RetryPolicy
from spindle.controlplane import embedded
from spindle.converter import DataConverter
from spindle.exceptions import ActivityError, ApplicationError
from spindle.testing import WorkflowEnvironment
from spindle.worker import Worker

pytestmark = pytest.mark.timeout(60)


@workflow.defn
class CancelsWhenTold:
    def __init__(self) -> None:
        self.go = False

    @workflow.run
    async def run(self, queue: str) -> str:
        handle = workflow.start_activity("remote_work", start_to_close_timeout=timedelta(seconds=60), task_queue=queue)
        await workflow.wait_condition(lambda: self.go)
        handle.cancel()
        try:
            await handle
            return "completed"
        except ActivityError as e:
            return type(e.cause).__name__

    @workflow.signal
    def cancel_now(self) -> None:
        self.go = True


async def test_a_late_answer_for_a_cancelled_activity_gets_not_found_and_writes_nothing(tmp_path: Path) -> None:
    db = str(tmp_path / "cancel.db")
    cp = await embedded.start(db)
    try:
        client = Client(cp.stub, namespace="default")
        async with Worker(client, task_queue="wf", workflows=[CancelsWhenTold]):
            h = await client.start_workflow(CancelsWhenTold.run, "remote", id="late", task_queue="wf")
            token = b""
            while not token:
                token = (await cp.stub.PollActivityTaskQueue(svc.PollActivityTaskQueueRequest(
                    namespace="default", task_queue="remote", identity="remote-worker"))).task_token
    finally:
        await cp.stop()
    # after a restart the attempt's start (kept in memory) is forgotten: the cancel ends it at once
    cp = await embedded.start(db)
    try:
        client = Client(cp.stub, namespace="default")
        async with Worker(client, task_queue="wf", workflows=[CancelsWhenTold]):
            h = client.get_workflow_handle("late")
            await h.signal(CancelsWhenTold.cancel_now)
            assert await h.result() == "CancelledError"
        before = await raw_history(cp.stub, "late")
        with pytest.raises(grpc.aio.AioRpcError) as ei:
            await cp.stub.RespondActivityTaskCompleted(svc.RespondActivityTaskCompletedRequest(
                task_token=token, result=DataConverter.default.to_payloads(["late"]), identity="remote-worker"))
        assert ei.value.code() == grpc.StatusCode.NOT_FOUND
        with pytest.raises(grpc.aio.AioRpcError) as ei2:
            await cp.stub.RecordActivityTaskHeartbeat(svc.RecordActivityTaskHeartbeatRequest(task_token=token))
        assert ei2.value.code() == grpc.StatusCode.NOT_FOUND
        after = await raw_history(cp.stub, "late")
    finally:
        await cp.stop()
    assert after == before
    names = [pb.EventType.Name(e.event_type) for e in after if "ACTIVITY" in pb.EventType.Name(e.event_type)]
    assert names == ["EVENT_TYPE_ACTIVITY_TASK_SCHEDULED", "EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED",
                     "EVENT_TYPE_ACTIVITY_TASK_CANCELED"]


ATTEMPTS: list[int] = []


@activity.defn
async def fails_when_cancelled() -> None:
    ATTEMPTS.append(activity.info().attempt)
    try:
        while True:
            activity.heartbeat()
            await asyncio.sleep(0.05)
    except asyncio.CancelledError:
        raise ApplicationError("cleanup failed", type="Cleanup") from None


@workflow.defn
class CancelsAFailingActivity:
    @workflow.run
    async def run(self) -> str:
        handle = workflow.start_activity(
            fails_when_cancelled, start_to_close_timeout=timedelta(seconds=60), heartbeat_timeout=timedelta(milliseconds=250),
            retry_policy=RetryPolicy(initial_interval=timedelta(milliseconds=10)))
        await workflow.sleep(0.3)
        handle.cancel()
        await workflow.sleep(2)  # stay open while the worker reports (heartbeats every 0.2 s)
        return "done"


async def test_an_attempt_failing_after_the_cancel_request_is_not_retried() -> None:
    ATTEMPTS.clear()
    async with await WorkflowEnvironment.start_local() as env:
        async with Worker(env.client, task_queue="cf", workflows=[CancelsAFailingActivity],
                          activities=[fails_when_cancelled]):
            assert await env.client.execute_workflow(CancelsAFailingActivity.run, id="cf", task_queue="cf") == "done"
        events = await raw_history(env.client.stub, "cf")
    assert ATTEMPTS == [1]
    closes = [e for e in events if e.event_type in (pb.EVENT_TYPE_ACTIVITY_TASK_FAILED, pb.EVENT_TYPE_ACTIVITY_TASK_CANCELED,
                                                    pb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, pb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT)]
    [failed] = closes
    a = failed.activity_task_failed_event_attributes
    assert (a.retry_state, a.attempt, a.failure.message) == (pb.RETRY_STATE_CANCEL_REQUESTED, 1, "cleanup failed")
