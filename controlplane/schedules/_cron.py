"""Cron expressions of schedules: checking them and listing their times.

Parsing and evaluation are done by `cronsim <https://pypi.org/project/cronsim/>`_, not here.
cronsim was chosen over croniter because

- it follows Debian's (Vixie) cron, including its daylight-saving rules, and evaluates in a
  :mod:`zoneinfo` time zone. Checked on Europe/Berlin: a ``30 2 * * *`` job runs once on the
  spring-forward day (at 03:00 local, right after the gap) and once on the fall-back day (at
  the first 02:30). croniter 7.0 also moves the spring-forward run to 03:00 but runs the
  fall-back day's 02:30 twice (once in each copy of the repeated hour);
- it has no dependencies and is small (one module), maintained for Healthchecks, a cron
  monitoring service, whose correctness on these cases is its main goal.

What this module adds: the ``@yearly`` ... ``@hourly`` aliases (cronsim has none), a check
that an expression has exactly the five classic fields (cronsim would read six fields as
seconds-first, and Temporal reads six as year-last: neither is accepted, so no expression
means two things), errors that name the expression, the field and its column, and an
iterator of UTC instants.

Daylight saving time (Debian cron's rule, applied by cronsim): an expression whose minute
and hour fields are both fixed (neither starts with ``*``, e.g. ``30 2 * * *``,
``0 6,18 * * 1-5``) is a *wall-clock* job. A wall-clock time that falls in a spring-forward
gap runs once, at the first instant after the gap (02:30 -> 03:00 in Europe/Berlin); a
wall-clock time that occurs twice on a fall-back day runs once, at its first occurrence.
Every other expression (``0 * * * *``, ``*/15 * * * *``, ``0 */2 * * *``) runs on elapsed
time: a skipped hour has no runs and a repeated hour has its runs twice, so an hourly job
runs 23 times on the spring-forward day and 25 times on the fall-back day, once an hour.
(Temporal's own calendar differs: it skips wall-clock times in the gap and runs those of a
repeated hour twice.) Day-of-month and day-of-week combine as in Vixie cron: when both are
restricted (neither starts with ``*``) a day matching either one matches.
"""

from __future__ import annotations

import re

from collections.abc import Iterator
from datetime import datetime, timezone
from zoneinfo import ZoneInfo

from cronsim import CronSim, CronSimError

__all__ = ["ALIASES", "check_cron_expression", "cron_times"]

#: The aliases accepted instead of five fields, and what each one means.
ALIASES: dict[str, str] = {
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
_UTC = timezone.utc
# Any instant works: it only has to be one from which cronsim can look 50 years ahead.
_PROBE_START = datetime(2000, 1, 1, tzinfo=_UTC)


def check_cron_expression(expr: str) -> str:
    """Check a cron expression and return its five-field form (an alias expanded).

    Accepted: five fields ``minute hour day-of-month month day-of-week`` with ``*``, lists,
    ranges, steps, month and weekday names and cronsim's ``L``, ``LW`` and ``#``; or one of
    :data:`ALIASES`. Leading and trailing blanks are ignored; letters may be any case.

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
        five = ALIASES.get(word)
        if five is None or len(text.split()) != 1:
            hint = " (for a fixed period use an interval, ScheduleIntervalSpec)" if word == "@every" else ""
            raise ValueError(f"cron expression {expr!r}: unknown alias {text!r}; supported: "
                             f"{', '.join(ALIASES)}{hint}")
        return five
    fields = [(m.group(), m.start() + 1 + (len(expr) - len(expr.lstrip()))) for m in re.finditer(r"\S+", text)]
    if len(fields) != 5:
        raise ValueError(f"cron expression {expr!r} has {len(fields)} field{'s' if len(fields) != 1 else ''}; "
                         f"expected five: {_FIELD_NAMES} (or an alias such as @daily)")
    five = " ".join(f for f, _ in fields)
    try:
        it = CronSim(five, _PROBE_START)
    except CronSimError as e:
        index = _field_index(str(e))
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


def _field_index(message: str) -> int | None:
    for i, (name, _) in enumerate(_FIELDS):
        if message == f"Bad {name}":
            return i
    return None


def cron_times(five: str, tz: ZoneInfo, after: datetime) -> Iterator[datetime]:
    """The instants (UTC, strictly increasing, each after ``after``) a checked expression names in ``tz``.

    ``five`` is the result of :func:`check_cron_expression`. Times have whole seconds. The
    iterator ends when no time matches within 50 years of the previous one, or past year 9999.
    """
    last = after.astimezone(_UTC)
    it = CronSim(five, last.astimezone(tz))
    while True:
        try:
            local = next(it)
        except (StopIteration, OverflowError, ValueError):  # ValueError: year 10000
            return
        utc = local.astimezone(_UTC)
        # A wall-clock job started in the second copy of a repeated hour is handed the first
        # copy's time (already past), and two wall-clock times in one spring-forward gap both
        # become the gap's end: neither is a new time.
        if utc > last:
            last = utc
            yield utc
