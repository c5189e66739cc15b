"""Operations on a shard this process does not serve, and commits that fail before the write: nothing is remembered.

The cluster bug this reproduces (a lost, acknowledged signal): a member paused past its lease
re-claimed its shards after SIGCONT and was listed as their owner at once, but its engine opened
them one at a time. A forwarded signal arriving in between was loaded into the cache, applied
(its request id recorded in memory), and its commit failed because the shard was not open, before
the state was evicted. The router retried at the same member with the same request id, the
signal's de-duplication found the id in memory and answered OK, and nothing was ever written.

The interleaving is driven directly on one engine (SQLite, in-process):

- ``gap``: the shard is closed (``remove_shard``), as between a lease claim and the engine
  opening it. Every de-duplicated operation is refused with UNAVAILABLE before anything is loaded,
  a retry with the same request id is refused the same way, nothing reaches the store; once the
  shard is open again the retry takes effect exactly once.
- ``lost``: the shard goes away between the operation's load and its commit (a handover in the
  middle of an operation). The operation fails with UNAVAILABLE; the retry with the same request
  id takes effect exactly once.

Operations: signal, signal-with-start (running workflow), start, signal-with-start (new run),
update, activity completion, cancel request, terminate, reset.
"""

from __future__ import annotations

import asyncio

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import grpc
import pytest

from spindle import activity, workflow
from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.client import Client
from spindle.controlplane import embedded
from spindle.worker import Worker

pytestmark = pytest.mark.timeout(60)

TQ = "gap"
TOKENS: asyncio.Queue[bytes] | None = None
GATE: asyncio.Event | None = None


@activity.defn
async def completed_later() -> int:
    """Completes asynchronously: hands its task token to the test, which completes it."""
    assert TOKENS is not None
    TOKENS.put_nowait(activity.info().task_token)
    activity.raise_complete_async()


@activity.defn
async def gated() -> int:
    """Returns once the test opens the gate."""
    assert GATE is not None
    await GATE.wait()
    return 11


@workflow.defn(name="gapwf")
class GapWf:
    def __init__(self) -> None:
        self.signals: list[str] = []
        self.total = 0
        self.finished = False

    @workflow.run
    async def run(self, activity_kind: str) -> dict[str, Any]:
        got = 0
        if activity_kind:
            fn = completed_later if activity_kind == "async" else gated
            got = await workflow.execute_activity(fn, start_to_close_timeout=timedelta(seconds=60))
        await workflow.wait_condition(lambda: self.finished)
        return {"signals": self.signals, "total": self.total, "activity": got}

    @workflow.signal
    def go(self, value: str) -> None:
        self.signals.append(value)

    @workflow.signal
    def finish(self) -> None:
        self.finished = True

    @workflow.update
    def add(self, n: int) -> int:
        self.total += n
        return self.total


@dataclass
class World:
    cp: Any
    client: Client
    ns_id: str

    @property
    def engine(self) -> Any:
        return self.cp.control_plane.engine

    @property
    def store(self) -> Any:
        return self.cp.control_plane.store

    @property
    def stub(self) -> Any:
        return self.cp.stub

    def shard_of(self, wid: str) -> int:
        return int(self.engine.shard_id_of(self.ns_id, wid))

    async def close_shard(self, wid: str) -> None:
        """The shard of ``wid`` is not served here (claimed but not opened yet, or handed over)."""
        await self.engine.remove_shard(self.shard_of(wid))

    async def open_shard(self, wid: str) -> None:
        """Take the shard of ``wid`` again (a new range id, as a lease claim gives) and serve it."""
        sid = self.shard_of(wid)
        range_id = await self.store.acquire_shard(sid, self.engine.identity)
        await self.engine.add_shard(sid, range_id)

    def lose_shard_at_next_commit(self, wid: str) -> list[int]:
        """The next commit finds the shard of ``wid`` gone (after its operation loaded and changed the run).

        Returns a list that gets one entry when it happened.
        """
        ctx = self.engine.context
        real = ctx.commit
        shards = self.engine.shards
        sid = self.shard_of(wid)
        happened: list[int] = []

        async def losing(txn: Any, **kw: Any) -> None:
            ctx.commit = real
            shard = shards.pop(sid)
            happened.append(sid)
            try:
                await real(txn, **kw)
            finally:
                shards[sid] = shard

        ctx.commit = losing
        return happened

    async def stored_events(self, wid: str, run_id: str = "") -> list[pb.HistoryEvent]:
        """The run's events as the store holds them (the truth, whatever any cache says)."""
        if not run_id:
            cur = await self.store.get_current(self.ns_id, wid)
            assert cur is not None, f"{wid}: no current run in the store"
            run_id = cur.run_id
        loaded = await self.store.load_execution(self.ns_id, wid, run_id)
        assert loaded is not None
        return [pb.HistoryEvent.FromString(raw) for raw in loaded.events]


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[World]:
    global TOKENS, GATE
    TOKENS, GATE = asyncio.Queue(), asyncio.Event()
    cp = await embedded.start(str(tmp_path / "gap.db"))
    client = Client(cp.stub, namespace="default")
    w = World(cp, client, cp.control_plane.namespaces.get("default").id)
    try:
        async with Worker(client, task_queue=TQ, workflows=[GapWf], activities=[completed_later, gated]):
            yield w
    finally:
        await cp.stop()


def _status(e: BaseException) -> str:
    assert isinstance(e, grpc.aio.AioRpcError), f"{type(e).__name__}: {e}"
    return e.code().name


async def _unavailable(call: Callable[[], Awaitable[Any]]) -> str:
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await call()
    assert _status(err.value) == "UNAVAILABLE", err.value.details()
    return str(err.value.details())


def _of_type(events: list[pb.HistoryEvent], event_type: int) -> list[pb.HistoryEvent]:
    return [e for e in events if e.event_type == event_type]


async def _started(w: World, wid: str, activity_kind: str = "") -> str:
    """Start ``gapwf`` and wait until its first workflow task completed; its run id."""
    h = await w.client.start_workflow(GapWf.run, activity_kind, id=wid, task_queue=TQ)
    for _ in range(200):
        if _of_type(await w.stored_events(wid), pb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED):
            return str(h.result_run_id)
        await asyncio.sleep(0.02)
    raise AssertionError(f"{wid}: the first workflow task never completed")


def _payloads(w: World, *values: Any) -> pb.Payloads:
    return w.client.data_converter.to_payloads(list(values))


# ---------------------------------------------------------------------------------------------- operations
# Each returns (the call, what the store must hold exactly once after it took effect).

async def op_signal(w: World, wid: str) -> tuple[Callable[[], Awaitable[Any]], Callable[[], Awaitable[int]]]:
    await _started(w, wid)
    req = svc.SignalWorkflowExecutionRequest(namespace="default", workflow_execution=pb.WorkflowExecution(workflow_id=wid),
                                             signal_name="go", input=_payloads(w, "s1"), request_id="sig-1")

    async def effect() -> int:
        return sum(1 for e in _of_type(await w.stored_events(wid), pb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED)
                   if e.workflow_execution_signaled_event_attributes.request_id == "sig-1")

    return (lambda: w.stub.SignalWorkflowExecution(req)), effect


def _sws_request(w: World, wid: str, request_id: str) -> svc.SignalWithStartWorkflowExecutionRequest:
    return svc.SignalWithStartWorkflowExecutionRequest(
        start=svc.StartWorkflowExecutionRequest(namespace="default", workflow_id=wid, workflow_type="gapwf",
                                                task_queue=TQ, input=_payloads(w, ""), request_id=request_id),
        signal_name="go", signal_input=_payloads(w, "sws"))


async def op_signal_with_start_running(w: World, wid: str) -> tuple[Any, Any]:
    await _started(w, wid)
    req = _sws_request(w, wid, "sws-1")

    async def effect() -> int:
        return sum(1 for e in _of_type(await w.stored_events(wid), pb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED)
                   if e.workflow_execution_signaled_event_attributes.signal_name == "go")

    return (lambda: w.stub.SignalWithStartWorkflowExecution(req)), effect


async def _runs(w: World, wid: str) -> int:
    """How many runs of ``wid`` the store holds (every run of these tests is the first of its id)."""
    cur = await w.store.get_current(w.ns_id, wid)
    if cur is None:
        return 0
    events = await w.stored_events(wid, cur.run_id)
    first = events[0].workflow_execution_started_event_attributes.first_execution_run_id
    assert first == cur.run_id, f"{wid}: a second run {cur.run_id} (the first was {first})"
    return 1


async def op_start(w: World, wid: str) -> tuple[Any, Any]:
    req = svc.StartWorkflowExecutionRequest(namespace="default", workflow_id=wid, workflow_type="gapwf", task_queue=TQ,
                                            input=_payloads(w, ""), request_id="start-1")
    return (lambda: w.stub.StartWorkflowExecution(req)), (lambda: _runs(w, wid))


async def op_signal_with_start_new(w: World, wid: str) -> tuple[Any, Any]:
    req = _sws_request(w, wid, "sws-new")

    async def effect() -> int:
        n = await _runs(w, wid)
        signals = _of_type(await w.stored_events(wid), pb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED) if n else []
        assert len(signals) == n, f"{len(signals)} signals in {n} runs"
        return n

    return (lambda: w.stub.SignalWithStartWorkflowExecution(req)), effect


async def op_update(w: World, wid: str) -> tuple[Any, Any]:
    await _started(w, wid)
    req = svc.UpdateWorkflowExecutionRequest(
        namespace="default", workflow_execution=pb.WorkflowExecution(workflow_id=wid), timeout_ms=10_000,
        request=pb.UpdateRequest(update_id="upd-1", name="add", input=_payloads(w, 5)))

    async def call() -> Any:
        resp = await w.stub.UpdateWorkflowExecution(req)
        assert resp.HasField("success"), resp
        assert w.client.data_converter.from_payloads(resp.success)[0] == 5  # applied once: 0 + 5
        return resp

    async def effect() -> int:
        return len(_of_type(await w.stored_events(wid), pb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED))

    return call, effect


async def op_activity_completed(w: World, wid: str) -> tuple[Any, Any]:
    await _started(w, wid, "async")
    assert TOKENS is not None
    token = await asyncio.wait_for(TOKENS.get(), 10)
    req = svc.RespondActivityTaskCompletedRequest(task_token=token, result=_payloads(w, 7), identity="test",
                                                  namespace="default")

    async def effect() -> int:
        done = _of_type(await w.stored_events(wid), pb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED)
        assert not _of_type(await w.stored_events(wid), pb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT)
        return len(done)

    return (lambda: w.stub.RespondActivityTaskCompleted(req)), effect


async def op_cancel(w: World, wid: str) -> tuple[Any, Any]:
    await _started(w, wid)
    req = svc.RequestCancelWorkflowExecutionRequest(namespace="default", workflow_execution=pb.WorkflowExecution(
        workflow_id=wid), request_id="cancel-1", identity="test", reason="gap test")

    async def effect() -> int:
        return len(_of_type(await w.stored_events(wid), pb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED))

    return (lambda: w.stub.RequestCancelWorkflowExecution(req)), effect


async def op_terminate(w: World, wid: str) -> tuple[Any, Any]:
    await _started(w, wid)
    req = svc.TerminateWorkflowExecutionRequest(namespace="default", workflow_execution=pb.WorkflowExecution(
        workflow_id=wid), reason="gap test", identity="test")

    async def effect() -> int:
        return len(_of_type(await w.stored_events(wid), pb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED))

    return (lambda: w.stub.TerminateWorkflowExecution(req)), effect


async def op_reset(w: World, wid: str) -> tuple[Any, Any]:
    first = await _started(w, wid)
    point = _of_type(await w.stored_events(wid, first), pb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED)[0].event_id
    req = svc.ResetWorkflowExecutionRequest(namespace="default", workflow_execution=pb.WorkflowExecution(
        workflow_id=wid, run_id=first), reason="gap test", workflow_task_finish_event_id=point, request_id="reset-1")
    new_runs: set[str] = set()

    async def call() -> Any:
        resp = await w.stub.ResetWorkflowExecution(req)
        new_runs.add(resp.run_id)
        return resp

    async def effect() -> int:
        cur = await w.store.get_current(w.ns_id, wid)
        assert cur is not None
        old = await w.stored_events(wid, first)
        terminated = _of_type(old, pb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED)
        if cur.run_id == first:
            assert not terminated
            return 0
        assert len(new_runs) <= 1, f"every call must answer with the same new run: {new_runs}"
        assert not new_runs or new_runs == {cur.run_id}
        return len(terminated)

    return call, effect


OPERATIONS: dict[str, Callable[[World, str], Awaitable[tuple[Any, Any]]]] = {
    "signal": op_signal,
    "signal-with-start-running": op_signal_with_start_running,
    "start": op_start,
    "signal-with-start-new": op_signal_with_start_new,
    "update": op_update,
    "activity-completed": op_activity_completed,
    "cancel": op_cancel,
    "terminate": op_terminate,
    "reset": op_reset,
}


# ---------------------------------------------------------------------------------------------- tests
@pytest.mark.parametrize("op", list(OPERATIONS))
async def test_an_operation_on_a_shard_not_open_is_refused_and_its_retry_takes_effect_once(world: World, op: str) -> None:
    wid = f"gap-{op}"
    call, effect = await OPERATIONS[op](world, wid)
    before = await effect()
    assert before == 0
    await world.close_shard(wid)
    for attempt in range(3):  # the router's retries at the member that claimed the shard but has not opened it
        details = await _unavailable(call)
        assert "not owned by this process" in details, details
        assert await effect() == 0, f"attempt {attempt + 1}: refused, yet something was written"
    await world.open_shard(wid)
    await call()
    assert await effect() == 1
    await call_again_is_harmless(world, op, call)
    assert await effect() == 1


@pytest.mark.parametrize("op", list(OPERATIONS))
async def test_a_commit_that_finds_its_shard_gone_leaves_nothing_behind_for_the_retry(world: World, op: str) -> None:
    wid = f"lost-{op}"
    call, effect = await OPERATIONS[op](world, wid)
    happened = world.lose_shard_at_next_commit(wid)
    await _unavailable(call)
    assert happened, "the operation never reached its commit"
    assert await effect() == 0, "the failed commit wrote something"
    await call()  # the retry, with the same request id, must take effect (not be answered from memory)
    assert await effect() == 1
    await call_again_is_harmless(world, op, call)
    assert await effect() == 1


async def call_again_is_harmless(world: World, op: str, call: Callable[[], Awaitable[Any]]) -> None:
    """One more retry of a call that took effect changes nothing.

    A run that closed meanwhile refuses it as such (terminated; or cancelled by the workflow code
    on the cancel request), and an activity attempt already completed is not found.
    """
    try:
        await call()
    except grpc.aio.AioRpcError as e:
        assert (op, e.code().name) in {("terminate", "FAILED_PRECONDITION"), ("cancel", "FAILED_PRECONDITION"),
                                     ("activity-completed", "NOT_FOUND")}, \
            f"{op}: {e.code().name} {e.details()}"


async def test_the_workflow_sees_a_signal_acknowledged_around_a_shard_gap_exactly_once(world: World) -> None:
    """End to end: a signal refused in the gap, retried until acknowledged, is delivered to the workflow once."""
    wid = "gap-e2e"
    await _started(world, wid)
    await world.close_shard(wid)
    req = svc.SignalWorkflowExecutionRequest(namespace="default", workflow_execution=pb.WorkflowExecution(workflow_id=wid),
                                             signal_name="go", input=_payloads(world, "once"), request_id="e2e-1")

    async def reopen_soon() -> None:
        await asyncio.sleep(0.3)
        await world.open_shard(wid)

    reopen = asyncio.ensure_future(reopen_soon())
    refused = 0
    while True:  # a client (or a router) retrying with the same request id
        try:
            await world.stub.SignalWorkflowExecution(req)
            break
        except grpc.aio.AioRpcError as e:
            assert e.code() == grpc.StatusCode.UNAVAILABLE
            refused += 1
            await asyncio.sleep(0.05)
    await reopen
    assert refused >= 2
    await world.client.get_workflow_handle(wid).signal(GapWf.finish)
    result = await asyncio.wait_for(world.client.get_workflow_handle(wid).result(), 20)
    assert result["signals"] == ["once"]


async def test_a_worker_resends_an_activity_outcome_refused_while_the_shard_moves(world: World) -> None:
    """The worker's completion is refused (UNAVAILABLE) while the shard is between owners; it is re-sent, not dropped."""
    wid = "gap-resend"
    await _started(world, wid, "gated")
    for _ in range(200):
        if world.engine.outstanding_tasks:
            break  # the attempt is with the worker
        await asyncio.sleep(0.02)
    await world.close_shard(wid)
    assert GATE is not None
    GATE.set()
    await asyncio.sleep(0.5)  # the worker's first answers are refused meanwhile
    await world.open_shard(wid)
    await world.client.get_workflow_handle(wid).signal(GapWf.finish)
    result = await asyncio.wait_for(world.client.get_workflow_handle(wid).result(), 20)
    assert result["activity"] == 11
    events = await world.stored_events(wid)
    done = _of_type(events, pb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED)
    started = _of_type(events, pb.EVENT_TYPE_ACTIVITY_TASK_STARTED)
    assert len(done) == 1 and [e.activity_task_started_event_attributes.attempt for e in started] == [1]


async def test_a_backlog_write_for_a_shard_that_moved_drops_the_task_quietly(world: World) -> None:
    """Matching's background persist of a task whose shard is gone (or fenced) neither raises nor keeps the task."""
    from spindle.controlplane.matching import KIND_WORKFLOW, TaskRef

    ctx = world.engine.context
    wid = "gap-backlog"
    sid = world.shard_of(wid)
    q = world.engine.matching.queue(world.ns_id, "nobody-polls", KIND_WORKFLOW)
    # the shard is not served here
    await world.close_shard(wid)
    ref = TaskRef(KIND_WORKFLOW, world.ns_id, wid, "run-1", 2, 1, ("t", sid, 1))
    q.push(ref)
    await ctx.backlog.persist(ref, q)
    assert ref not in q.tasks and ref.source == ("t", sid, 1)
    # the shard is served here, but another process took it meanwhile: the write is fenced
    await world.open_shard(wid)
    await world.store.acquire_shard(sid, "someone-else")
    lost: list[int] = []
    world.engine.shard_lost_hook = lost.append
    ref2 = TaskRef(KIND_WORKFLOW, world.ns_id, wid, "run-1", 3, 1, ("t", sid, 2))
    q.push(ref2)
    await ctx.backlog.persist(ref2, q)
    assert ref2 not in q.tasks and lost == [sid]
    assert not await world.store.load_backlog(world.ns_id, "nobody-polls", KIND_WORKFLOW, 10)
