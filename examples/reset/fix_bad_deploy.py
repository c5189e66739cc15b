"""Fixing a bad deploy with reset (docs/RESET.md).

Release 1 of the ``Invoice`` workflow has a bug: after the ``charge`` activity it raises,
so every invoice fails after the customer was charged. Release 2 fixes the code. Instead
of starting the invoices again (and charging twice), reset each failed run to its last
completed workflow task: the new run replays the history up to there (the charge is
not repeated) and runs release 2's code from that point on.

    python examples/reset/fix_bad_deploy.py            # embedded control plane on ./spindle.db
    python examples/reset/fix_bad_deploy.py --address 127.0.0.1:7233
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import uuid

from datetime import timedelta

from spindle import Client, ResetType, Worker, activity, workflow
from spindle.exceptions import ApplicationError, WorkflowFailureError

TASK_QUEUE = "invoices"
CHARGED: list[str] = []


@activity.defn
async def charge(invoice_id: str) -> str:
    CHARGED.append(invoice_id)
    return f"ch_{invoice_id}"


@activity.defn
async def send_receipt(charge_id: str) -> str:
    return f"receipt for {charge_id}"


# ---- release 1 (the bad deploy)
@workflow.defn(name="Invoice")
class InvoiceRelease1:
    @workflow.run
    async def run(self, invoice_id: str) -> str:
        charge_id = await workflow.execute_activity(charge, invoice_id, start_to_close_timeout=timedelta(seconds=30))
        raise ApplicationError(f"bug in release 1: no receipt template for {charge_id}", non_retryable=True)


# ---- release 2 (the fix): same workflow type, same code up to the bug
@workflow.defn(name="Invoice")
class InvoiceRelease2:
    @workflow.run
    async def run(self, invoice_id: str) -> str:
        charge_id = await workflow.execute_activity(charge, invoice_id, start_to_close_timeout=timedelta(seconds=30))
        return await workflow.execute_activity(send_receipt, charge_id, start_to_close_timeout=timedelta(seconds=30))


async def wait_count(client: Client, query: str, want: int) -> None:
    """Visibility is eventually consistent: wait until the listing shows ``want`` executions."""
    for _ in range(200):
        if await client.count_workflows(query) == want:
            return
        await asyncio.sleep(0.05)
    raise RuntimeError(f"{query!r} never matched {want} executions")


async def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--address", default="embedded:spindle.db", help="server address or embedded:PATH")
    ap.add_argument("--api-key", default=os.environ.get("SPINDLE_API_KEY") or None)
    args = ap.parse_args(argv)
    client = await Client.connect(args.address, api_key=args.api_key)
    batch = uuid.uuid4().hex[:6]
    ids = [f"invoice-{batch}-{i}" for i in range(3)]
    failed = f"WorkflowType = 'Invoice' AND ExecutionStatus = 'Failed' AND WorkflowId STARTS_WITH 'invoice-{batch}-'"
    try:
        print("release 1 is deployed")
        async with Worker(client, task_queue=TASK_QUEUE, workflows=[InvoiceRelease1], activities=[charge]):
            for wid in ids:
                try:
                    await client.execute_workflow("Invoice", wid, id=wid, task_queue=TASK_QUEUE)
                except WorkflowFailureError as e:
                    print(f"  {wid}: failed: {e.cause}")
        await wait_count(client, failed, len(ids))

        print("release 2 is deployed; resetting the failed invoices to their last completed workflow task")
        async with Worker(client, task_queue=TASK_QUEUE, workflows=[InvoiceRelease2], activities=[charge, send_receipt]):
            summary = await client.batch_reset(failed, type=ResetType.LAST_WORKFLOW_TASK, reason="fix in release 2")
            print(summary)
            for wid in ids:
                print(f"  {wid}: {await client.get_workflow_handle(wid).result()}")
        print(f"charges made: {len(CHARGED)} for {len(ids)} invoices (none repeated by the reset)")
        print(f"look at one: spindle workflow show --workflow-id {ids[0]} --address {args.address}")
    finally:
        await client.close()
    return 0 if len(CHARGED) == len(ids) else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
