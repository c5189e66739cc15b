"""Parsing of datetime and duration literals into integer milliseconds."""

from __future__ import annotations

import math
import re

from datetime import UTC, datetime, timedelta

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_MS = timedelta(milliseconds=1)

_RFC3339 = re.compile(
    r"(?P<date>\d{4}-\d{2}-\d{2})"
    r"(?:[Tt ](?P<time>\d{2}:\d{2}:\d{2})(?:\.(?P<frac>\d+))?(?P<tz>[Zz]|[+-]\d{2}:\d{2}))?",
    re.ASCII,
)

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)", re.ASCII)
_DIGITS = re.compile(r"[0-9]+")
_DURATION_UNITS_MS = {"ms": 1, "s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_rfc3339_ms(text: str) -> int:
    """Convert an RFC 3339 timestamp to Unix milliseconds (rounded toward -infinity).

    Accepts ``2024-05-01T12:30:00Z``, ``2024-05-01T12:30:00.123+02:00`` and a bare
    date ``2024-05-01`` (midnight UTC). A time without a UTC offset is rejected
    because its meaning would depend on the server's zone.

    Raises:
        ValueError: the text is not such a timestamp; the message says why.
    """
    m = _RFC3339.fullmatch(text.strip())
    if m is None:
        raise ValueError("expected an RFC 3339 timestamp such as '2024-05-01T12:30:00Z'")
    frac = (m.group("frac") or "")[:6].ljust(6, "0")
    if m.group("time") is None:
        iso = m.group("date") + "T00:00:00+00:00"
    else:
        tz = m.group("tz")
        tz = "+00:00" if tz in ("Z", "z") else tz
        iso = f"{m.group('date')}T{m.group('time')}.{frac}{tz}"
    try:
        return (datetime.fromisoformat(iso) - _EPOCH) // _ONE_MS
    except (ValueError, OverflowError):
        raise ValueError("timestamp has an out-of-range date or time field") from None


def parse_duration_ms(text: str) -> int:
    """Convert a duration like ``'90s'``, ``'30m'``, ``'1h30m'``, ``'2d'`` or ``'250ms'`` to milliseconds.

    Units: ms, s, m, h, d; parts may be fractional (``'1.5h'``) and are summed.
    A bare integer string (``'5000'``) means milliseconds. The result is rounded
    down to whole milliseconds.

    Raises:
        ValueError: the text is not a duration.
    """
    s = text.strip()
    if _DIGITS.fullmatch(s):
        return int(s)
    pos, total = 0, 0.0
    exact = 0
    for m in _DURATION_PART.finditer(s):
        if m.start() != pos:
            break
        number, unit = m.group(1), m.group(2)
        if "." in number:
            total += float(number) * _DURATION_UNITS_MS[unit]
        else:
            exact += int(number) * _DURATION_UNITS_MS[unit]
        pos = m.end()
    if pos == 0 or pos != len(s):
        raise ValueError("expected a duration such as '90s', '30m', '1h30m', '2d' or integer milliseconds")
    if not math.isfinite(total):
        raise ValueError("duration is too large")
    return exact + int(total)
