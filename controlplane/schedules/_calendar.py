"""When a schedule's actions are due: pure functions of a :class:`CalendarSpec` and an instant.

No clock, no I/O and no state: the server calls these with the last time it processed and
the current time (real or the time-skipping clock), so a restart recomputes exactly the
same times, jitter included.

The sequence of *nominal* times of a spec is the union of

- each cron expression's times, read in the spec's time zone (cronsim, Debian cron's
  daylight-saving rules: see :mod:`spindle.controlplane.schedules._cron`), and
- each interval's times ``epoch + k * every + offset`` (UTC, independent of the time zone),

in increasing order without duplicates (two sources naming the same instant give one time),
restricted to ``start_at <= t <= end_at`` (both inclusive, either may be absent).

Each nominal time ``t`` has an *actual* time ``t + jitter_offset(schedule_id, t, cap)``,
where ``cap`` is the spec's jitter, capped at the gap to the next nominal time of the
unbounded sequence (so actual times stay in nominal order and an action never moves past its
successor). The offset is derived from SHA-256 of the schedule id and ``t``: it does not
depend on the process, the Python hash seed or when it is computed. Temporal names its
workflow runs after the nominal time too, so the server should use ``nominal`` for the
workflow id and ``actual`` for when to start it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import heapq

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

from spindle.controlplane.schedules._cron import cron_times
from spindle.controlplane.schedules._spec import CalendarSpec, IntervalRule

__all__ = ["ScheduledTime", "jitter_offset", "next_times", "times_between"]

_UTC = timezone.utc
_EPOCH = datetime(1970, 1, 1, tzinfo=_UTC)
_US = timedelta(microseconds=1)
_MS = timedelta(milliseconds=1)


@dataclasses.dataclass(frozen=True, order=True)
class ScheduledTime:
    """One due action: ``nominal`` is the time the spec names, ``actual`` that plus its jitter (both UTC)."""

    nominal: datetime
    actual: datetime


def jitter_offset(schedule_id: str, nominal: datetime, max_jitter: timedelta) -> timedelta:
    """A deterministic delay in ``[0, max_jitter)``, in whole milliseconds (zero when ``max_jitter`` is under 1 ms).

    The first 8 bytes of ``sha256(schedule_id + "\\x00" + nominal as UTC ISO 8601)`` as an
    unsigned integer ``h`` give ``floor(h * max_jitter_ms / 2**64)`` milliseconds (the wire's
    unit for times): the same arguments give the same delay in every process and after
    every restart, different schedules with the same spec are spread apart, and the delays
    are uniform over the range.
    """
    cap = max_jitter // _MS
    if cap <= 0:
        return timedelta(0)
    key = f"{schedule_id}\x00{nominal.astimezone(_UTC).isoformat()}".encode()
    h = int.from_bytes(hashlib.sha256(key).digest()[:8], "big")
    return timedelta(milliseconds=(h * cap) >> 64)


def _check_instant(value: datetime, what: str) -> datetime:
    if not isinstance(value, datetime):
        raise TypeError(f"{what} must be a datetime.datetime, got {type(value).__name__} {value!r}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"{what} must be timezone-aware (e.g. datetime(..., tzinfo=timezone.utc)), got {value!r}")
    return value.astimezone(_UTC)


def _interval_times(rule: IntervalRule, after: datetime) -> Iterator[datetime]:
    every = rule.every // _US
    offset = rule.offset // _US
    k = ((after - _EPOCH) // _US - offset) // every + 1
    while True:
        try:
            yield _EPOCH + timedelta(microseconds=k * every + offset)
        except OverflowError:
            return
        k += 1


def _raw_times(spec: CalendarSpec, after: datetime) -> Iterator[datetime]:
    """The nominal times after ``after``, ignoring start_at and end_at."""
    tz = spec.tz
    sources = [cron_times(c, tz, after) for c in spec.crons]
    sources += [_interval_times(iv, after) for iv in spec.intervals]
    last = after
    for t in heapq.merge(*sources):
        if t > last:
            last = t
            yield t


def _scheduled(spec: CalendarSpec, after: datetime, schedule_id: str) -> Iterator[ScheduledTime]:
    """The due actions with nominal time after ``after``, in order, within the spec's bounds."""
    if spec.start_at is not None and after < spec.start_at:
        after = spec.start_at - _US  # start_at itself may match
    raw = _raw_times(spec, after)
    following = next(raw, None)
    while following is not None:
        nominal, following = following, next(raw, None)
        if spec.end_at is not None and nominal > spec.end_at:
            return
        cap = spec.jitter if following is None else min(spec.jitter, following - nominal)
        yield ScheduledTime(nominal, nominal + jitter_offset(schedule_id, nominal, cap))


def next_times(spec: CalendarSpec, after: datetime, n: int, *, schedule_id: str) -> list[ScheduledTime]:
    """The first ``n`` due actions whose nominal time is strictly after ``after`` (fewer if the spec ends).

    Equal to the first ``n`` items of ``times_between(spec, after, <far future>)``; so the
    time after a processed nominal time ``t`` is ``next_times(spec, t, 1)``.

    Raises:
        ValueError: ``after`` is naive, or ``n`` is negative.
        TypeError: ``after`` is not a datetime or ``n`` not an int.
    """
    after = _check_instant(after, "after")
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"n must be an int, got {type(n).__name__} {n!r}")
    if n < 0:
        raise ValueError(f"n must not be negative, got {n}")
    out: list[ScheduledTime] = []
    if n:
        for item in _scheduled(spec, after, schedule_id):
            out.append(item)
            if len(out) == n:
                break
    return out


def times_between(spec: CalendarSpec, start: datetime, end: datetime, *, schedule_id: str,
                  include_start: bool = False) -> Iterator[ScheduledTime]:
    """The due actions with ``start < nominal <= end`` (``start <= nominal`` with ``include_start``), in order.

    Half-open by default so that consecutive windows ``(a, b]``, ``(b, c]`` together give
    ``(a, c]`` with no time twice: the server passes the last time it processed and now.
    A backfill that should include its first instant passes ``include_start=True``.

    Raises (on the call, before iterating):
        ValueError: ``start`` or ``end`` is naive, or ``end`` is before ``start``.
        TypeError: ``start`` or ``end`` is not a datetime.
    """
    start = _check_instant(start, "start")
    end = _check_instant(end, "end")
    if end < start:
        raise ValueError(f"end ({end.isoformat()}) is before start ({start.isoformat()})")
    return _between(spec, start - _US if include_start else start, end, schedule_id)


def _between(spec: CalendarSpec, after: datetime, end: datetime, schedule_id: str) -> Iterator[ScheduledTime]:
    for item in _scheduled(spec, after, schedule_id):
        if item.nominal > end:
            return
        yield item
