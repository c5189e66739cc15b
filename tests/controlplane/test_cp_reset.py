"""Reset (ResetWorkflowExecution, ``WorkflowHandle.reset``) on both stores: fixing a bad deploy, signals
after the point, continued-as-new chains, bad event ids, idempotency and the replay of the reset run."""

from __future__ import annotations

import asyncio
import uuid

from collections.abc import AsyncIterator
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from spanner_emulator import SpannerTestInstance
from waiting import until

from spindle import activity, workflow
from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.client import Client, ResetType, WorkflowExecutionStatus
from spindle.controlplane.config import ServerConfig
from spindle.controlplane.server import ControlPlane, serve
from spindle.exceptions import ApplicationError, RPCError, WorkflowFailureError
from spindle.testing import Replayer
from spindle.worker import Worker

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(params=["sqlite", "spanner"])
async def client(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Client]:
    """A client of a gRPC control plane on a fresh store of each backend."""
    if request.param == "sqlite":
        from spindle.controlplane.store.sqlite import SqliteStore

        store: Any = SqliteStore(str(tmp_path / "reset.db"))
    else:
        inst: SpannerTestInstance = request.getfixturevalue("spanner_instance")
        from spindle.controlplane.store.spanner import SpannerStore

        store = SpannerStore(inst.project, inst.instance_id, inst.new_database_id(), client=inst.client)
    cp = ControlPlane(store, ServerConfig(num_shards=4))
    await cp.start()
    server, port = await serve(cp, "127.0.0.1", 0)
    c = await Client.connect(f"127.0.0.1:{port}")
    try:
        yield c
    finally:
        await c.close()
        await server.stop(grace=0.5)
        await cp.stop()


def tq() -> str:
    return f"reset-{uuid.uuid4().hex[:8]}"


CHARGES: list[int] = []


@activity.defn
async def charge(n: int) -> int:
    CHARGES.append(n)
    return n * 2


@workflow.defn(name="Order")
class OrderWithBug:
    @workflow.run
    async def run(self, n: int) -> str:
        paid = await workflow.execute_activity(charge, n, start_to_close_timeout=timedelta(seconds=10))
        raise ApplicationError(f"bug: cannot ship an order paid {paid}", non_retryable=True)


@workflow.defn(name="Order")
class OrderFixed:
    @workflow.run
    async def run(self, n: int) -> str:
        paid = await workflow.execute_activity(charge, n, start_to_close_timeout=timedelta(seconds=10))
        return f"shipped, paid {paid}"


@workflow.defn
class Collector:
    def __init__(self) -> None:
        self.got: list[str] = []

    @workflow.run
    async def run(self) -> list[str]:
        await workflow.wait_condition(lambda: "done" in self.got)
        return self.got

    @workflow.signal
    def add(self, item: str) -> None:
        self.got.append(item)

    @workflow.query
    def items(self) -> list[str]:
        return self.got


@workflow.defn
class Chain:
    def __init__(self) -> None:
        self.finish = False

    @workflow.run
    async def run(self, n: int) -> int:
        if n < 1:
            workflow.continue_as_new(n + 1)
        await workflow.wait_condition(lambda: self.finish)
        return n

    @workflow.signal
    def done(self) -> None:
        self.finish = True


async def raw_events(client: Client, wid: str, rid: str) -> list[pb.HistoryEvent]:
    events: list[pb.HistoryEvent] = []
    token = b""
    while True:
        resp = await client._history_page(pb.WorkflowExecution(workflow_id=wid, run_id=rid), token, wait=False)
        events.extend(resp.history.events)
        token = resp.next_page_token
        if not token:
            return events


def types(events: list[pb.HistoryEvent]) -> list[str]:
    return [pb.EventType.Name(e.event_type).removeprefix("EVENT_TYPE_") for e in events]


wait_for = partial(until, timeout=20.0)


# ---------------------------------------------------------------------- fixing a bad deploy
async def test_a_run_failed_by_a_bug_after_an_activity_is_reset_and_completes_with_fixed_code(client: Client) -> None:
    q = tq()
    CHARGES.clear()
    async with Worker(client, task_queue=q, workflows=[OrderWithBug], activities=[charge]):
        handle = await client.start_workflow("Order", 21, id="order-1", task_queue=q)
        with pytest.raises(WorkflowFailureError):
            await handle.result()
    assert CHARGES == [21]
    old_run = handle.result_run_id
    old = await raw_events(client, "order-1", old_run)
    assert types(old)[-1] == "WORKFLOW_EXECUTION_FAILED"
    completed = [e.event_id for e in old if e.event_type == pb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED]
    async with Worker(client, task_queue=q, workflows=[OrderFixed], activities=[charge]):
        new_run = await client.get_workflow_handle("order-1", run_id=old_run).reset(
            type=ResetType.LAST_WORKFLOW_TASK, reason="fix shipped in v2")
        assert new_run != old_run
        assert await client.get_workflow_handle("order-1").result() == "shipped, paid 42"
    # the activity before the point did not run again; the old run stays FAILED (it was closed)
    assert CHARGES == [21]
    assert (await client.get_workflow_handle("order-1", run_id=old_run).describe()).status \
        is WorkflowExecutionStatus.FAILED
    new = await raw_events(client, "order-1", new_run)
    point = completed[-1]
    # the copy up to the point's WorkflowTaskStarted, then the reset's failed task and a new task
    assert [e.SerializeToString() for e in new[:point - 1]] == [e.SerializeToString() for e in old[:point - 1]]
    failed = new[point - 1]
    assert failed.event_type == pb.EVENT_TYPE_WORKFLOW_TASK_FAILED
    assert failed.workflow_task_failed_event_attributes.cause == pb.WORKFLOW_TASK_FAILED_CAUSE_RESET_WORKFLOW
    assert "fix shipped in v2" in failed.workflow_task_failed_event_attributes.failure.message
    assert new[point].event_type == pb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED
    assert types(new)[-1] == "WORKFLOW_EXECUTION_COMPLETED"
    # the reset run's history replays with the fixed code (and not with the buggy one)
    hist = await client.get_workflow_handle("order-1", run_id=new_run).fetch_history()
    await Replayer(workflows=[OrderFixed]).replay_workflow(hist)


async def test_reset_to_the_first_workflow_task_runs_the_activities_again(client: Client) -> None:
    q = tq()
    CHARGES.clear()
    async with Worker(client, task_queue=q, workflows=[OrderWithBug], activities=[charge]):
        handle = await client.start_workflow("Order", 5, id="order-2", task_queue=q)
        with pytest.raises(WorkflowFailureError):
            await handle.result()
    async with Worker(client, task_queue=q, workflows=[OrderFixed], activities=[charge]):
        new_run = await handle.reset(type=ResetType.FIRST_WORKFLOW_TASK, reason="start over")
        assert await client.get_workflow_handle("order-2").result() == "shipped, paid 10"
    assert CHARGES == [5, 5]
    new = await raw_events(client, "order-2", new_run)
    assert types(new)[:5] == ["WORKFLOW_EXECUTION_STARTED", "WORKFLOW_TASK_SCHEDULED", "WORKFLOW_TASK_STARTED",
                              "WORKFLOW_TASK_FAILED", "WORKFLOW_TASK_SCHEDULED"]
    await Replayer(workflows=[OrderFixed]).replay_workflow(
        await client.get_workflow_handle("order-2", run_id=new_run).fetch_history())


# ---------------------------------------------------------------------- signals after the point
async def test_signals_after_the_point_arrive_once_and_the_old_run_is_terminated(client: Client) -> None:
    q = tq()
    async with Worker(client, task_queue=q, workflows=[Collector]):
        handle = await client.start_workflow(Collector.run, id="collect", task_queue=q)
        old_run = handle.result_run_id
        await handle.signal(Collector.add, "a")
        await wait_for(lambda: _has(handle, ["a"]))
        await handle.signal(Collector.add, "b")
        await wait_for(lambda: _has(handle, ["a", "b"]))
        old = await raw_events(client, "collect", old_run)
        first = next(e.event_id for e in old if e.event_type == pb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED)
        rid = "reset-req-1"
        new_run = await handle.reset(first, reason="replay the signals", request_id=rid)
        # a retry with the same request id returns the same run and changes nothing
        assert await handle.reset(first, reason="replay the signals", request_id=rid) == new_run
        new_handle = client.get_workflow_handle("collect")
        await new_handle.signal(Collector.add, "done")
        assert await new_handle.result() == ["a", "b", "done"]
    # the old run ended TERMINATED with the reason and the new run's id
    old = await raw_events(client, "collect", old_run)
    assert old[-1].event_type == pb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED
    reason = old[-1].workflow_execution_terminated_event_attributes.reason
    assert "replay the signals" in reason and new_run in reason
    new = await raw_events(client, "collect", new_run)
    signals = [e.workflow_execution_signaled_event_attributes.input for e in new
               if e.event_type == pb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED]
    assert len(signals) == 3  # a and b once each (re-applied), then done
    await Replayer(workflows=[Collector]).replay_workflow(
        await client.get_workflow_handle("collect", run_id=new_run).fetch_history())


async def test_reset_without_reapplying_signals(client: Client) -> None:
    q = tq()
    async with Worker(client, task_queue=q, workflows=[Collector]):
        handle = await client.start_workflow(Collector.run, id="collect-2", task_queue=q)
        await handle.signal(Collector.add, "a")
        await wait_for(lambda: _has(handle, ["a"]))
        await handle.reset(type=ResetType.FIRST_WORKFLOW_TASK, reason="drop them", reapply_signals=False)
        new_handle = client.get_workflow_handle("collect-2")
        await new_handle.signal(Collector.add, "done")
        assert await new_handle.result() == ["done"]


async def _has(handle: Any, items: list[str]) -> bool:
    return bool(await handle.query(Collector.items) == items)


# ---------------------------------------------------------------------- continued-as-new chains
async def test_reset_of_a_run_of_a_continued_as_new_chain(client: Client) -> None:
    q = tq()
    async with Worker(client, task_queue=q, workflows=[Chain]):
        handle = await client.start_workflow(Chain.run, 0, id="chain", task_queue=q)
        first_run = handle.result_run_id

        async def second_running() -> bool:
            d = await client.get_workflow_handle("chain").describe()
            return d.run_id != first_run and d.status is WorkflowExecutionStatus.RUNNING

        await wait_for(second_running)
        second_run = (await client.get_workflow_handle("chain").describe()).run_id
        # reset the first run of the chain (closed, continued-as-new) to its first workflow task
        new_run = await client.get_workflow_handle("chain", run_id=first_run).reset(
            type=ResetType.FIRST_WORKFLOW_TASK, reason="redo the chain")
        # the running later run of the chain was terminated; the new run continued from run 1's point
        assert (await client.get_workflow_handle("chain", run_id=second_run).describe()).status \
            is WorkflowExecutionStatus.TERMINATED
        assert (await client.get_workflow_handle("chain", run_id=first_run).describe()).status \
            is WorkflowExecutionStatus.CONTINUED_AS_NEW

        async def continued() -> bool:
            d = await client.get_workflow_handle("chain", run_id=new_run).describe()
            return d.status is WorkflowExecutionStatus.CONTINUED_AS_NEW

        await wait_for(continued)
        await client.get_workflow_handle("chain").signal(Chain.done)
        assert await client.get_workflow_handle("chain").result() == 1
    new = await raw_events(client, "chain", new_run)
    assert types(new)[-1] == "WORKFLOW_EXECUTION_CONTINUED_AS_NEW"
    assert new[0].workflow_execution_started_event_attributes.first_execution_run_id == first_run
    await Replayer(workflows=[Chain]).replay_workflow(
        await client.get_workflow_handle("chain", run_id=new_run).fetch_history())


# ---------------------------------------------------------------------- bad input
async def test_bad_event_ids_get_invalid_argument_naming_the_allowed_events_and_change_nothing(client: Client) -> None:
    q = tq()
    async with Worker(client, task_queue=q, workflows=[Collector]):
        handle = await client.start_workflow(Collector.run, id="collect-bad", task_queue=q)
        await handle.signal(Collector.add, "a")
        await wait_for(lambda: _has(handle, ["a"]))
    run = handle.result_run_id
    before = await raw_events(client, "collect-bad", run)
    completed = [e.event_id for e in before if e.event_type == pb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED]
    started = next(e.event_id for e in before if e.event_type == pb.EVENT_TYPE_WORKFLOW_TASK_STARTED)
    for bad in (started, len(before) + 50):
        with pytest.raises(RPCError) as err:
            await handle.reset(bad, reason="no")
        assert err.value.status == "INVALID_ARGUMENT", err.value
        msg = str(err.value)
        assert "workflow_task_finish_event_id" in msg and "WorkflowTaskCompleted" in msg, msg
        assert ", ".join(map(str, completed)) in msg, msg
        if bad == started:
            assert f"event {started} is EVENT_TYPE_WORKFLOW_TASK_STARTED" in msg, msg
    with pytest.raises(ValueError):
        await handle.reset(0, reason="no")
    # the wire call with no event id
    with pytest.raises(RPCError) as err:
        await client._rpc("ResetWorkflowExecution", svc.ResetWorkflowExecutionRequest(
            namespace="default", workflow_execution=pb.WorkflowExecution(workflow_id="collect-bad")))
    assert err.value.status == "INVALID_ARGUMENT" and "workflow_task_finish_event_id" in str(err.value)
    # unknown run / workflow
    with pytest.raises(Exception) as nf:
        await client.get_workflow_handle("no-such-workflow").reset(4, reason="no")
    assert "not found" in str(nf.value).lower()
    # nothing changed: the same run is current and running, with the same history
    d = await client.get_workflow_handle("collect-bad").describe()
    assert d.run_id == run and d.status is WorkflowExecutionStatus.RUNNING
    assert [e.SerializeToString() for e in await raw_events(client, "collect-bad", run)] == \
        [e.SerializeToString() for e in before]


# ---------------------------------------------------------------------- what was pending at the point
RELEASE: dict[str, asyncio.Event] = {}
STARTS: list[int] = []


@activity.defn
async def slow(key: str) -> str:
    STARTS.append(activity.info().attempt)
    await RELEASE[key].wait()
    return f"slow {key}"


@workflow.defn
class PendingAtPoint:
    def __init__(self) -> None:
        self.poked = 0

    @workflow.run
    async def run(self, key: str, sleep_ms: int) -> str:
        if sleep_ms:
            await workflow.sleep(timedelta(milliseconds=sleep_ms))
            return f"slept, poked {self.poked}"
        out = await workflow.execute_activity(slow, key, start_to_close_timeout=timedelta(seconds=30))
        return f"{out}, poked {self.poked}"

    @workflow.signal
    def poke(self) -> None:
        self.poked += 1


async def _last_completed(client: Client, wid: str, rid: str, count: int) -> int:
    ids: list[int] = []

    async def enough() -> bool:
        nonlocal ids
        ids = [e.event_id for e in await raw_events(client, wid, rid)
               if e.event_type == pb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED]
        return len(ids) >= count

    await wait_for(enough)
    return ids[-1]


async def test_a_timer_pending_at_the_point_fires_in_the_new_run(client: Client) -> None:
    q = tq()
    async with Worker(client, task_queue=q, workflows=[PendingAtPoint], activities=[slow]):
        handle = await client.start_workflow(PendingAtPoint.run, "t", 1500, id="timer-at-point", task_queue=q)
        await handle.signal(PendingAtPoint.poke)
        point = await _last_completed(client, "timer-at-point", handle.result_run_id, 2)
        new_run = await handle.reset(point, reason="keep the timer")
        result = await client.get_workflow_handle("timer-at-point").result()
    assert result == "slept, poked 1"
    new = await raw_events(client, "timer-at-point", new_run)
    assert types(new).count("TIMER_STARTED") == 1 and types(new).count("TIMER_FIRED") == 1
    await Replayer(workflows=[PendingAtPoint]).replay_workflow(
        await client.get_workflow_handle("timer-at-point", run_id=new_run).fetch_history())


async def test_an_activity_pending_at_the_point_runs_again_in_the_new_run(client: Client) -> None:
    q = tq()
    key = uuid.uuid4().hex
    RELEASE[key] = asyncio.Event()
    STARTS.clear()
    async with Worker(client, task_queue=q, workflows=[PendingAtPoint], activities=[slow]):
        handle = await client.start_workflow(PendingAtPoint.run, key, 0, id="act-at-point", task_queue=q)

        async def started() -> bool:
            return len(STARTS) >= 1

        await wait_for(started)
        await handle.signal(PendingAtPoint.poke)
        point = await _last_completed(client, "act-at-point", handle.result_run_id, 2)
        new_run = await handle.reset(point, reason="run it again")

        async def started_again() -> bool:
            return len(STARTS) >= 2

        await wait_for(started_again)
        RELEASE[key].set()
        result = await client.get_workflow_handle("act-at-point").result()
    assert result == f"slow {key}, poked 1" and STARTS == [1, 1]
    new = await raw_events(client, "act-at-point", new_run)
    assert types(new).count("ACTIVITY_TASK_SCHEDULED") == 1 and types(new).count("ACTIVITY_TASK_COMPLETED") == 1
    await Replayer(workflows=[PendingAtPoint]).replay_workflow(
        await client.get_workflow_handle("act-at-point", run_id=new_run).fetch_history())
