"""The limits of the expression sandbox, the errors that enforce them, and the checks made
before an operation allocates.

Every limit counts sizes and operations, never time, so that a refusal is the same on
every run (replay requires it). :mod:`spindle.dsl._sandbox` describes the sandbox as a whole.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "MAX_BATCH",
    "MAX_INT_BITS",
    "MAX_JSON_INDENT",
    "MAX_RESULT_SIZE",
    "MAX_VALUE_NESTING",
    "MAX_VALUE_SIZE",
    "MAX_WORK",
    "LimitExceeded",
    "NotData",
    "check_total",
    "check_width",
    "int_bits",
]

#: Longest value (characters of text, or about the length of a list's or mapping's
#: JSON) an operator, filter, method call or ``~`` may produce.
MAX_VALUE_SIZE = 1_000_000
#: Largest value an expression may evaluate to (it may pass on a bigger input as is).
MAX_RESULT_SIZE = 10_000_000
#: Work one evaluation may do: each operation costs 1 plus the size of what it produces.
MAX_WORK = 10_000_000
#: Deepest nesting of lists and mappings in a value an expression produces.
MAX_VALUE_NESTING = 100
#: Largest integer an expression may produce, in bits (about 1,233 decimal digits).
MAX_INT_BITS = 4096
#: Widest ``indent`` a ``tojson`` may use.
MAX_JSON_INDENT = 16
#: Most groups ``batch`` and ``slice`` may make (as many as ``range`` gives numbers).
MAX_BATCH = 100_000


class LimitExceeded(Exception):
    """An expression went over one of the limits of this module."""


class NotData(Exception):
    """An expression used a function as data (printed, formatted or returned it)."""


def int_bits(value: int) -> int:
    """The bits of ``value``; raises :class:`LimitExceeded` past :data:`MAX_INT_BITS`."""
    bits = value.bit_length()
    if bits > MAX_INT_BITS:
        raise LimitExceeded(f"an integer of more than {MAX_INT_BITS} bits")
    return bits


def check_width(width: Any, what: str) -> None:
    """Refuse a padding ``width`` (``center``, ``ljust``, ...) over :data:`MAX_VALUE_SIZE`."""
    if isinstance(width, int) and width > MAX_VALUE_SIZE:
        raise LimitExceeded(f"{what} width {width:,} is over {MAX_VALUE_SIZE:,}")


def check_total(estimate: int, what: str) -> None:
    """Refuse an operation whose result is ``estimate`` long, if that is over :data:`MAX_VALUE_SIZE`."""
    if estimate > MAX_VALUE_SIZE:
        raise LimitExceeded(f"{what} would produce a value of more than {MAX_VALUE_SIZE:,} characters")
