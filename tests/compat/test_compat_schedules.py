"""Schedules as a Temporal user drives them (``temporalio`` renamed to ``spindle``), in virtual time.

Each test creates schedules through ``client.create_schedule`` on a time-skipping
environment: the schedule fires from the control plane's durable timer queue on the
environment's virtual clock, so three days of hourly runs take a second. Runs carry the
pinned ids ``{action id}-{YYYY-MM-DDTHH:MM:SSZ}`` (docs/SCHEDULES.md).
"""

from __future__ import annotations

import asyncio
import dataclasses

from datetime import datetime, timedelta, timezone

import pytest

from spindle import workflow
from spindle.api import service_pb2 as svc
from spindle.client import (
    Client,
    RPCError,
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleAlreadyRunningError,
    ScheduleBackfill,
    ScheduleHandle,
    ScheduleIntervalSpec,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleSpec,
    ScheduleState,
    ScheduleUpdate,
    ScheduleUpdateInput,
    decoded_args,
)
from spindle.converter import ZlibCodec
from spindle.exceptions import ApplicationError
from spindle.testing import WorkflowEnvironment
from spindle.worker import Worker

UTC = timezone.utc
T0 = datetime(2026, 12, 1, 0, 0, 30, tzinfo=UTC)


@dataclasses.dataclass
class ReportRequest:
    region: str
    top: int


@workflow.defn
class DailyReport:
    @workflow.run
    async def run(self, req: ReportRequest) -> str:
        assert isinstance(req, ReportRequest)  # typed by the run method's hint, as for start_workflow
        return f"{req.region}:{req.top}@{workflow.info().workflow_id}"


def hourly(schedule_id: str = "report", *, paused: bool = False, overlap: ScheduleOverlapPolicy = ScheduleOverlapPolicy.SKIP
           ) -> Schedule:
    return Schedule(
        action=ScheduleActionStartWorkflow(DailyReport.run, ReportRequest("eu", 3), id=schedule_id,
                                           task_queue="reports"),
        spec=ScheduleSpec(intervals=[ScheduleIntervalSpec(every=timedelta(hours=1))]),
        policy=SchedulePolicy(overlap=overlap),
        state=ScheduleState(paused=paused))


def at(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)  # type: ignore[misc]


def run_id_of(prefix: str, t: datetime) -> str:
    return f"{prefix}-{t:%Y-%m-%dT%H:%M:%SZ}"


async def workflow_ids(client: Client) -> list[str]:
    await asyncio.sleep(0.2)  # visibility is written with the next acknowledgement batch
    return sorted([wf.id async for wf in client.list_workflows("")])


async def test_an_hourly_schedule_over_three_virtual_days_starts_72_runs_with_pinned_ids() -> None:
    async with await WorkflowEnvironment.start_time_skipping(start_time=T0) as env:
        handle = await env.client.create_schedule("hourly-report", hourly())
        assert isinstance(handle, ScheduleHandle) and handle.id == "hourly-report"
        async with Worker(env.client, task_queue="reports", workflows=[DailyReport]):
            await env.sleep(timedelta(days=3))
            expected = [run_id_of("report", at(2026, 12, 1, 1) + timedelta(hours=h)) for h in range(72)]
            assert await workflow_ids(env.client) == expected
            result = await env.client.get_workflow_handle(expected[-1]).result()
        assert result == f"eu:3@{expected[-1]}"

        desc = await handle.describe()
        assert desc.id == "hourly-report"
        assert desc.info.num_actions == 72
        assert [a.workflow_id for a in desc.info.recent_actions] == expected[-10:]
        last = desc.info.recent_actions[-1]
        assert last.scheduled_at == at(2026, 12, 4) and last.started_at == at(2026, 12, 4)
        assert last.action.workflow_id == expected[-1] and last.run_id
        assert list(desc.info.next_action_times[:3]) == [at(2026, 12, 4, 1), at(2026, 12, 4, 2), at(2026, 12, 4, 3)]
        assert desc.info.created_at == T0


async def test_describe_gives_back_the_schedule_as_created() -> None:
    async with await WorkflowEnvironment.start_time_skipping(start_time=T0) as env:
        schedule = Schedule(
            action=ScheduleActionStartWorkflow(DailyReport.run, ReportRequest("us", 5), id="sales", task_queue="reports",
                                               execution_timeout=timedelta(hours=2), task_timeout=timedelta(seconds=20),
                                               memo={"owner": "analytics"}),
            spec=ScheduleSpec(cron_expressions=["0 6 * * MON-FRI"], intervals=[
                ScheduleIntervalSpec(every=timedelta(days=1), offset=timedelta(hours=18))],
                time_zone_name="Europe/Berlin", jitter=timedelta(minutes=5), start_at=at(2026, 12, 2),
                end_at=at(2027, 1, 1)),
            policy=SchedulePolicy(overlap=ScheduleOverlapPolicy.BUFFER_ONE, catchup_window=timedelta(hours=1),
                                  pause_on_failure=True),
            state=ScheduleState(paused=True, note="waiting for sign-off", remaining_actions=4))
        handle = await env.client.create_schedule("sales", schedule)
        desc = await handle.describe()
        got = desc.schedule
        assert got.spec == schedule.spec
        assert got.policy == schedule.policy
        assert got.state == schedule.state
        action = got.action
        assert (action.workflow, action.id, action.task_queue) == ("DailyReport", "sales", "reports")
        assert (action.execution_timeout, action.run_timeout, action.task_timeout) == (
            timedelta(hours=2), None, timedelta(seconds=20))
        # as in Temporal, arguments and memo come back as payloads; decoded_args shows them
        assert decoded_args(action) == [{"region": "us", "top": 5}]
        assert env.client.data_converter.from_payload(action.memo["owner"]) == "analytics"
        assert desc.info.next_action_times == ()  # paused


async def test_pause_stops_actions_and_unpause_resumes_without_a_burst() -> None:
    async with await WorkflowEnvironment.start_time_skipping(start_time=T0) as env:
        handle = await env.client.create_schedule("hourly", hourly())
        async with Worker(env.client, task_queue="reports", workflows=[DailyReport]):
            await env.sleep(timedelta(hours=1))
            await handle.pause(note="bad data upstream")
            desc = await handle.describe()
            assert desc.schedule.state.paused and desc.schedule.state.note == "bad data upstream"
            await env.sleep(timedelta(hours=5))
            assert await workflow_ids(env.client) == [run_id_of("report", at(2026, 12, 1, 1))]

            await handle.unpause(note="fixed")
            desc = await handle.describe()
            assert not desc.schedule.state.paused and desc.schedule.state.note == "fixed"
            assert desc.info.next_action_times[0] == at(2026, 12, 1, 7)
            await env.sleep(timedelta(hours=1))
            assert await workflow_ids(env.client) == [run_id_of("report", at(2026, 12, 1, 1)),
                                                      run_id_of("report", at(2026, 12, 1, 7))]
            await handle.pause()
            assert (await handle.describe()).schedule.state.note == "Paused via Python SDK"


async def test_trigger_starts_one_run_now_even_while_paused() -> None:
    async with await WorkflowEnvironment.start_time_skipping(start_time=T0) as env:
        handle = await env.client.create_schedule("manual", hourly("manual", paused=True))
        async with Worker(env.client, task_queue="reports", workflows=[DailyReport]):
            await env.sleep(timedelta(minutes=10))
            now = env.now().replace(microsecond=0)
            await handle.trigger(overlap=ScheduleOverlapPolicy.ALLOW_ALL)
            await env.sleep(timedelta(seconds=1))
            ids = await workflow_ids(env.client)
            assert ids == [run_id_of("manual", now)]
            assert await env.client.get_workflow_handle(ids[0]).result() == f"eu:3@{ids[0]}"
        desc = await handle.describe()
        assert desc.info.num_actions == 1 and desc.schedule.state.paused


async def test_create_with_trigger_immediately() -> None:
    async with await WorkflowEnvironment.start_time_skipping(start_time=T0) as env:
        await env.client.create_schedule("now", hourly("now", paused=True), trigger_immediately=True)
        await env.sleep(timedelta(seconds=1))
        assert await workflow_ids(env.client) == [run_id_of("now", T0.replace(microsecond=0))]


async def test_backfill_of_a_week_starts_one_run_per_missed_day() -> None:
    async with await WorkflowEnvironment.start_time_skipping(start_time=at(2026, 12, 10, 12)) as env:
        daily = Schedule(action=ScheduleActionStartWorkflow(DailyReport.run, ReportRequest("eu", 1), id="daily",
                                                            task_queue="reports"),
                         spec=ScheduleSpec(cron_expressions=["0 6 * * *"]),
                         state=ScheduleState(paused=True))
        handle = await env.client.create_schedule("daily", daily)
        await handle.backfill(ScheduleBackfill(start_at=at(2026, 12, 1), end_at=at(2026, 12, 7, 23, 59),
                                               overlap=ScheduleOverlapPolicy.ALLOW_ALL))
        async with Worker(env.client, task_queue="reports", workflows=[DailyReport]):
            await env.sleep(timedelta(seconds=1))
            assert await workflow_ids(env.client) == [run_id_of("daily", at(2026, 12, d, 6)) for d in range(1, 8)]
        assert (await handle.describe()).info.num_actions == 7
        with pytest.raises(ValueError, match="at least one"):
            await handle.backfill()


async def test_update_replaces_the_schedule_from_its_description() -> None:
    async with await WorkflowEnvironment.start_time_skipping(start_time=T0) as env:
        handle = await env.client.create_schedule("upd", hourly("upd"))
        seen: list[ScheduleUpdateInput] = []

        def every_two_hours(inp: ScheduleUpdateInput) -> ScheduleUpdate:
            seen.append(inp)
            sched = inp.description.schedule
            return ScheduleUpdate(schedule=dataclasses.replace(
                sched, spec=ScheduleSpec(intervals=[ScheduleIntervalSpec(every=timedelta(hours=2))]),
                state=ScheduleState(note="every two hours")))

        await handle.update(every_two_hours)
        assert seen[0].schedule.spec.intervals[0].every == timedelta(hours=1)
        desc = await handle.describe()
        assert desc.schedule.spec.intervals[0].every == timedelta(hours=2)
        assert desc.schedule.state.note == "every two hours"
        # the arguments, read back as payloads, were sent back unchanged
        assert decoded_args(desc.schedule.action) == [{"region": "eu", "top": 3}]
        assert desc.info.last_updated_at == T0

        async def nothing(_: ScheduleUpdateInput) -> None:  # an async updater; None changes nothing
            return None

        await handle.update(nothing)
        assert (await handle.describe()).schedule == desc.schedule

        # docs/SCHEDULES.md's form: a plain Schedule returned from a lambda
        await handle.update(lambda inp: dataclasses.replace(inp.schedule, state=ScheduleState(paused=True)))
        assert (await handle.describe()).schedule.state.paused

        async with Worker(env.client, task_queue="reports", workflows=[DailyReport]):
            await handle.unpause()
            await env.sleep(timedelta(hours=4))
            assert await workflow_ids(env.client) == [run_id_of("upd", at(2026, 12, 1, 2)),
                                                      run_id_of("upd", at(2026, 12, 1, 4))]

        with pytest.raises(TypeError, match="ScheduleUpdate, a Schedule or None"):
            await handle.update(lambda inp: "not a schedule")  # type: ignore[arg-type,return-value]


async def test_delete_then_every_call_is_not_found() -> None:
    async with await WorkflowEnvironment.start_time_skipping(start_time=T0) as env:
        handle = await env.client.create_schedule("gone", hourly("gone"))
        await handle.delete()
        for call in (handle.describe(), handle.pause(), handle.trigger(), handle.delete()):
            with pytest.raises(RPCError) as info:
                await call
            assert info.value.status == "NOT_FOUND" and "gone" in info.value.message
        await env.sleep(timedelta(hours=3))
        assert await workflow_ids(env.client) == []
        missing = env.client.get_schedule_handle("never-was")
        with pytest.raises(RPCError, match="never-was"):
            await missing.describe()


async def test_create_with_a_taken_id_raises_schedule_already_running() -> None:
    async with await WorkflowEnvironment.start_time_skipping(start_time=T0) as env:
        await env.client.create_schedule("taken", hourly("taken"))
        with pytest.raises(ScheduleAlreadyRunningError) as info:
            await env.client.create_schedule("taken", hourly("other"))
        assert info.value.status == "ALREADY_EXISTS" and info.value.schedule_id == "taken"
        desc = await env.client.get_schedule_handle("taken").describe()
        assert desc.schedule.action.id == "taken"  # unchanged


async def test_list_schedules_pages_through_every_schedule() -> None:
    async with await WorkflowEnvironment.start_time_skipping(start_time=T0) as env:
        for i in range(5):
            await env.client.create_schedule(f"s{i}", hourly(f"run{i}", paused=(i == 2)))
        entries = [e async for e in env.client.list_schedules(page_size=2)]
        assert [e.id for e in entries] == ["s0", "s1", "s2", "s3", "s4"]
        assert [e.paused for e in entries] == [False, False, True, False, False]
        assert entries[0].workflow_type == "DailyReport"
        assert list(entries[0].next_action_times) == [at(2026, 12, 1, 1), at(2026, 12, 1, 2), at(2026, 12, 1, 3)]
        assert entries[2].next_action_times == ()
        # Temporal's form: await the call, then iterate
        assert [e.id async for e in await env.client.list_schedules()] == ["s0", "s1", "s2", "s3", "s4"]
        with pytest.raises(ValueError, match="query"):
            env.client.list_schedules("WorkflowType = 'DailyReport'")


async def test_bad_input_is_refused_before_anything_is_created() -> None:
    async with await WorkflowEnvironment.start_time_skipping(start_time=T0) as env:
        with pytest.raises(ValueError, match="memo"):
            await env.client.create_schedule("x", hourly(), memo={"a": 1})
        with pytest.raises(ValueError, match="schedule id"):
            await env.client.create_schedule("", hourly())
        from spindle.common import RetryPolicy

        retrying = dataclasses.replace(hourly())
        object.__setattr__(retrying.action, "retry_policy", RetryPolicy(maximum_attempts=2))
        with pytest.raises(ValueError, match="retry_policy"):
            await env.client.create_schedule("x", retrying)
        unknown_attr = Schedule(action=ScheduleActionStartWorkflow("DailyReport", id="x", task_queue="q",
                                                                   search_attributes={"NoSuchAttribute": "v"}),
                                spec=ScheduleSpec())
        with pytest.raises(RPCError) as info:
            await env.client.create_schedule("x", unknown_attr)
        assert info.value.status == "INVALID_ARGUMENT" and "NoSuchAttribute" in info.value.message
        assert [e async for e in env.client.list_schedules()] == []


async def test_action_arguments_go_through_the_payload_codec() -> None:
    async with await WorkflowEnvironment.start_time_skipping(start_time=T0, codecs=[ZlibCodec(min_size=0)]) as env:
        handle = await env.client.create_schedule("zipped", hourly("zipped"))
        raw = await env.client.stub.DescribeSchedule(svc.DescribeScheduleRequest(namespace="default",
                                                                                 schedule_id="zipped"))
        assert raw.schedule.action.input.payloads[0].metadata["encoding"] == b"binary/zlib"  # stored encoded
        assert decoded_args((await handle.describe()).schedule.action) == [{"region": "eu", "top": 3}]
        async with Worker(env.client, task_queue="reports", workflows=[DailyReport]):
            await env.sleep(timedelta(hours=1))
            wid = run_id_of("zipped", at(2026, 12, 1, 1))
            assert await env.client.get_workflow_handle(wid).result() == f"eu:3@{wid}"


@workflow.defn
class Flaky:
    @workflow.run
    async def run(self) -> None:
        raise ApplicationError("upstream data missing", non_retryable=True)


async def test_remaining_actions_limit_the_scheduled_runs() -> None:
    async with await WorkflowEnvironment.start_time_skipping(start_time=T0) as env:
        limited = dataclasses.replace(hourly("limited"), state=ScheduleState(remaining_actions=2))
        assert limited.state.limited_actions
        handle = await env.client.create_schedule("limited", limited)
        async with Worker(env.client, task_queue="reports", workflows=[DailyReport]):
            await env.sleep(timedelta(hours=5))
        assert await workflow_ids(env.client) == [run_id_of("limited", at(2026, 12, 1, 1)),
                                                  run_id_of("limited", at(2026, 12, 1, 2))]
        desc = await handle.describe()
        assert desc.schedule.state.remaining_actions == 0 and desc.info.next_action_times == ()


async def test_pause_on_failure_pauses_the_schedule_with_a_note() -> None:
    async with await WorkflowEnvironment.start_time_skipping(start_time=T0) as env:
        handle = await env.client.create_schedule("flaky", Schedule(
            action=ScheduleActionStartWorkflow(Flaky.run, id="flaky", task_queue="reports"),
            spec=ScheduleSpec(intervals=[ScheduleIntervalSpec(every=timedelta(hours=1))]),
            policy=SchedulePolicy(pause_on_failure=True)))
        async with Worker(env.client, task_queue="reports", workflows=[Flaky]):
            await env.sleep(timedelta(hours=3, minutes=30))
        desc = await handle.describe()
        assert desc.schedule.state.paused
        assert "flaky-2026-12-01T01:00:00Z" in desc.schedule.state.note
        assert await workflow_ids(env.client) == [run_id_of("flaky", at(2026, 12, 1, 1))]


async def test_a_berlin_morning_schedule_keeps_its_local_time_across_daylight_saving() -> None:
    start = datetime(2027, 3, 26, 12, tzinfo=UTC)  # summer time starts on Sunday 28 March 2027
    async with await WorkflowEnvironment.start_time_skipping(start_time=start) as env:
        handle = await env.client.create_schedule("berlin", Schedule(
            action=ScheduleActionStartWorkflow(DailyReport.run, ReportRequest("eu", 1), id="berlin",
                                               task_queue="reports"),
            spec=ScheduleSpec(cron_expressions=["30 2 * * *"], time_zone_name="Europe/Berlin")))
        desc = await handle.describe()
        # 02:30 CET = 01:30 UTC; 28 March has no 02:30 (it runs once, at 03:00 CEST = 01:00 UTC); then 00:30 UTC
        assert list(desc.info.next_action_times[:4]) == [at(2027, 3, 27, 1, 30), at(2027, 3, 28, 1, 0),
                                                        at(2027, 3, 29, 0, 30), at(2027, 3, 30, 0, 30)]
        async with Worker(env.client, task_queue="reports", workflows=[DailyReport]):
            await env.sleep(timedelta(days=3))
        assert await workflow_ids(env.client) == [run_id_of("berlin", at(2027, 3, 27, 1, 30)),
                                                  run_id_of("berlin", at(2027, 3, 28, 1, 0)),
                                                  run_id_of("berlin", at(2027, 3, 29, 0, 30))]


async def test_update_reads_again_when_the_schedule_changed_meanwhile() -> None:
    async with await WorkflowEnvironment.start_time_skipping(start_time=T0) as env:
        handle = await env.client.create_schedule("raced", hourly("raced"))
        other = env.client.get_schedule_handle("raced")
        seen_notes: list[str] = []

        async def add_jitter(inp: ScheduleUpdateInput) -> ScheduleUpdate:
            seen_notes.append(inp.schedule.state.note)
            if len(seen_notes) == 1:
                await other.pause(note="someone else")  # changes the schedule between read and write
            spec = dataclasses.replace(inp.schedule.spec, jitter=timedelta(minutes=5))
            return ScheduleUpdate(dataclasses.replace(inp.schedule, spec=spec))

        await handle.update(add_jitter)
        assert seen_notes == ["", "someone else"]  # called again with what the other writer left
        desc = await handle.describe()
        assert desc.schedule.spec.jitter == timedelta(minutes=5)
        assert desc.schedule.state.paused and desc.schedule.state.note == "someone else"  # not lost


async def test_wrong_types_are_refused_naming_the_argument() -> None:
    async with await WorkflowEnvironment.start_time_skipping(start_time=T0) as env:
        with pytest.raises(TypeError, match="schedule must be a spindle.client.Schedule, got dict"):
            await env.client.create_schedule("x", {"action": None})  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="ScheduleBackfill"):
            await env.client.create_schedule("x", hourly(), backfill=[(T0, T0)])  # type: ignore[list-item]
        assert [e async for e in env.client.list_schedules()] == []  # nothing was created
        handle = await env.client.create_schedule("x", hourly())
        with pytest.raises(TypeError, match="note must be a str"):
            await handle.pause(note=42)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="overlap must be a ScheduleOverlapPolicy"):
            await handle.trigger(overlap="ALLOW_ALL")  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="page_size"):
            env.client.list_schedules(page_size=0)
        assert not (await handle.describe()).schedule.state.paused
