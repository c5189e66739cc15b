"""The schedule calendar (issue 17): which times a spec names, with DST, bounds and jitter."""

from __future__ import annotations

import json

from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spindle.controlplane.schedules import (
    ALIASES,
    CalendarSpec,
    IntervalRule,
    ScheduledTime,
    check_cron_expression,
    jitter_offset,
    next_times,
    times_between,
)
from spindle.controlplane.schedules._cron import cron_times

U = timezone.utc
BERLIN = ZoneInfo("Europe/Berlin")
H = timedelta(hours=1)
M = timedelta(minutes=1)


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=U)


def nominals(spec: CalendarSpec, start: datetime, end: datetime, **kw: bool) -> list[datetime]:
    return [t.nominal for t in times_between(spec, start, end, schedule_id="s", **kw)]


def local_dates(times: list[datetime], tz: ZoneInfo) -> list[str]:
    return [t.astimezone(tz).date().isoformat() for t in times]


# ------------------------------------------------------------------------------ cron basics

def test_hourly_over_three_days_gives_72_times() -> None:
    spec = CalendarSpec(cron_expressions=["0 * * * *"])
    times = nominals(spec, utc(2026, 6, 1), utc(2026, 6, 4))
    assert len(times) == 72
    assert times[0] == utc(2026, 6, 1, 1) and times[-1] == utc(2026, 6, 4)
    assert all(b - a == H for a, b in zip(times, times[1:]))
    # The window is (start, end]; include_start adds a time on start itself.
    assert nominals(spec, utc(2026, 6, 1), utc(2026, 6, 4), include_start=True)[0] == utc(2026, 6, 1)


def test_times_are_utc_and_whole_seconds() -> None:
    spec = CalendarSpec(cron_expressions=["30 6 * * *"], time_zone_name="Europe/Berlin")
    (t,) = next_times(spec, utc(2026, 1, 10, 12, 0, 0, 123456), 1, schedule_id="s")
    assert t.nominal == utc(2026, 1, 11, 5, 30) and t.nominal.tzinfo is U and t.actual == t.nominal


def test_daily_alias_runs_at_local_midnight() -> None:
    spec = CalendarSpec(cron_expressions=["@daily"], time_zone_name="Europe/Berlin")
    times = nominals(spec, utc(2026, 1, 1), utc(2026, 1, 4))
    assert times == [utc(2026, 1, 1, 23), utc(2026, 1, 2, 23), utc(2026, 1, 3, 23)]  # 00:00 CET
    summer = nominals(spec, utc(2026, 7, 1), utc(2026, 7, 2))
    assert summer == [utc(2026, 7, 1, 22)]  # 00:00 CEST


@pytest.mark.parametrize(("alias", "first"), [
    ("@yearly", utc(2027, 1, 1)),
    ("@annually", utc(2027, 1, 1)),
    ("@monthly", utc(2026, 4, 1)),
    ("@weekly", utc(2026, 3, 15)),  # 2026-03-15 is a Sunday
    ("@daily", utc(2026, 3, 11)),
    ("@midnight", utc(2026, 3, 11)),
    ("@hourly", utc(2026, 3, 10, 13)),
])
def test_each_alias_is_its_five_field_expression(alias: str, first: datetime) -> None:
    after = utc(2026, 3, 10, 12, 30)
    by_alias = next_times(CalendarSpec(cron_expressions=[alias]), after, 5, schedule_id="s")
    by_fields = next_times(CalendarSpec(cron_expressions=[ALIASES[alias]]), after, 5, schedule_id="s")
    assert by_alias == by_fields and by_alias[0].nominal == first
    assert check_cron_expression(f"  {alias.upper()} ") == ALIASES[alias]


def test_day_of_month_or_day_of_week_as_vixie_cron() -> None:
    # Both restricted: the 13th OR a Friday (cronsim follows Debian cron).
    spec = CalendarSpec(cron_expressions=["0 0 13 * 5"])
    days = [t.day for t in nominals(spec, utc(2026, 3, 1), utc(2026, 3, 31))]
    assert days == [6, 13, 20, 27]  # Fridays 6, 13, 20, 27; the 13th is one of them
    days = [t.day for t in nominals(spec, utc(2026, 4, 1), utc(2026, 4, 30))]
    assert days == [3, 10, 13, 17, 24]


def test_last_day_and_last_weekday_of_month() -> None:
    last = CalendarSpec(cron_expressions=["0 9 L * *"])
    assert [t.day for t in nominals(last, utc(2026, 1, 1), utc(2026, 4, 30, 23))] == [31, 28, 31, 30]
    weekday = CalendarSpec(cron_expressions=["0 9 LW * *"])  # 2026-05-31 is a Sunday, 2026-02-28 a Saturday
    assert [t.date().isoformat() for t in nominals(weekday, utc(2026, 2, 1), utc(2026, 5, 31, 23))] == [
        "2026-02-27", "2026-03-31", "2026-04-30", "2026-05-29"]


# ------------------------------------------------------------------------------ merging

def test_cron_and_interval_merge_without_duplicates() -> None:
    spec = CalendarSpec(cron_expressions=["0 * * * *"], intervals=[IntervalRule(every=30 * M)])
    times = nominals(spec, utc(2026, 5, 1), utc(2026, 5, 1, 3))
    assert times == [utc(2026, 5, 1, 0, 30) + k * 30 * M for k in range(6)]  # :00 from both sources, once


def test_overlapping_cron_expressions_give_each_time_once() -> None:
    spec = CalendarSpec(cron_expressions=["0 */2 * * *", "0 */3 * * *", "0 */2 * * *"])
    hours = [t.hour for t in nominals(spec, utc(2026, 5, 1), utc(2026, 5, 1, 23, 59))]
    assert hours == [2, 3, 4, 6, 8, 9, 10, 12, 14, 15, 16, 18, 20, 21, 22]


def test_empty_spec_names_no_time() -> None:
    assert next_times(CalendarSpec(), utc(2026, 1, 1), 10, schedule_id="s") == []


# ------------------------------------------------------------------------------ DST (Europe/Berlin)
# 2026-03-29: 02:00 CET -> 03:00 CEST (01:00Z). 2026-10-25: 03:00 CEST -> 02:00 CET (01:00Z).

def test_wall_clock_job_in_spring_forward_gap_runs_once_right_after_the_gap() -> None:
    spec = CalendarSpec(cron_expressions=["30 2 * * *"], time_zone_name="Europe/Berlin")
    times = nominals(spec, utc(2026, 3, 27), utc(2026, 3, 31))
    assert local_dates(times, BERLIN) == ["2026-03-27", "2026-03-28", "2026-03-29", "2026-03-30"]
    assert times[2] == utc(2026, 3, 29, 1)  # 03:00 CEST, the first instant after the gap
    assert times[2].astimezone(BERLIN).strftime("%H:%M %Z") == "03:00 CEST"
    assert times[3].astimezone(BERLIN).strftime("%H:%M %Z") == "02:30 CEST"


def test_two_wall_clock_times_in_the_gap_run_once() -> None:
    spec = CalendarSpec(cron_expressions=["15,45 2 * * *"], time_zone_name="Europe/Berlin")
    times = nominals(spec, utc(2026, 3, 28), utc(2026, 3, 30))
    assert times == [utc(2026, 3, 28, 1, 15), utc(2026, 3, 28, 1, 45), utc(2026, 3, 29, 1)]


def test_wall_clock_job_in_repeated_hour_runs_once_at_first_occurrence() -> None:
    spec = CalendarSpec(cron_expressions=["30 2 * * *"], time_zone_name="Europe/Berlin")
    times = nominals(spec, utc(2026, 10, 23), utc(2026, 10, 27))
    assert local_dates(times, BERLIN) == ["2026-10-23", "2026-10-24", "2026-10-25", "2026-10-26"]
    assert times[2] == utc(2026, 10, 25, 0, 30)  # 02:30 CEST, the first of the two 02:30s
    # Asked from inside the second 02:xx hour, it does not come back for the second 02:30.
    assert next_times(spec, utc(2026, 10, 25, 1, 10), 1, schedule_id="s")[0].nominal == utc(2026, 10, 26, 1, 30)


def test_cron_times_alone_are_strictly_after_and_increasing_across_dst() -> None:
    # From inside the repeated hour cronsim hands back the first 02:30 (already past): dropped.
    first = next(cron_times("30 2 * * *", BERLIN, utc(2026, 10, 25, 1, 10)))
    assert first == utc(2026, 10, 26, 1, 30)
    # Both gap times become 03:00 CEST: one time.
    it = cron_times("15,45 2 * * *", BERLIN, utc(2026, 3, 29))
    assert [next(it) for _ in range(3)] == [utc(2026, 3, 29, 1), utc(2026, 3, 30, 0, 15), utc(2026, 3, 30, 0, 45)]


def test_hourly_job_runs_every_elapsed_hour_across_dst() -> None:
    spec = CalendarSpec(cron_expressions=["0 * * * *"], time_zone_name="Europe/Berlin")
    spring = nominals(spec, utc(2026, 3, 28, 23), utc(2026, 3, 29, 22), include_start=True)  # local 00:00 to 24:00
    assert local_dates(spring, BERLIN).count("2026-03-29") == 23
    assert all(b - a == H for a, b in zip(spring, spring[1:]))
    assert "02:00" not in [t.astimezone(BERLIN).strftime("%H:%M") for t in spring]
    fall = nominals(spec, utc(2026, 10, 24, 22), utc(2026, 10, 25, 23), include_start=True)
    assert local_dates(fall, BERLIN).count("2026-10-25") == 25
    assert all(b - a == H for a, b in zip(fall, fall[1:]))
    assert [t.astimezone(BERLIN).strftime("%H:%M %Z") for t in fall if t.astimezone(BERLIN).hour == 2] == [
        "02:00 CEST", "02:00 CET"]


# ------------------------------------------------------------------------------ intervals

def test_interval_with_offset_is_aligned_to_the_epoch() -> None:
    spec = CalendarSpec(intervals=[IntervalRule(every=H, offset=15 * M)])
    times = nominals(spec, utc(2026, 2, 1, 10, 20), utc(2026, 2, 1, 13, 20))
    assert times == [utc(2026, 2, 1, 11, 15), utc(2026, 2, 1, 12, 15), utc(2026, 2, 1, 13, 15)]
    odd = CalendarSpec(intervals=[IntervalRule(every=7 * M, offset=timedelta(seconds=5))])
    epoch = utc(1970, 1, 1)
    for t in nominals(odd, utc(2026, 2, 1), utc(2026, 2, 2)):
        assert (t - epoch) % (7 * M) == timedelta(seconds=5)


def test_interval_does_not_depend_on_time_zone_or_query_time() -> None:
    berlin = CalendarSpec(intervals=[IntervalRule(every=timedelta(days=1), offset=6 * H)], time_zone_name="Europe/Berlin")
    assert nominals(berlin, utc(2026, 3, 28), utc(2026, 3, 31)) == [utc(2026, 3, 28, 6), utc(2026, 3, 29, 6),
                                                                    utc(2026, 3, 30, 6)]
    # Asked from any instant, the next time is the same grid point.
    for after in (utc(2026, 3, 30, 5, 59, 59), utc(2026, 3, 29, 6, 0, 0, 1), utc(2026, 3, 29, 18)):
        assert next_times(berlin, after, 1, schedule_id="s")[0].nominal == utc(2026, 3, 30, 6)
    # A time exactly on the grid is not "after" itself.
    assert next_times(berlin, utc(2026, 3, 30, 6), 1, schedule_id="s")[0].nominal == utc(2026, 3, 31, 6)


# ------------------------------------------------------------------------------ bounds

def test_start_and_end_bounds_are_inclusive() -> None:
    spec = CalendarSpec(cron_expressions=["0 * * * *"], start_at=utc(2026, 4, 1, 3), end_at=utc(2026, 4, 1, 6))
    assert nominals(spec, utc(2026, 3, 1), utc(2027, 1, 1)) == [utc(2026, 4, 1, h) for h in (3, 4, 5, 6)]
    assert [t.nominal for t in next_times(spec, utc(2020, 1, 1), 10, schedule_id="s")] == [
        utc(2026, 4, 1, h) for h in (3, 4, 5, 6)]
    assert next_times(spec, utc(2026, 4, 1, 6), 10, schedule_id="s") == []
    assert nominals(spec, utc(2026, 4, 1, 4, 30), utc(2026, 4, 1, 5)) == [utc(2026, 4, 1, 5)]


def test_bounds_between_times_and_equal_bounds() -> None:
    spec = CalendarSpec(cron_expressions=["0 * * * *"], start_at=utc(2026, 4, 1, 3, 1), end_at=utc(2026, 4, 1, 5, 59))
    assert nominals(spec, utc(2026, 4, 1), utc(2026, 4, 2)) == [utc(2026, 4, 1, 4), utc(2026, 4, 1, 5)]
    one = CalendarSpec(cron_expressions=["0 * * * *"], start_at=utc(2026, 4, 1, 3), end_at=utc(2026, 4, 1, 3))
    assert nominals(one, utc(2026, 4, 1), utc(2026, 4, 2)) == [utc(2026, 4, 1, 3)]
    # Bounds given in another zone are the same instants.
    local = CalendarSpec(cron_expressions=["0 * * * *"], start_at=datetime(2026, 4, 1, 5, tzinfo=BERLIN))
    assert local.start_at == utc(2026, 4, 1, 3) and local.start_at.tzinfo is U


# ------------------------------------------------------------------------------ jitter

def test_jitter_is_deterministic_and_in_range() -> None:
    spec = CalendarSpec(cron_expressions=["0 * * * *"], jitter=10 * M)
    first = next_times(spec, utc(2026, 1, 1), 200, schedule_id="daily-sales")
    # Recomputed (as after a restart, from a rebuilt spec and a later point) it is identical.
    again = next_times(CalendarSpec.from_dict(json.loads(json.dumps(spec.to_dict()))), first[99].nominal, 100,
                       schedule_id="daily-sales")
    assert again == first[100:]
    offsets = [t.actual - t.nominal for t in first]
    assert all(timedelta(0) <= d < 10 * M for d in offsets)
    assert all(d % timedelta(milliseconds=1) == timedelta(0) for d in offsets)
    # Spread over the range, not constant: some in the first and some in the last tenth.
    assert min(offsets) < M and max(offsets) > 9 * M
    # Another schedule with the same spec gets other delays.
    other = next_times(spec, utc(2026, 1, 1), 200, schedule_id="weekly-sales")
    assert sum(a.actual != b.actual for a, b in zip(first, other)) > 190
    assert [t.nominal for t in other] == [t.nominal for t in first]


def test_jitter_never_reaches_the_next_nominal_time() -> None:
    spec = CalendarSpec(intervals=[IntervalRule(every=5 * M)], cron_expressions=["1 * * * *"], jitter=H)
    times = next_times(spec, utc(2026, 1, 1), 300, schedule_id="s")
    for a, b in zip(times, times[1:]):
        assert a.nominal <= a.actual < b.nominal <= b.actual
    # After :00 the next nominal time is :01, so that delay is under a minute.
    assert all(t.actual - t.nominal < M for t in times if t.nominal.minute == 0)


def test_jitter_cap_ignores_end_at() -> None:
    bounded = CalendarSpec(cron_expressions=["0 * * * *"], jitter=H, end_at=utc(2026, 1, 1, 5))
    unbounded = CalendarSpec(cron_expressions=["0 * * * *"], jitter=H)
    assert next_times(bounded, utc(2026, 1, 1), 10, schedule_id="s") == next_times(unbounded, utc(2026, 1, 1), 5,
                                                                                   schedule_id="s")


def test_jitter_offset_function() -> None:
    t = utc(2026, 1, 1, 6)
    assert jitter_offset("a", t, timedelta(0)) == timedelta(0)
    assert jitter_offset("a", t, timedelta(microseconds=999)) == timedelta(0)
    assert jitter_offset("a", t, timedelta(milliseconds=1)) == timedelta(0)  # [0, 1 ms) in whole ms
    d = jitter_offset("a", t, H)
    assert d == jitter_offset("a", t.astimezone(BERLIN), H)  # the same instant in any zone
    assert timedelta(0) <= d < H
    assert len({jitter_offset("a", t + k * H, H) for k in range(50)}) == 50


def test_no_jitter_means_actual_is_nominal() -> None:
    spec = CalendarSpec(cron_expressions=["*/5 * * * *"])
    assert all(t.actual == t.nominal for t in next_times(spec, utc(2026, 1, 1), 50, schedule_id="s"))


# ------------------------------------------------------------------------------ serialised form

def test_to_dict_round_trips_through_json() -> None:
    spec = CalendarSpec(cron_expressions=["30 2 * * *", "@weekly"],
                        intervals=[IntervalRule(every=90 * M, offset=M), IntervalRule(every=timedelta(days=1))],
                        time_zone_name="America/New_York", jitter=timedelta(seconds=30, microseconds=7),
                        start_at=utc(2026, 1, 1), end_at=datetime(2027, 1, 1, tzinfo=BERLIN))
    data = json.loads(json.dumps(spec.to_dict()))
    assert data == {"cron_expressions": ["30 2 * * *", "@weekly"],
                    "intervals": [{"every_us": 5_400_000_000, "offset_us": 60_000_000},
                                  {"every_us": 86_400_000_000, "offset_us": 0}],
                    "time_zone_name": "America/New_York", "jitter_us": 30_000_007,
                    "start_at": "2026-01-01T00:00:00+00:00", "end_at": "2026-12-31T23:00:00+00:00"}
    again = CalendarSpec.from_dict(data)
    assert again == spec and hash(again) == hash(spec) and again.crons == ("30 2 * * *", "0 0 * * 0")
    assert CalendarSpec.from_dict({}) == CalendarSpec()


@pytest.mark.parametrize(("data", "error", "match"), [
    ({"cron": ["* * * * *"]}, ValueError, r"unknown calendar spec keys: \['cron'\]"),
    ({"jitter_us": 1.5}, TypeError, "jitter_us must be an integer number of microseconds"),
    ({"intervals": [{"every_us": 0}]}, ValueError, "interval every must be at least 1 second"),
    ({"start_at": 5}, TypeError, "start_at must be an ISO 8601 string"),
    ({"start_at": "2026-01-01T00:00:00"}, ValueError, "start_at must be timezone-aware"),
    ({"cron_expressions": ["61 * * * *"]}, ValueError, r"field 1 \(minute\) '61'"),
])
def test_from_dict_refuses_bad_data(data: dict, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        CalendarSpec.from_dict(data)


# ------------------------------------------------------------------------------ validation

@pytest.mark.parametrize(("expr", "match"), [
    ("0 25 * * *", r"^cron expression '0 25 \* \* \*': field 2 \(hour\) '25' at column 3 is not valid; it accepts 0-23$"),
    ("60 * * * *", r"field 1 \(minute\) '60' at column 1 is not valid; it accepts 0-59"),
    ("0 0 32 * *", r"field 3 \(day-of-month\) '32' at column 5"),
    ("0 0 30 2 *", r"field 3 \(day-of-month\) '30' at column 5 is not valid; it accepts 1-31, L or LW, and a day that "
                   r"exists in the expression's months"),
    ("0 0 * 13 *", r"field 4 \(month\) '13' at column 7 .* 1-12 or JAN-DEC"),
    ("0 0 * * 8", r"field 5 \(day-of-week\) '8' at column 9 .* 0-7 or SUN-SAT"),
    ("0 0 * * FUNDAY", r"field 5 \(day-of-week\) 'FUNDAY' at column 9"),
    ("*/0 * * * *", r"field 1 \(minute\) '\*/0' at column 1"),
    ("  5-1   * * * *", r"field 1 \(minute\) '5-1' at column 3"),
    ("0 0 * * * *", r"^cron expression '0 0 \* \* \* \*' has 6 fields; expected five: minute hour day-of-month month "
                    r"day-of-week \(or an alias such as @daily\)$"),
    ("0 0 * *", "has 4 fields; expected five"),
    ("", r"^cron expression '' is empty"),
    ("   ", r"^cron expression '   ' is empty"),
    ("@every 1h", r"unknown alias '@every 1h'; supported: @yearly, @annually, @monthly, @weekly, @daily, @midnight, "
                  r"@hourly \(for a fixed period use an interval, ScheduleIntervalSpec\)"),
    ("@fortnightly", r"unknown alias '@fortnightly'"),
    ("@daily 5", r"unknown alias '@daily 5'"),
    ("* * */20 * 1L", r"^cron expression '\* \* \*/20 \* 1L' never matches \(no matching time in 50 years\)$"),
])
def test_bad_cron_expressions_are_named_with_field_and_column(expr: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        check_cron_expression(expr)
    with pytest.raises(ValueError, match=match):
        CalendarSpec(cron_expressions=["0 * * * *", expr])


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"cron_expressions": "0 * * * *"}, TypeError, r"cron_expressions must be a sequence of str, not a single str "
                                                  r"\(write \['0 \* \* \* \*'\]\)"),
    ({"cron_expressions": [5]}, TypeError, "a cron expression must be a str, got int 5"),
    ({"time_zone_name": "Mars/Olympus"}, ValueError, r"time_zone_name 'Mars/Olympus' is not a known IANA time zone; use "
                                                     r"a name such as 'UTC' or 'Europe/Berlin'"),
    ({"time_zone_name": "europe/berlin"}, ValueError, r"time_zone_name 'europe/berlin' is not a known IANA time zone; "
                                                      r"did you mean 'Europe/Berlin'\?"),
    ({"time_zone_name": "localtime"}, ValueError, "'localtime' is not a known IANA time zone"),
    ({"time_zone_name": "America"}, ValueError, "'America' is not a known IANA time zone"),
    ({"time_zone_name": "../../etc/passwd"}, ValueError, "is not a known IANA time zone"),
    ({"time_zone_name": ""}, ValueError, "'' is not a known IANA time zone"),
    ({"time_zone_name": None}, TypeError, "time_zone_name must be an IANA time zone name"),
    ({"jitter": timedelta(seconds=-1)}, ValueError, "jitter must not be negative"),
    ({"jitter": 5}, TypeError, "jitter must be a datetime.timedelta, got int 5"),
    ({"start_at": datetime(2026, 1, 1)}, ValueError, r"start_at must be timezone-aware"),
    ({"end_at": "2026-01-01"}, TypeError, "end_at must be a datetime.datetime or None"),
    ({"start_at": utc(2026, 2, 1), "end_at": utc(2026, 1, 1)}, ValueError,
     r"end_at \(2026-01-01T00:00:00\+00:00\) is before start_at \(2026-02-01T00:00:00\+00:00\)"),
    ({"intervals": [timedelta(hours=1)]}, TypeError, "intervals must hold IntervalRule values"),
])
def test_bad_spec_fields_are_refused(kwargs: dict, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        CalendarSpec(**kwargs)


@pytest.mark.parametrize(("every", "offset", "error", "match"), [
    (timedelta(0), timedelta(0), ValueError, r"interval every must be at least 1 second, got datetime.timedelta\(0\)"),
    (timedelta(seconds=-60), timedelta(0), ValueError, "interval every must be at least 1 second"),
    (timedelta(milliseconds=500), timedelta(0), ValueError, "interval every must be at least 1 second"),
    (timedelta(seconds=1.5), timedelta(0), ValueError, "interval every must be a whole number of seconds"),
    (H, -M, ValueError, "interval offset must not be negative"),
    (H, timedelta(seconds=0.25), ValueError, "interval offset must be a whole number of seconds"),
    (H, H, ValueError, r"interval offset \(1:00:00\) must be shorter than every \(1:00:00\)"),
    (H, 2 * H, ValueError, "must be shorter than every"),
    (3600, timedelta(0), TypeError, "interval every must be a datetime.timedelta, got int 3600"),
    (H, None, TypeError, "interval offset must be a datetime.timedelta"),
])
def test_bad_intervals_are_refused(every: object, offset: object, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        IntervalRule(every=every, offset=offset)  # type: ignore[arg-type]


def test_bad_query_arguments_are_refused() -> None:
    spec = CalendarSpec(cron_expressions=["@hourly"])
    with pytest.raises(ValueError, match="after must be timezone-aware"):
        next_times(spec, datetime(2026, 1, 1), 1, schedule_id="s")
    with pytest.raises(ValueError, match="n must not be negative, got -1"):
        next_times(spec, utc(2026, 1, 1), -1, schedule_id="s")
    with pytest.raises(TypeError, match="n must be an int"):
        next_times(spec, utc(2026, 1, 1), 2.0, schedule_id="s")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"end \(2026-01-01T00:00:00\+00:00\) is before start"):
        times_between(spec, utc(2026, 1, 2), utc(2026, 1, 1), schedule_id="s")
    with pytest.raises(ValueError, match="start must be timezone-aware"):
        times_between(spec, datetime(2026, 1, 1), utc(2026, 1, 2), schedule_id="s")
    with pytest.raises(TypeError, match="end must be a datetime.datetime"):
        times_between(spec, utc(2026, 1, 1), "2026-01-02", schedule_id="s")  # type: ignore[arg-type]
    assert next_times(spec, utc(2026, 1, 1), 0, schedule_id="s") == []
    assert list(times_between(spec, utc(2026, 1, 1), utc(2026, 1, 1), schedule_id="s")) == []


# ------------------------------------------------------------------------------ properties

_ZONES = ["UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata", "America/Santiago"]


def _field(lo: int, hi: int) -> st.SearchStrategy[str]:
    value = st.integers(lo, hi)
    return st.one_of(
        st.just("*"),
        value.map(str),
        st.integers(2, 9).map(lambda s: f"*/{s}"),
        st.tuples(value, value).map(lambda ab: f"{min(ab)}-{max(ab)}"),
        st.lists(value, min_size=2, max_size=3).map(lambda vs: ",".join(map(str, vs))),
    )


_crons = st.one_of(
    st.sampled_from(["0 * * * *", "30 2 * * *", "15,45 2 * * *", "0 0 * * *", "*/20 * * * *", "0 */2 * * *",
                     "30 1 * * 0", "@hourly", "0 3 L * *", "45 23 * * 5#2"]),
    st.tuples(_field(0, 59), _field(0, 23), st.sampled_from(["*", "1", "1-15", "*/3", "L"]),
              st.sampled_from(["*", "3", "3,10", "10-12"]), st.sampled_from(["*", "0", "1-5", "SAT", "MON,FRI"]))
    .map(" ".join),
)
# Around the 2026 DST changes of the zones above, and some ordinary days.
_instants = st.sampled_from([utc(2026, 3, 7), utc(2026, 3, 27, 12), utc(2026, 4, 3), utc(2026, 9, 4),
                             utc(2026, 10, 24), utc(2026, 10, 31), utc(2026, 11, 1), utc(2026, 6, 15)]) \
    .flatmap(lambda base: st.integers(0, 4 * 24 * 3600).map(lambda s: base + timedelta(seconds=s)))
_intervals = st.builds(lambda every, off: IntervalRule(every=timedelta(minutes=every),
                                                       offset=timedelta(seconds=off % (every * 60))),
                       st.integers(7, 24 * 60), st.integers(0, 24 * 3600))


@st.composite
def _specs(draw: st.DrawFn) -> CalendarSpec:
    bounds = sorted(draw(st.lists(_instants, min_size=2, max_size=2)))
    return CalendarSpec(
        cron_expressions=draw(st.lists(_crons, max_size=3)),
        intervals=draw(st.lists(_intervals, max_size=2)),
        time_zone_name=draw(st.sampled_from(_ZONES)),
        jitter=timedelta(seconds=draw(st.sampled_from([0, 1, 90, 7200]))),
        start_at=bounds[0] if draw(st.booleans()) else None,
        end_at=bounds[1] if draw(st.booleans()) else None,
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=_specs(), start=_instants, hours=st.integers(0, 72))
def test_times_are_ordered_bounded_and_consistent(spec: CalendarSpec, start: datetime, hours: int) -> None:
    end = start + timedelta(hours=hours)
    got = list(times_between(spec, start, end, schedule_id="prop"))
    noms = [t.nominal for t in got]
    # Strictly increasing, within the window and the spec's bounds, jitter in range and in order.
    assert all(a < b for a, b in zip(noms, noms[1:]))
    assert all(start < t <= end for t in noms)
    assert spec.start_at is None or all(t >= spec.start_at for t in noms)
    assert spec.end_at is None or all(t <= spec.end_at for t in noms)
    assert all(timedelta(0) <= t.actual - t.nominal < max(spec.jitter, timedelta(microseconds=1)) for t in got)
    assert all(a.actual < b.nominal for a, b in zip(got, got[1:]))
    # next_times from the same point starts the same way.
    assert next_times(spec, start, len(got) + 1, schedule_id="prop")[:len(got)] == got
    # A restart after any processed time continues with exactly the next one.
    for a, b in zip(got, got[1:]):
        assert next_times(spec, a.nominal, 1, schedule_id="prop") == [b]
    # Windows split anywhere add up to the whole.
    mid = start + (end - start) / 3
    assert list(times_between(spec, start, mid, schedule_id="prop")) + list(
        times_between(spec, mid, end, schedule_id="prop")) == got
    # The merge is the union of its sources, each time once.
    singles: set[datetime] = set()
    for c in spec.cron_expressions:
        singles.update(nominals(CalendarSpec(cron_expressions=[c], time_zone_name=spec.time_zone_name,
                                             start_at=spec.start_at, end_at=spec.end_at), start, end))
    for iv in spec.intervals:
        singles.update(nominals(CalendarSpec(intervals=[iv], start_at=spec.start_at, end_at=spec.end_at), start, end))
    assert sorted(singles) == noms


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="0123456789*/-,LW#@ abcdefhlmnoprstuwyMONFRISAT", max_size=24))
def test_checking_arbitrary_text_gives_a_value_error_or_a_usable_expression(text: str) -> None:
    try:
        five = check_cron_expression(text)
    except ValueError as e:
        assert repr(text) in str(e)
        return
    assert len(five.split()) == 5
    spec = CalendarSpec(cron_expressions=[text], time_zone_name="Europe/Berlin")
    got = next_times(spec, utc(2026, 3, 28), 3, schedule_id="s")
    assert got == sorted(got) and all(isinstance(t, ScheduledTime) for t in got)
