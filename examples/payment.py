"""Payment: charge, fraud check with a 30 s timeout, then settle or refund; a versioned change
(``workflow.get_version``) adds a confirmation email for new executions only.

    python examples/payment.py                  # approved: charge, fraud check, settle, email
    python examples/payment.py --fraud deny     # denied: refund
    python examples/payment.py --fraud slow     # the fraud check times out: refund
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
from spindle.exceptions import ActivityError

TASK_QUEUE = "payments"


@dataclasses.dataclass
class Payment:
    payment_id: str
    amount_cents: int
    card: str
    fraud: str = "approve"  # approve | deny | slow (for the demo)
    fraud_timeout_s: float = 30.0


@activity.defn
async def charge_card(p: Payment) -> str:
    return f"ch_{p.payment_id}"


@activity.defn
async def check_fraud(p: Payment) -> str:
    if p.fraud == "slow":
        await asyncio.sleep(3600)
    return "approved" if p.fraud == "approve" else "denied"


@activity.defn
async def settle_funds(charge_id: str) -> str:
    return f"settled:{charge_id}"


@activity.defn
async def refund_charge(charge_id: str) -> str:
    return f"refunded:{charge_id}"


@activity.defn
async def send_confirmation_email(charge_id: str) -> None:
    return None


@workflow.defn
class PaymentWorkflow:
    @workflow.run
    async def run(self, p: Payment) -> str:
        quick = RetryPolicy(maximum_attempts=3)
        charge_id = await workflow.execute_activity(charge_card, p, start_to_close_timeout=timedelta(seconds=30),
                                                    retry_policy=quick)
        try:
            verdict = await workflow.execute_activity(
                check_fraud, p, start_to_close_timeout=timedelta(seconds=p.fraud_timeout_s),
                retry_policy=RetryPolicy(maximum_attempts=1))
        except ActivityError:  # the fraud service timed out or failed for good
            verdict = "unknown"
        if verdict != "approved":
            await workflow.execute_activity(refund_charge, charge_id, start_to_close_timeout=timedelta(seconds=30),
                                            retry_policy=quick)
            return f"refunded ({verdict})"
        await workflow.execute_activity(settle_funds, charge_id, start_to_close_timeout=timedelta(seconds=30),
                                        retry_policy=quick)
        # Added after the first release: executions started before it replay as version 1.
        if workflow.get_version("confirmation-email", 1, 2) == 2:
            await workflow.execute_activity(send_confirmation_email, charge_id,
                                            start_to_close_timeout=timedelta(seconds=30))
        return "settled"


WORKFLOWS = [PaymentWorkflow]
ACTIVITIES = [charge_card, check_fraud, settle_funds, refund_charge, send_confirmation_email]


async def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--address", default="embedded:spindle.db", help="server address or embedded:PATH")
    ap.add_argument("--api-key", default=os.environ.get("SPINDLE_API_KEY") or None,
                    help="API key, for a server that requires one (start-dev --auth); default: $SPINDLE_API_KEY")
    ap.add_argument("--fraud", choices=["approve", "deny", "slow"], default="approve")
    args = ap.parse_args(argv)
    client = await Client.connect(args.address, api_key=args.api_key)
    pid = f"payment-{uuid.uuid4().hex[:8]}"
    try:
        async with Worker(client, task_queue=TASK_QUEUE, workflows=WORKFLOWS, activities=ACTIVITIES,
                          graceful_shutdown_timeout=timedelta(seconds=1)):
            print(f"{pid}: {await client.execute_workflow(PaymentWorkflow.run, Payment(pid, 1999, '4242', args.fraud), id=pid, task_queue=TASK_QUEUE)}")
    finally:
        await client.close()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
