"""Visibility list-filter language: parse, type-check, compile to SQL, evaluate.

Used by ``client.list_workflows(query)`` / ``count_workflows``, ``spindle workflow
list --query`` and the widgets, through the control plane's visibility store::

    q = compile_query("WorkflowType = 'Order' AND ExecutionStatus = 'Running'",
                      search_attributes={"CustomerId": "Keyword"}, dialect="sqlite")
    rows = db.execute(f"SELECT * FROM visibility WHERE namespace_id = :ns AND ({q.where}) "
                      f"ORDER BY {q.order_by} LIMIT 100", {**q.params, "ns": ns_id})

Language: comparisons ``= != <> > >= < <=``, ``AND`` (binds tighter than) ``OR``,
``NOT``, parentheses, ``[NOT] IN (...)``, ``[NOT] BETWEEN a AND b``,
``[NOT] STARTS_WITH 'prefix'``, ``IS [NOT] NULL``, ``ORDER BY f [ASC|DESC], ...``,
``GROUP BY ExecutionStatus`` (for counts). Keywords are case-insensitive, field
names case-sensitive. Strings use single or double quotes, a doubled quote
escapes itself. Datetimes are RFC 3339 strings (or integer Unix ms), durations
``'90s' '30m' '1h30m' '2d' '250ms'`` (or integer ms). An empty query matches
everything. NULL semantics are SQL's: ``CloseTime > x`` is never true for a
running execution, and neither is ``NOT (CloseTime > x)``; use ``IS NULL``.

Visibility table columns (both stores create exactly these)::

    field               column                  type
    WorkflowId          workflow_id             TEXT / STRING
    RunId               run_id                  TEXT / STRING
    WorkflowType        workflow_type           TEXT / STRING
    ExecutionStatus     status                  INTEGER / INT64 (1 Running, 2 Completed, 3 Failed,
                                                4 Canceled, 5 Terminated, 6 ContinuedAsNew, 7 TimedOut)
    TaskQueue           task_queue              TEXT / STRING
    StartTime           start_time_ms           INTEGER / INT64, Unix ms
    CloseTime           close_time_ms           INTEGER / INT64, Unix ms, NULL while running
    ExecutionDuration   execution_duration_ms   INTEGER / INT64, ms, NULL while running
    HistoryLength       history_length          INTEGER / INT64
    (custom attributes) search_attributes       TEXT holding a JSON object (SQLite) / JSON (Spanner)

Custom attributes are keys of the ``search_attributes`` object, typed by the
namespace registry (Keyword, Text, Int, Double, Bool, Datetime, KeywordList).
Stores must write Datetime values as Unix milliseconds, KeywordList values as
JSON arrays of strings, and drop a key rather than store JSON null. SQLite reads
them with ``json_extract(search_attributes, '$."Name"')`` (lists through
``json_each``), Spanner with ``JSON_VALUE`` plus ``SAFE_CAST`` (lists through
``JSON_VALUE_ARRAY``). Literal values are always bound parameters; attribute
names are validated identifiers, so nothing from a query is spliced into SQL.
"""

from ._ast import And, Between, Comparison, Expr, InList, IsNull, Not, Or, OrderTerm, Query, StartsWith
from ._errors import QueryError
from ._evaluator import matches
from ._query_parser import parse_query
from ._schema import (
    BUILTIN_FIELDS,
    EXECUTION_STATUS,
    STATUS_NAMES,
    FieldInfo,
    FieldType,
    validate_search_attributes,
)
from ._sql import CompiledQuery, Dialect, OrderColumn, compile_ast, compile_query

__all__ = [
    "BUILTIN_FIELDS",
    "EXECUTION_STATUS",
    "STATUS_NAMES",
    "And",
    "Between",
    "Comparison",
    "CompiledQuery",
    "Dialect",
    "Expr",
    "FieldInfo",
    "FieldType",
    "InList",
    "IsNull",
    "Not",
    "Or",
    "OrderColumn",
    "OrderTerm",
    "Query",
    "QueryError",
    "StartsWith",
    "compile_ast",
    "compile_query",
    "matches",
    "parse_query",
    "validate_search_attributes",
]
