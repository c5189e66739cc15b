"""Schedules on the wire: checking a request's ``spindle.v1.Schedule`` and reading its spec.

Every problem is an ``InvalidArgument`` naming the field (``schedule.spec.cron_expressions[1]:
...``), raised before anything is written. :func:`calendar_of` turns a checked spec into the
:class:`CalendarSpec` the server computes times with.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.controlplane._field_rules import MAX_DURATION_MS, MAX_INSTANT_MS
from spindle.controlplane.errors import InvalidArgument
from spindle.controlplane.schedules._cron import check_cron_expression
from spindle.controlplane.schedules._spec import CalendarSpec, IntervalRule, load_time_zone

__all__ = ["DEFAULT_CATCHUP_WINDOW_MS", "calendar_of", "check_backfill", "check_overlap", "check_schedule", "effective_overlap",
           "from_ms", "to_ms"]

_UTC = timezone.utc
#: Temporal's default catch-up window: one year.
DEFAULT_CATCHUP_WINDOW_MS = 365 * 86_400_000
#: Latest instant accepted on the wire (year 9999), so every time converts to a datetime (the field rules' bound).
_MAX_MS = MAX_INSTANT_MS


def from_ms(ms: int) -> datetime:
    """An epoch-milliseconds instant as a UTC datetime."""
    return datetime(1970, 1, 1, tzinfo=_UTC) + timedelta(milliseconds=ms)


def to_ms(t: datetime) -> int:
    """A datetime as epoch milliseconds (rounded down)."""
    return (t - datetime(1970, 1, 1, tzinfo=_UTC)) // timedelta(milliseconds=1)


#: Longest duration accepted on the wire (100 years, the field rules' bound), so every duration converts to a timedelta.
_MAX_DURATION_MS = MAX_DURATION_MS


def _duration(ms: int, field: str) -> None:
    if not 0 <= ms <= _MAX_DURATION_MS:
        raise InvalidArgument(f"{field}: must be between 0 and 100 years in milliseconds, got {ms}")


def _instant(ms: int, field: str) -> None:
    if not 0 <= ms <= _MAX_MS:
        raise InvalidArgument(f"{field}: {ms} is not an instant between 1970 and 9999 (epoch milliseconds)")


def calendar_of(spec: pb.ScheduleSpec, field: str = "schedule.spec") -> CalendarSpec:
    """The calendar of a wire spec.

    Raises:
        InvalidArgument: naming the field: a bad cron expression (its field and column), an
            interval under a second, not in whole seconds or with an offset not shorter than
            it, an unknown time zone, a negative jitter, bounds out of range or reversed.
    """
    for i, expr in enumerate(spec.cron_expressions):
        try:
            check_cron_expression(expr)
        except ValueError as e:
            raise InvalidArgument(f"{field}.cron_expressions[{i}]: {e}") from None
    intervals = []
    for i, iv in enumerate(spec.intervals):
        _duration(iv.every_ms, f"{field}.intervals[{i}].every_ms")
        _duration(iv.offset_ms, f"{field}.intervals[{i}].offset_ms")
        try:
            intervals.append(IntervalRule(every=timedelta(milliseconds=iv.every_ms),
                                          offset=timedelta(milliseconds=iv.offset_ms)))
        except ValueError as e:
            raise InvalidArgument(f"{field}.intervals[{i}]: {e}") from None
    zone = spec.time_zone_name or "UTC"
    try:
        load_time_zone(zone)
    except ValueError as e:
        raise InvalidArgument(f"{field}.time_zone_name: {e}") from None
    _duration(spec.jitter_ms, f"{field}.jitter_ms")
    start = end = None
    if spec.HasField("start_at_ms"):
        _instant(spec.start_at_ms, f"{field}.start_at_ms")
        start = from_ms(spec.start_at_ms)
    if spec.HasField("end_at_ms"):
        _instant(spec.end_at_ms, f"{field}.end_at_ms")
        end = from_ms(spec.end_at_ms)
    if start is not None and end is not None and end < start:
        raise InvalidArgument(f"{field}.end_at_ms: {end.isoformat()} is before start_at_ms ({start.isoformat()})")
    return CalendarSpec(cron_expressions=tuple(spec.cron_expressions), intervals=tuple(intervals), time_zone_name=zone,
                        jitter=timedelta(milliseconds=spec.jitter_ms), start_at=start, end_at=end)


def check_overlap(value: int, field: str) -> None:
    """InvalidArgument naming ``field`` unless ``value`` is an overlap policy (UNSPECIFIED included)."""
    if value not in pb.ScheduleOverlapPolicy.values():
        raise InvalidArgument(f"{field}: unknown overlap policy {value}; use one of "
                              + ", ".join(n for n in pb.ScheduleOverlapPolicy.keys() if not n.endswith("UNSPECIFIED")))


def check_schedule(schedule: pb.Schedule, *, max_id_length: int, field: str = "schedule") -> CalendarSpec:
    """Check everything of a schedule but the action's payloads and search attributes (the frontend checks those).

    Returns its calendar.

    Raises:
        InvalidArgument: naming the field.
    """
    if not schedule.HasField("action"):
        raise InvalidArgument(f"{field}.action: required (the workflow each action starts)")
    action = schedule.action
    for name in ("workflow_id", "workflow_type", "task_queue"):
        value = getattr(action, name)
        if not value:
            raise InvalidArgument(f"{field}.action.{name}: required (got an empty value)")
        # the workflow id gets "-YYYY-MM-DDTHH:MM:SSZ" (21 characters) appended
        limit = max_id_length - (21 if name == "workflow_id" else 0)
        if len(value) > limit:
            raise InvalidArgument(f"{field}.action.{name}: {len(value)} characters is over the limit of {limit}")
    for name in ("execution_timeout_ms", "run_timeout_ms", "task_timeout_ms"):
        if getattr(action, name) < 0:
            raise InvalidArgument(f"{field}.action.{name}: must not be negative, got {getattr(action, name)}")
    check_overlap(schedule.policies.overlap_policy, f"{field}.policies.overlap_policy")
    if schedule.policies.catchup_window_ms < 0:
        raise InvalidArgument(f"{field}.policies.catchup_window_ms: must not be negative (0 = one year), "
                              f"got {schedule.policies.catchup_window_ms}")
    state = schedule.state
    if state.HasField("remaining_actions") and state.remaining_actions < 0:
        raise InvalidArgument(f"{field}.state.remaining_actions: must not be negative (unset = no limit), "
                              f"got {state.remaining_actions}")
    return calendar_of(schedule.spec, f"{field}.spec")


def check_backfill(b: svc.ScheduleBackfillRequest, field: str) -> None:
    """Check one backfill range of a patch (times in range, start not after end, a known overlap policy)."""
    start, end = b.start_time_ms, b.end_time_ms
    _instant(start, f"{field}.start_time_ms")
    _instant(end, f"{field}.end_time_ms")
    if end < start:
        raise InvalidArgument(f"{field}.end_time_ms: {from_ms(end).isoformat()} is before start_time_ms "
                              f"({from_ms(start).isoformat()})")
    check_overlap(b.overlap_policy, f"{field}.overlap_policy")


def effective_overlap(requested: int, schedule: pb.Schedule) -> int:
    """The overlap policy that applies: the requested one, else the schedule's, else SKIP."""
    return requested or schedule.policies.overlap_policy or pb.SCHEDULE_OVERLAP_POLICY_SKIP
