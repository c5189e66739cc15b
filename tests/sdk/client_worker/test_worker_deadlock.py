"""Deadlock detection: workflow code that never yields fails its task instead of freezing the worker.

Before: activations ran on the worker's event loop with no deadline, so ``while True: pass``
in workflow code froze the whole worker (and, embedded, the control plane on the same loop):
no polls, no heartbeats, no other workflow. Each workflow below spins on a module flag; a
safety timer releases it after ``SAFETY`` seconds so that, without detection, the tests fail
on their assertions instead of hanging.
"""

from __future__ import annotations

import threading
import uuid

from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from waiting import eventually as _eventually

from spindle import workflow
from spindle._workflow.deadlock import ActivationWatchdog, DeadlockError, _is_workflow_code
from spindle.client import Client, History
from spindle.exceptions import QueryFailedError
from spindle.testing import Replayer
from spindle.worker import Worker

SAFETY = 25.0
SPIN: dict[str, bool] = {"release": False}
FAST = timedelta(milliseconds=500)


def release() -> None:
    SPIN["release"] = True


@workflow.defn
class SpinWorkflow:
    @workflow.run
    async def run(self) -> str:
        while not SPIN["release"]:  # spins without ever yielding to the event loop
            pass
        return "released"


@workflow.defn
async def swallowing() -> str:
    try:
        while not SPIN["release"]:
            pass
    except BaseException:  # workflow code that catches the interrupt must not complete the task
        return "swallowed"
    return "released"


@workflow.defn
class QueriedWorkflow:
    def __init__(self) -> None:
        self.done = False

    @workflow.run
    async def run(self) -> str:
        await workflow.wait_condition(lambda: self.done)
        return "finished"

    @workflow.signal
    def finish(self) -> None:
        self.done = True

    @workflow.query
    def spin(self) -> str:
        while not SPIN["release"]:
            pass
        return "spun"

    @workflow.query
    def ok(self) -> str:
        return "ok"


@workflow.defn
async def echo(value: str) -> str:
    return value


@pytest.fixture(autouse=True)
def spin_flag() -> Iterator[None]:
    SPIN["release"] = False
    safety = threading.Timer(SAFETY, release)
    safety.daemon = True
    safety.start()
    try:
        yield
    finally:
        safety.cancel()
        release()


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[Client]:
    c = await Client.connect("embedded:" + str(tmp_path / "s.db"))
    try:
        yield c
    finally:
        await c.close()


@pytest.fixture
def tq() -> str:
    return "tq-" + uuid.uuid4().hex[:8]


def worker(client: Client, tq: str, **kw: Any) -> Worker:
    return Worker(client, task_queue=tq, workflows=[SpinWorkflow, swallowing, QueriedWorkflow, echo],
                  graceful_shutdown_timeout=timedelta(seconds=1), **kw)


eventually = partial(_eventually, timeout=15.0)


async def first_task_failure(client: Client, workflow_id: str) -> dict[str, Any]:
    async def failed() -> dict[str, Any]:
        hist = await client.get_workflow_handle(workflow_id).fetch_history()
        failures = hist.events_of_type("WorkflowTaskFailed")
        assert failures, "no WorkflowTaskFailed yet"
        return failures[0].attributes

    return await eventually(failed)  # type: ignore[no-any-return]


# ---------------------------------------------------------------------- worker level


async def test_spinning_workflow_fails_its_task_with_a_deadlock_error_and_the_worker_keeps_serving(
        client: Client, tq: str) -> None:
    async with worker(client, tq) as w:  # the default deadline: 2 seconds
        h = await client.start_workflow(SpinWorkflow.run, id="spin", task_queue=tq)
        attrs = await first_task_failure(client, "spin")
        assert not SPIN["release"], "the safety timer released the workflow: the deadlock was not detected"
        failure = attrs["failure"]
        assert attrs["cause"] == "WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_WORKER_UNHANDLED_FAILURE"
        assert failure["message"].startswith(
            "[TMPRL1101] Potential deadlock detected: workflow SpinWorkflow (id 'spin', run ")
        assert "didn't yield within 2 second(s)" in failure["message"]
        assert failure["application_failure_info"]["type"] == "DeadlockError"
        assert 'while not SPIN["release"]' in failure["stack_trace"]  # where the code was stuck
        assert h.run_id not in w.cached_run_ids  # the interrupted instance is evicted, never reused
        # The worker still serves: another workflow completes on it while the spinning one keeps failing.
        assert await client.execute_workflow(echo, "still serving", id="after", task_queue=tq) == "still serving"
        assert not SPIN["release"]
        release()  # "deploy a fix": the server's next retry of the task completes the run
        assert await h.result() == "released"
    history = await h.fetch_history()
    types = [e.event_type for e in history.events]
    assert types[-1] == "WorkflowExecutionCompleted" and "WorkflowTaskFailed" in types
    # The failed attempts replay: their commands never happened.
    await Replayer(workflows=[SpinWorkflow]).replay_workflow(History.from_json(history.to_json()))


async def test_workflow_code_that_catches_the_interrupt_still_fails_the_task(client: Client, tq: str) -> None:
    async with worker(client, tq, deadlock_detection_timeout=FAST):
        h = await client.start_workflow(swallowing, id="swallow", task_queue=tq)
        attrs = await first_task_failure(client, "swallow")
        assert "Potential deadlock detected: workflow swallowing (id 'swallow'" in attrs["failure"]["message"]
        assert "didn't yield within 0.5 second(s)" in attrs["failure"]["message"]
        release()
        assert await h.result() == "released"  # never "swallowed": an overrun task's outcome is discarded
    await Replayer(workflows=[swallowing]).replay_workflow(await h.fetch_history())


async def test_spinning_query_handler_fails_the_query_and_the_worker_keeps_answering(client: Client, tq: str) -> None:
    async with worker(client, tq, deadlock_detection_timeout=FAST):
        h = await client.start_workflow(QueriedWorkflow.run, id="queried", task_queue=tq)
        assert await h.query(QueriedWorkflow.ok) == "ok"
        with pytest.raises(QueryFailedError, match=r"Potential deadlock detected: workflow QueriedWorkflow "
                                                   r"\(id 'queried'.*0\.5 second"):
            await h.query(QueriedWorkflow.spin)
        assert await h.query(QueriedWorkflow.ok) == "ok"
        await h.signal(QueriedWorkflow.finish)
        assert await h.result() == "finished"
    history = await h.fetch_history()
    assert not history.events_of_type("WorkflowTaskFailed")
    await Replayer(workflows=[QueriedWorkflow]).replay_workflow(history)


async def test_debug_mode_and_none_disable_detection(client: Client, tq: str, monkeypatch: pytest.MonkeyPatch
                                                     ) -> None:
    assert worker(client, tq)._workflow_worker._watchdog is not None  # type: ignore[union-attr]
    assert worker(client, tq, debug_mode=True)._workflow_worker._watchdog is None  # type: ignore[union-attr]
    assert worker(client, tq, deadlock_detection_timeout=None)._workflow_worker._watchdog is None  # type: ignore[union-attr]
    monkeypatch.setenv("SPINDLE_DEBUG", "1")
    assert worker(client, tq)._workflow_worker._watchdog is None  # type: ignore[union-attr]
    monkeypatch.setenv("SPINDLE_DEBUG", "0")
    assert worker(client, tq)._workflow_worker._watchdog is not None  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="deadlock_detection_timeout must be positive"):
        worker(client, tq, deadlock_detection_timeout=timedelta(0))


# ---------------------------------------------------------------------- the watchdog itself


def spin_until_released() -> str:
    while not SPIN["release"]:
        pass
    return "released"


def test_watchdog_interrupts_a_pure_python_loop_and_reports_where_it_was() -> None:
    wd = ActivationWatchdog(0.3)
    wd.start()
    try:
        with pytest.raises(DeadlockError, match=r"\[TMPRL1101\] Potential deadlock detected: the spinner didn't "
                                                r"yield within 0.3 second\(s\)") as info:
            wd.run(lambda: "the spinner", spin_until_released)
        assert "spin_until_released" in info.value.stack_trace
        assert not SPIN["release"]
        # Nothing stays pending: ordinary calls afterwards are not interrupted.
        for _ in range(1000):
            assert wd.run(lambda: "quick", sum, [1, 2]) == 3
    finally:
        wd.stop()


def test_watchdog_returns_results_and_errors_of_calls_within_the_deadline() -> None:
    wd = ActivationWatchdog(5.0)
    wd.start()
    try:
        assert wd.run(lambda: "x", lambda a, b=0: a + b, 1, b=2) == 3
        with pytest.raises(ZeroDivisionError):
            wd.run(lambda: "x", lambda: 1 // 0)
        with pytest.raises(KeyboardInterrupt):
            wd.run(lambda: "x", _raise, KeyboardInterrupt())
    finally:
        wd.stop()


def _raise(exc: BaseException) -> None:
    raise exc


def test_touch_restarts_the_deadline_between_replayed_workflow_tasks() -> None:
    import time

    wd = ActivationWatchdog(1.0)
    wd.start()

    def replay_like(tasks: int) -> int:
        for _ in range(tasks):
            wd.touch()
            end = time.monotonic() + 0.25
            while time.monotonic() < end:  # one "workflow task": well under the deadline
                pass
        return tasks

    try:
        assert wd.run(lambda: "replay", replay_like, 8) == 8  # 2 s in all, never 1 s without a touch
    finally:
        wd.stop()


def test_watchdog_is_a_plain_call_until_started() -> None:
    wd = ActivationWatchdog(0.01)
    assert wd.run(lambda: "x", lambda: "done") == "done"
    with pytest.raises(ValueError, match="must be positive"):
        ActivationWatchdog(0)


def test_only_workflow_code_is_interrupted() -> None:
    import logging
    import threading as threading_mod

    from spindle._workflow.loop import WorkflowEventLoop
    from spindle.converter import DataConverter
    from spindle.dsl import _runtime as dsl_runtime

    assert _is_workflow_code(spin_until_released.__code__)  # user code (this test module)
    assert not _is_workflow_code(logging.Handler.handle.__code__)  # holds the handler's lock
    assert not _is_workflow_code(threading_mod.Event.wait.__code__)
    assert not _is_workflow_code(WorkflowEventLoop.as_running_loop.__wrapped__.__code__)
    assert not _is_workflow_code(DataConverter.to_payloads.__code__)  # the SDK outside spindle._workflow too
    assert _is_workflow_code(dsl_runtime._delta.__code__)  # the DSL interpreter runs as workflow code
