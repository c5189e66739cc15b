"""SQL generation for SQLite and Cloud Spanner (GoogleSQL) visibility tables.

Every literal of the query becomes a named parameter; the only identifiers
embedded in the SQL text are fixed column names and custom attribute names
that :func:`~._schema.validate_search_attributes` restricted to
``[A-Za-z_][A-Za-z0-9_]*``. NULL semantics are SQL's three-valued logic, which
:func:`~._evaluator.matches` reproduces exactly.
"""

from __future__ import annotations

import re

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from ._ast import And, Between, Comparison, Expr, InList, IsNull, Not, Or, Query, StartsWith
from ._query_parser import parse_query
from ._schema import FieldInfo, FieldType, Schema, Value

Dialect = Literal["sqlite", "spanner"]

_PREFIX_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,30}")
_MAX_CODE_POINT = 0x10FFFF
_SURROGATES = range(0xD800, 0xE000)

_SPANNER_CASTS = {
    FieldType.INT: "INT64",
    FieldType.DATETIME: "INT64",
    FieldType.DOUBLE: "FLOAT64",
    FieldType.BOOL: "BOOL",
}


@dataclass(frozen=True, slots=True)
class OrderColumn:
    """One ORDER BY column as SQL: an expression and its direction (for keyset pagination)."""

    sql: str
    descending: bool


@dataclass(frozen=True)
class CompiledQuery:
    """A query translated to one SQL dialect.

    Attributes:
        where: boolean SQL expression over the visibility table; ``"TRUE"`` for an
            empty filter. Self-contained (safe to ``AND`` with the store's own
            conditions, though wrapping it in parentheses costs nothing).
        params: placeholder name (without ``:``/``@``) -> bound value. Values are
            ``str``, ``int``, ``float`` or (Spanner only) ``bool``; never None.
        order_by: ORDER BY list without the keywords, e.g.
            ``"start_time_ms DESC, run_id ASC"``. Always ends in a ``run_id`` term
            so the order is total (stable pagination).
        order_columns: the same terms, structured.
        group_by: GROUP BY field names as written in the language (``["ExecutionStatus"]``) or empty.
        group_by_columns: the SQL expressions for ``group_by`` (``["status"]``).
        ast: the parsed query (input to :func:`~._evaluator.matches`).
        dialect: ``"sqlite"`` or ``"spanner"``.
    """

    where: str
    params: dict[str, Value]
    order_by: str
    order_columns: tuple[OrderColumn, ...]
    group_by: list[str]
    group_by_columns: list[str]
    ast: Query
    dialect: Dialect


def compile_query(
    query: str,
    *,
    search_attributes: Mapping[str, str],
    dialect: Dialect = "sqlite",
    param_prefix: str = "p",
) -> CompiledQuery:
    """Parse, type-check and translate ``query`` to SQL for ``dialect``.

    Placeholders are ``:p0, :p1, ...`` (SQLite, for ``sqlite3``'s named style) or
    ``@p0, @p1, ...`` (Spanner); ``param_prefix`` replaces the ``p`` so the store
    can avoid clashes with its own parameter names.

    Raises:
        QueryError: the query is invalid (see :func:`parse_query`).
        ValueError: ``search_attributes``, ``dialect`` or ``param_prefix`` is invalid.
    """
    _check_options(dialect, param_prefix)
    ast = parse_query(query, search_attributes=Schema(search_attributes))
    return compile_ast(ast, dialect=dialect, param_prefix=param_prefix)


def compile_ast(ast: Query, *, dialect: Dialect = "sqlite", param_prefix: str = "p") -> CompiledQuery:
    """Translate an already parsed :class:`Query` (see :func:`compile_query`).

    Raises:
        ValueError: ``dialect`` or ``param_prefix`` is invalid.
    """
    _check_options(dialect, param_prefix)
    gen = _Generator(dialect, param_prefix)
    where = "TRUE" if ast.where is None else gen.expr(ast.where)
    order = [OrderColumn(gen.column(t.field), t.descending) for t in ast.order_by]
    if not order:
        order.append(OrderColumn("start_time_ms", True))
    if not any(o.sql == "run_id" for o in order):
        order.append(OrderColumn("run_id", False))
    return CompiledQuery(
        where=where,
        params=gen.params,
        order_by=", ".join(f"{o.sql} {'DESC' if o.descending else 'ASC'}" for o in order),
        order_columns=tuple(order),
        group_by=[f.name for f in ast.group_by],
        group_by_columns=[gen.column(f) for f in ast.group_by],
        ast=ast,
        dialect=dialect,
    )


def _check_options(dialect: str, param_prefix: str) -> None:
    if dialect not in ("sqlite", "spanner"):
        raise ValueError(f"unknown SQL dialect {dialect!r} (use 'sqlite' or 'spanner')")
    if _PREFIX_RE.fullmatch(param_prefix) is None:
        raise ValueError(f"invalid param_prefix {param_prefix!r}: use a short identifier such as 'p'")


def prefix_upper_bound(prefix: str) -> str | None:
    """The smallest string greater than every string that starts with ``prefix``.

    None when no such string exists (the prefix is empty or all U+10FFFF). Used to
    turn STARTS_WITH into an index-friendly range on SQLite; correct because
    UTF-8 byte order (SQLite's BINARY collation) equals code point order.
    """
    chars = list(prefix)
    while chars:
        last = ord(chars.pop())
        if last < _MAX_CODE_POINT:
            nxt = last + 1
            if nxt in _SURROGATES:
                nxt = _SURROGATES.stop
            return "".join(chars) + chr(nxt)
    return None


class _Generator:
    def __init__(self, dialect: Dialect, prefix: str) -> None:
        self.dialect = dialect
        self.prefix = prefix
        self.params: dict[str, Value] = {}

    def bind(self, value: Value) -> str:
        name = f"{self.prefix}{len(self.params)}"
        if self.dialect == "sqlite" and isinstance(value, bool):
            value = int(value)  # json_extract yields 1/0 for JSON booleans
        self.params[name] = value
        return (":" if self.dialect == "sqlite" else "@") + name

    def column(self, field: FieldInfo) -> str:
        """SQL expression producing the field's scalar value (NULL when absent)."""
        if field.column is not None:
            return field.column
        if self.dialect == "sqlite":
            return f"json_extract(search_attributes, '$.\"{field.name}\"')"
        if field.type is FieldType.KEYWORD_LIST:
            return f"JSON_QUERY(search_attributes, '$.{field.name}')"
        value = f"JSON_VALUE(search_attributes, '$.{field.name}')"
        cast = _SPANNER_CASTS.get(field.type)
        return f"SAFE_CAST({value} AS {cast})" if cast else value

    def _list_contains(self, field: FieldInfo, values: tuple[Value, ...]) -> str:
        placeholders = [self.bind(v) for v in values]
        test = f"= {placeholders[0]}" if len(placeholders) == 1 else f"IN ({', '.join(placeholders)})"
        if self.dialect == "sqlite":
            source, element = f"json_each(search_attributes, '$.\"{field.name}\"')", "value"
        else:
            source, element = f"UNNEST(JSON_VALUE_ARRAY(search_attributes, '$.{field.name}')) AS kw", "kw"
        return f"EXISTS (SELECT 1 FROM {source} WHERE {element} {test})"

    def expr(self, node: Expr) -> str:
        if isinstance(node, And):
            return "(" + " AND ".join(self.expr(o) for o in node.operands) + ")"
        if isinstance(node, Or):
            return "(" + " OR ".join(self.expr(o) for o in node.operands) + ")"
        if isinstance(node, Not):
            return f"(NOT ({self.expr(node.operand)}))"
        if isinstance(node, Comparison):
            if node.field.type is FieldType.KEYWORD_LIST:
                return self._list_contains(node.field, (node.value,))
            return f"{self.column(node.field)} {node.op} {self.bind(node.value)}"
        if isinstance(node, InList):
            if node.field.type is FieldType.KEYWORD_LIST:
                return self._list_contains(node.field, node.values)
            keyword = "NOT IN" if node.negated else "IN"
            return f"{self.column(node.field)} {keyword} ({', '.join(self.bind(v) for v in node.values)})"
        if isinstance(node, Between):
            keyword = "NOT BETWEEN" if node.negated else "BETWEEN"
            return f"({self.column(node.field)} {keyword} {self.bind(node.low)} AND {self.bind(node.high)})"
        if isinstance(node, StartsWith):
            sql = self._starts_with(node)
            return f"(NOT {sql})" if node.negated else sql
        if isinstance(node, IsNull):
            return f"{self.column(node.field)} IS {'NOT ' if node.negated else ''}NULL"
        raise TypeError(f"not a query expression: {node!r}")  # pragma: no cover

    def _starts_with(self, node: StartsWith) -> str:
        col = self.column(node.field)
        if self.dialect == "spanner":
            return f"STARTS_WITH({col}, {self.bind(node.prefix)})"
        # A range instead of LIKE/GLOB: no wildcard escaping, case-sensitive, and it can use an index.
        # NULL stays NULL (three-valued logic), as STARTS_WITH does in Spanner.
        upper = prefix_upper_bound(node.prefix)
        low = f"{col} >= {self.bind(node.prefix)}"
        return f"({low} AND {col} < {self.bind(upper)})" if upper is not None else f"({low})"
