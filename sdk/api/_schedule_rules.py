"""The rules of a schedule's cron expressions and time zone name, written once for both sides of the wire.

A ``ScheduleSpec`` (and a legacy ``cron_schedule``) travels as text: cron expressions and an
IANA time zone name. What text is valid, and what a refusal says, is part of the wire
contract, so it lives here, in ``spindle.api``: the client checks a spec when it is built
(``spindle.client.ScheduleSpec``, the DSL's ``schedule:`` block, ``spindle schedule create``)
and the server checks every request again (``spindle.controlplane.schedules``); the SDK never
imports the control plane and the control plane imports only ``spindle.api`` of the SDK, so
both import this module and give the same answer and the same message.

Cron expressions are read by `cronsim <https://pypi.org/project/cronsim/>`_ (Debian cron
semantics). This module adds the ``@yearly`` ... ``@hourly`` aliases (cronsim has none), a
check that an expression has exactly the five classic fields (cronsim would read six fields
as seconds-first, and Temporal reads six as year-last: neither is accepted, so no expression
means two things) and errors that name the expression, the field and its column. Evaluating
an expression (its times, daylight saving time) is the server's: see
``controlplane/schedules/_cron.py``.
"""

from __future__ import annotations

import functools
import re
import zoneinfo

from datetime import datetime, timezone

from cronsim import CronSim, CronSimError

__all__ = ["CRON_ALIASES", "check_cron_expression", "check_time_zone_name", "unknown_time_zone"]

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

# (name as cronsim reports it, what the field accepts), in field order.
_FIELDS: tuple[tuple[str, str], ...] = (
    ("minute", "0-59"),
    ("hour", "0-23"),
    ("day-of-month", "1-31, L or LW, and a day that exists in the expression's months"),
    ("month", "1-12 or JAN-DEC"),
    ("day-of-week", "0-7 or SUN-SAT (0 and 7 are Sunday), 5L (last Friday), 5#2 (second Friday)"),
)
_FIELD_NAMES = " ".join(name for name, _ in _FIELDS)
# Any instant works: it only has to be one from which cronsim can look 50 years ahead.
_PROBE_START = datetime(2000, 1, 1, tzinfo=timezone.utc)
# Names that exist as files in some zoneinfo directories but are no IANA zone: their meaning
# depends on the machine, so a schedule would run at different times on different servers.
_NOT_ZONES = frozenset({"localtime", "posixrules"})


def check_cron_expression(expr: str) -> str:
    """Check a cron expression and return its five-field form (an alias expanded).

    Accepted: five fields ``minute hour day-of-month month day-of-week`` with ``*``, lists,
    ranges, steps, month and weekday names and cronsim's ``L``, ``LW`` and ``#``; or one of
    :data:`CRON_ALIASES`. Leading and trailing blanks are ignored; letters may be any case.

    Raises:
        TypeError: ``expr`` is not a str.
        ValueError: naming the expression and what is wrong: the field (number, name and
            1-based column) that is not valid and what it accepts, the wrong number of
            fields, an unknown ``@`` alias, or an expression that never matches (no time in
            50 years).
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


def unknown_time_zone(name: str, *, what: str = "time_zone_name") -> ValueError:
    """The error for a name that is no known time zone, saying which name would match with other letter case."""
    close = [z for z in _zone_names() if z.lower() == name.strip().lower()]
    hint = f"; did you mean {close[0]!r}?" if close else "; use a name such as 'UTC' or 'Europe/Berlin'"
    return ValueError(f"{what} {name!r} is not a known IANA time zone{hint}")


def check_time_zone_name(name: str, *, what: str = "time_zone_name") -> str:
    """Return ``name`` if it is an IANA time zone this machine knows (``"UTC"``, ``"Europe/Berlin"``).

    ``what`` names the value in the messages (``"ScheduleSpec.time_zone_name"``).

    Raises:
        TypeError: ``name`` is not a str.
        ValueError: no such zone (saying which name would match with other letter case).
    """
    if not isinstance(name, str):
        raise TypeError(f"{what} must be an IANA time zone name (str), got {type(name).__name__} {name!r}")
    if name in _zone_names():
        return name
    raise unknown_time_zone(name, what=what)
