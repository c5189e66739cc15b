"""Schedule definitions written for Temporal, with ``temporalio`` renamed to ``spindle``.

Each test builds what a Temporal sample (``schedules/start_schedule.py``,
``backfill_schedule.py``) or Temporal's docs build, imported from ``spindle.client``.
Only the values are checked here; creating schedules on a server is the client's part.
"""

from __future__ import annotations

import dataclasses

from datetime import datetime, timedelta, timezone

from spindle import workflow
from spindle.client import (
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleBackfill,
    ScheduleIntervalSpec,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleSpec,
    ScheduleState,
)


@workflow.defn
class YourSchedulesWorkflow:
    @workflow.run
    async def run(self, name: str) -> str:
        return f"Hello, {name}!"


def test_start_schedule_sample_builds() -> None:
    schedule = Schedule(
        action=ScheduleActionStartWorkflow(
            YourSchedulesWorkflow.run,
            "my schedule arg",
            id="schedules-workflow-id",
            task_queue="schedules-task-queue",
        ),
        spec=ScheduleSpec(
            intervals=[ScheduleIntervalSpec(every=timedelta(minutes=2))]
        ),
        state=ScheduleState(note="Here's a note on my Schedule."),
    )
    assert schedule.action.workflow == "YourSchedulesWorkflow"
    assert schedule.action.args == ("my schedule arg",)
    assert schedule.spec.intervals[0].every == timedelta(minutes=2)
    assert schedule.state.note == "Here's a note on my Schedule." and not schedule.state.paused
    assert schedule.policy.overlap == ScheduleOverlapPolicy.SKIP
    assert schedule.policy.catchup_window == timedelta(days=365)


def test_backfill_sample_builds_with_naive_utc_times() -> None:
    now = datetime(2026, 3, 1, 12, 0)  # the sample passes datetime.utcnow()
    backfill = ScheduleBackfill(
        start_at=now - timedelta(minutes=10),
        end_at=now - timedelta(minutes=9),
        overlap=ScheduleOverlapPolicy.ALLOW_ALL,
    )
    assert backfill.start_at == datetime(2026, 3, 1, 11, 50, tzinfo=timezone.utc)
    assert backfill.overlap is ScheduleOverlapPolicy.ALLOW_ALL


def test_docs_style_spec_with_cron_offset_jitter_and_bounds() -> None:
    spec = ScheduleSpec(
        cron_expressions=["0 12 * * MON-FRI"],
        intervals=[ScheduleIntervalSpec(every=timedelta(hours=1), offset=timedelta(minutes=15))],
        jitter=timedelta(minutes=5),
        time_zone_name="US/Central",
        start_at=datetime(2026, 1, 1, tzinfo=timezone.utc),
        end_at=datetime(2026, 12, 31, tzinfo=timezone.utc),
    )
    policy = SchedulePolicy(overlap=ScheduleOverlapPolicy.BUFFER_ONE, catchup_window=timedelta(minutes=10),
                            pause_on_failure=True)
    assert spec.time_zone_name == "US/Central" and policy.pause_on_failure


def test_args_keyword_and_string_workflow_name() -> None:
    action = ScheduleActionStartWorkflow(
        "YourSchedulesWorkflow", args=["a"], id="wf", task_queue="tq",
        execution_timeout=timedelta(hours=1))
    assert (action.workflow, action.args, action.execution_timeout) == ("YourSchedulesWorkflow", ("a",),
                                                                        timedelta(hours=1))


def test_update_by_mutating_as_temporals_sample_does() -> None:
    """Temporal's update sample assigns ``action.args``; Spindle's values are mutable as Temporal's are."""
    action = ScheduleActionStartWorkflow(YourSchedulesWorkflow.run, "old", id="wf", task_queue="tq")
    action.args = ["my new schedule arg"]
    assert action.args == ["my new schedule arg"] and action.workflow == "YourSchedulesWorkflow"
    updated = dataclasses.replace(action, args=["replaced"])  # replacing still works too
    assert updated.args == ("replaced",)
