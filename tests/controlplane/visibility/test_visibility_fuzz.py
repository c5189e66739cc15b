"""Property: any input either compiles to SQL that SQLite accepts, or raises QueryError; nothing else."""

from __future__ import annotations

import sqlite3

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spindle.controlplane.visibility import QueryError, compile_query, matches

SA = {"CustomerId": "Keyword", "Note": "Text", "Priority": "Int", "Amount": "Double", "Vip": "Bool",
      "DueAt": "Datetime", "Tags": "KeywordList"}
Db = tuple[sqlite3.Connection, tuple[dict[str, Any], ...]]

_VOCABULARY = [
    "WorkflowId", "RunId", "WorkflowType", "ExecutionStatus", "TaskQueue", "StartTime", "CloseTime",
    "ExecutionDuration", "HistoryLength", "CustomerId", "Note", "Priority", "Amount", "Vip", "DueAt", "Tags",
    "Bogus", "AND", "or", "NOT", "IN", "between", "STARTS_WITH", "IS", "NULL", "ORDER", "BY", "GROUP", "ASC",
    "DESC", "true", "FALSE", "=", "!=", "<>", "<", "<=", ">", ">=", "(", ")", ",", "'Running'", "'x'", "'it''s'",
    '"dq"', "'1h'", "'2024-01-01T00:00:00Z'", "'2024-01-01'", "0", "-1", "2.5", "1e400", "99999999999999999999",
    "'", '"', ";", "--", "*", ".5", "'gold'", "'ContinuedAsNew'",
]


def _check(query: str, conn: sqlite3.Connection, rows: tuple[dict[str, Any], ...]) -> None:
    try:
        compiled = compile_query(query, search_attributes=SA)
    except QueryError as e:
        assert 0 <= e.position <= len(query)
        assert str(e)
        return
    sql = f"SELECT run_id FROM visibility WHERE {compiled.where} ORDER BY {compiled.order_by}"
    got = sorted(r[0] for r in conn.execute(sql, compiled.params))
    assert got == sorted(r["run_id"] for r in rows if matches(compiled.ast, r))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tokens=st.lists(st.sampled_from(_VOCABULARY), max_size=14))
def test_token_soup_never_crashes(tokens: list[str], visibility_db: Db) -> None:
    _check(" ".join(tokens), *visibility_db)


@settings(max_examples=300, deadline=None)
@given(query=st.text(max_size=60))
def test_arbitrary_text_never_crashes(query: str, visibility_db: Db) -> None:
    _check(query, *visibility_db)


@settings(max_examples=200, deadline=None)
@given(field=st.sampled_from(sorted(SA) + ["HistoryLength", "StartTime", "ExecutionDuration", "ExecutionStatus"]),
       literal=st.one_of(st.text(max_size=20).map(lambda s: "'" + s.replace("'", "''") + "'"),
                         st.integers().map(str), st.floats(allow_nan=False).map(repr)))
def test_any_literal_for_any_field_is_typed_or_rejected(field: str, literal: str, visibility_db: Db) -> None:
    _check(f"{field} = {literal}", *visibility_db)
    _check(f"{field} IN ({literal}, {literal})", *visibility_db)
