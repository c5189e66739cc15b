"""Activity code written for Temporal, with only its imports changed, behaves on Spindle as on Temporal.

Each test is written the way a temporalio user writes it (``temporalio`` renamed to
``spindle``): activity.logger, ApplicationErrorCategory.BENIGN, cancelling a sync
activity that heartbeats, sync activities in a ProcessPoolExecutor with a
SharedStateManager, and ActivityEnvironment.run on a plain ``def`` activity.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import multiprocessing
import threading
import time
import uuid

from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from typing import Any

import pytest

from spindle import activity, workflow
from spindle.common import RetryPolicy
from spindle.exceptions import (
    ActivityError,
    ApplicationError,
    ApplicationErrorCategory,
    CancelledError,
    WorkflowFailureError,
)
from spindle.testing import ActivityEnvironment, WorkflowEnvironment
from spindle.worker import SharedStateManager, Worker


@pytest.fixture
async def env() -> AsyncIterator[WorkflowEnvironment]:
    async with await WorkflowEnvironment.start_local() as e:
        yield e


@pytest.fixture(scope="module")
def shared_state_manager() -> Iterator[SharedStateManager]:
    with multiprocessing.Manager() as mgr:
        yield SharedStateManager.create_from_multiprocessing(mgr)


def new_queue() -> str:
    return f"tq-{uuid.uuid4()}"


async def history_event_types(env: WorkflowEnvironment, workflow_id: str) -> list[str]:
    history = await env.client.get_workflow_handle(workflow_id).fetch_history()
    return [e.event_type for e in history.events]


async def wait_for_event(env: WorkflowEnvironment, workflow_id: str, event_type: str, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while event_type not in await history_event_types(env, workflow_id):
        assert time.monotonic() < deadline, f"no {event_type} event in the history of {workflow_id}"
        await asyncio.sleep(0.1)


async def wait_for_heartbeat(env: WorkflowEnvironment, workflow_id: str, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        desc = await env.client.get_workflow_handle(workflow_id).describe()
        if any(a.heartbeat_details for a in desc.pending_activities):
            return
        assert time.monotonic() < deadline, f"no activity of {workflow_id} heartbeat"
        await asyncio.sleep(0.1)


@workflow.defn
class RunActivity:
    """Runs the named activity (no arguments) once, without retries, and returns its result."""

    @workflow.run
    async def run(self, name: str) -> Any:
        return await workflow.execute_activity(
            name, start_to_close_timeout=timedelta(seconds=30), retry_policy=RetryPolicy(maximum_attempts=1))


# ---------------------------------------------------------------------- activity.logger


@activity.defn
async def say_hello(name: str) -> str:
    activity.logger.info("Saying hello to %s", name)
    return f"Hello, {name}!"


@workflow.defn
class SayHello:
    @workflow.run
    async def run(self, name: str) -> str:
        return await workflow.execute_activity(say_hello, name, start_to_close_timeout=timedelta(seconds=10))


async def test_activity_logger_adds_activity_info(env: WorkflowEnvironment, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="spindle.activity")
    tq = new_queue()
    async with Worker(env.client, task_queue=tq, workflows=[SayHello], activities=[say_hello]):
        assert await env.client.execute_workflow(SayHello.run, "Temporal", id="logger-wf",
                                                 task_queue=tq) == "Hello, Temporal!"
    [record] = [r for r in caplog.records if r.name == "spindle.activity"]
    details = {
        "activity_id": "1", "activity_type": "say_hello", "attempt": 1, "namespace": "default",
        "task_queue": tq, "workflow_id": "logger-wf", "workflow_type": "SayHello",
    }
    # temporalio puts the dict on the record (as temporal_activity) and appends it to the message
    attached = record.spindle_activity  # type: ignore[attr-defined]
    assert {k: attached[k] for k in details} == details
    assert attached["workflow_run_id"]
    for key, value in details.items():
        assert getattr(record, key) == value
    assert record.getMessage() == f"Saying hello to Temporal ({attached})"


def test_activity_logger_outside_an_activity_is_a_plain_logger(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="spindle.activity")
    activity.logger.info("not in an activity")
    [record] = [r for r in caplog.records if r.name == "spindle.activity"]
    assert record.getMessage() == "not in an activity"
    assert not hasattr(record, "spindle_activity")
    assert activity.logger.base_logger is logging.getLogger("spindle.activity")


# ---------------------------------------------------------------------- ApplicationErrorCategory.BENIGN


@activity.defn
async def not_ready_yet() -> None:
    raise ApplicationError("not ready yet", type="NotReady", non_retryable=True,
                           category=ApplicationErrorCategory.BENIGN)


async def test_benign_error_reaches_the_workflow_and_is_logged_at_debug(
        env: WorkflowEnvironment, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="spindle.worker")
    tq = new_queue()
    async with Worker(env.client, task_queue=tq, workflows=[RunActivity], activities=[not_ready_yet]):
        with pytest.raises(WorkflowFailureError) as err:
            await env.client.execute_workflow(RunActivity.run, "not_ready_yet", id="benign-wf", task_queue=tq)
    assert isinstance(err.value.cause, ActivityError)
    app = err.value.cause.cause
    assert isinstance(app, ApplicationError)
    assert app.category == ApplicationErrorCategory.BENIGN
    assert app.type == "NotReady"
    about_it = [r for r in caplog.records if r.name == "spindle.worker" and "not ready yet" in r.getMessage()]
    assert about_it, "the failed attempt was not logged at all"
    assert all(r.levelno == logging.DEBUG for r in about_it), [(r.levelname, r.getMessage()) for r in about_it]


def test_application_error_category_defaults_and_validates() -> None:
    assert ApplicationError("x").category == ApplicationErrorCategory.UNSPECIFIED
    assert [c.name for c in ApplicationErrorCategory] == ["UNSPECIFIED", "BENIGN"]
    with pytest.raises(ValueError, match="category must be one of"):
        ApplicationError("x", category=7)  # type: ignore[arg-type]


# ---------------------------------------------------------------------- cancelling a sync activity

SYNC_BEATS: dict[str, Any] = {}
SYNC_STARTED = threading.Event()
SYNC_STOPPED = threading.Event()


@activity.defn
def heartbeat_until_cancelled() -> str:
    # temporalio's hello_cancellation, faster: heartbeat, sleep, until cancelled
    SYNC_STARTED.set()
    try:
        for _ in range(300):  # bounded, so that a test that fails does not hang
            SYNC_BEATS["beats"] = SYNC_BEATS.get("beats", 0) + 1
            if activity.is_cancelled():
                SYNC_BEATS.setdefault("beats_after_cancel", 0)
                SYNC_BEATS["beats_after_cancel"] += 1
            activity.heartbeat(SYNC_BEATS["beats"])
            time.sleep(0.1)
        return "never cancelled"
    except CancelledError:
        SYNC_BEATS["raised"] = True
        SYNC_BEATS["is_cancelled"] = activity.is_cancelled()
        raise
    finally:
        SYNC_STOPPED.set()


@workflow.defn
class CancelActivityOnSignal:
    def __init__(self) -> None:
        self.cancel_now = False
        self.finish = False

    @workflow.run
    async def run(self, name: str) -> str:
        handle = workflow.start_activity(name, start_to_close_timeout=timedelta(seconds=120),
                                         heartbeat_timeout=timedelta(seconds=1))
        await workflow.wait_condition(lambda: self.cancel_now)
        handle.cancel()
        try:
            await handle
            outcome = "completed"
        except ActivityError as e:
            outcome = type(e.cause).__name__
        await workflow.wait_condition(lambda: self.finish)
        return outcome

    @workflow.signal
    def cancel_activity(self) -> None:
        self.cancel_now = True

    @workflow.signal
    def done(self) -> None:
        self.finish = True


async def test_sync_activity_sees_its_cancellation_at_the_next_heartbeat(env: WorkflowEnvironment) -> None:
    SYNC_BEATS.clear()
    SYNC_STARTED.clear()
    SYNC_STOPPED.clear()
    tq = new_queue()
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as executor:
        async with Worker(env.client, task_queue=tq, workflows=[CancelActivityOnSignal],
                          activities=[heartbeat_until_cancelled], activity_executor=executor,
                          graceful_shutdown_timeout=timedelta(seconds=1)):
            handle = await env.client.start_workflow(CancelActivityOnSignal.run, "heartbeat_until_cancelled",
                                                     id="sync-cancel-wf", task_queue=tq)
            assert await asyncio.to_thread(SYNC_STARTED.wait, 10)
            await handle.signal(CancelActivityOnSignal.cancel_activity)
            stopped = await asyncio.to_thread(SYNC_STOPPED.wait, 15)
            assert stopped, f"the sync activity never stopped after its cancellation: {SYNC_BEATS}"
            # the worker reports the cancellation: the server records it
            await wait_for_event(env, "sync-cancel-wf", "ActivityTaskCanceled")
            await handle.signal(CancelActivityOnSignal.done)
            assert await handle.result() == "CancelledError"
    assert SYNC_BEATS["raised"] and SYNC_BEATS["is_cancelled"]
    # heartbeat() raised at the first heartbeat after the worker learnt of the request
    assert SYNC_BEATS.get("beats_after_cancel", 0) <= 1, SYNC_BEATS


sync_activity_waiting_cancel = threading.Event()
sync_activity_stopped = threading.Event()


@activity.defn
def sync_activity_wait_cancel() -> None:
    sync_activity_waiting_cancel.set()
    try:
        for _ in range(300):  # bounded, so that a test that fails does not hang
            time.sleep(0.1)
            activity.heartbeat()
    finally:
        sync_activity_stopped.set()


@workflow.defn
class CancelOnWorkerShutdownWorkflow:
    @workflow.run
    async def run(self) -> None:
        await workflow.execute_activity(sync_activity_wait_cancel, start_to_close_timeout=timedelta(hours=1),
                                        retry_policy=RetryPolicy(maximum_attempts=1))


async def test_sync_activity_thread_cancel_on_worker_shutdown(env: WorkflowEnvironment) -> None:
    # as temporalio's test of the same name: shutting the worker down cancels the sync activity
    sync_activity_waiting_cancel.clear()
    sync_activity_stopped.clear()
    task_queue = f"tq-{uuid.uuid4()}"

    def new_worker() -> Worker:
        return Worker(env.client, task_queue=task_queue, activities=[sync_activity_wait_cancel],
                      workflows=[CancelOnWorkerShutdownWorkflow], activity_executor=executor,
                      max_cached_workflows=0, graceful_shutdown_timeout=timedelta(milliseconds=100))

    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as executor:
        async with new_worker():
            handle = await env.client.start_workflow(CancelOnWorkerShutdownWorkflow.run,
                                                     id=f"workflow-{uuid.uuid4()}", task_queue=task_queue)
            assert await asyncio.get_running_loop().run_in_executor(
                executor, lambda: sync_activity_waiting_cancel.wait(20))
            # shut the worker down
        assert sync_activity_stopped.wait(10), "the worker shut down, but its sync activity runs on"
        with pytest.raises(WorkflowFailureError) as err:
            async with new_worker():
                await handle.result()
    assert isinstance(err.value.cause, ActivityError)
    assert isinstance(err.value.cause.cause, ApplicationError)
    assert err.value.cause.cause.type == "WorkerShutdown"


# ---------------------------------------------------------------------- process-pool activities


@activity.defn
def picklable_activity() -> str:
    return f"activity name: {activity.info().activity_type}"


@activity.defn
def resume_from_heartbeat() -> list[Any]:
    # attempt 1 records progress and fails; attempt 2 resumes from the recorded details
    info = activity.info()
    if info.attempt == 1:
        activity.heartbeat("step", 7)
        raise RuntimeError("first attempt fails after heartbeating")
    return [info.attempt, *info.heartbeat_details]


@activity.defn
def process_heartbeat_until_cancelled() -> str:
    for i in range(300):  # bounded, so that a test that fails does not hang
        activity.heartbeat(i)
        time.sleep(0.1)
    return "never cancelled"


@workflow.defn
class RunWithRetry:
    @workflow.run
    async def run(self, name: str) -> Any:
        return await workflow.execute_activity(
            name, start_to_close_timeout=timedelta(seconds=30),
            retry_policy=RetryPolicy(initial_interval=timedelta(milliseconds=50), maximum_attempts=2))


async def test_sync_activity_process(env: WorkflowEnvironment, shared_state_manager: SharedStateManager) -> None:
    tq = new_queue()
    with concurrent.futures.ProcessPoolExecutor(max_workers=2) as executor:
        async with Worker(env.client, task_queue=tq, workflows=[RunActivity, RunWithRetry, CancelActivityOnSignal],
                          activities=[picklable_activity, resume_from_heartbeat, process_heartbeat_until_cancelled],
                          activity_executor=executor, shared_state_manager=shared_state_manager,
                          graceful_shutdown_timeout=timedelta(seconds=1)):
            assert await env.client.execute_workflow(
                RunActivity.run, "picklable_activity", id="process-wf",
                task_queue=tq) == "activity name: picklable_activity"

            # heartbeats from the child process reach the server
            assert await env.client.execute_workflow(
                RunWithRetry.run, "resume_from_heartbeat", id="process-heartbeat-wf",
                task_queue=tq) == [2, "step", 7]

            # and so does a cancellation, the other way
            handle = await env.client.start_workflow(CancelActivityOnSignal.run, "process_heartbeat_until_cancelled",
                                                     id="process-cancel-wf", task_queue=tq)
            await wait_for_heartbeat(env, "process-cancel-wf")
            await handle.signal(CancelActivityOnSignal.cancel_activity)
            await wait_for_event(env, "process-cancel-wf", "ActivityTaskCanceled")
            await handle.signal(CancelActivityOnSignal.done)
            assert await handle.result() == "CancelledError"


def test_sync_activity_process_needs_a_shared_state_manager() -> None:
    with concurrent.futures.ProcessPoolExecutor(max_workers=1) as executor:
        with pytest.raises(ValueError, match="shared_state_manager=SharedStateManager.create_from_multiprocessing"):
            Worker(_FakeClient(), task_queue="tq", activities=[picklable_activity], activity_executor=executor)


def test_sync_activity_process_non_picklable(shared_state_manager: SharedStateManager) -> None:
    @activity.defn
    def some_activity() -> str:
        return f"activity name: {activity.info().activity_type}"

    with concurrent.futures.ProcessPoolExecutor(max_workers=1) as executor:
        with pytest.raises(TypeError, match="'some_activity' cannot run in a ProcessPoolExecutor: it must be picklable"):
            Worker(_FakeClient(), task_queue="tq", activities=[some_activity], activity_executor=executor,
                   shared_state_manager=shared_state_manager)


class _FakeClient:
    """Worker construction only reads these."""

    identity = "test"
    namespace = "default"
    data_converter = None
    codecs = ()
    _stub = None


# ---------------------------------------------------------------------- ActivityEnvironment


@activity.defn
def compose_greeting(greeting: str, name: str) -> str:
    activity.heartbeat(f"composing for {name}")
    return f"{greeting}, {name}!"


def test_activity_environment_runs_a_sync_activity() -> None:
    env = ActivityEnvironment()
    heartbeats: list[Any] = []
    env.on_heartbeat = lambda *args: heartbeats.append(args[0])
    assert env.run(compose_greeting, "Hello", "World") == "Hello, World!"
    assert heartbeats == ["composing for World"]


@activity.defn
async def compose_greeting_async(greeting: str, name: str) -> str:
    return f"{greeting}, {name}!"


async def test_activity_environment_runs_an_async_activity() -> None:
    assert await ActivityEnvironment().run(compose_greeting_async, "Hello", "World") == "Hello, World!"


def test_activity_env_sync_cancel_with_shield() -> None:
    # temporalio's tests/testing/test_activity.py::test_activity_env_sync, without cancellation_details
    waiting = threading.Event()
    properly_cancelled = False

    def do_stuff(param: str) -> None:
        activity.heartbeat(f"param: {param}")
        waiting.set()
        try:
            with activity.shield_thread_cancel_exception():
                try:
                    while not activity.is_cancelled():
                        time.sleep(0.05)
                    time.sleep(0.05)
                except BaseException:
                    raise RuntimeError("Unexpected") from None
        except CancelledError:
            nonlocal properly_cancelled
            properly_cancelled = activity.is_cancelled()

    env = ActivityEnvironment()
    heartbeats: list[Any] = []
    env.on_heartbeat = lambda *args: heartbeats.append(args[0])
    thread = threading.Thread(target=env.run, args=[do_stuff, "param1"])
    thread.start()
    assert waiting.wait(5)
    env.cancel()
    thread.join(5)
    assert not thread.is_alive()
    assert heartbeats == ["param: param1"]
    assert properly_cancelled


def test_nested_shields_raise_at_the_outermost_end() -> None:
    # as temporalio's test_sync_activity_thread_cancel_exception_shielded
    events: list[str] = []

    @activity.defn
    def wait_cancel() -> None:
        events.append("pre1")
        with activity.shield_thread_cancel_exception():
            events.append("pre2")
            with activity.shield_thread_cancel_exception():
                events.append("pre3")
                while not activity.is_cancelled():
                    time.sleep(0.05)
                    activity.heartbeat()
                events.append("post3")
            events.append("post2")
        events.append("post1")

    env = ActivityEnvironment()
    timer = threading.Timer(0.2, env.cancel)
    timer.start()
    with pytest.raises(CancelledError):
        env.run(wait_cancel)
    timer.join()
    assert events == ["pre1", "pre2", "pre3", "post3", "post2"]
