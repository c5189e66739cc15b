"""Schedules (issue 17): when a schedule's actions are due.

The server stores a :class:`CalendarSpec` per schedule (``to_dict`` / ``from_dict`` give
its JSON form) and asks :func:`next_times` / :func:`times_between` which actions are due;
both are pure, so restarts and the time-skipping clock see the same times. See
:mod:`spindle.controlplane.schedules._calendar` for the exact semantics (merging, bounds,
jitter) and :mod:`spindle.controlplane.schedules._cron` for cron syntax, the cron library
(cronsim) and daylight-saving time.
"""

from spindle.controlplane.schedules._calendar import ScheduledTime, jitter_offset, next_times, times_between
from spindle.controlplane.schedules._cron import ALIASES, check_cron_expression
from spindle.controlplane.schedules._spec import CalendarSpec, IntervalRule, load_time_zone

__all__ = [
    "ALIASES",
    "CalendarSpec",
    "IntervalRule",
    "ScheduledTime",
    "check_cron_expression",
    "jitter_offset",
    "load_time_zone",
    "next_times",
    "times_between",
]
