"""Typed syntax tree of a parsed list-filter query.

Nodes are immutable and compare by structure; source positions are kept for
error messages but ignored by ``==``. Values are already converted to their
storage form (see ``_schema``), so SQL generation and evaluation never parse text.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field as dc_field

from ._schema import FieldInfo, Value


@dataclass(frozen=True, slots=True)
class Comparison:
    """``field op value`` with op one of ``= != < <= > >=``.

    On a KeywordList field, ``=`` means "the list contains value".
    """

    field: FieldInfo
    op: str
    value: Value
    position: int = dc_field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class InList:
    """``field [NOT] IN (v1, v2, ...)``; on a KeywordList: the list contains any of the values."""

    field: FieldInfo
    values: tuple[Value, ...]
    negated: bool = False
    position: int = dc_field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class Between:
    """``field [NOT] BETWEEN low AND high`` (both ends inclusive)."""

    field: FieldInfo
    low: Value
    high: Value
    negated: bool = False
    position: int = dc_field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class StartsWith:
    """``field [NOT] STARTS_WITH prefix`` (case-sensitive)."""

    field: FieldInfo
    prefix: str
    negated: bool = False
    position: int = dc_field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class IsNull:
    """``field IS [NOT] NULL`` (a missing custom attribute is NULL)."""

    field: FieldInfo
    negated: bool = False
    position: int = dc_field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class Not:
    """``NOT operand``."""

    operand: Expr


@dataclass(frozen=True, slots=True)
class And:
    """Conjunction of two or more operands (nested ANDs are flattened)."""

    operands: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class Or:
    """Disjunction of two or more operands (nested ORs are flattened)."""

    operands: tuple[Expr, ...]


Predicate = Comparison | InList | Between | StartsWith | IsNull
Expr = Predicate | Not | And | Or


@dataclass(frozen=True, slots=True)
class OrderTerm:
    """One ``ORDER BY`` term."""

    field: FieldInfo
    descending: bool = False


@dataclass(frozen=True, slots=True)
class Query:
    """A whole query: optional filter, explicit ordering, grouping.

    ``where`` is None for an empty filter (everything matches). ``order_by`` is
    empty when the query has no ORDER BY (callers apply the default order).
    """

    where: Expr | None
    order_by: tuple[OrderTerm, ...] = ()
    group_by: tuple[FieldInfo, ...] = ()
