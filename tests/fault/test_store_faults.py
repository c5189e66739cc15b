"""Store write failures injected at each step of a state transition (embedded control plane, SqliteStore.fault_hook).

``before_commit``: the batch is rolled back; the caller gets UNAVAILABLE and nothing is applied; a
retry succeeds. ``after_commit``: the batch IS durable but the caller is told it failed; a retry of
the same start (same request id) or signal (same request id) is not applied twice, the execution
keeps going without a restart, and after a restart on the same file everything completes.
"""

from __future__ import annotations

import asyncio
import logging
import random
import threading
import time

from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import grpc
import pytest

from fault_helpers import check_db, check_history, raw_history
from fault_workloads import ACTIVITIES, TASK_QUEUE, WORKFLOWS, FChain3, fparent, fsigwait, ftimer

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.client import Client
from spindle.controlplane import embedded
from spindle.controlplane.store import Mutation
from spindle.exceptions import RPCError, WorkflowNotFoundError
from spindle.worker import Worker

pytestmark = pytest.mark.timeout(120)

TASK_TIMEOUT = timedelta(seconds=2)


class InjectedFault(Exception):
    pass


def _flat(muts: Sequence[Mutation]) -> list[Mutation]:
    out: list[Mutation] = []
    for m in muts:
        out.append(m)
        out.extend(_flat(m.also))
    return out


def _event_types(m: Mutation) -> list[int]:
    out = []
    for _, raw in m.events:
        e = pb.HistoryEvent()
        e.ParseFromString(raw)
        out.append(e.event_type)
    for raw in m.add_buffered:
        e = pb.HistoryEvent()
        e.ParseFromString(raw)
        out.append(e.event_type)
    return out


def new_run(workflow_id: str) -> Callable[[Mutation], bool]:
    return lambda m: m.execution is not None and m.expected_version is None and m.execution.workflow_id == workflow_id


def appends(workflow_id: str, event_type: int) -> Callable[[Mutation], bool]:
    return lambda m: m.execution is not None and m.execution.workflow_id == workflow_id and event_type in _event_types(m)


@dataclass
class Rule:
    stage: str
    pred: Callable[[Mutation], bool]
    times: int
    exc: BaseException


@dataclass
class Hold:
    """Blocks the store's writer thread on the first batch that contains a matching mutation."""

    stage: str
    pred: Callable[[Mutation], bool]
    reached: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)


@dataclass
class Injector:
    """The store's fault_hook: fails (or holds) the batches that contain a matching mutation."""

    rules: list[Rule] = field(default_factory=list)
    holds: list[Hold] = field(default_factory=list)
    fired: list[str] = field(default_factory=list)
    random_rate: float = 0.0
    random_stage: str = "before_commit"
    rng: random.Random = field(default_factory=lambda: random.Random(7))

    def hold(self, stage: str, pred: Callable[[Mutation], bool]) -> Hold:
        h = Hold(stage, pred)
        self.holds.append(h)
        return h

    def fail(self, stage: str, pred: Callable[[Mutation], bool], times: int = 1,
             exc: BaseException | None = None) -> Rule:
        r = Rule(stage, pred, times, exc or InjectedFault(f"injected {stage} failure"))
        self.rules.append(r)
        return r

    def __call__(self, stage: str, muts: Sequence[Mutation]) -> None:
        flat = _flat(muts)
        for h in self.holds:
            if h.stage == stage and not h.reached.is_set() and any(h.pred(m) for m in flat):
                h.reached.set()
                h.release.wait(30)
        for r in self.rules:
            if r.stage == stage and r.times > 0 and any(r.pred(m) for m in flat):
                r.times -= 1
                self.fired.append(stage)
                raise r.exc
        if self.random_rate and stage == self.random_stage and self.rng.random() < self.random_rate:
            self.fired.append("random " + stage)
            raise InjectedFault(f"injected random {stage} failure")


@dataclass
class Env:
    path: str
    cp: Any
    client: Client
    injector: Injector

    @property
    def store(self) -> Any:
        return self.cp.control_plane.store


async def open_env(path: str) -> Env:
    cp = await embedded.start(path)
    inj = Injector()
    cp.control_plane.store.fault_hook = inj
    return Env(path, cp, Client(cp.stub, namespace="default"), inj)


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[Env]:
    e = await open_env(str(tmp_path / "faults.db"))
    try:
        yield e
    finally:
        e.store.fault_hook = None
        await e.cp.stop()


def worker(client: Client) -> Worker:
    return Worker(client, task_queue=TASK_QUEUE, workflows=WORKFLOWS, activities=ACTIVITIES,
                  graceful_shutdown_timeout=timedelta(milliseconds=100),
                  sticky_schedule_to_start_timeout=timedelta(seconds=1))


def _unavailable(e: BaseException) -> None:
    status = getattr(e, "status", None) or (e.code().name if isinstance(e, grpc.aio.AioRpcError) else None)
    assert status == "UNAVAILABLE", f"{type(e).__name__} {status}: {e}"
    assert "store refused the write" in str(e), str(e)


async def _history_types(env: Env, wid: str) -> list[int]:
    return [e.event_type for e in await raw_history(env.cp.stub, wid)]


async def _raw_signal(env: Env, wid: str, payload: str, request_id: str) -> None:
    await env.cp.stub.SignalWorkflowExecution(svc.SignalWorkflowExecutionRequest(
        namespace="default", workflow_execution=pb.WorkflowExecution(workflow_id=wid), signal_name="go",
        input=env.client.data_converter.to_payloads([payload]), identity="fault-test", request_id=request_id))


def _sound(events: list[pb.HistoryEvent], wid: str) -> None:
    problems = check_history(events, what=wid)
    assert not problems, "\n".join(problems)


# ================================================================ (a) before commit: nothing applied

async def test_before_commit_start_applies_nothing_and_a_retry_succeeds(env: Env) -> None:
    env.injector.fail("before_commit", new_run("bc-start"))
    with pytest.raises(RPCError) as ei:
        await env.client.start_workflow(FChain3.run, 1, id="bc-start", task_queue=TASK_QUEUE, request_id="r1")
    _unavailable(ei.value)
    assert env.injector.fired == ["before_commit"]
    with pytest.raises(WorkflowNotFoundError):
        await env.client.get_workflow_handle("bc-start").describe()
    assert await env.store.get_current(env.cp.control_plane.namespaces.get("default").id, "bc-start") is None
    async with worker(env.client):
        h = await env.client.start_workflow(FChain3.run, 1, id="bc-start", task_queue=TASK_QUEUE, request_id="r1")
        assert await asyncio.wait_for(h.result(), 20) == 4
    _sound(await raw_history(env.cp.stub, "bc-start"), "bc-start")


async def test_before_commit_signal_applies_nothing_and_a_retry_succeeds(env: Env) -> None:
    async with worker(env.client):
        h = await env.client.start_workflow(fsigwait, 2, id="bc-sig", task_queue=TASK_QUEUE)
        env.injector.fail("before_commit", appends("bc-sig", pb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED))
        with pytest.raises(grpc.aio.AioRpcError) as ei:
            await _raw_signal(env, "bc-sig", "a", "sig-a")
        _unavailable(ei.value)
        assert pb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED not in await _history_types(env, "bc-sig")
        await _raw_signal(env, "bc-sig", "a", "sig-a")
        await _raw_signal(env, "bc-sig", "b", "sig-b")
        assert await asyncio.wait_for(h.result(), 20) == ["a", "b"]
    types = await _history_types(env, "bc-sig")
    assert types.count(pb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED) == 2


@pytest.mark.parametrize("event_type", [
    pb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED,      # the worker's RespondActivityTaskCompleted
    pb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,      # the worker's RespondWorkflowTaskCompleted
    pb.EVENT_TYPE_TIMER_FIRED,                  # the server's own timer
], ids=["activity-completed", "workflow-task-completed", "timer-fired"])
@pytest.mark.parametrize("stage", ["before_commit", "after_commit"])
async def test_step_fails_and_the_run_still_completes(env: Env, stage: str, event_type: int) -> None:
    wid = f"step-{stage}-{pb.EventType.Name(event_type)}"
    env.injector.fail(stage, appends(wid, event_type))
    async with worker(env.client):
        t0 = time.monotonic()
        h = await env.client.start_workflow(ftimer, 10, id=wid, task_queue=TASK_QUEUE, task_timeout=TASK_TIMEOUT)
        assert await asyncio.wait_for(h.result(), 30) == 12
        took = time.monotonic() - t0
    assert env.injector.fired == [stage], "the fault did not fire"
    assert took < 10, f"{took:.1f} s: a lost reply should cost one timeout (2 s) at most"
    events = await raw_history(env.cp.stub, wid)
    _sound(events, wid)
    types = [e.event_type for e in events]
    assert types.count(pb.EVENT_TYPE_TIMER_FIRED) == 1
    assert types.count(pb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED) == 2
    assert check_db(env.path) == []
    # no timer of the run is left: a retried timer deleted its own row, not one keyed by its retry time.
    # (A transfer row whose acknowledgement was in a failed batch may stay until the next restart.)
    timers_left = -1
    for _ in range(40):
        timers_left = _leftover_tasks(env.path)["timer_tasks (not retention)"]
        if timers_left == 0:
            break
        await asyncio.sleep(0.05)
    assert timers_left == 0, f"{timers_left} timer rows left after the run completed"


@pytest.mark.parametrize("step", ["child-start", "child-close"])
async def test_a_failed_write_to_another_execution_is_retried_without_a_restart(env: Env, step: str) -> None:
    """The transfer task that starts a child, or tells the parent it closed, retries with backoff."""
    wid = f"xs-{step}"
    if step == "child-start":
        env.injector.fail("before_commit", new_run(f"{wid}-child"), times=2)
    else:
        env.injector.fail("before_commit", appends(wid, pb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED), times=2)
    async with worker(env.client):
        h = await env.client.start_workflow(fparent, 40, id=wid, task_queue=TASK_QUEUE, task_timeout=TASK_TIMEOUT)
        assert await asyncio.wait_for(h.result(), 15) == 42
    assert env.injector.fired == ["before_commit"] * 2, "the fault did not fire"
    for w in (wid, f"{wid}-child"):
        _sound(await raw_history(env.cp.stub, w), w)


# ================================================================ (b) after commit: durable, retries idempotent

async def test_after_commit_start_is_durable_and_a_retry_is_idempotent(env: Env) -> None:
    env.injector.fail("after_commit", new_run("ac-start"))
    with pytest.raises(RPCError) as ei:
        await env.client.start_workflow(FChain3.run, 5, id="ac-start", task_queue=TASK_QUEUE, request_id="r-ac")
    assert getattr(ei.value, "status", None) == "UNAVAILABLE"
    desc = await env.client.get_workflow_handle("ac-start").describe()  # it is there
    h = await env.client.start_workflow(FChain3.run, 5, id="ac-start", task_queue=TASK_QUEUE, request_id="r-ac")
    assert h.run_id == desc.run_id, "a retried start (same request id) started another run"
    async with worker(env.client):
        assert await asyncio.wait_for(h.result(), 20) == 8  # without a restart
        # once more, after it completed: still the same run, not a new one
        h2 = await env.client.start_workflow(FChain3.run, 5, id="ac-start", task_queue=TASK_QUEUE, request_id="r-ac")
        assert h2.run_id == desc.run_id, "a retried start after the run closed started another run"
    _sound(await raw_history(env.cp.stub, "ac-start"), "ac-start")


async def test_after_commit_signal_is_durable_and_a_retry_is_not_duplicated(env: Env) -> None:
    async with worker(env.client):
        h = await env.client.start_workflow(fsigwait, 2, id="ac-sig", task_queue=TASK_QUEUE)
        env.injector.fail("after_commit", appends("ac-sig", pb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED))
        with pytest.raises(grpc.aio.AioRpcError) as ei:
            await _raw_signal(env, "ac-sig", "a", "sig-a")
        assert ei.value.code() == grpc.StatusCode.UNAVAILABLE
        assert (await _history_types(env, "ac-sig")).count(pb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED) == 1
        await _raw_signal(env, "ac-sig", "a", "sig-a")  # the retry: must not be recorded again
        await _raw_signal(env, "ac-sig", "b", "sig-b")
        assert await asyncio.wait_for(h.result(), 20) == ["a", "b"]
    assert (await _history_types(env, "ac-sig")).count(pb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED) == 2


# ================================================================ (c) the caller goes away while its write is in flight
# A client that cancels its call (or a cluster member forwarding it that dies) cancels the
# handler on the server. The write it started still commits; what the write scheduled (the
# workflow task that a signal or a start makes) must still be handed to a worker, and the
# cached state must match the store, without waiting for a restart.

async def _cancel_mid_write(env: Env, hold: Hold, call: Any) -> None:
    task = asyncio.ensure_future(call)
    reached = await asyncio.get_running_loop().run_in_executor(None, hold.reached.wait, 10)
    assert reached, "the write was never attempted"
    task.cancel()
    await asyncio.sleep(0.05)  # the handler sees the cancellation while the writer is still held
    hold.release.set()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_signal_cancelled_mid_write_is_applied_and_wakes_the_workflow(env: Env) -> None:
    async with worker(env.client):
        h = await env.client.start_workflow(fsigwait, 2, id="cx-sig", task_queue=TASK_QUEUE)
        await asyncio.sleep(0.2)  # the first workflow task is done: the run waits for "go"
        hold = env.injector.hold("before_commit", appends("cx-sig", pb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED))
        await _cancel_mid_write(env, hold, _raw_signal(env, "cx-sig", "a", "sig-a"))
        await _raw_signal(env, "cx-sig", "a", "sig-a")  # a client's retry of the same request: not applied twice
        await _raw_signal(env, "cx-sig", "b", "sig-b")
        assert await asyncio.wait_for(h.result(), 10) == ["a", "b"]
    events = await raw_history(env.cp.stub, "cx-sig")
    _sound(events, "cx-sig")
    assert [e.event_type for e in events].count(pb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED) == 2


async def test_start_cancelled_mid_write_runs_to_completion(env: Env) -> None:
    async with worker(env.client):
        hold = env.injector.hold("before_commit", new_run("cx-start"))
        await _cancel_mid_write(env, hold, env.client.start_workflow(FChain3.run, 7, id="cx-start",
                                                                     task_queue=TASK_QUEUE, request_id="r-cx"))
        first = await env.client.get_workflow_handle("cx-start").describe()  # the start landed
        # what a client does after losing the reply: retry with the same request id (one run, not two)
        h = await env.client.start_workflow(FChain3.run, 7, id="cx-start", task_queue=TASK_QUEUE, request_id="r-cx")
        assert h.run_id == first.run_id
        assert await asyncio.wait_for(h.result(), 10) == 10
    _sound(await raw_history(env.cp.stub, "cx-start"), "cx-start")


# ================================================================ random failures under load, then a restart

async def _eventually_completed(client: Client, n: int, timeout: float = 5.0) -> None:
    """Visibility is written by the ack loop shortly after the close: wait for it."""
    end = time.monotonic() + timeout
    while True:
        count = await client.count_workflows("ExecutionStatus = 'Completed'")
        if count == n or time.monotonic() > end:
            break
        await asyncio.sleep(0.1)
    assert count == n, f"visibility shows {count} of {n} executions completed"


def _leftover_tasks(path: str) -> dict[str, int]:
    import sqlite3

    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return {
            "transfer_tasks": conn.execute("SELECT COUNT(*) FROM transfer_tasks").fetchone()[0],
            "task_backlog": conn.execute("SELECT COUNT(*) FROM task_backlog").fetchone()[0],
            "timer_tasks (not retention)": conn.execute(
                "SELECT COUNT(*) FROM timer_tasks WHERE data NOT LIKE '[\"retention\"%'").fetchone()[0],
        }
    finally:
        conn.close()


@pytest.mark.parametrize("stage", ["before_commit", "after_commit"])
async def test_random_write_failures_under_load(tmp_path: Path, stage: str, caplog: pytest.LogCaptureFixture) -> None:
    """15 % of the store's batches fail while 60 workflows run; then the faults stop.

    Everything must complete without a restart (within a few task timeouts), every history must be
    sound, the file consistent; a restart on the file changes nothing.
    """
    caplog.set_level(logging.ERROR)
    path = str(tmp_path / "random.db")
    env = await open_env(path)
    n = 60
    ids = [f"rnd-{i}" for i in range(n)]
    started: dict[str, int] = {}
    try:
        async with worker(env.client):
            env.injector.random_stage = stage
            env.injector.random_rate = 0.15

            async def start(i: int) -> None:
                wid = ids[i]
                wf, arg = (FChain3.run, i * 100) if i % 3 else (ftimer, i * 100)
                for _ in range(20):
                    try:
                        await env.client.start_workflow(wf, arg, id=wid, task_queue=TASK_QUEUE, request_id=f"req-{wid}",
                                                        task_timeout=TASK_TIMEOUT)
                        started[wid] = arg + (3 if i % 3 else 2)
                        return
                    except RPCError as e:
                        assert e.status in ("UNAVAILABLE", "ALREADY_EXISTS"), e
                        if e.status == "ALREADY_EXISTS":
                            raise AssertionError(f"{wid}: a retried start (same request id) was refused: {e}") from e
                        await asyncio.sleep(0.05)
                raise AssertionError(f"{wid}: never started")

            await asyncio.gather(*(start(i) for i in range(n)))
            await asyncio.sleep(1.0)
            env.injector.random_rate = 0.0
            fired = len(env.injector.fired)

            async def result(wid: str) -> Any:
                return await asyncio.wait_for(env.client.get_workflow_handle(wid).result(), 30)

            results = await asyncio.gather(*(result(w) for w in ids), return_exceptions=True)
        stuck = [(w, r) for w, r in zip(ids, results) if r != started[w]]
        assert fired > 0
        assert not stuck, f"{len(stuck)} executions did not finish without a restart: {stuck[:5]}"
        for w in ids:
            _sound(await raw_history(env.cp.stub, w), w)
        await _eventually_completed(env.client, n)
    finally:
        env.store.fault_hook = None
        await env.cp.stop()
    assert check_db(path) == []
    # the same file again: nothing left half done
    env2 = await open_env(path)
    try:
        async with worker(env2.client):
            for w in ids:
                d = await env2.client.get_workflow_handle(w).describe()
                assert d.status is not None and d.status.name == "COMPLETED", (w, d.status)
            await _eventually_completed(env2.client, n)
            # tasks whose acknowledgement was lost with a failed write are processed (as stale) and deleted
            left: dict[str, int] = {}
            for _ in range(50):
                left = _leftover_tasks(path)
                if not any(left.values()):
                    break
                await asyncio.sleep(0.1)
            assert not any(left.values()), f"tasks left after the restart: {left}"
    finally:
        await env2.cp.stop()
    assert check_db(path) == []
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert not errors, [r.getMessage() for r in errors[:5]]
