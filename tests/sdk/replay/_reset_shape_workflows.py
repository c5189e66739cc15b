"""Workflows for the reset-run history fixture (``make_reset_fixture.py`` records it; ``test_replay_reset.py``).

Release 1 of ``ResetShape`` fails after its activity and two signals; release 2 (same type)
returns instead. A reset of the failed run to the workflow task after the activity gives the
new run a copied prefix, ``WorkflowTaskFailed`` (cause RESET_WORKFLOW) and both signals again.
"""

from __future__ import annotations

from datetime import timedelta

from spindle import activity, workflow
from spindle.client import Client
from spindle.exceptions import ApplicationError, WorkflowFailureError
from spindle.worker import Worker


@activity.defn
async def double(n: int) -> int:
    return 2 * n


@workflow.defn(name="ResetShape")
class ResetShapeRelease1:
    def __init__(self) -> None:
        self.notes: list[str] = []

    @workflow.run
    async def run(self, n: int) -> str:
        paid = await workflow.execute_activity(double, n, start_to_close_timeout=timedelta(seconds=10))
        await workflow.wait_condition(lambda: "ship" in self.notes)
        raise ApplicationError(f"release 1 bug after paying {paid}", non_retryable=True)

    @workflow.signal
    def note(self, text: str) -> None:
        self.notes.append(text)


@workflow.defn(name="ResetShape")
class ResetShapeRelease2:
    def __init__(self) -> None:
        self.notes: list[str] = []

    @workflow.run
    async def run(self, n: int) -> str:
        paid = await workflow.execute_activity(double, n, start_to_close_timeout=timedelta(seconds=10))
        await workflow.wait_condition(lambda: "ship" in self.notes)
        return f"paid {paid}, notes {self.notes}"

    @workflow.signal
    def note(self, text: str) -> None:
        self.notes.append(text)


async def run_reset_shape(client: Client, task_queue: str, workflow_id: str) -> tuple[str, str]:
    """Fail a run with release 1, reset it to the task after the activity with release 2; (old run, new run)."""
    import asyncio

    async with Worker(client, task_queue=task_queue, workflows=[ResetShapeRelease1], activities=[double]):
        handle = await client.start_workflow("ResetShape", 21, id=workflow_id, task_queue=task_queue)
        # wait until the activity result was handled (the workflow then waits for "ship")
        for _ in range(400):
            h = await handle.fetch_history()
            if sum(e.event_type == "WorkflowTaskCompleted" for e in h.events) >= 2:
                break
            await asyncio.sleep(0.02)
        await handle.signal("note", "a")
        await handle.signal("note", "ship")
        try:
            await handle.result()
        except WorkflowFailureError:
            pass
    history = await handle.fetch_history()
    after_activity = [e.event_id for e in history.events if e.event_type == "WorkflowTaskCompleted"][1]
    async with Worker(client, task_queue=task_queue, workflows=[ResetShapeRelease2], activities=[double]):
        new_run = await handle.reset(after_activity, reason="release 2")
        await client.get_workflow_handle(workflow_id).result()
    return handle.result_run_id or "", new_run
