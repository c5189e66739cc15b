"""Schedule updates that assign fields in place, as Temporal's schedules sample does.

Temporal's schedule classes are plain (not frozen) dataclasses: an ``update`` callback
assigns ``input.description.schedule.action.args`` and returns the same schedule. Spindle's
accept that, and check the mutated schedule again when it is sent: a bad value gets the
same error as the constructor gives, and the schedule on the server is left unchanged.
"""

from __future__ import annotations

import asyncio

from datetime import datetime, timedelta, timezone

import pytest

from spindle import workflow
from spindle.client import (
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleBackfill,
    ScheduleIntervalSpec,
    ScheduleOverlapPolicy,
    ScheduleSpec,
    ScheduleState,
    ScheduleUpdate,
    ScheduleUpdateInput,
    decoded_args,
)
from spindle.testing import WorkflowEnvironment
from spindle.worker import Worker

T0 = datetime(2026, 12, 1, 0, 0, 30, tzinfo=timezone.utc)


@workflow.defn
class Greeter:
    @workflow.run
    async def run(self, name: str) -> str:
        return f"Hello, {name}!"


def every_hour(schedule_id: str) -> Schedule:
    return Schedule(
        action=ScheduleActionStartWorkflow(Greeter.run, "my schedule arg", id=schedule_id, task_queue="greet"),
        spec=ScheduleSpec(intervals=[ScheduleIntervalSpec(every=timedelta(hours=1))]),
        state=ScheduleState(note="Here's a note on my Schedule."))


async def test_an_updater_that_assigns_action_args_changes_what_the_next_run_gets() -> None:
    async with await WorkflowEnvironment.start_time_skipping(start_time=T0) as env:
        handle = await env.client.create_schedule("greet", every_hour("greet"))

        def update_schedule_simple(input: ScheduleUpdateInput) -> ScheduleUpdate:
            schedule_action = input.description.schedule.action
            if isinstance(schedule_action, ScheduleActionStartWorkflow):
                schedule_action.args = ["my new schedule arg"]
            return ScheduleUpdate(schedule=input.description.schedule)

        await handle.update(update_schedule_simple)
        desc = await handle.describe()
        assert decoded_args(desc.schedule.action) == ["my new schedule arg"]
        async with Worker(env.client, task_queue="greet", workflows=[Greeter]):
            await env.sleep(timedelta(hours=1))
            run = env.client.get_workflow_handle("greet-2026-12-01T01:00:00Z")
            assert await run.result() == "Hello, my new schedule arg!"


async def test_an_updater_may_assign_spec_policy_and_state_fields() -> None:
    async with await WorkflowEnvironment.start_time_skipping(start_time=T0) as env:
        handle = await env.client.create_schedule("multi", every_hour("multi"))

        def mutate(input: ScheduleUpdateInput) -> ScheduleUpdate:
            schedule = input.description.schedule
            schedule.spec.intervals = [ScheduleIntervalSpec(every=timedelta(hours=2))]
            schedule.spec.jitter = timedelta(seconds=10)
            schedule.policy.overlap = ScheduleOverlapPolicy.ALLOW_ALL
            schedule.state.note = "changed in place"
            schedule.state.remaining_actions = 3
            return ScheduleUpdate(schedule=schedule)

        await handle.update(mutate)
        after = (await handle.describe()).schedule
        assert after.spec.intervals[0].every == timedelta(hours=2) and after.spec.jitter == timedelta(seconds=10)
        assert after.policy.overlap is ScheduleOverlapPolicy.ALLOW_ALL
        assert (after.state.note, after.state.remaining_actions) == ("changed in place", 3)


def _bad_cron(s: Schedule) -> None:
    s.spec.cron_expressions = ["61 * * * *"]


def _bad_task_queue(s: Schedule) -> None:
    s.action.task_queue = ""


def _bad_remaining(s: Schedule) -> None:
    s.state.remaining_actions = -1


def _bad_args(s: Schedule) -> None:
    s.action.args = "one string"  # type: ignore[assignment]


def _bad_interval(s: Schedule) -> None:
    s.spec.intervals[0].every = timedelta(milliseconds=10)  # type: ignore[index]


def _bad_window(s: Schedule) -> None:
    s.policy.catchup_window = timedelta(0)


def _bad_spec_type(s: Schedule) -> None:
    s.spec = "0 * * * *"  # type: ignore[assignment]


@pytest.mark.parametrize("mutate, error, match", [
    (_bad_cron, ValueError, "minute"),
    (_bad_task_queue, ValueError, "ScheduleActionStartWorkflow.task_queue must not be empty"),
    (_bad_remaining, ValueError, "ScheduleState.remaining_actions must not be negative"),
    (_bad_args, TypeError, "ScheduleActionStartWorkflow.args must be a list or tuple"),
    (_bad_interval, ValueError, "ScheduleIntervalSpec.every must be at least 1 second"),
    (_bad_window, ValueError, "SchedulePolicy.catchup_window must be positive"),
    (_bad_spec_type, TypeError, "Schedule.spec must be a ScheduleSpec"),
])
async def test_a_bad_value_assigned_by_the_updater_is_refused_and_changes_nothing(
        mutate: object, error: type[Exception], match: str) -> None:
    async with await WorkflowEnvironment.start_time_skipping(start_time=T0) as env:
        handle = await env.client.create_schedule("bad", every_hour("bad"))
        before = (await handle.describe()).schedule

        def updater(input: ScheduleUpdateInput) -> ScheduleUpdate:
            mutate(input.description.schedule)  # type: ignore[operator]
            return ScheduleUpdate(schedule=input.description.schedule)

        with pytest.raises(error, match=match):
            await handle.update(updater)
        assert (await handle.describe()).schedule == before


async def test_a_schedule_mutated_to_a_bad_value_before_create_is_not_created() -> None:
    async with await WorkflowEnvironment.start_time_skipping(start_time=T0) as env:
        schedule = every_hour("never")
        schedule.spec.time_zone_name = "Mars/Olympus"
        with pytest.raises(ValueError, match="ScheduleSpec.time_zone_name"):
            await env.client.create_schedule("never", schedule)
        assert [s.id async for s in await env.client.list_schedules()] == []


async def test_a_backfill_mutated_to_end_before_it_starts_is_refused() -> None:
    async with await WorkflowEnvironment.start_time_skipping(start_time=T0) as env:
        handle = await env.client.create_schedule("fill", every_hour("fill"))
        backfill = ScheduleBackfill(start_at=T0 - timedelta(days=1), end_at=T0)
        backfill.end_at = T0 - timedelta(days=2)
        with pytest.raises(ValueError, match="ScheduleBackfill.end_at"):
            await handle.backfill(backfill)
        await asyncio.sleep(0.2)
        assert (await handle.describe()).info.num_actions == 0
