"""SDK schedule types <-> wire messages (spindle.client._schedule_wire): a round trip keeps every value."""

from __future__ import annotations

import dataclasses

from datetime import datetime, timedelta, timezone

import pytest

from spindle import workflow
from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
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
from spindle.client._schedule_wire import (
    backfill_to_proto,
    decoded_args,
    list_entry_from_proto,
    schedule_from_proto,
    schedule_to_proto,
)
from spindle.common import SearchAttributeKey, SearchAttributePair, TypedSearchAttributes
from spindle.converter import DataConverter

UTC = timezone.utc
CONV = DataConverter.default
DEC1_MS = 1_796_083_200_000  # 2026-12-01T00:00:00Z


@dataclasses.dataclass
class Params:
    region: str
    days: list[int]


@workflow.defn(name="daily-sales")
class DailySales:
    @workflow.run
    async def run(self, p: Params, limit: int) -> None: ...


def full_schedule() -> Schedule:
    return Schedule(
        action=ScheduleActionStartWorkflow(
            DailySales.run, Params("eu", [1, 2]), 7, id="sales", task_queue="reports",
            execution_timeout=timedelta(hours=1), run_timeout=timedelta(minutes=30), task_timeout=timedelta(seconds=9),
            memo={"team": "bi"},
            search_attributes=TypedSearchAttributes([SearchAttributePair(SearchAttributeKey.for_keyword("Team"),
                                                                         "bi")])),
        spec=ScheduleSpec(cron_expressions=["@daily", "30 2 * * 1-5"],
                          intervals=[ScheduleIntervalSpec(every=timedelta(hours=4), offset=timedelta(minutes=15))],
                          time_zone_name="Europe/Berlin", jitter=timedelta(seconds=90),
                          start_at=datetime(2026, 1, 1, tzinfo=UTC), end_at=datetime(2027, 1, 1, 12, tzinfo=UTC)),
        policy=SchedulePolicy(overlap=ScheduleOverlapPolicy.TERMINATE_OTHER, catchup_window=timedelta(minutes=10),
                              pause_on_failure=True),
        state=ScheduleState(paused=True, note="why", remaining_actions=0))


def test_a_schedule_survives_the_round_trip_through_the_wire() -> None:
    original = full_schedule()
    wire = schedule_to_proto(original, CONV)
    again = pb.Schedule()
    again.ParseFromString(wire.SerializeToString())
    back = schedule_from_proto(again)
    assert back.spec == original.spec
    assert back.policy == original.policy
    assert back.state == original.state  # remaining_actions=0 is kept apart from "no limit"
    a = back.action
    assert (a.workflow, a.id, a.task_queue) == ("daily-sales", "sales", "reports")
    assert (a.execution_timeout, a.run_timeout, a.task_timeout) == (
        timedelta(hours=1), timedelta(minutes=30), timedelta(seconds=9))
    assert decoded_args(a) == [{"region": "eu", "days": [1, 2]}, 7]
    assert CONV.from_payload(a.memo["team"]) == "bi"
    assert a.search_attributes.get(SearchAttributeKey.for_keyword("Team")) == "bi"
    # payloads read back are sent again byte for byte (what handle.update relies on)
    assert schedule_to_proto(back, CONV) == wire


def test_wire_defaults_read_as_temporals_defaults() -> None:
    bare = pb.Schedule(action=pb.ScheduleActionStartWorkflow(workflow_id="w", workflow_type="T", task_queue="q"))
    s = schedule_from_proto(bare)
    assert s.policy == SchedulePolicy()  # UNSPECIFIED overlap = SKIP, 0 catch-up = one year
    assert s.state == ScheduleState()  # no remaining_actions = no limit
    assert s.spec == ScheduleSpec()  # "" zone = UTC
    assert s.action.args == () and s.action.memo is None and s.action.search_attributes is None
    wire = schedule_to_proto(s, CONV)
    assert not wire.state.HasField("remaining_actions")
    assert not wire.spec.HasField("start_at_ms") and not wire.spec.HasField("end_at_ms")


def test_backfill_and_list_entry_conversion() -> None:
    b = backfill_to_proto(ScheduleBackfill(start_at=datetime(2026, 12, 1), end_at=datetime(2026, 12, 2, tzinfo=UTC)))
    assert (b.start_time_ms, b.end_time_ms, b.overlap_policy) == (DEC1_MS, DEC1_MS + 86_400_000, 0)
    b = backfill_to_proto(ScheduleBackfill(start_at=datetime(2026, 12, 1), end_at=datetime(2026, 12, 1),
                                           overlap=ScheduleOverlapPolicy.BUFFER_ALL))
    assert b.overlap_policy == pb.SCHEDULE_OVERLAP_POLICY_BUFFER_ALL
    with pytest.raises(TypeError, match="ScheduleBackfill"):
        backfill_to_proto((1, 2))  # type: ignore[arg-type]
    entry = list_entry_from_proto(svc.ScheduleListEntry(
        schedule_id="s", paused=True, notes="n", workflow_type="T", future_action_times_ms=[DEC1_MS],
        recent_actions=[pb.ScheduleActionResult(schedule_time_ms=1000, actual_time_ms=2000, workflow_id="w", run_id="r")]))
    assert (entry.id, entry.paused, entry.note, entry.workflow_type) == ("s", True, "n", "T")
    assert entry.next_action_times == (datetime(2026, 12, 1, tzinfo=UTC),)
    r = entry.recent_actions[0]
    assert (r.scheduled_at, r.started_at, r.workflow_id, r.run_id) == (
        datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC), datetime(1970, 1, 1, 0, 0, 2, tzinfo=UTC), "w", "r")


def test_a_retry_policy_is_refused_rather_than_dropped() -> None:
    from spindle.common import RetryPolicy

    s = full_schedule()
    object.__setattr__(s.action, "retry_policy", RetryPolicy())
    with pytest.raises(ValueError, match="retry_policy"):
        schedule_to_proto(s, CONV)


async def test_a_context_binding_encryption_codec_refuses_action_arguments() -> None:
    pytest.importorskip("cryptography")
    from spindle.client import Client
    from spindle.converter import EncryptionCodec

    client = Client(stub=None, codecs=[EncryptionCodec(b"k" * 32)])
    with pytest.raises(ValueError, match="bind_context=False"):
        await client.create_schedule("s", full_schedule())
