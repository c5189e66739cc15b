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

What is valid text and what a refusal says (the ``@yearly`` ... ``@hourly`` aliases, exactly
five fields, errors naming the expression, the field and its column) is the wire contract's,
written once in :mod:`spindle.api._schedule_rules` for the server and the SDK alike; this
module re-exports :func:`check_cron_expression` and adds :func:`cron_times`, an iterator of
UTC instants.

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

from collections.abc import Iterator
from datetime import datetime, timezone
from zoneinfo import ZoneInfo

from cronsim import CronSim

from spindle.api._schedule_rules import CRON_ALIASES, check_cron_expression

__all__ = ["ALIASES", "check_cron_expression", "cron_times"]

#: The aliases accepted instead of five fields, and what each one means (the shared rules' ``CRON_ALIASES``).
ALIASES: dict[str, str] = CRON_ALIASES
_UTC = timezone.utc


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
