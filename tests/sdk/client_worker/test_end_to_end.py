"""Client + Worker end to end, through the embedded control plane on a SQLite file."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import uuid

from collections.abc import AsyncIterator
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from waiting import eventually as _eventually

from spindle import activity, workflow
from spindle.api import service_pb2 as svc
from spindle.client import Client, History, WorkflowExecutionStatus
from spindle.common import RetryPolicy
from spindle.converter import ZlibCodec
from spindle.converter._payload_visitor import collect_payloads
from spindle.exceptions import (
    ActivityError,
    ApplicationError,
    CancelledError,
    ChildWorkflowError,
    QueryFailedError,
    TerminatedError,
    UpdateFailedError,
    WorkflowAlreadyStartedError,
    WorkflowFailureError,
)
from spindle.worker import Worker

FAST = timedelta(seconds=10)
QUICK_RETRY = RetryPolicy(initial_interval=timedelta(milliseconds=20), maximum_attempts=5)


@dataclasses.dataclass
class Order:
    id: str
    amount: int


# ---------------------------------------------------------------------- activities


@activity.defn
async def reserve(order: Order) -> str:
    return f"reserved-{order.id}"


@activity.defn
def charge(order: Order) -> int:  # sync: runs in the thread pool
    assert threading.current_thread() is not threading.main_thread()
    return order.amount * 100


@activity.defn
async def ship(order: Order) -> str:
    return f"shipped-{order.id}"


@activity.defn
async def refund(order: Order) -> str:
    return f"refunded-{order.id}"


@activity.defn
async def flaky(succeed_on: int) -> int:
    attempt = activity.info().attempt
    if attempt < succeed_on:
        raise RuntimeError(f"attempt {attempt} failed")
    return attempt


@activity.defn
async def declines() -> None:
    raise ApplicationError("card declined", "detail", type="Declined", non_retryable=True)


TOKENS: dict[str, bytes] = {}


@activity.defn
async def completes_later(key: str) -> str:
    TOKENS[key] = activity.info().task_token
    activity.raise_complete_async()


# ---------------------------------------------------------------------- workflows


@workflow.defn
class OrderWorkflow:
    def __init__(self) -> None:
        self.shipped = False
        self.stage = "new"

    @workflow.run
    async def run(self, order: Order) -> list[Any]:
        opts: dict[str, Any] = dict(start_to_close_timeout=FAST, retry_policy=QUICK_RETRY)
        self.stage = "reserving"
        r = await workflow.execute_activity(reserve, order, **opts)
        c = await workflow.execute_activity(charge, order, **opts)
        await workflow.sleep(timedelta(milliseconds=50))
        self.stage = "waiting"
        await workflow.wait_condition(lambda: self.shipped)
        s = await workflow.execute_activity(ship, order, **opts)
        self.stage = "done"
        return [r, c, s]

    @workflow.signal
    def mark_shipped(self) -> None:
        self.shipped = True

    @workflow.query
    def status(self) -> str:
        return self.stage

    @workflow.update
    async def set_stage(self, stage: str) -> str:
        old, self.stage = self.stage, stage
        return old

    @set_stage.validator
    def _check_stage(self, stage: str) -> None:
        if not stage:
            raise ValueError("stage must not be empty")


@workflow.defn
class CompensatingWorkflow:
    @workflow.run
    async def run(self, order: Order) -> str:
        await workflow.execute_activity(reserve, order, start_to_close_timeout=FAST)
        try:
            await workflow.wait_condition(lambda: False)
        except asyncio.CancelledError:
            await workflow.execute_activity(refund, order, start_to_close_timeout=FAST)
            raise
        return "unreachable"


@workflow.defn
class CounterWorkflow:
    @workflow.run
    async def run(self, n: int) -> int:
        if n < 3:
            workflow.continue_as_new(n + 1)
        return n


@workflow.defn
class ChildWorkflow:
    @workflow.run
    async def run(self, order: Order) -> str:
        return await workflow.execute_activity(ship, order, start_to_close_timeout=FAST)


@workflow.defn
class ParentWorkflow:
    @workflow.run
    async def run(self, order: Order) -> str:
        child = await workflow.execute_child_workflow(ChildWorkflow.run, order, id=f"{workflow.info().workflow_id}-c")
        return "parent got " + child


@workflow.defn
class RetryWorkflow:
    @workflow.run
    async def run(self, succeed_on: int) -> int:
        return await workflow.execute_activity(flaky, succeed_on, start_to_close_timeout=FAST,
                                               retry_policy=QUICK_RETRY)


@workflow.defn
class DeclineWorkflow:
    @workflow.run
    async def run(self) -> None:
        await workflow.execute_activity(declines, start_to_close_timeout=FAST)


@workflow.defn
class AsyncCompletionWorkflow:
    @workflow.run
    async def run(self, key: str) -> str:
        return await workflow.execute_activity(completes_later, key, start_to_close_timeout=FAST)


@workflow.defn
class WaitsWorkflow:
    @workflow.run
    async def run(self) -> None:
        await workflow.wait_condition(lambda: False)


@workflow.defn
class StepsWorkflow:
    @workflow.run
    async def run(self, name: str) -> str:
        out = name
        for _ in range(3):
            out = await workflow.execute_activity(reserve, Order(out, 1), start_to_close_timeout=FAST)
            await workflow.sleep(timedelta(milliseconds=10))
        return out


ALL_WORKFLOWS = [OrderWorkflow, CompensatingWorkflow, CounterWorkflow, ChildWorkflow, ParentWorkflow, RetryWorkflow,
                 DeclineWorkflow, AsyncCompletionWorkflow, WaitsWorkflow, StepsWorkflow]
ALL_ACTIVITIES = [reserve, charge, ship, refund, flaky, declines, completes_later]


# ---------------------------------------------------------------------- fixtures


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
    return Worker(client, task_queue=tq, workflows=ALL_WORKFLOWS, activities=ALL_ACTIVITIES,
                  graceful_shutdown_timeout=timedelta(seconds=1), **kw)


eventually = partial(_eventually, timeout=5.0, interval=0.02)


# ---------------------------------------------------------------------- tests


async def test_activities_timer_signal_query_update(client: Client, tq: str) -> None:
    async with worker(client, tq):
        h = await client.start_workflow(OrderWorkflow.run, Order("o1", 7), id="order-1", task_queue=tq)

        async def waiting() -> None:
            assert await h.query(OrderWorkflow.status) == "waiting"

        await eventually(waiting)
        assert await h.update(OrderWorkflow.set_stage, "still-waiting") == "waiting"
        with pytest.raises(UpdateFailedError):
            await h.update(OrderWorkflow.set_stage, "")
        with pytest.raises(QueryFailedError):
            await h.query("no_such_query")
        await h.signal(OrderWorkflow.mark_shipped)
        assert await h.result() == ["reserved-o1", 700, "shipped-o1"]
        desc = await h.describe()
        assert desc.status is WorkflowExecutionStatus.COMPLETED
        assert desc.workflow_type == "OrderWorkflow"
        assert desc.task_queue == tq
        with pytest.raises(WorkflowAlreadyStartedError):
            from spindle.common import WorkflowIDReusePolicy

            await client.start_workflow(OrderWorkflow.run, Order("o1", 7), id="order-1", task_queue=tq,
                                        id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE)


async def test_cancel_runs_compensation(client: Client, tq: str) -> None:
    async with worker(client, tq):
        h = await client.start_workflow(CompensatingWorkflow.run, Order("o2", 1), id="comp", task_queue=tq)

        async def reserved() -> None:
            hist = await h.fetch_history()
            assert any(e.event_type == "ActivityTaskCompleted" for e in hist.events)

        await eventually(reserved)
        await h.cancel()
        with pytest.raises(WorkflowFailureError) as ei:
            await h.result()
        assert isinstance(ei.value.cause, CancelledError)
        hist = await h.fetch_history()
        scheduled = [e.attributes["activity_type"] for e in hist.events if e.event_type == "ActivityTaskScheduled"]
        assert scheduled == ["reserve", "refund"]
        assert (await h.describe()).status is WorkflowExecutionStatus.CANCELED


async def test_terminate(client: Client, tq: str) -> None:
    async with worker(client, tq):
        h = await client.start_workflow(WaitsWorkflow.run, id="term", task_queue=tq)
        await h.terminate("ops said so")
        with pytest.raises(WorkflowFailureError) as ei:
            await h.result()
        assert isinstance(ei.value.cause, TerminatedError)
        assert ei.value.cause.reason == "ops said so"
        assert (await h.describe()).status is WorkflowExecutionStatus.TERMINATED


async def test_continue_as_new_then_result(client: Client, tq: str) -> None:
    async with worker(client, tq):
        h = await client.start_workflow(CounterWorkflow.run, 0, id="counter", task_queue=tq)
        assert await h.result() == 3
        first = client.get_workflow_handle("counter", run_id=h.run_id)
        assert (await first.describe()).status is WorkflowExecutionStatus.CONTINUED_AS_NEW


async def test_child_workflow(client: Client, tq: str) -> None:
    async with worker(client, tq):
        assert await client.execute_workflow(ParentWorkflow.run, Order("o3", 1), id="parent",
                                             task_queue=tq) == "parent got shipped-o3"


async def test_activity_retry_then_success(client: Client, tq: str) -> None:
    async with worker(client, tq):
        assert await client.execute_workflow(RetryWorkflow.run, 3, id="retry", task_queue=tq) == 3


async def test_non_retryable_failure_chain(client: Client, tq: str) -> None:
    async with worker(client, tq):
        with pytest.raises(WorkflowFailureError) as ei:
            await client.execute_workflow(DeclineWorkflow.run, id="decline", task_queue=tq)
    act = ei.value.cause
    # the workflow did not catch the ActivityError: it failed the workflow (as an ApplicationError wrapper
    # or directly); either way the chain reaches the activity's ApplicationError
    chain = []
    e: BaseException | None = act
    while e is not None:
        chain.append(e)
        e = getattr(e, "cause", None)
    assert any(isinstance(x, ActivityError) for x in chain)
    root = chain[-1]
    assert isinstance(root, ApplicationError)
    assert root.type == "Declined" and root.message == "card declined"
    assert list(root.details) == ["detail"]


async def test_unregistered_workflow_type_fails_task_and_worker_keeps_running(client: Client, tq: str) -> None:
    async with worker(client, tq):
        h = await client.start_workflow("NoSuchWorkflow", id="unregistered", task_queue=tq)

        async def failed_task() -> History:
            hist = await h.fetch_history()
            failed = [e for e in hist.events if e.event_type == "WorkflowTaskFailed"]
            assert failed
            return hist

        hist = await eventually(failed_task)
        attrs = next(e for e in hist.events if e.event_type == "WorkflowTaskFailed").attributes
        assert attrs["cause"] == "WORKFLOW_TASK_FAILED_CAUSE_UNREGISTERED_WORKFLOW_TYPE"
        assert "NoSuchWorkflow" in attrs["failure"]["message"]
        assert await client.execute_workflow(RetryWorkflow.run, 1, id="after", task_queue=tq) == 1
        await h.terminate("cleanup")


async def test_async_activity_completion(client: Client, tq: str) -> None:
    key = uuid.uuid4().hex
    async with worker(client, tq):
        h = await client.start_workflow(AsyncCompletionWorkflow.run, key, id="async-complete", task_queue=tq)

        async def token() -> bytes:
            assert key in TOKENS
            return TOKENS[key]

        handle = client.get_async_activity_handle(await eventually(token))
        await handle.heartbeat("progress")
        await handle.complete("done later")
        assert await h.result() == "done later"


async def test_fetch_history_json_round_trip(client: Client, tq: str) -> None:
    async with worker(client, tq) as w:
        h = await client.start_workflow(StepsWorkflow.run, "x", id="steps", task_queue=tq)
        assert await h.result() == "reserved-reserved-reserved-x"
        # one replay (the first task), every later task resumed from the sticky cache
        assert w.stats["replays"] == 1 and w.stats["cache_hits"] >= 6
    hist = await h.fetch_history()
    assert [e.event_id for e in hist.events] == list(range(1, len(hist.events) + 1))
    assert hist.events[0].event_type == "WorkflowExecutionStarted"
    assert hist.events[-1].event_type == "WorkflowExecutionCompleted"
    back = History.from_json(hist.to_json())
    assert back == hist
    assert back.workflow_id == "steps" and back.run_id == h.run_id
    assert len(back.to_proto_events()) == len(hist.events)


async def test_sticky_cache_of_one_with_interleaved_workflows(client: Client, tq: str) -> None:
    async with worker(client, tq, max_cached_workflows=1) as w:
        handles = [await client.start_workflow(StepsWorkflow.run, f"w{i}", id=f"steps-{i}", task_queue=tq)
                   for i in range(3)]
        results = await asyncio.gather(*(h.result() for h in handles))
        assert results == [f"reserved-reserved-reserved-w{i}" for i in range(3)]
        assert len(w.cached_run_ids) <= 1


async def test_codec_means_server_stores_only_encoded_bytes(client: Client, tq: str) -> None:
    codec_client = Client(client.stub, namespace=client.namespace, codecs=[ZlibCodec(min_size=0)])
    async with worker(codec_client, tq):
        h = await codec_client.start_workflow(StepsWorkflow.run, "secret", id="codec", task_queue=tq)
        assert await h.result() == "reserved-reserved-reserved-secret"
    raw = await client.stub.GetWorkflowExecutionHistory(svc.GetWorkflowExecutionHistoryRequest(
        namespace=client.namespace, execution={"workflow_id": "codec", "run_id": h.run_id}))
    payloads = [p for e in raw.history.events for p in collect_payloads(e)]
    assert payloads
    assert {p.metadata["encoding"] for p in payloads} == {b"binary/zlib"}
    hist = await h.fetch_history()  # decoded by the codec client
    assert b"secret" not in raw.SerializeToString()
    assert hist.events[0].attributes["input"]


async def test_list_and_count(client: Client, tq: str) -> None:
    async with worker(client, tq):
        for i in range(2):
            await client.execute_workflow(RetryWorkflow.run, 1, id=f"lc-{i}", task_queue=tq)

    async def counted() -> None:
        assert await client.count_workflows("WorkflowType = 'RetryWorkflow'") == 2

    await eventually(counted)
    ids = sorted([wf.id async for wf in client.list_workflows("WorkflowType = 'RetryWorkflow'")])
    assert ids == ["lc-0", "lc-1"]


async def test_child_failure_is_child_workflow_error(client: Client, tq: str) -> None:
    @workflow.defn(name="FailingChild")
    async def failing_child() -> None:
        raise ApplicationError("child broke", non_retryable=True)

    @workflow.defn(name="CatchingParent")
    async def catching_parent() -> str:
        try:
            await workflow.execute_child_workflow(failing_child, id=workflow.info().workflow_id + "-child")
        except ChildWorkflowError as e:
            return f"caught {type(e.cause).__name__}: {getattr(e.cause, 'message', '')}"
        return "not caught"

    async with Worker(client, task_queue=tq, workflows=[failing_child, catching_parent]):
        assert await client.execute_workflow(catching_parent, id="catcher", task_queue=tq) == \
            "caught ApplicationError: child broke"


@activity.defn
async def resumes(total: int) -> list[Any]:
    info = activity.info()
    start = info.heartbeat_details[0] if info.heartbeat_details else 0
    for i in range(start, total):
        activity.heartbeat(i + 1)
        if info.attempt == 1 and i == 2:
            raise RuntimeError("crash mid-way")
    return [info.attempt, start]


@activity.defn
async def waits_for_cancel() -> str:
    while True:
        activity.heartbeat()
        await asyncio.sleep(0.02)


@workflow.defn
class HeartbeatWorkflow:
    @workflow.run
    async def run(self) -> list[Any]:
        return await workflow.execute_activity(resumes, 5, start_to_close_timeout=FAST,
                                               heartbeat_timeout=timedelta(seconds=5), retry_policy=QUICK_RETRY)


@workflow.defn
class CancelActivityWorkflow:
    @workflow.run
    async def run(self) -> str:
        handle = workflow.start_activity(waits_for_cancel, start_to_close_timeout=FAST,
                                         heartbeat_timeout=timedelta(seconds=1))
        await workflow.sleep(timedelta(milliseconds=200))
        handle.cancel()
        try:
            await handle
            outcome = "activity completed"
        except ActivityError as e:
            outcome = f"activity ended: {type(e.cause).__name__}"
        except asyncio.CancelledError:
            outcome = "activity ended: CancelledError"
        # Stay open long enough for the worker to see the cancel on a heartbeat and report it:
        # heartbeats are throttled to 0.8 x the heartbeat timeout, so that can take ~1 s.
        await workflow.sleep(timedelta(seconds=3))
        return outcome


async def test_retry_resumes_from_heartbeat_details(client: Client, tq: str) -> None:
    async with Worker(client, task_queue=tq, workflows=[HeartbeatWorkflow], activities=[resumes]):
        # attempt 1 heartbeated 1, 2, 3 then failed; attempt 2 starts from the last details
        assert await client.execute_workflow(HeartbeatWorkflow.run, id="hb", task_queue=tq) == [2, 3]


async def test_workflow_cancels_a_running_activity(client: Client, tq: str) -> None:
    async with Worker(client, task_queue=tq, workflows=[CancelActivityWorkflow], activities=[waits_for_cancel]):
        result = await client.execute_workflow(CancelActivityWorkflow.run, id="cancel-act", task_queue=tq)
    assert result == "activity ended: CancelledError"
    hist = await client.get_workflow_handle("cancel-act").fetch_history()
    assert any(e.event_type == "ActivityTaskCanceled" for e in hist.events)


async def test_namespaces_and_search_attributes(client: Client, tq: str) -> None:
    ns = await client.create_namespace("shop", retention=timedelta(days=3), description="orders",
                                       search_attributes={"CustomerId": "Keyword"})
    assert ns.name == "shop" and ns.retention == timedelta(days=3)
    assert ns.search_attributes == {"CustomerId": "Keyword"}
    from spindle.exceptions import NamespaceNotFoundError, RPCError

    with pytest.raises(RPCError) as ei:
        await client.create_namespace("shop")
    assert ei.value.status == "ALREADY_EXISTS"
    with pytest.raises(NamespaceNotFoundError):
        await client.describe_namespace("nope")
    updated = await client.update_namespace("shop", description="all orders")
    assert updated.description == "all orders" and updated.retention == timedelta(days=3)
    assert "shop" in [n.name for n in await client.list_namespaces()]

    shop = Client(client.stub, namespace="shop")
    await shop.add_search_attributes({"Tier": "Int"})
    assert (await shop.describe_namespace()).search_attributes == {"CustomerId": "Keyword", "Tier": "Int"}
    async with Worker(shop, task_queue=tq, workflows=[WaitsWorkflow]):
        h = await shop.start_workflow(WaitsWorkflow.run, id="sa", task_queue=tq, memo={"note": "hi"},
                                      search_attributes={"CustomerId": "c-42", "Tier": 2})
        desc = await h.describe()
        assert desc.memo == {"note": "hi"}
        assert desc.search_attributes["CustomerId"] == "c-42"

        async def found() -> None:
            assert [w.id async for w in shop.list_workflows("CustomerId = 'c-42'")] == ["sa"]

        await eventually(found)
        with pytest.raises(RPCError) as ei:
            await shop.delete_namespace("shop")
        assert ei.value.status == "FAILED_PRECONDITION"
        assert await shop.delete_namespace("shop", force=True) == 1


async def test_signal_with_start_and_worker_restart(client: Client, tq: str) -> None:
    # a worker that stopped (its long polls cancelled) must not swallow later tasks
    async with worker(client, tq):
        pass
    h = await client.start_workflow(OrderWorkflow.run, Order("o9", 1), id="sws", task_queue=tq,
                                    start_signal=OrderWorkflow.mark_shipped)
    h2 = await client.start_workflow(OrderWorkflow.run, Order("o9", 1), id="sws", task_queue=tq,
                                     start_signal="mark_shipped")
    assert h2.run_id == h.run_id  # signal-with-start reuses the running execution
    async with worker(client, tq):
        assert await asyncio.wait_for(h.result(), 5) == ["reserved-o9", 100, "shipped-o9"]
    hist = await h.fetch_history()
    assert len([e for e in hist.events if e.event_type == "WorkflowExecutionSignaled"]) == 2


def test_public_exports_resolve() -> None:
    import spindle

    for name in spindle.__all__:
        assert getattr(spindle, name) is not None, name
