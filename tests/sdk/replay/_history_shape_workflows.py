"""Workflows whose histories changed shape with issue 13 (``make_fixtures.py`` records them).

* :class:`RetriesThenSucceeds`: activities retried by the server (failures, a
  start-to-close timeout, a final failure). Before issue 13 every failed attempt wrote
  ``ActivityTaskStarted`` + ``ActivityTaskFailed``/``TimedOut`` with
  ``retry_state = IN_PROGRESS``; now only the last attempt is written.
* :class:`CancelRace`: cancels an activity whose completion arrives while the
  cancelling workflow task runs. Before issue 13 the history recorded
  ``ActivityTaskCancelRequested``, ``ActivityTaskCanceled`` and then also
  ``ActivityTaskStarted`` + ``ActivityTaskCompleted`` for the same activity.

The workflow code must never change: committed histories of it are replayed by
``test_replay_history_shapes.py``.
"""

from __future__ import annotations

import asyncio

from datetime import timedelta

from spindle import activity, workflow
from spindle.common import RetryPolicy
from spindle.exceptions import ActivityError, ApplicationError

T30 = timedelta(seconds=30)
FAST = RetryPolicy(initial_interval=timedelta(milliseconds=10), backoff_coefficient=1.0)


@activity.defn
async def fails_twice(x: str) -> str:
    """Fails on attempts 1 and 2, returns ``x`` on attempt 3."""
    attempt = activity.info().attempt
    if attempt < 3:
        raise ApplicationError(f"attempt {attempt} fails", type="Flaky")
    return f"{x}@{attempt}"


@activity.defn
async def slow_first(x: str) -> str:
    """Overruns a 1 s start-to-close timeout on attempt 1; returns at once afterwards."""
    attempt = activity.info().attempt
    if attempt == 1:
        await asyncio.sleep(2.5)
    return f"{x}@{attempt}"


@activity.defn
async def always_fails(x: str) -> str:
    raise ApplicationError(f"{x} never works", type="Broken")


@activity.defn
async def echo(x: str) -> str:
    return x


@workflow.defn
class RetriesThenSucceeds:
    @workflow.run
    async def run(self) -> list[str]:
        out = [await workflow.execute_activity(fails_twice, "a", start_to_close_timeout=T30, retry_policy=FAST)]
        out.append(await workflow.execute_activity(slow_first, "b", start_to_close_timeout=timedelta(seconds=1),
                                                   retry_policy=FAST))
        try:
            await workflow.execute_activity(
                always_fails, "c", start_to_close_timeout=T30,
                retry_policy=RetryPolicy(initial_interval=timedelta(milliseconds=10), maximum_attempts=3))
        except ActivityError as e:
            out.append(f"c:{type(e.cause).__name__}:{e.retry_state}")
        return out


@workflow.defn
class CancelRace:
    """Starts an activity (on ``queue``), cancels it when signalled, sleeps, returns."""

    def __init__(self) -> None:
        self.go = False

    @workflow.run
    async def run(self, queue: str) -> str:
        handle = workflow.start_activity(echo, "x", start_to_close_timeout=T30, task_queue=queue)
        await workflow.wait_condition(lambda: self.go)
        handle.cancel()
        try:
            outcome = await handle
        except ActivityError as e:
            outcome = type(e.cause).__name__
        await workflow.sleep(1)
        return outcome

    @workflow.signal
    def cancel_it(self) -> None:
        self.go = True


async def run_cancel_race(client: object, engine: object, *, task_queue: str, workflow_id: str) -> object:
    """Run :class:`CancelRace` so that its activity completes while the cancelling task runs.

    ``client`` is a ``spindle.client.Client`` of an embedded control plane whose history engine
    is ``engine``; a worker for ``CancelRace`` must poll ``task_queue``. The activity goes
    to a queue nobody else polls: this function takes it and completes it from inside the
    engine's handling of the workflow task that requests its cancellation (before that
    task's completion is written), which makes the race deterministic. Returns the
    workflow's handle once the run has finished.
    """
    from spindle.api import service_pb2 as svc
    from spindle.converter import DataConverter

    manual_queue = task_queue + "-manual"
    stub = client._stub  # type: ignore[attr-defined]
    handle = await client.start_workflow(CancelRace.run, manual_queue, id=workflow_id,  # type: ignore[attr-defined]
                                         task_queue=task_queue)
    token = b""
    while not token:
        polled = await stub.PollActivityTaskQueue(svc.PollActivityTaskQueueRequest(
            namespace=client.namespace, task_queue=manual_queue, identity="manual"))  # type: ignore[attr-defined]
        token = polled.task_token
    original = engine.respond_workflow_task_completed  # type: ignore[attr-defined]
    done = False

    async def completes_first(req: svc.RespondWorkflowTaskCompletedRequest) -> object:
        nonlocal done
        from spindle.api import messages_pb2 as pb

        if not done and any(c.command_type == pb.COMMAND_TYPE_REQUEST_CANCEL_ACTIVITY_TASK for c in req.commands):
            done = True
            await engine.respond_activity_completed(svc.RespondActivityTaskCompletedRequest(  # type: ignore[attr-defined]
                task_token=token, result=DataConverter.default.to_payloads(["x"]), identity="manual"))
        return await original(req)

    engine.respond_workflow_task_completed = completes_first  # type: ignore[attr-defined]
    try:
        await handle.signal(CancelRace.cancel_it)  # type: ignore[attr-defined]
        assert await handle.result() == "CancelledError"  # type: ignore[attr-defined]
    finally:
        del engine.respond_workflow_task_completed  # type: ignore[attr-defined]
    assert done, "the workflow never requested the activity's cancellation"
    return handle
