"""Schedules fire from the durable timer queue on the engine's clock (issue 17), here the time-skipping one.

Workflows are started with the raw wire API (the SDK's schedule client is a later step).
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta, timezone

from spindle import Worker, workflow
from spindle.controlplane.api import messages_pb2 as pb
from spindle.controlplane.api import service_pb2 as svc
from spindle.testing import WorkflowEnvironment

T0 = datetime(2026, 12, 1, 0, 0, 30, tzinfo=timezone.utc)
HOUR_MS = 3_600_000


@workflow.defn
class Report:
    @workflow.run
    async def run(self, minutes: int) -> str:
        await workflow.sleep(timedelta(minutes=minutes))
        return workflow.info().workflow_id


def schedule(overlap: int = 0, minutes: int = 1, **state: object) -> pb.Schedule:
    from spindle.converter import DataConverter

    return pb.Schedule(spec=pb.ScheduleSpec(intervals=[pb.ScheduleIntervalSpec(every_ms=HOUR_MS)]),
                       action=pb.ScheduleActionStartWorkflow(workflow_id="report", workflow_type="Report",
                                                             task_queue="reports",
                                                             input=DataConverter.default.to_payloads([minutes])),
                       policies=pb.SchedulePolicies(overlap_policy=overlap),
                       state=pb.ScheduleState(**state))  # type: ignore[arg-type]


async def runs(env: WorkflowEnvironment) -> list[str]:
    out: list[str] = []
    async for wf in env.client.list_workflows(""):
        out.append(wf.id)
    return sorted(out)


async def test_an_hourly_schedule_over_three_virtual_days_starts_72_runs_with_pinned_ids() -> None:
    async with await WorkflowEnvironment.start_time_skipping(start_time=T0) as env:
        stub = env.client.stub
        await stub.CreateSchedule(svc.CreateScheduleRequest(namespace="default", schedule_id="hourly",
                                                            schedule=schedule()))
        async with Worker(env.client, task_queue="reports", workflows=[Report]):
            await env.sleep(timedelta(days=3))
            await asyncio.sleep(0.2)
            got = await runs(env)
        expected = [f"report-{(datetime(2026, 12, 1, 1, tzinfo=timezone.utc) + timedelta(hours=h)):%Y-%m-%dT%H:%M:%SZ}"
                    for h in range(72)]
        assert got == expected
        d = await stub.DescribeSchedule(svc.DescribeScheduleRequest(namespace="default", schedule_id="hourly"))
        assert d.info.action_count == 72
        assert [a.workflow_id for a in d.info.recent_actions] == expected[-10:]
        assert d.info.recent_actions[-1].schedule_time_ms == int(datetime(2026, 12, 4, tzinfo=timezone.utc).timestamp()
                                                                  * 1000)


async def test_skip_drops_actions_while_the_previous_run_is_open_and_allow_all_starts_them() -> None:
    """90-minute runs on an hourly schedule: SKIP starts every other hour, ALLOW_ALL every hour."""
    for overlap, want in ((pb.SCHEDULE_OVERLAP_POLICY_SKIP, [1, 3, 5]), (pb.SCHEDULE_OVERLAP_POLICY_ALLOW_ALL,
                                                                      [1, 2, 3, 4, 5, 6])):
        async with await WorkflowEnvironment.start_time_skipping(start_time=T0) as env:
            stub = env.client.stub
            await stub.CreateSchedule(svc.CreateScheduleRequest(namespace="default", schedule_id="hourly",
                                                                schedule=schedule(overlap, minutes=90)))
            async with Worker(env.client, task_queue="reports", workflows=[Report]):
                await env.sleep(timedelta(hours=6, minutes=10))
                await asyncio.sleep(0.2)
                got = await runs(env)
            assert got == [f"report-2026-12-01T0{h}:00:00Z" for h in want], overlap
            d = await stub.DescribeSchedule(svc.DescribeScheduleRequest(namespace="default", schedule_id="hourly"))
            assert d.info.overlap_skipped == 6 - len(want)
