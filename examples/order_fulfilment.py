"""Order fulfilment saga: capture payment, reserve stock (refund if that fails), wait up to
14 days for a "shipped" signal, and open a support case if it never comes.

Run it (no server needed; it uses an embedded control plane on ./spindle.db):

    python examples/order_fulfilment.py                 # happy path, ships after a signal
    python examples/order_fulfilment.py --out-of-stock  # compensation: the payment is refunded
    python examples/order_fulfilment.py --address 127.0.0.1:7233   # against `spindle server start-dev`
    SPINDLE_API_KEY=spk_... python examples/order_fulfilment.py --address 127.0.0.1:7233   # ... start-dev --auth
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import sys
import uuid

from datetime import timedelta

from spindle import Client, RetryPolicy, Worker, activity, workflow
from spindle.exceptions import ActivityError, ApplicationError

TASK_QUEUE = "orders"


@dataclasses.dataclass
class Order:
    order_id: str
    sku: str
    quantity: int
    amount_cents: int
    out_of_stock: bool = False


@dataclasses.dataclass
class OrderResult:
    order_id: str
    status: str
    charge_id: str
    tracking: str | None = None
    support_case: str | None = None


# ----------------------------------------------------------------------------- activities
# Activities talk to the outside world. They run at least once, so they must be idempotent:
# each uses the order id as its idempotency key.

@activity.defn
async def capture_payment(order: Order) -> str:
    return f"ch_{order.order_id}"


@activity.defn
async def reserve_stock(order: Order) -> None:
    if order.out_of_stock:
        raise ApplicationError(f"{order.sku} is out of stock", type="OutOfStock", non_retryable=True)


@activity.defn
async def refund_payment(charge_id: str) -> str:
    return f"re_{charge_id}"


@activity.defn
def open_support_case(order: Order) -> str:  # a plain def runs in the worker's thread pool
    return f"case-{order.order_id}"


# ----------------------------------------------------------------------------- workflow
@workflow.defn
class OrderWorkflow:
    def __init__(self) -> None:
        self.tracking: str | None = None
        self.stage = "new"

    @workflow.run
    async def run(self, order: Order) -> OrderResult:
        retry = RetryPolicy(initial_interval=timedelta(seconds=1), backoff_coefficient=2.0, maximum_attempts=5)
        self.stage = "charging"
        charge_id = await workflow.execute_activity(
            capture_payment, order, start_to_close_timeout=timedelta(seconds=30), retry_policy=retry)
        self.stage = "reserving"
        try:
            await workflow.execute_activity(reserve_stock, order, start_to_close_timeout=timedelta(seconds=30),
                                            retry_policy=retry)
        except ActivityError as out_of_stock:
            self.stage = "refunding"
            await workflow.execute_activity(refund_payment, charge_id, start_to_close_timeout=timedelta(seconds=30),
                                            retry_policy=retry)
            raise ApplicationError(f"order {order.order_id} cancelled: out of stock, payment refunded",
                                   type="OrderCancelled", non_retryable=True) from out_of_stock
        self.stage = "awaiting shipment"
        try:
            await workflow.wait_condition(lambda: self.tracking is not None, timeout=timedelta(days=14))
        except TimeoutError:
            self.stage = "escalated"
            case = await workflow.execute_activity(open_support_case, order,
                                                   start_to_close_timeout=timedelta(seconds=30))
            return OrderResult(order.order_id, "not shipped", charge_id, support_case=case)
        self.stage = "shipped"
        return OrderResult(order.order_id, "shipped", charge_id, tracking=self.tracking)

    @workflow.signal
    def mark_shipped(self, tracking: str) -> None:
        self.tracking = tracking

    @workflow.query
    def status(self) -> str:
        return self.stage


WORKFLOWS = [OrderWorkflow]
ACTIVITIES = [capture_payment, reserve_stock, refund_payment, open_support_case]


async def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--address", default="embedded:spindle.db", help="server address or embedded:PATH")
    ap.add_argument("--api-key", default=os.environ.get("SPINDLE_API_KEY") or None,
                    help="API key, for a server that requires one (start-dev --auth); default: $SPINDLE_API_KEY")
    ap.add_argument("--out-of-stock", action="store_true", help="make stock reservation fail (compensation path)")
    args = ap.parse_args(argv)
    client = await Client.connect(args.address, api_key=args.api_key)
    order_id = f"order-{uuid.uuid4().hex[:8]}"
    order = Order(order_id, sku="SKU-42", quantity=2, amount_cents=4999, out_of_stock=args.out_of_stock)
    try:
        async with Worker(client, task_queue=TASK_QUEUE, workflows=WORKFLOWS, activities=ACTIVITIES):
            handle = await client.start_workflow(OrderWorkflow.run, order, id=order_id, task_queue=TASK_QUEUE)
            print(f"started {order_id}")
            if not args.out_of_stock:
                for _ in range(100):
                    if await handle.query(OrderWorkflow.status) == "awaiting shipment":
                        break
                    await asyncio.sleep(0.05)
                print(f"status: {await handle.query(OrderWorkflow.status)}; sending the 'shipped' signal")
                await handle.signal(OrderWorkflow.mark_shipped, "TRACK-123")
            try:
                result = await handle.result()
                print(f"result: {result}")
            except Exception as e:  # noqa: BLE001 - the example prints the failure chain
                print(f"workflow failed: {e}\n  cause: {getattr(e, 'cause', None)!r}")
    finally:
        await client.close()
    where = args.address
    cli = os.path.join(os.path.dirname(sys.executable), "spindle")
    cli = os.path.relpath(cli) if os.path.exists(cli) else "spindle"
    print("\nwhere to look next:")
    print(f"  {cli} workflow show --address {where} --workflow-id {order_id}      # the event history")
    print(f"  {cli} workflow list --address {where} --query \"WorkflowType = 'OrderWorkflow'\"")
    print("  python examples/order_fulfilment.py --out-of-stock                    # the compensation path")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
