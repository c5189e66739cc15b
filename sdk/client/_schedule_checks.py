"""Client-side checks of a schedule spec's cron expressions and time zone.

``ScheduleSpec`` refuses a bad value when it is built, before anything is sent. The server
checks again with its own copy of these rules (``spindle.controlplane.schedules``; the SDK
does not import the control plane), and ``tests/sdk/test_schedule_types.py`` holds the two
to the same answers and messages. Cron expressions are read by cronsim (Debian cron
semantics); see ``controlplane/schedules/_cron.py`` for the choice and the DST rules.
"""

from __future__ import annotations

import functools
import re
import zoneinfo

from datetime import datetime, timezone

from cronsim import CronSim, CronSimError

__all__ = ["CRON_ALIASES", "check_cron_expression", "check_time_zone_name"]

#: The aliases accepted instead of five fields, and what each one means.
CRON_ALIASES: dict[str, str] = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}

_FIELDS: tuple[tuple[str, str], ...] = (
    ("minute", "0-59"),
    ("hour", "0-23"),
    ("day-of-month", "1-31, L or LW, and a day that exists in the expression's months"),
    ("month", "1-12 or JAN-DEC"),
    ("day-of-week", "0-7 or SUN-SAT (0 and 7 are Sunday), 5L (last Friday), 5#2 (second Friday)"),
)
_FIELD_NAMES = " ".join(name for name, _ in _FIELDS)
_PROBE_START = datetime(2000, 1, 1, tzinfo=timezone.utc)
_NOT_ZONES = frozenset({"localtime", "posixrules"})


def check_cron_expression(expr: str) -> str:
    """Check a cron expression; return its five-field form (an alias expanded).

    Five fields ``minute hour day-of-month month day-of-week`` (``*``, lists, ranges, steps,
    names, ``L``, ``LW``, ``#``) or one of :data:`CRON_ALIASES`.

    Raises:
        TypeError: ``expr`` is not a str.
        ValueError: naming the expression and the field (number, name, 1-based column) that
            is not valid, the wrong number of fields, an unknown alias, or an expression
            that never matches.
    """
    if not isinstance(expr, str):
        raise TypeError(f"a cron expression must be a str, got {type(expr).__name__} {expr!r}")
    text = expr.strip()
    if not text:
        raise ValueError(f"cron expression {expr!r} is empty; expected five fields: {_FIELD_NAMES}")
    if text.startswith("@"):
        word = text.split()[0].lower()
        five = CRON_ALIASES.get(word)
        if five is None or len(text.split()) != 1:
            hint = " (for a fixed period use an interval, ScheduleIntervalSpec)" if word == "@every" else ""
            raise ValueError(f"cron expression {expr!r}: unknown alias {text!r}; supported: "
                             f"{', '.join(CRON_ALIASES)}{hint}")
        return five
    lead = len(expr) - len(expr.lstrip())
    fields = [(m.group(), lead + m.start() + 1) for m in re.finditer(r"\S+", text)]
    if len(fields) != 5:
        raise ValueError(f"cron expression {expr!r} has {len(fields)} field{'s' if len(fields) != 1 else ''}; "
                         f"expected five: {_FIELD_NAMES} (or an alias such as @daily)")
    five = " ".join(f for f, _ in fields)
    try:
        it = CronSim(five, _PROBE_START)
    except CronSimError as e:
        index = next((i for i, (name, _) in enumerate(_FIELDS) if str(e) == f"Bad {name}"), None)
        if index is None:  # pragma: no cover - every cronsim error names a field
            raise ValueError(f"cron expression {expr!r} is not valid: {e}") from None
        name, accepts = _FIELDS[index]
        value, column = fields[index]
        raise ValueError(f"cron expression {expr!r}: field {index + 1} ({name}) {value!r} at column {column} "
                         f"is not valid; it accepts {accepts}") from None
    try:
        next(it)
    except StopIteration:
        raise ValueError(f"cron expression {expr!r} never matches (no matching time in 50 years)") from None
    return five


@functools.cache
def _zone_names() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones()) - _NOT_ZONES


def check_time_zone_name(name: str, *, what: str = "time_zone_name") -> str:
    """Return ``name`` if it is an IANA time zone this machine knows (``"UTC"``, ``"Europe/Berlin"``).

    Raises:
        TypeError: ``name`` is not a str.
        ValueError: no such zone (saying which name would match with other letter case).
    """
    if not isinstance(name, str):
        raise TypeError(f"{what} must be an IANA time zone name (str), got {type(name).__name__} {name!r}")
    if name in _zone_names():
        return name
    close = [z for z in _zone_names() if z.lower() == name.strip().lower()]
    hint = f"; did you mean {close[0]!r}?" if close else "; use a name such as 'UTC' or 'Europe/Berlin'"
    raise ValueError(f"{what} {name!r} is not a known IANA time zone{hint}")
