"""The rules of a ``spindle_schedule`` block, checked at ``terraform validate``/``plan`` time.

Pure Python (no ``tf``, no protobuf), like ``validation.py``: the unit tests run it from the
project's environment and compare it with the SDK's and the control plane's rules. Cron
expressions are left to the server (checked at apply; the provider's environment has no
cron library).
"""

from __future__ import annotations

import json
import re
import zoneinfo

from typing import Any, Callable

from .validation import Problems

OVERLAP_POLICIES = ("SKIP", "BUFFER_ONE", "BUFFER_ALL", "CANCEL_OTHER", "TERMINATE_OTHER", "ALLOW_ALL")
_UNITS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_DURATION_RE = re.compile(r"^(?:\d+(?:ms|s|m|h|d))+$")
_PART_RE = re.compile(r"(\d+)(ms|s|m|h|d)")
_ID_RE = re.compile(r"^[^\s/][^/]{0,999}$")


def duration_ms(text: str) -> int:
    """``90s``, ``15m``, ``1h30m``, ``1d`` in milliseconds; ValueError otherwise."""
    if not isinstance(text, str) or not _DURATION_RE.match(text.strip()):
        raise ValueError(f"{text!r} is not a duration (a whole number followed by ms, s, m, h or d, e.g. 15m, 1h30m)")
    return sum(int(n) * _UNITS[u] for n, u in _PART_RE.findall(text))


def interval_ms(text: str) -> tuple[int, int]:
    """``EVERY`` or ``EVERY/PHASE`` as milliseconds ``(every, offset)``; ValueError naming what is wrong."""
    every_text, sep, phase_text = text.partition("/")
    every = duration_ms(every_text)
    offset = duration_ms(phase_text) if sep else 0
    if every < 1000 or every % 1000 or offset % 1000:
        raise ValueError(f"{text!r}: the period and phase must be whole seconds, the period at least 1s")
    if offset >= every:
        raise ValueError(f"{text!r}: the phase must be shorter than the period")
    return every, offset


def _format_ms(ms: int) -> str:
    out = ""
    for unit in ("d", "h", "m", "s"):
        size = _UNITS[unit]
        if ms >= size:
            out += f"{ms // size}{unit}"
            ms %= size
    return out or "0s"


def format_interval(every_ms: int, offset_ms: int) -> str:
    """The canonical spelling of an interval (``1h``, ``1d/6h``)."""
    return _format_ms(every_ms) + (f"/{_format_ms(offset_ms)}" if offset_ms else "")


def check_schedule_config(config: Any, unknown: Callable[[Any], bool]) -> Problems:
    """Problems of a ``spindle_schedule`` block as written (each names its attribute)."""
    problems = Problems()
    sid = config.get("schedule_id")
    if isinstance(sid, str) and not unknown(sid) and not _ID_RE.match(sid):
        problems.error(["schedule_id"], "Invalid schedule id",
                       f"schedule_id: 1-1000 characters, no '/', not starting with a space; got {sid!r}.")
    crons, intervals = config.get("cron_expressions"), config.get("intervals")
    if not unknown(crons) and not unknown(intervals) and not crons and not intervals:
        problems.error(["cron_expressions"], "A schedule needs times",
                       "Give cron_expressions (e.g. [\"0 6 * * *\"]) or intervals (e.g. [\"1h\"]), or both.")
    for i, iv in enumerate(() if unknown(intervals) else intervals or ()):
        if isinstance(iv, str) and not unknown(iv):
            try:
                interval_ms(iv)
            except ValueError as e:
                problems.error(["intervals", (i,)], "Invalid interval", f"intervals[{i}]: {e} (write EVERY or EVERY/PHASE, "
                                                                     "e.g. 1h or 1h/15m).")
    for i, expr in enumerate(() if unknown(crons) else crons or ()):
        if isinstance(expr, str) and not unknown(expr) and not expr.strip():
            problems.error(["cron_expressions", (i,)], "Empty cron expression", f"cron_expressions[{i}] is empty.")
    tz = config.get("time_zone")
    if isinstance(tz, str) and not unknown(tz):
        try:
            zoneinfo.ZoneInfo(tz)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            problems.error(["time_zone"], "Unknown time zone", f"time_zone: {tz!r} is not an IANA time zone name "
                                                               "(e.g. UTC, Europe/Berlin).")
    overlap = config.get("overlap")
    if isinstance(overlap, str) and not unknown(overlap) and overlap not in OVERLAP_POLICIES:
        problems.error(["overlap"], "Unknown overlap policy", f"overlap: {overlap!r}; one of {', '.join(OVERLAP_POLICIES)}.")
    for attr in ("jitter_seconds", "catchup_window_seconds"):
        v = config.get(attr)
        if v is not None and not unknown(v) and (v < 0 or v != int(v) or (attr == "catchup_window_seconds" and v == 0)):
            problems.error([attr], f"Invalid {attr}", f"{attr}: a whole number of seconds, "
                                                      f"{'at least 1' if attr.startswith('catchup') else '0 or more'}; "
                                                      f"got {v}.")
    args = config.get("input")
    if isinstance(args, str) and not unknown(args):
        try:
            args = json.loads(args)
        except ValueError as e:
            problems.error(["input"], "Invalid input", f"input: not JSON ({e}).")
            return problems
    if args is not None and not unknown(args) and not isinstance(args, list):
        problems.error(["input"], "Invalid input", "input: a JSON array of the workflow's arguments, e.g. "
                                                   "jsonencode([\"eu\", 3]).")
    return problems


__all__ = ["OVERLAP_POLICIES", "check_schedule_config", "duration_ms", "format_interval", "interval_ms"]
