"""Durations as the DSL writes them: ``500ms``, ``90s``, ``5m``, ``2h``, ``14d``, ``1h30m``."""

from __future__ import annotations

import re

__all__ = ["DURATION", "DURATION_HELP", "parse_duration"]

_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_NUMBER_AND_UNIT = rf"([0-9]+(?:\.[0-9]+)?)({'|'.join(sorted(_UNITS, key=len, reverse=True))})"
#: One or more number-and-unit parts, in ASCII digits (a string may have blanks around
#: them). The one definition of the syntax: ``parse_duration`` and the JSON Schema
#: (``_shapes.Duration``) are both written with it.
DURATION = rf"(?:{_NUMBER_AND_UNIT})+"
_PART = re.compile(_NUMBER_AND_UNIT)
_WHOLE = re.compile(rf"\s*{DURATION}\s*")

DURATION_HELP = "a number followed by ms, s, m, h or d, e.g. 500ms, 90s, 2h, 14d or 1h30m"


def parse_duration(value: object) -> float:
    """Return the duration in seconds.

    Raises:
        ValueError: if ``value`` is not a duration string (the message says what
            a duration looks like).
    """
    if isinstance(value, str) and _WHOLE.fullmatch(value):
        seconds = sum(float(n) * _UNITS[unit] for n, unit in _PART.findall(value))
        if seconds > 0:
            return seconds
        raise ValueError(f"bad duration {value!r}: must be greater than zero")
    raise ValueError(f"bad duration {value!r}: expected {DURATION_HELP}")
