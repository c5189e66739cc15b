"""The two seed scenarios, as the examples implement them: success and failure paths."""

from __future__ import annotations

import asyncio
import sys

from datetime import timedelta
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))

import order_fulfilment as of  # noqa: E402
import payment as pay  # noqa: E402

from spindle import activity  # noqa: E402
from spindle._workflow.defn import WorkflowDefinition  # noqa: E402
from spindle._workflow.replay import replay  # noqa: E402
from spindle.exceptions import ApplicationError, WorkflowFailureError  # noqa: E402
from spindle.testing import WorkflowEnvironment  # noqa: E402
from spindle.worker import Worker


async def _replays(defn: object, handle: object) -> None:
    hist = await handle.fetch_history()  # type: ignore[attr-defined]
    replay(WorkflowDefinition.from_target(defn), hist.to_proto_events(), workflow_id=hist.workflow_id,
           run_id=hist.run_id)


async def test_order_ships_after_signal() -> None:
    async with await WorkflowEnvironment.start_time_skipping() as env:
        async with Worker(env.client, task_queue=of.TASK_QUEUE, workflows=of.WORKFLOWS, activities=of.ACTIVITIES):
            h = await env.client.start_workflow(of.OrderWorkflow.run, of.Order("o1", "SKU", 1, 100), id="o1",
                                                task_queue=of.TASK_QUEUE)
            await env.sleep(timedelta(days=3))
            assert await h.query(of.OrderWorkflow.status) == "awaiting shipment"
            await h.signal(of.OrderWorkflow.mark_shipped, "TRK-9")
            result = await h.result()
    assert result == of.OrderResult("o1", "shipped", "ch_o1", tracking="TRK-9")
    await _replays(of.OrderWorkflow, h)


async def test_order_opens_support_case_after_14_days() -> None:
    async with await WorkflowEnvironment.start_time_skipping() as env:
        async with Worker(env.client, task_queue=of.TASK_QUEUE, workflows=of.WORKFLOWS, activities=of.ACTIVITIES):
            start = env.now()
            h = await env.client.start_workflow(of.OrderWorkflow.run, of.Order("o2", "SKU", 1, 100), id="o2",
                                                task_queue=of.TASK_QUEUE)
            result = await h.result()  # the 14-day wait is skipped
            waited = env.now() - start
    assert result.status == "not shipped" and result.support_case == "case-o2"
    assert timedelta(days=14) <= waited < timedelta(days=14, minutes=1)
    await _replays(of.OrderWorkflow, h)


async def test_order_out_of_stock_refunds_and_fails() -> None:
    async with await WorkflowEnvironment.start_time_skipping() as env:
        async with Worker(env.client, task_queue=of.TASK_QUEUE, workflows=of.WORKFLOWS, activities=of.ACTIVITIES):
            h = await env.client.start_workflow(of.OrderWorkflow.run, of.Order("o3", "SKU", 1, 100, out_of_stock=True),
                                                id="o3", task_queue=of.TASK_QUEUE)
            with pytest.raises(WorkflowFailureError) as err:
                await h.result()
    assert isinstance(err.value.cause, ApplicationError) and err.value.cause.type == "OrderCancelled"
    history = await h.fetch_history()
    scheduled = [e.attributes["activity_type"] for e in history.events if e.event_type == "ActivityTaskScheduled"]
    assert scheduled == ["capture_payment", "reserve_stock", "refund_payment"]  # compensation ran
    await _replays(of.OrderWorkflow, h)


async def test_order_payment_retries_transient_failures() -> None:
    calls = []

    @activity.defn(name="capture_payment")
    async def flaky_capture(order: of.Order) -> str:
        calls.append(1)
        if len(calls) < 3:
            raise RuntimeError("gateway timeout")
        return "ch_retry"

    acts = [flaky_capture, of.reserve_stock, of.refund_payment, of.open_support_case]
    async with await WorkflowEnvironment.start_time_skipping() as env:
        async with Worker(env.client, task_queue=of.TASK_QUEUE, workflows=of.WORKFLOWS, activities=acts):
            h = await env.client.start_workflow(of.OrderWorkflow.run, of.Order("o4", "SKU", 1, 100), id="o4",
                                                task_queue=of.TASK_QUEUE)
            await env.sleep(timedelta(seconds=10))
            await h.signal(of.OrderWorkflow.mark_shipped, "T")
            result = await h.result()
    assert result.charge_id == "ch_retry" and len(calls) == 3


@pytest.mark.parametrize("verdict, expected", [("approve", "settled"), ("deny", "refunded (denied)")])
async def test_payment_paths(verdict: str, expected: str) -> None:
    async with await WorkflowEnvironment.start_time_skipping() as env:
        async with Worker(env.client, task_queue=pay.TASK_QUEUE, workflows=pay.WORKFLOWS, activities=pay.ACTIVITIES):
            h = await env.client.start_workflow(pay.PaymentWorkflow.run, pay.Payment("p1", 100, "4242", verdict),
                                                id="p1", task_queue=pay.TASK_QUEUE)
            assert await h.result() == expected
    history = await h.fetch_history()
    types = [e.attributes.get("activity_type") for e in history.events if e.event_type == "ActivityTaskScheduled"]
    if verdict == "approve":
        assert types == ["charge_card", "check_fraud", "settle_funds", "send_confirmation_email"]
    else:
        assert types == ["charge_card", "check_fraud", "refund_charge"]
    await _replays(pay.PaymentWorkflow, h)


async def test_payment_fraud_check_timeout_refunds() -> None:
    # The fraud service hangs; the check's start-to-close timeout (1 s here) fires and the
    # payment is refunded. Time does not skip while the activity runs, so this uses real time.
    async with await WorkflowEnvironment.start_local() as env:
        async with Worker(env.client, task_queue=pay.TASK_QUEUE, workflows=pay.WORKFLOWS, activities=pay.ACTIVITIES,
                          graceful_shutdown_timeout=timedelta(0)):
            p = pay.Payment("p2", 100, "4242", "slow", fraud_timeout_s=1.0)
            h = await env.client.start_workflow(pay.PaymentWorkflow.run, p, id="p2", task_queue=pay.TASK_QUEUE)
            assert await asyncio.wait_for(h.result(), 20) == "refunded (unknown)"
    history = await h.fetch_history()
    assert any(e.event_type == "ActivityTaskTimedOut" for e in history.events)


async def test_payment_versioned_change_replays_old_histories() -> None:
    from spindle import workflow

    # The first release of the payment workflow: no confirmation email, no get_version.
    @workflow.defn(name="PaymentWorkflow")
    class PaymentV1:
        @workflow.run
        async def run(self, p: pay.Payment) -> str:
            t = timedelta(seconds=30)
            charge_id = await workflow.execute_activity(pay.charge_card, p, start_to_close_timeout=t)
            verdict = await workflow.execute_activity(pay.check_fraud, p, start_to_close_timeout=t)
            if verdict != "approved":
                await workflow.execute_activity(pay.refund_charge, charge_id, start_to_close_timeout=t)
                return "refunded"
            await workflow.execute_activity(pay.settle_funds, charge_id, start_to_close_timeout=t)
            return "settled"

    async with await WorkflowEnvironment.start_time_skipping() as env:
        async with Worker(env.client, task_queue="v1", workflows=[PaymentV1], activities=pay.ACTIVITIES):
            h = await env.client.start_workflow(PaymentV1.run, pay.Payment("old", 1, "4242"), id="old", task_queue="v1")
            assert await h.result() == "settled"
    await _replays(pay.PaymentWorkflow, h)  # today's code replays the old history (version 1: no email)
