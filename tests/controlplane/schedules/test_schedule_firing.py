"""Schedules fire from the durable timer queue on the engine's clock (issue 17), here the time-skipping one.

Every test runs on both stores (SQLite file, Spanner emulator: ``conftest.stores``).
Schedules are made with the raw wire API (the SDK's schedule client is another branch's);
the workflows they start run on a real worker. Runs are named ``{prefix}-{nominal UTC time}``.
"""

from __future__ import annotations

import asyncio

from datetime import datetime, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo

from schedule_stores import Stores

from spindle import workflow
from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.client import WorkflowExecutionStatus
from spindle.converter import DataConverter
from spindle.exceptions import ApplicationError
from spindle.worker import Worker

T0 = datetime(2026, 12, 1, 0, 0, 30, tzinfo=timezone.utc)
HOUR_MS = 3_600_000
U = timezone.utc
P = pb  # overlap names below
SKIP, BUFFER_ONE, BUFFER_ALL = (pb.SCHEDULE_OVERLAP_POLICY_SKIP, pb.SCHEDULE_OVERLAP_POLICY_BUFFER_ONE,
                                pb.SCHEDULE_OVERLAP_POLICY_BUFFER_ALL)
CANCEL_OTHER, TERMINATE_OTHER, ALLOW_ALL = (pb.SCHEDULE_OVERLAP_POLICY_CANCEL_OTHER,
                                            pb.SCHEDULE_OVERLAP_POLICY_TERMINATE_OTHER,
                                            pb.SCHEDULE_OVERLAP_POLICY_ALLOW_ALL)


@workflow.defn
class Report:
    @workflow.run
    async def run(self, minutes: int) -> str:
        await workflow.sleep(timedelta(minutes=minutes))
        if minutes < 0:
            raise ApplicationError("bad report", non_retryable=True)
        return workflow.info().workflow_id


@workflow.defn
class Broken:
    @workflow.run
    async def run(self, minutes: int) -> str:
        raise ApplicationError("bad report", non_retryable=True)


def ms(t: datetime) -> int:
    return int(t.timestamp() * 1000)


def stamp(t: datetime) -> str:
    return t.astimezone(U).strftime("%Y-%m-%dT%H:%M:%SZ")


def schedule(prefix: str = "report", overlap: int = 0, minutes: int = 1, *, every_ms: int = HOUR_MS,
             cron: str = "", tz: str = "", workflow_type: str = "Report", policies: dict[str, Any] | None = None,
             spec: dict[str, Any] | None = None, **state: object) -> pb.Schedule:
    s = pb.ScheduleSpec(cron_expressions=[cron] if cron else [], time_zone_name=tz, **(spec or {}))
    if not cron:
        s.intervals.append(pb.ScheduleIntervalSpec(every_ms=every_ms))
    return pb.Schedule(spec=s,
                       action=pb.ScheduleActionStartWorkflow(workflow_id=prefix, workflow_type=workflow_type,
                                                             task_queue="reports",
                                                             input=DataConverter.default.to_payloads([minutes])),
                       policies=pb.SchedulePolicies(overlap_policy=overlap, **(policies or {})),
                       state=pb.ScheduleState(**state))  # type: ignore[arg-type]


async def create(env: Any, sid: str, sched: pb.Schedule) -> None:
    await env.client.stub.CreateSchedule(svc.CreateScheduleRequest(namespace="default", schedule_id=sid,
                                                                   schedule=sched))


async def describe(env: Any, sid: str) -> svc.DescribeScheduleResponse:
    return await env.client.stub.DescribeSchedule(svc.DescribeScheduleRequest(namespace="default", schedule_id=sid))


async def patch(env: Any, sid: str, **kw: Any) -> None:
    await env.client.stub.PatchSchedule(svc.PatchScheduleRequest(namespace="default", schedule_id=sid,
                                                                 patch=svc.SchedulePatch(**kw)))


async def runs(env: Any, query: str = "") -> dict[str, WorkflowExecutionStatus]:
    """Workflow id -> status of every run (visibility), after letting its writes land."""
    await asyncio.sleep(0.2)
    out: dict[str, WorkflowExecutionStatus] = {}
    async for wf in env.client.list_workflows(query):
        out[wf.id] = wf.status
    return dict(sorted(out.items()))


def hours(prefix: str, *hs: int, day: int = 1) -> list[str]:
    return [f"{prefix}-2026-12-{day:02d}T{h:02d}:00:00Z" for h in hs]


def worker(env: Any) -> Worker:
    return Worker(env.client, task_queue="reports", workflows=[Report, Broken])


# ------------------------------------------------------------------------------------------------ firing
async def test_an_hourly_schedule_over_three_virtual_days_starts_72_runs_with_pinned_ids(stores: Stores) -> None:
    env = await stores.open(T0)
    await create(env, "hourly", schedule())
    async with worker(env):
        await env.sleep(timedelta(days=3, minutes=2))
        got = await runs(env)
    expected = [f"report-{stamp(datetime(2026, 12, 1, 1, tzinfo=U) + timedelta(hours=h))}" for h in range(72)]
    assert list(got) == expected
    assert set(got.values()) == {WorkflowExecutionStatus.COMPLETED}
    d = await describe(env, "hourly")
    assert d.info.action_count == 72 and not d.info.running_workflows
    assert [a.workflow_id for a in d.info.recent_actions] == expected[-10:]
    assert d.info.recent_actions[-1].schedule_time_ms == ms(datetime(2026, 12, 4, tzinfo=U))
    # the runs carry the system search attributes ScheduledById and ScheduledStartTime
    assert list(await runs(env, "ScheduledById = 'hourly'")) == expected
    assert await runs(env, "ScheduledById = 'other'") == {}
    assert list(await runs(env, "ScheduledStartTime = '2026-12-02T05:00:00Z'")) == ["report-2026-12-02T05:00:00Z"]
    assert len(await runs(env, "ScheduledById = 'hourly' AND ScheduledStartTime >= '2026-12-03T00:00:00Z'")) == 25


async def test_overlap_skip_buffer_one_buffer_all_allow_all_with_runs_longer_than_the_interval(stores: Stores) -> None:
    """100-minute runs, hourly, for 3.5 hours (first action 01:00, last look 04:30).

    SKIP: 01 (to 02:40), 02 skipped, 03 (to 04:40), 04 skipped.
    BUFFER_ONE: 01 (to 02:40); 02 waits and starts at 02:40 (to 04:20); 03 waits, 04 is dropped
    (one buffered at most); 03 starts at 04:20. BUFFER_ALL: the same but 04 stays buffered.
    ALLOW_ALL: every hour.
    """
    env = await stores.open(T0)
    for name, policy in (("skip", SKIP), ("one", BUFFER_ONE), ("all", BUFFER_ALL), ("allow", ALLOW_ALL)):
        await create(env, name, schedule(name, policy, minutes=100))
    async with worker(env):
        await env.sleep(timedelta(hours=4, minutes=29, seconds=30))  # 04:30:00
        got = await runs(env)
        R, C = WorkflowExecutionStatus.RUNNING, WorkflowExecutionStatus.COMPLETED
        assert {k: v for k, v in got.items() if k.startswith("skip-")} == dict(zip(hours("skip", 1, 3), [C, R]))
        assert {k: v for k, v in got.items() if k.startswith("one-")} == dict(zip(hours("one", 1, 2, 3), [C, C, R]))
        assert {k: v for k, v in got.items() if k.startswith("all-")} == dict(zip(hours("all", 1, 2, 3), [C, C, R]))
        assert {k: v for k, v in got.items() if k.startswith("allow-")} == dict(zip(hours("allow", 1, 2, 3, 4),
                                                                                     [C, C, R, R]))
        skip, one, all_, allow = [await describe(env, n) for n in ("skip", "one", "all", "allow")]
        assert (skip.info.overlap_skipped, one.info.overlap_skipped, all_.info.overlap_skipped,
                allow.info.overlap_skipped) == (2, 1, 0, 0)
        # a buffered action starts when the run it waited for closes (not at the next tick, not on a poll)
        started = {a.workflow_id: a.actual_time_ms for a in one.info.recent_actions}
        assert started["one-2026-12-01T02:00:00Z"] == ms(datetime(2026, 12, 1, 2, 40, tzinfo=U))
        assert started["one-2026-12-01T03:00:00Z"] == ms(datetime(2026, 12, 1, 4, 20, tzinfo=U))
        assert [a.workflow_id for a in all_.info.recent_actions] == hours("all", 1, 2, 3)
        # BUFFER_ALL still holds 04 (it starts when 03 closes, at 06:00), then 05 (at 07:40)
        await env.sleep(timedelta(hours=3, minutes=20))  # 07:50
        got = await runs(env)
    assert [k for k in got if k.startswith("all-")] == hours("all", 1, 2, 3, 4, 5)
    all_ = await describe(env, "all")
    assert [a.actual_time_ms for a in all_.info.recent_actions][-2:] == [
        ms(datetime(2026, 12, 1, 6, tzinfo=U)), ms(datetime(2026, 12, 1, 7, 40, tzinfo=U))]


async def test_cancel_other_and_terminate_other_end_the_previous_run(stores: Stores) -> None:
    env = await stores.open(T0)
    await create(env, "cancel", schedule("cancel", CANCEL_OTHER, minutes=100))
    await create(env, "term", schedule("term", TERMINATE_OTHER, minutes=100))
    async with worker(env):
        await env.sleep(timedelta(hours=3, minutes=10))
        got = await runs(env)
    R = WorkflowExecutionStatus.RUNNING
    assert {k: v for k, v in got.items() if k.startswith("cancel-")} == dict(zip(
        hours("cancel", 1, 2, 3), [WorkflowExecutionStatus.CANCELED, WorkflowExecutionStatus.CANCELED, R]))
    assert {k: v for k, v in got.items() if k.startswith("term-")} == dict(zip(
        hours("term", 1, 2, 3), [WorkflowExecutionStatus.TERMINATED, WorkflowExecutionStatus.TERMINATED, R]))
    d = await describe(env, "cancel")
    # the next action started once the canceled run closed, at the same virtual instant
    assert [a.actual_time_ms - a.schedule_time_ms for a in d.info.recent_actions] == [0, 0, 0]
    assert [ex.workflow_id for ex in d.info.running_workflows] == hours("cancel", 3)


async def test_a_six_hour_outage_with_a_one_hour_catchup_window(stores: Stores) -> None:
    """Server stopped at 02:10, back at 08:10: 03..07 are missed (older than an hour), 08:00 runs at once."""
    env = await stores.open(T0)
    await create(env, "hourly", schedule(policies={"catchup_window_ms": HOUR_MS}))
    async with worker(env):
        await env.sleep(timedelta(hours=2, minutes=9, seconds=30))
        assert list(await runs(env)) == hours("report", 1, 2)
    await env.shutdown()
    env = await stores.open(datetime(2026, 12, 1, 8, 10, tzinfo=U))
    async with worker(env):
        await env.sleep(timedelta(minutes=30))
        assert list(await runs(env)) == hours("report", 1, 2, 8)
        d = await describe(env, "hourly")
        assert d.info.missed_catchup_window == 5 and d.info.action_count == 3
        assert d.info.recent_actions[-1].actual_time_ms == ms(datetime(2026, 12, 1, 8, 10, tzinfo=U))
        await env.sleep(timedelta(hours=1))
        assert list(await runs(env)) == hours("report", 1, 2, 8, 9)


async def test_dst_in_berlin_a_0230_daily_action_runs_once_on_both_change_days(stores: Stores) -> None:
    berlin = ZoneInfo("Europe/Berlin")
    # spring forward 2026-03-29 (02:00 CET -> 03:00 CEST): 02:30 does not exist, the action runs at 03:00 CEST
    env = await stores.open(datetime(2026, 3, 27, 12, tzinfo=U))
    await create(env, "spring", schedule("spring", cron="30 2 * * *", tz="Europe/Berlin"))
    # fall back 2026-10-25 (03:00 CEST -> 02:00 CET): 02:30 happens twice, the action runs at the first
    async with worker(env):
        await env.sleep(timedelta(days=3))
        got = list(await runs(env))
    assert got == ["spring-2026-03-28T01:30:00Z", "spring-2026-03-29T01:00:00Z", "spring-2026-03-30T00:30:00Z"]
    local = [datetime.strptime(g[7:], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=U).astimezone(berlin) for g in got]
    assert [t.strftime("%d %H:%M %Z") for t in local] == ["28 02:30 CET", "29 03:00 CEST", "30 02:30 CEST"]
    await env.shutdown()
    env = await stores.open(datetime(2026, 10, 23, 12, tzinfo=U))
    await create(env, "fall", schedule("fall", cron="30 2 * * *", tz="Europe/Berlin"))
    async with worker(env):
        await env.sleep(timedelta(days=3))
        got = [g for g in await runs(env) if g.startswith("fall-")]
    assert got == ["fall-2026-10-24T00:30:00Z", "fall-2026-10-25T00:30:00Z", "fall-2026-10-26T01:30:00Z"]


async def test_backfill_of_a_week_starts_the_seven_missed_days_now(stores: Stores) -> None:
    env = await stores.open(T0)
    await create(env, "daily", schedule("daily", ALLOW_ALL, cron="0 6 * * *"))
    await patch(env, "daily", backfill_request=[svc.ScheduleBackfillRequest(
        start_time_ms=ms(datetime(2026, 11, 24, tzinfo=U)), end_time_ms=ms(datetime(2026, 12, 1, tzinfo=U)))])
    async with worker(env):
        await env.sleep(timedelta(minutes=5))
        got = await runs(env)
    assert list(got) == [f"daily-2026-11-{d}T06:00:00Z" for d in range(24, 31)]
    d = await describe(env, "daily")
    assert d.info.action_count == 7
    assert all(a.actual_time_ms == ms(T0) for a in d.info.recent_actions)
    assert list(d.info.future_action_times_ms)[:1] == [ms(datetime(2026, 12, 1, 6, tzinfo=U))]


async def test_pause_stops_actions_and_unpause_resumes_without_a_burst(stores: Stores) -> None:
    env = await stores.open(T0)
    await create(env, "hourly", schedule())
    async with worker(env):
        await env.sleep(timedelta(hours=1, minutes=10))
        await patch(env, "hourly", pause="maintenance")
        d = await describe(env, "hourly")
        assert d.schedule.state.paused and d.schedule.state.notes == "maintenance"
        assert not d.info.future_action_times_ms
        await env.sleep(timedelta(hours=4))  # 05:10
        assert list(await runs(env)) == hours("report", 1)
        await patch(env, "hourly", unpause="done")
        await env.sleep(timedelta(minutes=1))
        assert list(await runs(env)) == hours("report", 1)  # 02..05 are not taken on unpause
        await env.sleep(timedelta(hours=1))
        assert list(await runs(env)) == hours("report", 1, 6)
    d = await describe(env, "hourly")
    assert not d.schedule.state.paused and d.schedule.state.notes == "done" and d.info.action_count == 2


async def test_pause_on_failure_pauses_after_a_failed_run(stores: Stores) -> None:
    env = await stores.open(T0)
    await create(env, "fragile", schedule("fragile", workflow_type="Broken", policies={"pause_on_failure": True}))
    await create(env, "sturdy", schedule("sturdy", workflow_type="Broken"))
    async with worker(env):
        await env.sleep(timedelta(hours=3, minutes=10))
        got = await runs(env)
    assert list(got) == hours("fragile", 1) + hours("sturdy", 1, 2, 3)
    assert set(got.values()) == {WorkflowExecutionStatus.FAILED}
    d = await describe(env, "fragile")
    assert d.schedule.state.paused and "fragile-2026-12-01T01:00:00Z" in d.schedule.state.notes
    assert not (await describe(env, "sturdy")).schedule.state.paused


async def test_remaining_actions_limits_the_scheduled_actions(stores: Stores) -> None:
    env = await stores.open(T0)
    await create(env, "three", schedule("three", remaining_actions=3))
    async with worker(env):
        await env.sleep(timedelta(hours=5, minutes=10))
        assert list(await runs(env)) == hours("three", 1, 2, 3)
        d = await describe(env, "three")
        assert d.schedule.state.remaining_actions == 0 and not d.info.future_action_times_ms
        # a trigger is not a scheduled action: it still runs
        await patch(env, "three", trigger_immediately=svc.ScheduleTrigger())
        await env.sleep(timedelta(minutes=1))
        assert list(await runs(env)) == hours("three", 1, 2, 3) + ["three-2026-12-01T05:10:30Z"]


async def test_jitter_delays_each_action_within_its_bound_and_keeps_the_nominal_id(stores: Stores) -> None:
    env = await stores.open(T0)
    await create(env, "jit", schedule("jit", spec={"jitter_ms": 600_000}))
    async with worker(env):
        await env.sleep(timedelta(hours=6, minutes=11))
        got = await runs(env)
    assert list(got) == hours("jit", 1, 2, 3, 4, 5, 6)
    d = await describe(env, "jit")
    delays = [a.actual_time_ms - int(datetime.strptime(a.workflow_id[4:], "%Y-%m-%dT%H:%M:%SZ").replace(
        tzinfo=U).timestamp() * 1000) for a in d.info.recent_actions]
    assert all(0 <= x <= 600_000 for x in delays), delays
    assert len(set(delays)) > 1  # spread, not one fixed delay
    assert all(a.schedule_time_ms == a.actual_time_ms for a in d.info.recent_actions)  # started when due


async def test_start_and_end_bounds(stores: Stores) -> None:
    env = await stores.open(T0)
    await create(env, "bounded", schedule("bounded", spec={"start_at_ms": ms(datetime(2026, 12, 1, 2, 30, tzinfo=U)),
                                                           "end_at_ms": ms(datetime(2026, 12, 1, 5, 30, tzinfo=U))}))
    async with worker(env):
        await env.sleep(timedelta(hours=8))
        assert list(await runs(env)) == hours("bounded", 3, 4, 5)
    d = await describe(env, "bounded")
    assert not d.info.future_action_times_ms


async def test_trigger_now_starts_at_once_under_the_given_overlap_policy(stores: Stores) -> None:
    env = await stores.open(T0)
    await create(env, "daily", schedule("daily", cron="0 6 * * *", minutes=30))
    async with worker(env):
        await env.sleep(timedelta(minutes=10))
        await patch(env, "daily", trigger_immediately=svc.ScheduleTrigger())
        await env.sleep(timedelta(minutes=1))
        assert await runs(env) == {"daily-2026-12-01T00:10:30Z": WorkflowExecutionStatus.RUNNING}
        # the schedule's SKIP: a trigger while that run is open is skipped; ALLOW_ALL starts it
        await patch(env, "daily", trigger_immediately=svc.ScheduleTrigger())
        await env.sleep(timedelta(minutes=1))
        await patch(env, "daily", trigger_immediately=svc.ScheduleTrigger(overlap_policy=ALLOW_ALL))
        await env.sleep(timedelta(minutes=1))
        d = await describe(env, "daily")
        assert list(await runs(env)) == ["daily-2026-12-01T00:10:30Z", "daily-2026-12-01T00:12:30Z"], str(d.info)
    assert d.info.overlap_skipped == 1 and d.info.action_count == 2


async def test_a_crash_between_starting_the_runs_and_writing_the_record_neither_loses_nor_doubles(
        stores: Stores, monkeypatch: Any) -> None:
    """The first two record writes after a fire fail (as if the process died there): the timer fires again
    (1 s later), starts with the same request ids, gets the same runs back, and counts them once."""
    from spindle.controlplane.history.ops import schedule as ops

    env = await stores.open(T0)
    await create(env, "hourly", schedule())
    real_write, failures = ops.write, []

    async def flaky_write(*args: Any, **kw: Any) -> int:
        rec = args[3]
        if rec.info.recent_actions and len(failures) < 2:
            failures.append(rec.info.recent_actions[-1].workflow_id)
            raise RuntimeError("crash before the record is written")
        return await real_write(*args, **kw)

    monkeypatch.setattr(ops, "write", flaky_write)
    async with worker(env):
        await env.sleep(timedelta(hours=3, minutes=10))
        await asyncio.sleep(0.2)
        listed = []
        async for wf in env.client.list_workflows(""):
            listed.append((wf.id, wf.run_id))
    assert failures == hours("report", 1, 1)
    assert sorted(i for i, _ in listed) == hours("report", 1, 2, 3)  # one run each
    d = await describe(env, "hourly")
    assert d.info.action_count == 3
    assert sorted((a.workflow_id, a.run_id) for a in d.info.recent_actions) == sorted(listed)


@workflow.defn
class Chained:
    """Continues as new every 25 minutes until ``minutes`` are used up."""

    @workflow.run
    async def run(self, minutes: int) -> None:
        await workflow.sleep(timedelta(minutes=min(25, minutes)))
        if minutes > 25:
            workflow.continue_as_new(minutes - 25)


async def test_a_run_that_continues_as_new_still_counts_as_running_for_overlap(stores: Stores) -> None:
    """SKIP, hourly, a 100-minute chain of runs (continued as new every 25 min): 02:00 is skipped, 03:00 runs."""
    env = await stores.open(T0)
    await create(env, "chain", schedule("chain", SKIP, minutes=100, workflow_type="Chained"))
    async with Worker(env.client, task_queue="reports", workflows=[Chained]):
        await env.sleep(timedelta(hours=3, minutes=10))
        ids = set(await runs(env))
        d = await describe(env, "chain")
    assert ids == set(hours("chain", 1, 3))
    assert d.info.overlap_skipped == 1 and d.info.action_count == 2
    assert [ex.workflow_id for ex in d.info.running_workflows] == hours("chain", 3)
