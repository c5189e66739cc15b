"""Schedules: a report every morning at 06:00 Berlin time, paused, backfilled and triggered.

By default the control plane runs in this process on a virtual clock
(``WorkflowEnvironment.start_time_skipping``), so three days pass in about a second:

    python examples/schedules/daily_report.py

Against a server (``spindle server start-dev``), the schedule acts every 10 seconds instead and a
worker runs here for ``--seconds`` (then the schedule is deleted unless ``--keep``):

    python examples/schedules/daily_report.py --address 127.0.0.1:7233 --seconds 35
    spindle schedule describe --schedule-id daily-report      # while it runs, or with --keep
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses

from datetime import datetime, timedelta, timezone

from spindle import activity, workflow
from spindle.client import (
    Client,
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleBackfill,
    ScheduleIntervalSpec,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleSpec,
)
from spindle.testing import WorkflowEnvironment
from spindle.worker import Worker

TASK_QUEUE = "reports"
SCHEDULE_ID = "daily-report"


@dataclasses.dataclass
class ReportRequest:
    region: str


@activity.defn
async def build_report(req: ReportRequest, day: str) -> str:
    return f"sales report {req.region} for {day}"


@workflow.defn
class DailyReport:
    @workflow.run
    async def run(self, req: ReportRequest) -> str:
        # The run's id ends with its scheduled time, so a backfilled run reports on its own day.
        day = workflow.info().workflow_id[-len("2026-12-01T06:00:00Z"):][:10]
        return await workflow.execute_activity(build_report, args=[req, day],
                                               start_to_close_timeout=timedelta(minutes=5))


def every_morning() -> Schedule:
    return Schedule(
        action=ScheduleActionStartWorkflow(DailyReport.run, ReportRequest("eu"), id=SCHEDULE_ID, task_queue=TASK_QUEUE),
        spec=ScheduleSpec(cron_expressions=["0 6 * * *"], time_zone_name="Europe/Berlin"),
        policy=SchedulePolicy(overlap=ScheduleOverlapPolicy.SKIP, catchup_window=timedelta(hours=6)))


def show(title: str, desc) -> None:  # type: ignore[no-untyped-def]
    state = "paused" if desc.schedule.state.paused else "active"
    print(f"{title}: {state} {desc.schedule.state.note!r}, {desc.info.num_actions} actions, "
          f"{desc.info.num_actions_skipped_overlap} skipped")
    for a in desc.info.recent_actions[-3:]:
        print(f"  ran   {a.workflow_id}  (started {a.started_at:%Y-%m-%d %H:%M} UTC)")
    for t in desc.info.next_action_times[:2]:
        print(f"  next  {t:%Y-%m-%d %H:%M} UTC")


async def virtual_time() -> None:
    start = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)
    async with await WorkflowEnvironment.start_time_skipping(start_time=start) as env:
        client = env.client
        handle = await client.create_schedule(SCHEDULE_ID, every_morning())
        async with Worker(client, task_queue=TASK_QUEUE, workflows=[DailyReport], activities=[build_report]):
            await env.sleep(timedelta(days=2))  # two mornings pass: 2 Dec and 3 Dec, 05:00 UTC (06:00 in Berlin)
            show("after two days", await handle.describe())

            await handle.pause(note="data warehouse migration")
            await env.sleep(timedelta(days=1))  # 4 Dec is skipped while paused
            show("paused for a day", await handle.describe())

            await handle.unpause(note="migration done")  # no burst: the missed morning is not run
            await handle.backfill(ScheduleBackfill(start_at=datetime(2026, 12, 4), end_at=datetime(2026, 12, 4, 23, 59)))
            await handle.trigger(overlap=ScheduleOverlapPolicy.ALLOW_ALL)  # and one report now, next to the backfill
            await env.sleep(timedelta(minutes=1))
            desc = await handle.describe()
            show("after backfill and trigger", desc)
            backfilled = next(a for a in desc.info.recent_actions if a.workflow_id.endswith("2026-12-04T05:00:00Z"))
            last = client.get_workflow_handle(backfilled.workflow_id)
            print("backfilled run's result:", await last.result())
        async for entry in client.list_schedules():
            print(f"listed: {entry.id} paused={entry.paused} next={entry.next_action_times[0]:%Y-%m-%d %H:%M} UTC")
        await handle.delete()


async def real_server(address: str, seconds: float, keep: bool) -> None:
    client = await Client.connect(address)
    schedule = dataclasses.replace(every_morning(), spec=ScheduleSpec(intervals=[
        ScheduleIntervalSpec(every=timedelta(seconds=10))]))
    handle = await client.create_schedule(SCHEDULE_ID, schedule)
    print(f"schedule {SCHEDULE_ID} acts every 10 s; worker runs for {seconds:.0f} s")
    try:
        async with Worker(client, task_queue=TASK_QUEUE, workflows=[DailyReport], activities=[build_report]):
            await asyncio.sleep(seconds)
        show("after running", await handle.describe())
    finally:
        if not keep:
            await handle.delete()
        await client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--address", help="a Spindle server (default: an in-process one on a virtual clock)")
    parser.add_argument("--seconds", type=float, default=35.0, help="how long the worker runs (with --address)")
    parser.add_argument("--keep", action="store_true", help="leave the schedule on the server (with --address)")
    args = parser.parse_args()
    if args.address:
        asyncio.run(real_server(args.address, args.seconds, args.keep))
    else:
        asyncio.run(virtual_time())


if __name__ == "__main__":
    main()
