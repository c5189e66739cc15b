"""SQL from compile_query, run on a real SQLite table, agrees with the `matches` evaluator."""

from __future__ import annotations

import functools
import sqlite3

from collections import Counter
from typing import Any

import pytest

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spindle.controlplane.visibility import STATUS_NAMES, CompiledQuery, compile_query, matches

SEARCH_ATTRIBUTES = {
    "CustomerId": "Keyword", "Note": "Text", "Priority": "Int", "Amount": "Double",
    "Vip": "Bool", "DueAt": "Datetime", "Tags": "KeywordList",
}  # same registry as conftest.py
BASE_MS = 1_704_067_200_000
CUSTOMERS = ["acme", "globex", "initech", "ACME", "o'brien", "zeta"]
TAGS = ["gold", "silver", "bronze", "eu", "us", "it's"]
Db = tuple[sqlite3.Connection, tuple[dict[str, Any], ...]]

QUERIES = [
    "",
    "ExecutionStatus = 'Running'",
    "ExecutionStatus != 'running' AND WorkflowType = 'OrderWorkflow'",
    "WorkflowType = 'OrderWorkflow' OR WorkflowType = 'PaymentWorkflow' AND HistoryLength > 200",
    "(WorkflowType = 'OrderWorkflow' OR WorkflowType = 'PaymentWorkflow') AND HistoryLength > 200",
    "WorkflowId STARTS_WITH 'order-'",
    "WorkflowId NOT STARTS_WITH 'order'",
    "WorkflowId STARTS_WITH 'it''s'",
    "WorkflowId STARTS_WITH 'say \"hi\"'",
    "WorkflowId STARTS_WITH ''",
    "WorkflowId STARTS_WITH 'ünï'",
    "WorkflowId > 'p' AND WorkflowId <= 'payment-9'",
    "ExecutionStatus IN ('Completed', 'Failed', 'TIMED_OUT')",
    "ExecutionStatus NOT IN ('Running', 'ContinuedAsNew')",
    "StartTime >= '2024-01-01T00:00:00Z' AND StartTime < '2024-01-15T00:00:00+02:00'",
    "StartTime BETWEEN '2023-12-20' AND '2024-01-05T12:00:00Z'",
    "CloseTime IS NULL",
    "CloseTime IS NOT NULL AND CloseTime > '2024-01-10T00:00:00Z'",
    "NOT (CloseTime > '2024-01-10T00:00:00Z')",
    "ExecutionDuration >= '1h'",
    "ExecutionDuration < '90s' OR ExecutionDuration = 90000",
    "ExecutionDuration NOT BETWEEN '1m' AND '2h'",
    "HistoryLength BETWEEN 50 AND 100 OR HistoryLength IN (3, 4, 5)",
    "TaskQueue = 'orders' AND NOT ExecutionStatus = 'Running'",
    "CustomerId = 'acme'",
    "CustomerId = 'o''brien' OR CustomerId = \"ACME\"",
    "CustomerId != 'acme'",
    "CustomerId IS NULL",
    "CustomerId IN ('acme', 'globex') AND Vip = true",
    "CustomerId STARTS_WITH 'a' OR CustomerId > 'x'",
    "Note = 'urgent' OR Note STARTS_WITH 'urgent:'",
    "Note != 'urgent'",
    "Priority >= 3",
    "Priority NOT IN (0, 1) OR Priority IS NULL",
    "NOT (Priority < 2 AND Vip = false)",
    "Amount > 9.99 AND Amount <= 100",
    "Amount = 10",
    "Amount BETWEEN -2 AND 0.5",
    "Vip = false",
    "Vip != true",
    "DueAt < '2024-01-01T00:00:00Z'",
    f"DueAt >= {BASE_MS}",
    "Tags = 'gold'",
    "Tags IN ('eu', 'us')",
    "NOT (Tags = 'gold')",
    "Tags IS NULL",
    "Tags = 'it''s' OR Tags = 'silver' AND Priority > 2",
    "ExecutionStatus = 'Completed' ORDER BY HistoryLength DESC, WorkflowId",
    "ORDER BY CustomerId ASC, StartTime DESC",
    "ORDER BY Amount DESC",
    "ORDER BY CloseTime",
    "HistoryLength > 100 ORDER BY ExecutionStatus, Priority DESC",
]


def run(conn: sqlite3.Connection, q: CompiledQuery, columns: str = "run_id") -> list[Any]:
    sql = f"SELECT {columns} FROM visibility WHERE namespace_id = :ns AND ({q.where}) ORDER BY {q.order_by}"
    return conn.execute(sql, {**q.params, "ns": "ns"}).fetchall()


def _cmp_values(a: Any, b: Any) -> int:
    # SQLite order: NULL < numbers < text.
    def key(v: Any) -> tuple[int, Any]:
        if v is None:
            return (0, 0)
        if isinstance(v, bool | int | float):
            return (1, float(v))
        return (2, v)

    ka, kb = key(a), key(b)
    return (ka > kb) - (ka < kb)


def python_order(rows: list[dict[str, Any]], q: CompiledQuery) -> list[str]:
    """Sort like the SQL ORDER BY, for the fields the AST names (plus the run_id tiebreak)."""
    terms: list[tuple[Any, bool]] = [(t.field, t.descending) for t in q.ast.order_by]

    def value(row: dict[str, Any], field: Any) -> Any:
        return row[field.column] if field.column else row["search_attributes"].get(field.name)

    def compare(a: dict[str, Any], b: dict[str, Any]) -> int:
        for field, desc in terms or [(None, True)]:
            va = value(a, field) if field else a["start_time_ms"]
            vb = value(b, field) if field else b["start_time_ms"]
            c = _cmp_values(va, vb)
            if c:
                return -c if desc else c
        return _cmp_values(a["run_id"], b["run_id"])

    return [r["run_id"] for r in sorted(rows, key=functools.cmp_to_key(compare))]


@pytest.mark.parametrize("query", QUERIES)
def test_sql_and_evaluator_agree(query: str, visibility_db: Db) -> None:
    conn, rows = visibility_db
    compiled = compile_query(query, search_attributes=SEARCH_ATTRIBUTES, dialect="sqlite")
    got = [r[0] for r in run(conn, compiled)]
    expected_rows = [r for r in rows if matches(compiled.ast, r)]
    assert sorted(got) == sorted(r["run_id"] for r in expected_rows)
    assert got == python_order(expected_rows, compiled)


def test_the_corpus_is_discriminating(visibility_db: Db) -> None:
    """Most queries select a proper, non-empty subset, so agreement means something."""
    _, rows = visibility_db
    sizes = [
        sum(matches(compile_query(q, search_attributes=SEARCH_ATTRIBUTES).ast, r) for r in rows) for q in QUERIES
    ]
    proper = [s for s in sizes if 0 < s < len(rows)]
    assert len(proper) >= len(QUERIES) - 8
    assert len(rows) == 200


def test_json_text_records_are_accepted_by_matches(visibility_db: Db) -> None:
    import json

    _, rows = visibility_db
    ast = compile_query("Tags = 'gold'", search_attributes=SEARCH_ATTRIBUTES).ast
    for r in rows:
        assert matches(ast, {**r, "search_attributes": json.dumps(r["search_attributes"])}) == matches(ast, r)


@pytest.mark.parametrize("query", ["GROUP BY ExecutionStatus", "WorkflowType = 'OrderWorkflow' GROUP BY ExecutionStatus"])
def test_group_by_counts(query: str, visibility_db: Db) -> None:
    conn, rows = visibility_db
    q = compile_query(query, search_attributes=SEARCH_ATTRIBUTES)
    assert q.group_by == ["ExecutionStatus"] and q.group_by_columns == ["status"]
    cols = ", ".join(q.group_by_columns)
    sql = f"SELECT {cols}, COUNT(*) FROM visibility WHERE ({q.where}) GROUP BY {cols}"
    got = {STATUS_NAMES[s]: n for s, n in conn.execute(sql, q.params)}
    expected = Counter(STATUS_NAMES[r["status"]] for r in rows if matches(q.ast, r))
    assert got == dict(expected)


# -- random queries: SQL and evaluator agree on every one ------------------------------------------

_STR = st.sampled_from(["order-", "order", "o", "", "payment-1", "it's", 'say "hi"', "ü", "zz", "Order-"])
_LEAVES: dict[str, tuple[list[str], st.SearchStrategy[str]]] = {
    "WorkflowId": (["=", "!=", "<", ">=", "IN", "NOT IN", "STARTS_WITH", "NOT STARTS_WITH", "BETWEEN"], _STR),
    "WorkflowType": (["=", "!=", "IN"], st.sampled_from(["OrderWorkflow", "PaymentWorkflow", "Nope"])),
    "ExecutionStatus": (["=", "!=", "IN", "NOT IN"], st.sampled_from(list(STATUS_NAMES.values()))),
    "StartTime": (["<", ">=", "BETWEEN", "="], st.sampled_from(["2023-12-20", "2024-01-01T00:00:00Z", "2024-01-20"])),
    "CloseTime": (["<", ">", "!=", "BETWEEN", "IS NULL", "IS NOT NULL"], st.sampled_from(["2024-01-01", "2024-01-10"])),
    "ExecutionDuration": (["<", ">", "=", "IN", "BETWEEN"], st.sampled_from(["0s", "500ms", "90s", "30m", "1h", "3d"])),
    "HistoryLength": (["<", ">", "=", "!=", "IN", "BETWEEN"], st.integers(0, 450).map(str)),
    "CustomerId": (["=", "!=", "<", "IN", "NOT IN", "STARTS_WITH", "IS NULL", "IS NOT NULL"],
                   st.sampled_from(CUSTOMERS + ["a", ""])),
    "Note": (["=", "!=", "STARTS_WITH", "NOT STARTS_WITH", "IS NULL"], st.sampled_from(["urgent", "urgent:", "", "U"])),
    "Priority": (["<", ">=", "=", "!=", "IN", "NOT IN", "BETWEEN", "IS NULL"], st.integers(-3, 6).map(str)),
    "Amount": (["<", ">", "=", "!=", "BETWEEN", "IN"], st.sampled_from(["0", "9.99", "10", "10.0", "-1.25", "1e3"])),
    "Vip": (["=", "!=", "IS NULL", "IS NOT NULL"], st.sampled_from(["true", "false", "TRUE"])),
    "DueAt": (["<", ">", "BETWEEN", "IS NULL"], st.sampled_from(["2023-12-25", "2024-01-01T00:00:00Z", "2024-01-05"])),
    "Tags": (["=", "IN", "IS NULL", "IS NOT NULL"], st.sampled_from(TAGS + ["none"])),
}
_UNQUOTED = {"HistoryLength", "Priority", "Amount", "Vip"}


def _lit(field: str, raw: str) -> str:
    if field in _UNQUOTED:
        return raw
    return "'" + raw.replace("'", "''") + "'"


@st.composite
def _leaf(draw: st.DrawFn) -> str:
    field = draw(st.sampled_from(sorted(_LEAVES)))
    ops, values = _LEAVES[field]
    op = draw(st.sampled_from(ops))
    if op.startswith("IS"):
        return f"{field} {op}"
    if op.endswith("IN"):
        vals = draw(st.lists(values, min_size=1, max_size=3))
        return f"{field} {op} ({', '.join(_lit(field, v) for v in vals)})"
    if op == "BETWEEN":
        return f"{field} BETWEEN {_lit(field, draw(values))} AND {_lit(field, draw(values))}"
    return f"{field} {op} {_lit(field, draw(values))}"


_EXPR = st.recursive(
    _leaf(),
    lambda inner: st.one_of(
        st.tuples(inner, st.sampled_from(["AND", "OR", "and", "Or"]), inner).map(lambda t: f"{t[0]} {t[1]} {t[2]}"),
        inner.map(lambda e: f"NOT ({e})"),
        inner.map(lambda e: f"({e})"),
    ),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(query=_EXPR)
def test_random_queries_sql_matches_evaluator(query: str, visibility_db: Db) -> None:
    conn, rows = visibility_db
    compiled = compile_query(query, search_attributes=SEARCH_ATTRIBUTES)
    got = sorted(r[0] for r in run(conn, compiled))
    assert got == sorted(r["run_id"] for r in rows if matches(compiled.ast, r)), (query, compiled.where)
