"""In-memory reference semantics of a parsed query (SQL three-valued logic).

A predicate on a NULL/missing value is *unknown*; ``NOT unknown`` is unknown;
``AND``/``OR`` follow Kleene logic; a record matches only when the filter is
*true*. KeywordList containment is never unknown (a missing list contains
nothing). Values of different kinds compare like SQLite's storage classes
(numbers < strings), so a malformed record never raises.
"""

from __future__ import annotations

import json

from collections.abc import Mapping
from typing import Any

from ._ast import And, Between, Comparison, Expr, InList, IsNull, Not, Or, Query, StartsWith
from ._schema import FieldInfo, FieldType

Truth = bool | None  # None = SQL unknown


def matches(ast: Query | Expr | None, record: Mapping[str, Any]) -> bool:
    """Return True iff ``record`` satisfies the filter of ``ast``.

    ``record`` uses the visibility-table column names (``workflow_id``, ``status``,
    ``start_time_ms``, ...) with ``search_attributes`` as a dict (or its JSON
    text, or None); custom Datetime values are Unix milliseconds. Missing keys
    read as NULL. ORDER BY and GROUP BY are ignored. ``None`` or an empty query
    matches everything. Never raises for well-formed ASTs.
    """
    where = ast.where if isinstance(ast, Query) else ast
    if where is None:
        return True
    attrs = record.get("search_attributes")
    if isinstance(attrs, str):
        attrs = json.loads(attrs)
    return _eval(where, record, attrs if isinstance(attrs, Mapping) else {}) is True


def _eval(node: Expr, record: Mapping[str, Any], attrs: Mapping[str, Any]) -> Truth:
    if isinstance(node, And):
        results = [_eval(o, record, attrs) for o in node.operands]
        return False if False in results else (None if None in results else True)
    if isinstance(node, Or):
        results = [_eval(o, record, attrs) for o in node.operands]
        return True if True in results else (None if None in results else False)
    if isinstance(node, Not):
        inner = _eval(node.operand, record, attrs)
        return None if inner is None else not inner
    value = _value(node.field, record, attrs)
    if isinstance(node, IsNull):
        return (value is not None) if node.negated else (value is None)
    if node.field.type is FieldType.KEYWORD_LIST:  # only = and IN are allowed on lists
        if isinstance(node, Comparison):
            return _list_contains(value, (node.value,))
        if isinstance(node, InList):
            return _list_contains(value, node.values)
    if value is None:
        return None
    if isinstance(node, Comparison):
        return _compare(value, node.op, node.value)
    if isinstance(node, InList):
        found = any(_compare(value, "=", v) for v in node.values)
        return not found if node.negated else found
    if isinstance(node, Between):
        inside = _compare(value, ">=", node.low) and _compare(value, "<=", node.high)
        return not inside if node.negated else inside
    if isinstance(node, StartsWith):
        hit = isinstance(value, str) and value.startswith(node.prefix)
        return not hit if node.negated else hit
    raise TypeError(f"not a query expression: {node!r}")  # pragma: no cover


def _value(field: FieldInfo, record: Mapping[str, Any], attrs: Mapping[str, Any]) -> Any:
    if field.column is not None:
        return record.get(field.column)
    return attrs.get(field.name)


def _list_contains(value: Any, wanted: tuple[Any, ...]) -> bool:
    items = value if isinstance(value, list) else ([] if value is None else [value])
    return any(_compare(item, "=", w) for item in items for w in wanted)


def _sort_key(value: Any) -> tuple[int, Any]:
    # SQLite storage-class order: numbers (bool is 0/1) before text.
    if isinstance(value, bool):
        return (0, int(value))
    if isinstance(value, int | float):
        return (0, value)
    if isinstance(value, str):
        return (1, value)
    return (2, json.dumps(value, sort_keys=True))


def _compare(left: Any, op: str, right: Any) -> bool:
    a, b = _sort_key(left), _sort_key(right)
    if op == "=":
        return a == b
    if op == "!=":
        return a != b
    if op == "<":
        return a < b
    if op == "<=":
        return a <= b
    if op == ">":
        return a > b
    if op == ">=":
        return a >= b
    raise ValueError(f"unknown operator {op!r}")  # pragma: no cover
