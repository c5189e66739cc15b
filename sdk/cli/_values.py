"""Flag values that several commands read: JSON arguments and durations.

Both report a bad value as a usage error naming the flag (exit status 2), before anything
is sent.
"""

from __future__ import annotations

import datetime
import json

from typing import Any

from spindle.cli._output import fail

__all__ = ["duration_arg", "json_arg"]


def json_arg(value: str, flag: str) -> Any:
    """``value`` parsed as JSON; a usage error naming ``flag`` if it is not."""
    try:
        return json.loads(value)
    except json.JSONDecodeError as e:
        fail(f"{flag}: not valid JSON ({e.msg} at position {e.pos}): {value!r}")


def duration_arg(value: str | None, flag: str) -> datetime.timedelta | None:
    """``90s``, ``5m``, ``2h``, ``14d``, ``500ms`` (a number and one unit; None stays None).

    A usage error naming ``flag`` if it is none of these.
    """
    if value is None:
        return None
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}
    for u in sorted(units, key=len, reverse=True):
        if value.endswith(u):
            try:
                n = float(value[: -len(u)])
            except ValueError:
                break
            if n < 0:
                break
            return datetime.timedelta(seconds=n * units[u])
    fail(f"{flag}: {value!r} is not a duration (examples: 90s, 5m, 2h, 14d)")
