"""``CalendarSpec``: when a schedule acts, in the form the server stores and computes with.

It holds what the SDK's ``spindle.client.ScheduleSpec`` holds (the frontend builds one from the
request; the control plane never imports the SDK) and checks it the same way, so a spec the
server accepted always computes. :meth:`CalendarSpec.to_dict` / :meth:`CalendarSpec.from_dict`
give a JSON-safe form for the store: durations in integer microseconds, instants as ISO 8601
UTC strings, cron expressions as the user wrote them.
"""

from __future__ import annotations

import dataclasses
import zoneinfo

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

from spindle.api._schedule_rules import check_time_zone_name, unknown_time_zone
from spindle.controlplane.schedules._cron import check_cron_expression

__all__ = ["CalendarSpec", "IntervalRule", "load_time_zone"]

_UTC = timezone.utc
_US = timedelta(microseconds=1)
_SECOND = timedelta(seconds=1)


def load_time_zone(name: str, *, what: str = "time_zone_name") -> zoneinfo.ZoneInfo:
    """The IANA time zone ``name`` (``"UTC"``, ``"Europe/Berlin"``), checked by the rule the SDK uses too.

    Raises:
        TypeError: ``name`` is not a str.
        ValueError: no such zone (saying which name would match with other letter case).
    """
    key = check_time_zone_name(name, what=what)
    try:
        return zoneinfo.ZoneInfo(key)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):  # pragma: no cover - listed but unreadable
        raise unknown_time_zone(name, what=what) from None


def _check_duration(value: Any, what: str) -> timedelta:
    if not isinstance(value, timedelta):
        raise TypeError(f"{what} must be a datetime.timedelta, got {type(value).__name__} {value!r}")
    return value


def _check_instant(value: Any, what: str) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, datetime):
        raise TypeError(f"{what} must be a datetime.datetime or None, got {type(value).__name__} {value!r}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"{what} must be timezone-aware (e.g. datetime(..., tzinfo=timezone.utc)), got {value!r}")
    return value.astimezone(_UTC)


@dataclasses.dataclass(frozen=True)
class IntervalRule:
    """Times ``1970-01-01T00:00:00Z + k * every + offset`` for every integer ``k``.

    The phase is aligned to the Unix epoch (as Temporal's interval specs), not to when the
    schedule was created: ``every=1h, offset=15min`` means every hour at :15 UTC. Both are
    whole seconds, ``every`` at least one second and ``0 <= offset < every``.

    Raises:
        TypeError: a field is not a ``timedelta``.
        ValueError: naming the field: ``every`` under one second or not whole seconds,
            ``offset`` negative, not whole seconds, or not shorter than ``every``.
    """

    every: timedelta
    offset: timedelta = timedelta(0)

    def __post_init__(self) -> None:
        every = _check_duration(self.every, "interval every")
        offset = _check_duration(self.offset, "interval offset")
        if every < _SECOND:
            raise ValueError(f"interval every must be at least 1 second, got {every!r}")
        if every % _SECOND:
            raise ValueError(f"interval every must be a whole number of seconds, got {every!r}")
        if offset < timedelta(0):
            raise ValueError(f"interval offset must not be negative, got {offset!r}")
        if offset % _SECOND:
            raise ValueError(f"interval offset must be a whole number of seconds, got {offset!r}")
        if offset >= every:
            raise ValueError(f"interval offset ({offset}) must be shorter than every ({every})")


@dataclasses.dataclass(frozen=True)
class CalendarSpec:
    """The times a schedule's action is due: the union of its cron expressions and intervals.

    Bounds ``start_at`` and ``end_at`` are inclusive and apply to the nominal (un-jittered)
    time. ``jitter`` delays each action by a deterministic amount in ``[0, jitter)``, never
    up to the next nominal time (see :func:`~spindle.controlplane.schedules.jitter_offset`).
    Cron expressions are read in ``time_zone_name``; intervals do not depend on it.

    Sequences are stored as tuples and instants in UTC, so two equal specs compare and hash
    equal.

    Raises:
        TypeError: a field has the wrong type (a single str as ``cron_expressions``, too).
        ValueError: naming the field: a bad cron expression (its field and column), an
            unknown time zone, a negative jitter, a naive ``start_at``/``end_at`` or an
            ``end_at`` before ``start_at``.
    """

    cron_expressions: Sequence[str] = ()
    intervals: Sequence[IntervalRule] = ()
    time_zone_name: str = "UTC"
    jitter: timedelta = timedelta(0)
    start_at: datetime | None = None
    end_at: datetime | None = None
    # The checked five-field forms of cron_expressions, in the same order.
    crons: tuple[str, ...] = dataclasses.field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.cron_expressions, str):
            raise TypeError("cron_expressions must be a sequence of str, not a single str "
                            f"(write [{self.cron_expressions!r}])")
        crons = tuple(self.cron_expressions)
        five = tuple(check_cron_expression(c) for c in crons)
        intervals = tuple(self.intervals)
        for iv in intervals:
            if not isinstance(iv, IntervalRule):
                raise TypeError(f"intervals must hold IntervalRule values, got {type(iv).__name__} {iv!r}")
        load_time_zone(self.time_zone_name)
        jitter = _check_duration(self.jitter, "jitter")
        if jitter < timedelta(0):
            raise ValueError(f"jitter must not be negative, got {jitter!r}")
        start = _check_instant(self.start_at, "start_at")
        end = _check_instant(self.end_at, "end_at")
        if start is not None and end is not None and end < start:
            raise ValueError(f"end_at ({end.isoformat()}) is before start_at ({start.isoformat()})")
        object.__setattr__(self, "cron_expressions", crons)
        object.__setattr__(self, "crons", five)
        object.__setattr__(self, "intervals", intervals)
        object.__setattr__(self, "start_at", start)
        object.__setattr__(self, "end_at", end)

    @property
    def tz(self) -> zoneinfo.ZoneInfo:
        """The zone the cron expressions are read in."""
        return load_time_zone(self.time_zone_name)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe form; :meth:`from_dict` rebuilds an equal spec from it."""
        return {
            "cron_expressions": list(self.cron_expressions),
            "intervals": [{"every_us": iv.every // _US, "offset_us": iv.offset // _US} for iv in self.intervals],
            "time_zone_name": self.time_zone_name,
            "jitter_us": self.jitter // _US,
            "start_at": None if self.start_at is None else self.start_at.isoformat(),
            "end_at": None if self.end_at is None else self.end_at.isoformat(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CalendarSpec:
        """The spec :meth:`to_dict` wrote (missing keys take the defaults).

        Raises:
            ValueError: an unknown key, or a value :class:`CalendarSpec` refuses (the message
                names it).
            TypeError: a value of the wrong JSON type.
        """
        unknown = set(data) - {"cron_expressions", "intervals", "time_zone_name", "jitter_us", "start_at", "end_at"}
        if unknown:
            raise ValueError(f"unknown calendar spec keys: {sorted(unknown)}")

        def instant(key: str) -> datetime | None:
            raw = data.get(key)
            if raw is None:
                return None
            if not isinstance(raw, str):
                raise TypeError(f"{key} must be an ISO 8601 string, got {raw!r}")
            return datetime.fromisoformat(raw)

        def micros(raw: Any, key: str) -> timedelta:
            if not isinstance(raw, int) or isinstance(raw, bool):
                raise TypeError(f"{key} must be an integer number of microseconds, got {raw!r}")
            return timedelta(microseconds=raw)

        return cls(
            cron_expressions=tuple(data.get("cron_expressions", ())),
            intervals=tuple(IntervalRule(every=micros(iv["every_us"], "every_us"),
                                         offset=micros(iv.get("offset_us", 0), "offset_us"))
                            for iv in data.get("intervals", ())),
            time_zone_name=data.get("time_zone_name", "UTC"),
            jitter=micros(data.get("jitter_us", 0), "jitter_us"),
            start_at=instant("start_at"),
            end_at=instant("end_at"),
        )
