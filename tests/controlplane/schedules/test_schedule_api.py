"""Schedules on the wire (issue 17): create, describe, update, patch, delete, list; bad input refused by field.

Run against the embedded control plane on a virtual clock (no actions fire here: the
clock does not reach them). Firing is tested in test_schedule_firing.py.
"""

from __future__ import annotations

import sqlite3

from collections.abc import AsyncIterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import grpc
import pytest

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.controlplane import embedded

T0 = datetime(2026, 12, 1, 5, 30, tzinfo=timezone.utc)
T0_MS = int(T0.timestamp() * 1000)
HOUR_MS = 3_600_000


def ms(t: datetime) -> int:
    return int(t.timestamp() * 1000)


def daily(**spec: Any) -> pb.Schedule:
    return pb.Schedule(spec=pb.ScheduleSpec(cron_expressions=["0 6 * * *"], **spec),
                       action=pb.ScheduleActionStartWorkflow(workflow_id="daily-sales", workflow_type="DailySales",
                                                             task_queue="reports"))


@pytest.fixture
async def cp(tmp_path: Path) -> AsyncIterator[Any]:
    plane = await embedded.start(str(tmp_path / "s.db"), clock=embedded.VirtualClock(T0_MS))
    try:
        yield plane
    finally:
        await plane.stop()


async def expect(call: Any, code: grpc.StatusCode, *words: str) -> str:
    with pytest.raises(grpc.aio.AioRpcError) as ei:
        await call
    assert ei.value.code() == code, ei.value.details()
    for w in words:
        assert w in (ei.value.details() or ""), ei.value.details()
    return ei.value.details() or ""


def timer_rows(path: str) -> list[tuple[int, str]]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return [(r[0], r[1]) for r in conn.execute("SELECT fire_time_ms, data FROM timer_tasks ORDER BY fire_time_ms")
                if '"sched"' in r[1]]
    finally:
        conn.close()


async def test_create_describe_list_and_delete(cp: Any, tmp_path: Path) -> None:
    stub = cp.stub
    created = await stub.CreateSchedule(svc.CreateScheduleRequest(namespace="default", schedule_id="daily-sales",
                                                                  schedule=daily(), request_id="r1"))
    assert created.conflict_token
    d = await stub.DescribeSchedule(svc.DescribeScheduleRequest(namespace="default", schedule_id="daily-sales"))
    assert list(d.schedule.spec.cron_expressions) == ["0 6 * * *"]
    assert d.schedule.action.workflow_type == "DailySales"
    assert d.info.create_time_ms == T0_MS and d.info.action_count == 0
    day = 86_400_000
    first = ms(datetime(2026, 12, 1, 6, tzinfo=timezone.utc))
    assert list(d.info.future_action_times_ms) == [first + i * day for i in range(10)]
    # its next action is a durable timer row, written with it
    assert [f for f, _ in timer_rows(str(tmp_path / "s.db"))] == [first]
    # a retried create (same request id) succeeds again; another one is refused
    again = await stub.CreateSchedule(svc.CreateScheduleRequest(namespace="default", schedule_id="daily-sales",
                                                                schedule=daily(), request_id="r1"))
    assert again.conflict_token == created.conflict_token
    await expect(stub.CreateSchedule(svc.CreateScheduleRequest(namespace="default", schedule_id="daily-sales",
                                                               schedule=daily(), request_id="r2")),
                 grpc.StatusCode.ALREADY_EXISTS, "daily-sales")
    for sid in ("b-sched", "a-sched"):
        await stub.CreateSchedule(svc.CreateScheduleRequest(namespace="default", schedule_id=sid, schedule=daily()))
    page = await stub.ListSchedules(svc.ListSchedulesRequest(namespace="default", maximum_page_size=2))
    assert [e.schedule_id for e in page.schedules] == ["a-sched", "b-sched"] and page.next_page_token
    assert page.schedules[0].workflow_type == "DailySales" and not page.schedules[0].paused
    assert list(page.schedules[0].future_action_times_ms) == [first, first + day, first + 2 * day]
    rest = await stub.ListSchedules(svc.ListSchedulesRequest(namespace="default", maximum_page_size=2,
                                                             next_page_token=page.next_page_token))
    assert [e.schedule_id for e in rest.schedules] == ["daily-sales"]
    await stub.DeleteSchedule(svc.DeleteScheduleRequest(namespace="default", schedule_id="daily-sales"))
    await expect(stub.DescribeSchedule(svc.DescribeScheduleRequest(namespace="default", schedule_id="daily-sales")),
                 grpc.StatusCode.NOT_FOUND, "daily-sales")
    await expect(stub.DeleteSchedule(svc.DeleteScheduleRequest(namespace="default", schedule_id="daily-sales")),
                 grpc.StatusCode.NOT_FOUND)
    assert [f for f, _ in timer_rows(str(tmp_path / "s.db"))] == [first, first]  # the two others' timers only


async def test_pause_unpause_update_with_conflict_token(cp: Any, tmp_path: Path) -> None:
    stub = cp.stub
    req = svc.DescribeScheduleRequest(namespace="default", schedule_id="s")
    await stub.CreateSchedule(svc.CreateScheduleRequest(namespace="default", schedule_id="s", schedule=daily()))
    await stub.PatchSchedule(svc.PatchScheduleRequest(namespace="default", schedule_id="s",
                                                      patch=svc.SchedulePatch(pause="holiday")))
    d = await stub.DescribeSchedule(req)
    assert d.schedule.state.paused and d.schedule.state.notes == "holiday"
    assert list(d.info.future_action_times_ms) == []
    assert timer_rows(str(tmp_path / "s.db")) == []  # a paused schedule has no timer
    await stub.PatchSchedule(svc.PatchScheduleRequest(namespace="default", schedule_id="s",
                                                      patch=svc.SchedulePatch(unpause="back")))
    d = await stub.DescribeSchedule(req)
    assert not d.schedule.state.paused and d.schedule.state.notes == "back"
    assert len(timer_rows(str(tmp_path / "s.db"))) == 1
    # update: a new spec, under the token of the last describe
    new = daily()
    del new.spec.cron_expressions[:]
    new.spec.intervals.add(every_ms=HOUR_MS, offset_ms=15 * 60_000)
    await stub.UpdateSchedule(svc.UpdateScheduleRequest(namespace="default", schedule_id="s", schedule=new,
                                                        conflict_token=d.conflict_token))
    d2 = await stub.DescribeSchedule(req)
    assert d2.info.future_action_times_ms[0] == T0_MS - 30 * 60_000 + HOUR_MS + 15 * 60_000  # 06:15
    assert d2.info.update_time_ms == T0_MS
    await expect(stub.UpdateSchedule(svc.UpdateScheduleRequest(namespace="default", schedule_id="s", schedule=daily(),
                                                               conflict_token=d.conflict_token)),
                 grpc.StatusCode.FAILED_PRECONDITION, "conflict_token")
    assert [f for f, _ in timer_rows(str(tmp_path / "s.db"))] == [d2.info.future_action_times_ms[0]]


@pytest.mark.parametrize("mutate, words", [
    (lambda s: s.spec.cron_expressions.append("0 25 * * *"), ["schedule.spec.cron_expressions[1]", "hour"]),
    (lambda s: s.spec.cron_expressions.append("@every 5m"), ["schedule.spec.cron_expressions[1]", "alias"]),
    (lambda s: s.spec.intervals.add(every_ms=500), ["schedule.spec.intervals[0]", "1 second"]),
    (lambda s: s.spec.intervals.add(every_ms=60_000, offset_ms=60_000), ["schedule.spec.intervals[0]", "shorter"]),
    (lambda s: s.spec.intervals.add(every_ms=2**62), ["schedule.spec.intervals[0].every_ms", "100 years"]),
    (lambda s: setattr(s.spec, "time_zone_name", "Europe/Berln"), ["schedule.spec.time_zone_name", "Europe/Berln"]),
    (lambda s: setattr(s.spec, "jitter_ms", -1), ["schedule.spec.jitter_ms"]),
    (lambda s: (setattr(s.spec, "start_at_ms", 2000), setattr(s.spec, "end_at_ms", 1000)),
     ["schedule.spec.end_at_ms", "before"]),
    (lambda s: setattr(s.action, "workflow_id", ""), ["schedule.action.workflow_id", "required"]),
    (lambda s: setattr(s.action, "task_queue", ""), ["schedule.action.task_queue", "required"]),
    (lambda s: setattr(s.action, "run_timeout_ms", -5), ["schedule.action.run_timeout_ms"]),
    (lambda s: setattr(s.policies, "overlap_policy", 42), ["schedule.policies.overlap_policy", "42"]),
    (lambda s: setattr(s.policies, "catchup_window_ms", -1), ["schedule.policies.catchup_window_ms"]),
    (lambda s: setattr(s.state, "remaining_actions", -1), ["schedule.state.remaining_actions"]),
    (lambda s: s.action.search_attributes.indexed_fields["NoSuchAttr"].CopyFrom(
        pb.Payload(metadata={"encoding": b"json/plain"}, data=b'"x"')), ["schedule.action.search_attributes", "NoSuchAttr"]),
])
async def test_bad_schedules_are_refused_naming_the_field_and_change_nothing(cp: Any, tmp_path: Path, mutate: Any,
                                                                             words: list[str]) -> None:
    bad = daily()
    mutate(bad)
    await expect(cp.stub.CreateSchedule(svc.CreateScheduleRequest(namespace="default", schedule_id="bad", schedule=bad)),
                 grpc.StatusCode.INVALID_ARGUMENT, *words)
    await expect(cp.stub.DescribeSchedule(svc.DescribeScheduleRequest(namespace="default", schedule_id="bad")),
                 grpc.StatusCode.NOT_FOUND)
    await cp.stub.CreateSchedule(svc.CreateScheduleRequest(namespace="default", schedule_id="good", schedule=daily()))
    before = await cp.stub.DescribeSchedule(svc.DescribeScheduleRequest(namespace="default", schedule_id="good"))
    await expect(cp.stub.UpdateSchedule(svc.UpdateScheduleRequest(namespace="default", schedule_id="good", schedule=bad)),
                 grpc.StatusCode.INVALID_ARGUMENT, *words)
    after = await cp.stub.DescribeSchedule(svc.DescribeScheduleRequest(namespace="default", schedule_id="good"))
    assert after == before


async def test_bad_requests_name_the_field(cp: Any) -> None:
    stub = cp.stub
    await expect(stub.CreateSchedule(svc.CreateScheduleRequest(namespace="default", schedule=daily())),
                 grpc.StatusCode.INVALID_ARGUMENT, "schedule_id: required")
    await expect(stub.CreateSchedule(svc.CreateScheduleRequest(namespace="default", schedule_id="x")),
                 grpc.StatusCode.INVALID_ARGUMENT, "schedule: required")
    await expect(stub.CreateSchedule(svc.CreateScheduleRequest(namespace="default", schedule_id="x",
                                                               schedule=pb.Schedule(spec=daily().spec))),
                 grpc.StatusCode.INVALID_ARGUMENT, "schedule.action: required")
    await stub.CreateSchedule(svc.CreateScheduleRequest(namespace="default", schedule_id="s", schedule=daily()))
    patch = svc.PatchScheduleRequest(namespace="default", schedule_id="s")
    patch.patch.backfill_request.add(start_time_ms=T0_MS, end_time_ms=T0_MS - 1)
    await expect(stub.PatchSchedule(patch), grpc.StatusCode.INVALID_ARGUMENT, "patch.backfill_request[0].end_time_ms")
    both = svc.PatchScheduleRequest(namespace="default", schedule_id="s", patch=svc.SchedulePatch(pause="a", unpause="b"))
    await expect(stub.PatchSchedule(both), grpc.StatusCode.INVALID_ARGUMENT, "patch.unpause")
    trig = svc.PatchScheduleRequest(namespace="default", schedule_id="s", patch=svc.SchedulePatch(
        trigger_immediately=svc.ScheduleTrigger(overlap_policy=9)))
    await expect(stub.PatchSchedule(trig), grpc.StatusCode.INVALID_ARGUMENT, "patch.trigger_immediately.overlap_policy")
    huge = svc.PatchScheduleRequest(namespace="default", schedule_id="s")
    huge.patch.backfill_request.add(start_time_ms=0, end_time_ms=T0_MS)  # 20,000 daily actions
    await expect(stub.PatchSchedule(huge), grpc.StatusCode.RESOURCE_EXHAUSTED, "patch.backfill_request", "10000",
                 "namespace_max_buffered_actions")
    await expect(stub.PatchSchedule(svc.PatchScheduleRequest(namespace="default", schedule_id="nope",
                                                             patch=svc.SchedulePatch(pause="x"))),
                 grpc.StatusCode.NOT_FOUND, "nope")
    await expect(stub.ListSchedules(svc.ListSchedulesRequest(namespace="default", maximum_page_size=-1)),
                 grpc.StatusCode.INVALID_ARGUMENT, "maximum_page_size")
    d = await stub.DescribeSchedule(svc.DescribeScheduleRequest(namespace="default", schedule_id="s"))
    assert not d.schedule.state.paused  # nothing of the refused patches happened


async def test_scheduled_by_id_and_start_time_are_system_search_attributes(cp: Any) -> None:
    """Every namespace has them (a start may carry them, a query may use them); none may register them."""
    stub = cp.stub
    for name in ("ScheduledById", "ScheduledStartTime"):
        await expect(stub.AddSearchAttributes(svc.AddSearchAttributesRequest(
            namespace="default", search_attributes={name: svc.SEARCH_ATTRIBUTE_TYPE_KEYWORD})),
            grpc.StatusCode.INVALID_ARGUMENT, name, "system search attribute")
    await stub.ListWorkflowExecutions(svc.ListWorkflowExecutionsRequest(
        namespace="default", query="ScheduledById = 'x' AND ScheduledStartTime > '2026-01-01T00:00:00Z'"))
    await expect(stub.ListWorkflowExecutions(svc.ListWorkflowExecutionsRequest(
        namespace="default", query="ScheduledStartTime = 'not a time'")), grpc.StatusCode.INVALID_ARGUMENT,
        "ScheduledStartTime")
