"""The public schedule types (issue 17, docs/SCHEDULES.md): shapes, defaults and checks."""

from __future__ import annotations

import dataclasses

from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from hypothesis import given, settings
from hypothesis import strategies as st

import spindle
import spindle.client

from spindle import workflow
from spindle.api._schedule_rules import CRON_ALIASES, check_cron_expression, check_time_zone_name
from spindle.client import (
    Schedule,
    ScheduleActionResult,
    ScheduleActionStartWorkflow,
    ScheduleBackfill,
    ScheduleDescription,
    ScheduleInfo,
    ScheduleIntervalSpec,
    ScheduleListEntry,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleSpec,
    ScheduleState,
)
from spindle.common import RetryPolicy, SearchAttributeKey, SearchAttributePair, TypedSearchAttributes
from spindle.controlplane import schedules as server_schedules

U = timezone.utc
H = timedelta(hours=1)


@workflow.defn
class DailySales:
    @workflow.run
    async def run(self, region: str) -> str:
        return region


@workflow.defn(name="approve-order")
async def approval(order_id: str, amount: int) -> str:
    return order_id


async def not_a_workflow(x: int) -> int:
    return x


def action(**kw: object) -> ScheduleActionStartWorkflow:
    return ScheduleActionStartWorkflow(DailySales.run, "eu", **{"id": "daily-sales", "task_queue": "reports", **kw})


# ------------------------------------------------------------------------------ shapes and defaults

def test_design_example_builds() -> None:
    schedule = Schedule(
        action=ScheduleActionStartWorkflow(DailySales.run, "eu", id="daily-sales", task_queue="reports"),
        spec=ScheduleSpec(cron_expressions=["0 6 * * *"],
                          intervals=[ScheduleIntervalSpec(every=timedelta(hours=1))],
                          time_zone_name="Europe/Berlin", jitter=timedelta(0),
                          start_at=None, end_at=None),
        policy=SchedulePolicy(overlap=ScheduleOverlapPolicy.SKIP,
                              catchup_window=timedelta(days=1), pause_on_failure=False),
        state=ScheduleState(paused=False, note="", remaining_actions=None))
    assert schedule.action.workflow == "DailySales" and schedule.action.args == ("eu",)
    assert schedule.action.id == "daily-sales" and schedule.action.task_queue == "reports"
    assert schedule.spec.cron_expressions == ("0 6 * * *",)
    assert schedule.spec.intervals == (ScheduleIntervalSpec(every=H, offset=timedelta(0)),)
    assert schedule.policy.catchup_window == timedelta(days=1)


def test_public_names_are_exported_from_spindle_and_spindle_client() -> None:
    names = ["Schedule", "ScheduleActionStartWorkflow", "ScheduleSpec", "ScheduleIntervalSpec", "SchedulePolicy",
             "ScheduleOverlapPolicy", "ScheduleState", "ScheduleBackfill", "ScheduleDescription", "ScheduleInfo",
             "ScheduleActionResult", "ScheduleListEntry"]
    for name in names:
        assert name in spindle.__all__ and name in spindle.client.__all__
        assert getattr(spindle, name) is getattr(spindle.client, name)
    assert "ScheduleActionExecutionStartWorkflow" in spindle.client.__all__


def test_defaults() -> None:
    spec = ScheduleSpec()
    assert (spec.cron_expressions, spec.intervals, spec.time_zone_name, spec.jitter, spec.start_at, spec.end_at) == (
        (), (), "UTC", timedelta(0), None, None)
    # Temporal's defaults: skip overlaps, catch up on actions due up to a year ago.
    assert SchedulePolicy() == SchedulePolicy(overlap=ScheduleOverlapPolicy.SKIP, catchup_window=timedelta(days=365),
                                              pause_on_failure=False)
    state = ScheduleState()
    assert (state.paused, state.note, state.remaining_actions, state.limited_actions) == (False, "", None, False)
    assert ScheduleState(remaining_actions=3).limited_actions and ScheduleState(remaining_actions=0).limited_actions
    a = action()
    assert (a.execution_timeout, a.run_timeout, a.task_timeout, a.retry_policy, a.memo, a.search_attributes) == (
        None, None, None, None, None, None)
    s = Schedule(action=a, spec=spec)
    assert s.policy == SchedulePolicy() and s.state == ScheduleState()
    assert ScheduleBackfill(U_2026(1), U_2026(2)).overlap is None
    assert ScheduleIntervalSpec(H).offset == timedelta(0)


def U_2026(day: int, hour: int = 0) -> datetime:
    return datetime(2026, 1, day, hour, tzinfo=U)


def test_overlap_policy_has_temporal_names_and_numbers() -> None:
    assert {p.name: int(p) for p in ScheduleOverlapPolicy} == {
        "SKIP": 1, "BUFFER_ONE": 2, "BUFFER_ALL": 3, "CANCEL_OTHER": 4, "TERMINATE_OTHER": 5, "ALLOW_ALL": 6}


def test_temporal_style_none_values_mean_the_defaults() -> None:
    assert ScheduleIntervalSpec(every=H, offset=None).offset == timedelta(0)  # type: ignore[arg-type]
    spec = ScheduleSpec(time_zone_name=None, jitter=None)  # type: ignore[arg-type]
    assert spec.time_zone_name == "UTC" and spec.jitter == timedelta(0)
    assert ScheduleState(note=None).note == ""  # type: ignore[arg-type]


def test_values_are_normalised_and_mutable_as_temporals() -> None:
    berlin = ZoneInfo("Europe/Berlin")
    spec = ScheduleSpec(cron_expressions=["@daily"], intervals=[ScheduleIntervalSpec(H)],
                        start_at=datetime(2026, 7, 1, 8, tzinfo=berlin), end_at=datetime(2026, 7, 2, tzinfo=U))
    assert spec.cron_expressions == ("@daily",) and isinstance(spec.intervals, tuple)
    assert spec.start_at == datetime(2026, 7, 1, 6, tzinfo=U) and spec.start_at.tzinfo is U
    assert spec == ScheduleSpec(cron_expressions=("@daily",), intervals=(ScheduleIntervalSpec(H),),
                                start_at=datetime(2026, 7, 1, 6, tzinfo=U), end_at=datetime(2026, 7, 2, tzinfo=U))
    backfill = ScheduleBackfill(datetime(2026, 1, 1, 1, tzinfo=berlin), U_2026(2), ScheduleOverlapPolicy.ALLOW_ALL)
    assert backfill.start_at == U_2026(1) and backfill.start_at.tzinfo is U
    spec.jitter = H
    assert spec.jitter == H
    a = action()
    a.id = "other"
    assert a.id == "other"


# ------------------------------------------------------------------------------ the action

def test_action_takes_arguments_as_start_workflow_does() -> None:
    a = ScheduleActionStartWorkflow(approval, "o-1", 30, id="approve", task_queue="q",
                                    execution_timeout=timedelta(days=1), run_timeout=H, task_timeout=timedelta(seconds=5),
                                    retry_policy=RetryPolicy(maximum_attempts=3), memo={"team": "sales"},
                                    search_attributes={"Region": "eu"})
    assert a.workflow == "approve-order" and a.args == ("o-1", 30)
    assert (a.execution_timeout, a.run_timeout, a.task_timeout) == (timedelta(days=1), H, timedelta(seconds=5))
    assert a.retry_policy == RetryPolicy(maximum_attempts=3) and a.memo == {"team": "sales"}
    # Temporal's args=[...] form, a type name, and typed search attributes.
    region = SearchAttributeKey.for_keyword("Region")
    typed = TypedSearchAttributes([SearchAttributePair(region, "eu")])
    b = ScheduleActionStartWorkflow("approve-order", args=["o-1", 30], id="approve", task_queue="q",
                                    search_attributes=typed)
    assert (b.workflow, b.args, b.search_attributes) == ("approve-order", ("o-1", 30), typed)
    assert ScheduleActionStartWorkflow(DailySales, id="x", task_queue="q").workflow == "DailySales"


def test_action_memo_is_copied() -> None:
    memo = {"team": "sales"}
    a = action(memo=memo)
    memo["team"] = "ops"
    assert a.memo == {"team": "sales"}


def test_action_applies_the_dsl_start_argument_hook() -> None:
    @workflow.defn(name="dsl-report")
    async def report(inputs: dict) -> str:
        return ""

    report.__spindle_start_args__ = lambda args: ({"inputs": args[0], "dag": "{}"},)  # type: ignore[attr-defined]
    a = ScheduleActionStartWorkflow(report, {"day": "mon"}, id="r", task_queue="q")
    assert a.workflow == "dsl-report" and a.args == ({"inputs": {"day": "mon"}, "dag": "{}"},)


def test_schedule_can_be_changed_with_dataclasses_replace() -> None:
    s = Schedule(action=action(), spec=ScheduleSpec(cron_expressions=["@hourly"]))
    paused = dataclasses.replace(s, state=dataclasses.replace(s.state, paused=True, note="maintenance"))
    assert paused.state == ScheduleState(paused=True, note="maintenance") and paused.spec == s.spec
    moved = dataclasses.replace(s.action, task_queue="reports-v2")
    assert moved.task_queue == "reports-v2" and moved.args == ("eu",) and moved.workflow == "DailySales"
    with pytest.raises(ValueError, match="ScheduleSpec.time_zone_name 'Mars' is not a known IANA time zone"):
        dataclasses.replace(s.spec, time_zone_name="Mars")


# ------------------------------------------------------------------------------ validation

@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"cron_expressions": ["0 25 * * *"]}, ValueError,
     r"^cron expression '0 25 \* \* \*': field 2 \(hour\) '25' at column 3 is not valid; it accepts 0-23$"),
    ({"cron_expressions": ["@daily", "0 0 * * MON-XYZ"]}, ValueError,
     r"cron expression '0 0 \* \* MON-XYZ': field 5 \(day-of-week\) 'MON-XYZ' at column 9"),
    ({"cron_expressions": ["0 6 * * * 2026"]}, ValueError, r"has 6 fields; expected five: minute hour day-of-month"),
    ({"cron_expressions": ["@every 1h"]}, ValueError, r"unknown alias '@every 1h'.*use an interval"),
    ({"cron_expressions": ["0 0 31 2 *"]}, ValueError, r"field 3 \(day-of-month\) '31' at column 5"),
    ({"cron_expressions": "0 6 * * *"}, TypeError, r"ScheduleSpec.cron_expressions must be a sequence of str, not a "
                                                  r"single str \(write \['0 6 \* \* \*'\]\)"),
    ({"cron_expressions": [None]}, TypeError, "a cron expression must be a str, got NoneType None"),
    ({"intervals": [H]}, TypeError, "ScheduleSpec.intervals must hold ScheduleIntervalSpec values, got timedelta"),
    ({"time_zone_name": "Europe/Atlantis"}, ValueError,
     r"^ScheduleSpec.time_zone_name 'Europe/Atlantis' is not a known IANA time zone; use a name such as 'UTC'"),
    ({"time_zone_name": "EUROPE/BERLIN"}, ValueError, r"did you mean 'Europe/Berlin'\?$"),
    ({"time_zone_name": "localtime"}, ValueError, "'localtime' is not a known IANA time zone"),
    ({"time_zone_name": 1}, TypeError, "ScheduleSpec.time_zone_name must be an IANA time zone name"),
    ({"jitter": -timedelta(seconds=1)}, ValueError, r"ScheduleSpec.jitter must not be negative, got "),
    ({"jitter": 30}, TypeError, "ScheduleSpec.jitter must be a datetime.timedelta, got int 30"),
    ({"end_at": "tomorrow"}, TypeError, "ScheduleSpec.end_at must be a datetime.datetime, got str"),
    ({"start_at": datetime(2026, 2, 1, tzinfo=U), "end_at": datetime(2026, 1, 1, tzinfo=U)}, ValueError,
     r"^ScheduleSpec.end_at \(2026-01-01T00:00:00\+00:00\) is before start_at \(2026-02-01T00:00:00\+00:00\)$"),
])
def test_bad_spec_is_refused(kwargs: dict, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        ScheduleSpec(**kwargs)


def test_spec_fields_are_keyword_only() -> None:
    with pytest.raises(TypeError):
        ScheduleSpec(["0 6 * * *"])  # type: ignore[misc]
    with pytest.raises(TypeError):
        ScheduleState(True)  # type: ignore[misc]


@pytest.mark.parametrize(("every", "offset", "error", "match"), [
    (timedelta(0), timedelta(0), ValueError, r"ScheduleIntervalSpec.every must be at least 1 second"),
    (-H, timedelta(0), ValueError, r"ScheduleIntervalSpec.every must be at least 1 second"),
    (timedelta(milliseconds=1500), timedelta(0), ValueError,
     r"ScheduleIntervalSpec.every must be a whole number of seconds, got datetime.timedelta\(seconds=1, "
     r"microseconds=500000\)"),
    (H, timedelta(minutes=-5), ValueError, "ScheduleIntervalSpec.offset must not be negative"),
    (H, timedelta(milliseconds=10), ValueError, "ScheduleIntervalSpec.offset must be a whole number of seconds"),
    (H, H, ValueError, r"^ScheduleIntervalSpec.offset \(1:00:00\) must be shorter than every \(1:00:00\)$"),
    (H, timedelta(hours=3), ValueError, r"ScheduleIntervalSpec.offset \(3:00:00\) must be shorter"),
    (60, timedelta(0), TypeError, "ScheduleIntervalSpec.every must be a datetime.timedelta, got int 60"),
])
def test_bad_interval_is_refused(every: object, offset: object, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        ScheduleIntervalSpec(every=every, offset=offset)  # type: ignore[arg-type]


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"overlap": 1}, TypeError, "SchedulePolicy.overlap must be a ScheduleOverlapPolicy, got 1"),
    ({"catchup_window": timedelta(0)}, ValueError, "SchedulePolicy.catchup_window must be positive"),
    ({"catchup_window": -H}, ValueError, "SchedulePolicy.catchup_window must be positive"),
    ({"catchup_window": 60}, TypeError, "SchedulePolicy.catchup_window must be a datetime.timedelta"),
    ({"pause_on_failure": "yes"}, TypeError, "SchedulePolicy.pause_on_failure must be a bool"),
])
def test_bad_policy_is_refused(kwargs: dict, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        SchedulePolicy(**kwargs)


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"remaining_actions": -1}, ValueError,
     r"ScheduleState.remaining_actions must not be negative \(None means no limit\), got -1"),
    ({"remaining_actions": 2.0}, TypeError, "ScheduleState.remaining_actions must be an int or None"),
    ({"remaining_actions": True}, TypeError, "ScheduleState.remaining_actions must be an int or None"),
    ({"paused": 1}, TypeError, "ScheduleState.paused must be a bool"),
    ({"note": 5}, TypeError, "ScheduleState.note must be a str, got int 5"),
])
def test_bad_state_is_refused(kwargs: dict, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        ScheduleState(**kwargs)


@pytest.mark.parametrize(("args", "kwargs", "error", "match"), [
    ((DailySales.run, "eu"), {"id": "", "task_queue": "q"}, ValueError,
     "ScheduleActionStartWorkflow.id must not be empty"),
    ((DailySales.run, "eu"), {"id": "x", "task_queue": "  "}, ValueError,
     "ScheduleActionStartWorkflow.task_queue must not be empty"),
    ((DailySales.run, "eu"), {"id": 5, "task_queue": "q"}, TypeError, "ScheduleActionStartWorkflow.id must be a str"),
    ((not_a_workflow, 1), {"id": "x", "task_queue": "q"}, TypeError, "not_a_workflow is not a workflow"),
    (("",), {"id": "x", "task_queue": "q"}, ValueError, "ScheduleActionStartWorkflow.workflow must not be empty"),
    ((DailySales.run, "eu"), {"id": "x", "task_queue": "q", "args": ["eu"]}, ValueError,
     r"give the workflow's arguments positionally or as args=\[...\], not both"),
    ((DailySales.run,), {"id": "x", "task_queue": "q", "args": "eu"}, TypeError,
     "args must be a list or tuple of arguments, got str"),
    ((DailySales.run, "eu"), {"id": "x", "task_queue": "q", "run_timeout": timedelta(0)}, ValueError,
     "ScheduleActionStartWorkflow.run_timeout must be positive"),
    ((DailySales.run, "eu"), {"id": "x", "task_queue": "q", "execution_timeout": 60}, TypeError,
     "ScheduleActionStartWorkflow.execution_timeout must be a datetime.timedelta"),
    ((DailySales.run, "eu"), {"id": "x", "task_queue": "q", "retry_policy": {"maximum_attempts": 3}}, TypeError,
     "ScheduleActionStartWorkflow.retry_policy must be a RetryPolicy"),
    ((DailySales.run, "eu"), {"id": "x", "task_queue": "q", "memo": {1: "x"}}, TypeError,
     "ScheduleActionStartWorkflow.memo must be a mapping with str keys"),
    ((DailySales.run, "eu"), {"id": "x", "task_queue": "q", "search_attributes": ["Region"]}, TypeError,
     "ScheduleActionStartWorkflow.search_attributes must be TypedSearchAttributes or a mapping"),
])
def test_bad_action_is_refused(args: tuple, kwargs: dict, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        ScheduleActionStartWorkflow(*args, **kwargs)


def test_action_needs_id_and_task_queue() -> None:
    with pytest.raises(TypeError, match="task_queue"):
        ScheduleActionStartWorkflow(DailySales.run, "eu", id="x")  # type: ignore[call-arg]


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"action": "DailySales"}, TypeError, "Schedule.action must be a ScheduleActionStartWorkflow, got str"),
    ({"spec": {"cron_expressions": ["@daily"]}}, TypeError, "Schedule.spec must be a ScheduleSpec, got dict"),
    ({"policy": ScheduleOverlapPolicy.SKIP}, TypeError, "Schedule.policy must be a SchedulePolicy"),
    ({"state": None}, TypeError, "Schedule.state must be a ScheduleState, got NoneType"),
])
def test_bad_schedule_is_refused(kwargs: dict, error: type[Exception], match: str) -> None:
    fields = {"action": action(), "spec": ScheduleSpec(), **kwargs}
    with pytest.raises(error, match=match):
        Schedule(**fields)


@pytest.mark.parametrize(("args", "error", "match"), [
    ((U_2026(2), U_2026(1)), ValueError,
     r"^ScheduleBackfill.end_at \(2026-01-01T00:00:00\+00:00\) is before start_at \(2026-01-02T00:00:00\+00:00\)$"),
    ((datetime(2026, 1, 3), U_2026(2)), ValueError, r"ScheduleBackfill.end_at \(2026-01-02T00:00:00\+00:00\) is before "
                                                     r"start_at \(2026-01-03T00:00:00\+00:00\)"),
    ((U_2026(1), "2026-01-02"), TypeError, "ScheduleBackfill.end_at must be a datetime.datetime"),
    ((U_2026(1), U_2026(2), "ALLOW_ALL"), TypeError, "ScheduleBackfill.overlap must be a ScheduleOverlapPolicy or None"),
])
def test_bad_backfill_is_refused(args: tuple, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        ScheduleBackfill(*args)


def test_naive_times_are_taken_as_utc_as_in_temporal() -> None:
    spec = ScheduleSpec(start_at=datetime(2026, 1, 1, 6), end_at=datetime(2026, 1, 2, 6))
    assert spec.start_at == U_2026(1, 6) and spec.start_at.tzinfo is U and spec.end_at == U_2026(2, 6)
    with pytest.raises(ValueError, match="ScheduleSpec.end_at .* is before start_at"):
        ScheduleSpec(start_at=datetime(2026, 1, 2), end_at=U_2026(1))
    backfill = ScheduleBackfill(start_at=datetime(2026, 1, 1, 6), end_at=datetime(2026, 1, 1, 7),
                                overlap=ScheduleOverlapPolicy.ALLOW_ALL)
    assert (backfill.start_at, backfill.end_at) == (U_2026(1, 6), U_2026(1, 7))


def test_backfill_of_one_instant_is_allowed() -> None:
    assert ScheduleBackfill(U_2026(1, 6), U_2026(1, 6)).end_at == U_2026(1, 6)


# ------------------------------------------------------------------------------ descriptions

def test_description_types() -> None:
    result = ScheduleActionResult(scheduled_at=U_2026(1, 6), started_at=U_2026(1, 6), run_id="r1",
                                  workflow_id="daily-sales-2026-01-01T06:00:00Z")
    assert result.action.workflow_id == "daily-sales-2026-01-01T06:00:00Z"
    assert result.action.first_execution_run_id == "r1"
    info = ScheduleInfo(num_actions=1, recent_actions=[result], next_action_times=[U_2026(2, 6)])
    assert info.recent_actions == (result,) and info.next_action_times == (U_2026(2, 6),)
    assert (info.num_actions_missed_catchup_window, info.num_actions_skipped_overlap, info.running_actions) == (0, 0, ())
    desc = ScheduleDescription(id="daily-sales", schedule=Schedule(action=action(), spec=ScheduleSpec()), info=info)
    assert desc.info.num_actions == 1 and desc.schedule.action.workflow == "DailySales"
    entry = ScheduleListEntry(id="daily-sales", paused=True, next_action_times=[U_2026(2, 6)])
    assert (entry.id, entry.paused, entry.next_action_times, entry.note, entry.recent_actions) == (
        "daily-sales", True, (U_2026(2, 6),), "", ())


# ------------------------------------------------------------------------------ client and server agree

def _outcome(check: object, value: object) -> tuple[str, str]:
    try:
        return "ok", check(value)  # type: ignore[operator]
    except (ValueError, TypeError) as e:
        return type(e).__name__, str(e)


_CRON_TEXT = st.one_of(
    st.text(alphabet="0123456789*/-,LW# @MONFRISATJANDECadilyhourwk", max_size=20),
    st.lists(st.sampled_from(["*", "0", "5", "59", "60", "*/15", "1-5", "5-1", "L", "LW", "MON", "2#3", "5L",
                              "FEB", "13", "31", "0,30", "*/0", "x"]), min_size=4, max_size=6).map(" ".join),
    st.sampled_from(list(CRON_ALIASES) + ["@every 5m", "@Daily", " @hourly "]),
)


@settings(max_examples=400, deadline=None)
@given(_CRON_TEXT)
def test_client_and_server_check_cron_expressions_alike(text: str) -> None:
    assert _outcome(check_cron_expression, text) == _outcome(server_schedules.check_cron_expression, text)


@pytest.mark.parametrize("name", ["UTC", "Europe/Berlin", "America/Argentina/Buenos_Aires", "Etc/GMT+5", "EST5EDT",
                                  "europe/berlin", "Mars/Olympus", "localtime", "posixrules", "America", "",
                                  "../etc/passwd", " UTC"])
def test_client_and_server_check_time_zones_alike(name: str) -> None:
    assert _outcome(check_time_zone_name, name) == _outcome(
        lambda n: server_schedules.load_time_zone(n).key, name)


def test_spec_translates_to_the_server_calendar() -> None:
    """The DESIGN example's spec, rebuilt as the server's CalendarSpec, runs at 06:00 Berlin and hourly."""
    spec = ScheduleSpec(cron_expressions=["0 6 * * *"], intervals=[ScheduleIntervalSpec(every=H, offset=timedelta(
        minutes=30))], time_zone_name="Europe/Berlin", jitter=timedelta(seconds=10))
    calendar = server_schedules.CalendarSpec(
        cron_expressions=spec.cron_expressions,
        intervals=[server_schedules.IntervalRule(iv.every, iv.offset) for iv in spec.intervals],
        time_zone_name=spec.time_zone_name, jitter=spec.jitter, start_at=spec.start_at, end_at=spec.end_at)
    times = [t.nominal for t in server_schedules.next_times(calendar, datetime(2026, 1, 1, 4, 45, tzinfo=U), 3,
                                                            schedule_id="daily-sales")]
    assert times == [datetime(2026, 1, 1, 5, tzinfo=U), datetime(2026, 1, 1, 5, 30, tzinfo=U),
                     datetime(2026, 1, 1, 6, 30, tzinfo=U)]
