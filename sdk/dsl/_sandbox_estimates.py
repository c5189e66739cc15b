"""Upper bounds of how long a result will be, worked out before the operation runs.

The guards (:mod:`spindle.dsl._sandbox_guards`, and ``%`` in the environment) compare
these with :data:`MAX_VALUE_SIZE` and refuse an operation *before* it allocates.
"""

from __future__ import annotations

import re
import string

from collections.abc import Mapping, Sequence
from typing import Any

from spindle.dsl._sandbox_budget import Budget
from spindle.dsl._sandbox_limits import MAX_VALUE_SIZE, LimitExceeded

__all__ = ["format_estimate", "join_estimate", "materialise", "printf_estimate", "replace_estimate"]


def replace_estimate(text: str, old: str, new: str, count: Any) -> int:
    """An upper bound of the length of ``text.replace(old, new, count)``."""
    occurrences = len(text) + 1 if old == "" else text.count(old)
    if isinstance(count, int) and count >= 0:
        occurrences = min(occurrences, count)
    return len(text) + occurrences * max(0, len(new) - len(old))


def materialise(items: Any, budget: Budget, what: str) -> list[Any]:
    """``items`` as a list; an iterator's items are counted as produced."""
    if isinstance(items, (list, tuple)):
        return list(items)
    listed = list(items)
    budget.charge(1 + len(listed), what)
    return listed


def join_estimate(separator: str, items: Sequence[Any], budget: Budget) -> int:
    """An upper bound of the length of ``separator.join(items)`` (of the items' text)."""
    parts = sum(budget.size(item, MAX_VALUE_SIZE + 1) for item in items)
    return parts + len(separator) * max(0, len(items) - 1)


_PRINTF_SPEC = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?[hlL]?([a-zA-Z%])")


def printf_estimate(template: str, values: Any, budget: Budget) -> int:
    """An upper bound of the length of ``template % values`` (``*`` widths refused)."""
    widths = 0
    fields = 0
    for match in _PRINTF_SPEC.finditer(template):
        width, precision, _ = match.groups()
        if width == "*" or precision == "*":
            raise LimitExceeded("'*' widths in % formats are not allowed in expressions")
        widths += int(width or 0) + int(precision or 0)
        fields += 1
    largest = budget.size(values, MAX_VALUE_SIZE + 1)
    return len(template) + widths + fields * largest


def format_estimate(template: str, args: Sequence[Any], kwargs: Mapping[str, Any], budget: Budget) -> int:
    """An upper bound of the length of ``template.format(*args, **kwargs)``."""
    widths = 0
    fields = 0
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError:
        return len(template)  # format() will raise the same error
    for _, field, spec, _ in parsed:
        if field is None:
            continue
        fields += 1
        if spec and "{" in spec:
            raise LimitExceeded("nested '{...}' inside a format spec is not allowed in expressions")
        widths += sum(int(digits) for digits in re.findall(r"\d+", spec or ""))
    largest = max([budget.size(value, MAX_VALUE_SIZE + 1) for value in (*args, *kwargs.values())] or [0])
    return len(template) + widths + fields * largest
