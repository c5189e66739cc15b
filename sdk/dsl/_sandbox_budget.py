"""The work budget of one evaluation, and how big a value is.

Every operation an expression makes is charged 1 plus the size of what it produces
(:meth:`Budget.produced`), against :data:`MAX_WORK` per evaluation. A size is about the
length of the value as text (its JSON, for lists and mappings); sizes are memoised per
evaluation, so a value passed around is measured once.
"""

from __future__ import annotations

import contextlib
import contextvars

from collections.abc import Iterator, Mapping
from collections.abc import Set as AbstractSet
from typing import Any

from spindle.dsl._sandbox_limits import MAX_VALUE_NESTING, MAX_VALUE_SIZE, MAX_WORK, LimitExceeded, int_bits
from spindle.dsl._sandbox_scope import Scope

__all__ = ["Budget", "current_budget", "evaluation"]


class Budget:
    """What one evaluation has left to spend, and the sizes it has measured."""

    __slots__ = ("memo", "work")

    def __init__(self) -> None:
        self.work = MAX_WORK
        #: id(value) -> (value, size); the value is kept so that its id stays unique.
        self.memo: dict[int, tuple[Any, int]] = {}

    def charge(self, units: int, what: str) -> None:
        self.work -= units
        if self.work < 0:
            raise LimitExceeded(
                f"too much work: more than {MAX_WORK:,} units (each operation costs 1 plus the size "
                f"of its result; the last was {what})"
            )

    def size(self, value: Any, limit: int) -> int:
        """About the length of ``value`` as text; stops counting past ``limit``."""
        return _measure(value, self, limit, 0)

    def produced(self, value: Any, what: str) -> Any:
        """Check and charge a value an operation produced; return it."""
        size = self.size(value, MAX_VALUE_SIZE)
        if size > MAX_VALUE_SIZE:
            raise LimitExceeded(f"{what} would produce a value of more than {MAX_VALUE_SIZE:,} characters")
        self.charge(1 + size, what)
        return value


_CURRENT: contextvars.ContextVar[Budget | None] = contextvars.ContextVar("spindle_dsl_budget", default=None)


def current_budget() -> Budget:
    """The budget of the evaluation running (see :func:`evaluation`)."""
    budget = _CURRENT.get()
    # Outside ``evaluation()`` (Jinja used directly): a fresh budget per operation.
    return budget if budget is not None else Budget()


@contextlib.contextmanager
def evaluation() -> Iterator[None]:
    """``with evaluation():`` runs one expression with a fresh budget."""
    token = _CURRENT.set(Budget())
    try:
        yield
    finally:
        _CURRENT.reset(token)


def _measure(value: Any, budget: Budget, limit: int, depth: int) -> int:
    """The size of ``value`` (see :data:`MAX_VALUE_SIZE`), memoised per evaluation."""
    if isinstance(value, str):
        return len(value)
    if value is None or isinstance(value, (bool, float)):
        return 5
    if isinstance(value, int):
        return int_bits(value) // 3 + 1
    if isinstance(value, range):
        return 8 * len(value)
    if not isinstance(value, (Mapping, Scope, list, tuple, AbstractSet)):
        return 1  # iterators (lazy, counted when materialised), callables, undefined
    known = budget.memo.get(id(value))
    if known is not None:
        return known[1]
    if depth >= MAX_VALUE_NESTING:
        raise LimitExceeded(f"a value nested more than {MAX_VALUE_NESTING} levels deep")
    total = 2
    if isinstance(value, (Mapping, Scope)):
        for key, item in value.items():
            total += _measure(key, budget, limit, depth + 1) + _measure(item, budget, limit, depth + 1) + 4
            if total > limit:
                break
    else:
        for item in value:
            total += _measure(item, budget, limit, depth + 1) + 2
            if total > limit:
                break
    budget.memo[id(value)] = (value, total)
    return total
