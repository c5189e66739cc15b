"""Workflow-side code written for Temporal, with ``temporalio`` renamed to ``spindle``.

Each workflow below is written the way the Temporal samples write it
(``with workflow.unsafe.imports_passed_through()`` around imports,
``@workflow.init``, ``workflow.all_handlers_finished``, ``workflow.wait`` /
``as_completed``, activity methods, local activities, ``args=[...]``,
``workflow.logger``, ``workflow.info().is_continue_as_new_suggested()``) and runs
on a real worker against the in-process time-skipping environment.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import uuid

from dataclasses import dataclass
from datetime import timedelta

import pytest

from spindle import activity, workflow
from spindle.client import Client
from spindle.controlplane.config import ServerConfig
from spindle.exceptions import ActivityError
from spindle.testing import Replayer, WorkflowEnvironment
from spindle.worker import Worker

with workflow.unsafe.imports_passed_through():
    import json  # a "third-party" import, as Temporal samples pass them through


@dataclass
class ComposeGreetingInput:
    greeting: str
    name: str


@activity.defn
def compose_greeting(input: ComposeGreetingInput) -> str:
    return f"{input.greeting}, {input.name}!"


@activity.defn
async def add(a: int, b: int) -> int:
    return a + b


@activity.defn
async def echo(text: str) -> str:
    return text


class MyDatabaseClient:
    def __init__(self) -> None:
        self.updates: list[str] = []

    async def run_database_update(self, what: str) -> int:
        self.updates.append(what)
        return len(self.updates)


class MyActivities:
    def __init__(self, db_client: MyDatabaseClient) -> None:
        self.db_client = db_client

    @activity.defn
    async def do_database_thing(self, what: str) -> int:
        return await self.db_client.run_database_update(what)


@pytest.fixture
async def env():  # type: ignore[no-untyped-def]
    async with await WorkflowEnvironment.start_time_skipping() as e:
        yield e


def new_queue() -> str:
    return f"tq-{uuid.uuid4()}"


# ---------------------------------------------------------------------- hello_local_activity / activity_method


@workflow.defn
class GreetingWorkflow:
    @workflow.run
    async def run(self, name: str) -> str:
        return await workflow.execute_local_activity(
            compose_greeting,
            ComposeGreetingInput("Hello", name),
            start_to_close_timeout=timedelta(seconds=10),
        )


@workflow.defn
class DatabaseWorkflow:
    @workflow.run
    async def run(self) -> list[int]:
        first = await workflow.execute_activity_method(
            MyActivities.do_database_thing, "one", start_to_close_timeout=timedelta(seconds=10))
        second = await workflow.start_activity_method(
            MyActivities.do_database_thing, args=["two"], start_to_close_timeout=timedelta(seconds=10))
        third = await workflow.execute_local_activity_method(
            MyActivities.do_database_thing, "three", start_to_close_timeout=timedelta(seconds=10),
            local_retry_threshold=timedelta(seconds=1))
        return [first, second, third]


@workflow.defn
class ArgsWorkflow:
    @workflow.run
    async def run(self) -> list[int]:
        total = await workflow.execute_activity(add, args=[1, 2], start_to_close_timeout=timedelta(seconds=5))
        local = await workflow.execute_local_activity(add, args=[total, 10], start_to_close_timeout=timedelta(seconds=5))
        child = await workflow.execute_child_workflow(ChildAdder.run, args=[local, 100], id=f"{workflow.info().workflow_id}-c")
        return [total, local, child]


@workflow.defn
class ChildAdder:
    @workflow.run
    async def run(self, a: int, b: int) -> int:
        return a + b


async def test_hello_local_activity(env: WorkflowEnvironment) -> None:
    task_queue = new_queue()
    async with Worker(env.client, task_queue=task_queue, workflows=[GreetingWorkflow], activities=[compose_greeting]):
        result = await env.client.execute_workflow(GreetingWorkflow.run, "World", id=f"wf-{uuid.uuid4()}",
                                                   task_queue=task_queue)
    assert result == "Hello, World!"


async def test_hello_activity_method(env: WorkflowEnvironment) -> None:
    db_client = MyDatabaseClient()
    my_activities = MyActivities(db_client)
    task_queue = new_queue()
    async with Worker(env.client, task_queue=task_queue, workflows=[DatabaseWorkflow],
                      activities=[my_activities.do_database_thing]):
        result = await env.client.execute_workflow(DatabaseWorkflow.run, id=f"wf-{uuid.uuid4()}", task_queue=task_queue)
    assert result == [1, 2, 3] and db_client.updates == ["one", "two", "three"]


async def test_multiple_arguments_with_args(env: WorkflowEnvironment) -> None:
    task_queue = new_queue()
    async with Worker(env.client, task_queue=task_queue, workflows=[ArgsWorkflow, ChildAdder], activities=[add]):
        result = await env.client.execute_workflow(ArgsWorkflow.run, id=f"wf-{uuid.uuid4()}", task_queue=task_queue)
    assert result == [3, 13, 113]


# ---------------------------------------------------------------------- @workflow.init + all_handlers_finished


@dataclass
class WorkflowInput:
    name: str


@workflow.defn
class InitAndHandlersWorkflow:
    @workflow.init
    def __init__(self, input: WorkflowInput) -> None:
        # state built from the input before any handler can run
        self.name_with_title = f"Sir {input.name}"
        self.title_set = False
        self.update_started = False

    @workflow.run
    async def run(self, input: WorkflowInput) -> str:
        await workflow.wait_condition(lambda: self.update_started)
        await workflow.wait_condition(workflow.all_handlers_finished)
        return self.name_with_title

    @workflow.update
    async def set_title(self, title: str) -> str:
        self.update_started = True
        # an async handler still running when the run method is ready to finish
        echoed = await workflow.execute_activity(echo, title, start_to_close_timeout=timedelta(seconds=5))
        self.name_with_title = self.name_with_title.replace("Sir", echoed)
        return self.name_with_title

    @workflow.query
    def get_name(self) -> str:
        return self.name_with_title


async def test_init_and_waiting_for_handlers(env: WorkflowEnvironment) -> None:
    task_queue = new_queue()
    async with Worker(env.client, task_queue=task_queue, workflows=[InitAndHandlersWorkflow], activities=[echo]):
        handle = await env.client.start_workflow(InitAndHandlersWorkflow.run, WorkflowInput("Lancelot"),
                                                 id=f"wf-{uuid.uuid4()}", task_queue=task_queue)
        assert await handle.query(InitAndHandlersWorkflow.get_name) == "Sir Lancelot"
        update_result = await handle.update(InitAndHandlersWorkflow.set_title, "Dame")
        assert update_result == "Dame Lancelot"
        assert await handle.result() == "Dame Lancelot"


# ---------------------------------------------------------------------- workflow.wait / as_completed


@workflow.defn
class FanOutWorkflow:
    @workflow.run
    async def run(self, words: list[str]) -> dict[str, list[str]]:
        tasks = [asyncio.create_task(workflow.execute_activity(echo, w, start_to_close_timeout=timedelta(seconds=5)))
                 for w in words]
        done, pending = await workflow.wait(tasks, return_when=asyncio.ALL_COMPLETED)
        completed: list[str] = []
        for next_result in workflow.as_completed(
                [workflow.execute_activity(echo, w.upper(), start_to_close_timeout=timedelta(seconds=5))
                 for w in words]):
            completed.append(await next_result)
        return {"done": [t.result() for t in done], "pending": [str(p) for p in pending],
                "completed": sorted(completed)}


async def test_wait_and_as_completed(env: WorkflowEnvironment) -> None:
    task_queue = new_queue()
    async with Worker(env.client, task_queue=task_queue, workflows=[FanOutWorkflow], activities=[echo]):
        handle = await env.client.start_workflow(FanOutWorkflow.run, ["c", "a", "b"], id=f"wf-{uuid.uuid4()}",
                                                 task_queue=task_queue)
        result = await handle.result()
        history = await handle.fetch_history()
    assert result == {"done": ["c", "a", "b"], "pending": [], "completed": ["A", "B", "C"]}
    await Replayer(workflows=[FanOutWorkflow]).replay_workflow(history)


# ---------------------------------------------------------------------- activity cancellation types


class ActivityWaitCancelNotify:
    def __init__(self) -> None:
        self.cleaned_up = asyncio.Event()

    @activity.defn
    async def wait_cancel(self) -> str:
        try:
            for _ in range(400):  # at most ~20 s, then give up
                await asyncio.sleep(0.05)
                activity.heartbeat()
            return "never cancelled"
        except asyncio.CancelledError:
            await asyncio.sleep(0.1)  # cleanup takes a while
            self.cleaned_up.set()
            raise


@workflow.defn
class CancelActivityWorkflow:
    @workflow.run
    async def run(self, cancellation_type: str) -> str:
        handle = workflow.start_activity_method(
            ActivityWaitCancelNotify.wait_cancel,
            start_to_close_timeout=timedelta(minutes=1),
            heartbeat_timeout=timedelta(seconds=1),
            cancellation_type=workflow.ActivityCancellationType[cancellation_type],
        )
        await workflow.sleep(0.1)
        try:
            handle.cancel()
            return await handle
        except ActivityError as err:
            return f"Error: {err.cause.__class__.__name__}"


@pytest.mark.timeout(60)
async def test_activity_cancellation_types() -> None:
    async with await WorkflowEnvironment.start_local() as env:
        for cancellation_type in ("WAIT_CANCELLATION_COMPLETED", "ABANDON"):
            activity_inst = ActivityWaitCancelNotify()
            task_queue = new_queue()
            async with Worker(env.client, task_queue=task_queue, workflows=[CancelActivityWorkflow],
                              activities=[activity_inst.wait_cancel], graceful_shutdown_timeout=timedelta(0)):
                handle = await env.client.start_workflow(CancelActivityWorkflow.run, cancellation_type,
                                                         id=f"wf-{uuid.uuid4()}", task_queue=task_queue)
                assert await handle.result() == "Error: CancelledError"
                events = [e.event_type for e in (await handle.fetch_history()).events]
                if cancellation_type == "WAIT_CANCELLATION_COMPLETED":
                    # the workflow went on only once the activity had cleaned up and reported it
                    assert activity_inst.cleaned_up.is_set() and "ActivityTaskCanceled" in events
                else:
                    # abandoned: no cancel request, the activity still runs
                    assert "ActivityTaskCancelRequested" not in events and not activity_inst.cleaned_up.is_set()


# ---------------------------------------------------------------------- logger, unsafe, info


SEEN_REPLAYING: list[bool] = []


@workflow.defn
class LoggingWorkflow:
    @workflow.run
    async def run(self, name: str) -> dict:
        workflow.logger.info("Running workflow with parameter %s", name)
        replaying = workflow.unsafe.is_replaying()
        SEEN_REPLAYING.append(replaying)
        await workflow.sleep(timedelta(days=1))
        workflow.logger.info("Woke up")
        info = workflow.info()
        return {"replaying": replaying, "len": info.get_current_history_length(),
                "can": info.is_continue_as_new_suggested(), "json": json.dumps([name])}


async def test_logger_unsafe_and_info(env: WorkflowEnvironment, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="spindle.workflow")
    task_queue = new_queue()
    workflow_id = f"wf-{uuid.uuid4()}"
    async with Worker(env.client, task_queue=task_queue, workflows=[LoggingWorkflow]):
        handle = await env.client.start_workflow(LoggingWorkflow.run, "Temporal", id=workflow_id, task_queue=task_queue)
        result = await handle.result()
    assert result == {"replaying": False, "len": 8, "can": False, "json": '["Temporal"]'}
    records = [r for r in caplog.records if r.name == "spindle.workflow"]
    assert [r.getMessage().split(" (")[0] for r in records] == ["Running workflow with parameter Temporal", "Woke up"]
    details = {"attempt": 1, "namespace": "default", "run_id": handle.result_run_id, "task_queue": task_queue,
               "workflow_id": workflow_id, "workflow_type": "LoggingWorkflow"}
    assert records[0].getMessage() == f"Running workflow with parameter Temporal ({details})"
    assert records[0].spindle_workflow == details  # type: ignore[attr-defined]
    # replaying the same history logs nothing and sees is_replaying() == True
    caplog.clear()
    SEEN_REPLAYING.clear()
    await Replayer(workflows=[LoggingWorkflow]).replay_workflow(await handle.fetch_history())
    assert [r for r in caplog.records if r.name == "spindle.workflow"] == []
    assert SEEN_REPLAYING == [True]


@workflow.defn
class ContinueAsNewWorkflow:
    @workflow.run
    async def run(self, runs: int) -> list[int]:
        iterations = 0
        while not workflow.info().is_continue_as_new_suggested():
            await workflow.sleep(timedelta(minutes=1))
            iterations += 1
        await workflow.wait_condition(workflow.all_handlers_finished)
        if runs >= 1:
            return [runs, iterations]
        workflow.continue_as_new(runs + 1)


@pytest.mark.timeout(60)
async def test_continue_as_new_when_suggested() -> None:
    config = dataclasses.replace(ServerConfig(), num_shards=1, history_warn_events=12)
    async with await WorkflowEnvironment.start_time_skipping(config=config) as env:
        task_queue = new_queue()
        async with Worker(env.client, task_queue=task_queue, workflows=[ContinueAsNewWorkflow]):
            handle = await env.client.start_workflow(ContinueAsNewWorkflow.run, 0, id=f"wf-{uuid.uuid4()}",
                                                     task_queue=task_queue)
            result = await handle.result()
            first_run = await env.client.get_workflow_handle(handle.id, run_id=handle.first_execution_run_id
                                                             ).fetch_history()
    # each minute of sleep adds 5 events to the 3 of the start: the server suggests it past 12
    assert first_run.events[-1].event_type == "WorkflowExecutionContinuedAsNew"
    assert result == [1, 2]
    await Replayer(workflows=[ContinueAsNewWorkflow]).replay_workflow(first_run)


def test_client_import_is_the_spindle_client() -> None:
    assert Client.__module__.startswith("spindle")
