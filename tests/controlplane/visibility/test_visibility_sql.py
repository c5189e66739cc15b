"""SQL generation: shape per dialect, parameters only, and injection attempts."""

from __future__ import annotations

import re
import sqlite3

from typing import Any

import pytest

from hypothesis import given, settings
from hypothesis import strategies as st

from spindle.controlplane.visibility import QueryError, compile_query

SA = {"CustomerId": "Keyword", "Note": "Text", "Priority": "Int", "Amount": "Double", "Vip": "Bool",
      "DueAt": "Datetime", "Tags": "KeywordList"}
Db = tuple[sqlite3.Connection, tuple[dict[str, Any], ...]]


def sqlite_q(q: str, **kw: Any):
    return compile_query(q, search_attributes=SA, dialect="sqlite", **kw)


def spanner_q(q: str, **kw: Any):
    return compile_query(q, search_attributes=SA, dialect="spanner", **kw)


# -- shape -------------------------------------------------------------------------------------
def test_empty_query_defaults() -> None:
    for compiled in (sqlite_q(""), spanner_q("")):
        assert compiled.where == "TRUE"
        assert compiled.params == {}
        assert compiled.order_by == "start_time_ms DESC, run_id ASC"
        assert [(o.sql, o.descending) for o in compiled.order_columns] == [("start_time_ms", True), ("run_id", False)]
        assert compiled.group_by == [] and compiled.group_by_columns == []
        assert compiled.ast.where is None


def test_builtin_columns() -> None:
    q = sqlite_q(
        "WorkflowId = 'a' AND RunId = 'r' AND WorkflowType = 't' AND ExecutionStatus = 'Failed' AND TaskQueue = 'q' "
        "AND StartTime > 0 AND CloseTime > 0 AND ExecutionDuration > 0 AND HistoryLength > 0"
    )
    assert q.where == (
        "(workflow_id = :p0 AND run_id = :p1 AND workflow_type = :p2 AND status = :p3 AND task_queue = :p4 AND "
        "start_time_ms > :p5 AND close_time_ms > :p6 AND execution_duration_ms > :p7 AND history_length > :p8)"
    )
    assert q.params == {"p0": "a", "p1": "r", "p2": "t", "p3": 3, "p4": "q", "p5": 0, "p6": 0, "p7": 0, "p8": 0}


def test_sqlite_shapes() -> None:
    assert sqlite_q("CustomerId = 'x'").where == "json_extract(search_attributes, '$.\"CustomerId\"') = :p0"
    assert sqlite_q("Tags = 'gold'").where == (
        "EXISTS (SELECT 1 FROM json_each(search_attributes, '$.\"Tags\"') WHERE value = :p0)"
    )
    assert sqlite_q("Tags IN ('a', 'b')").where == (
        "EXISTS (SELECT 1 FROM json_each(search_attributes, '$.\"Tags\"') WHERE value IN (:p0, :p1))"
    )
    q = sqlite_q("WorkflowId STARTS_WITH 'order-'")
    assert q.where == "(workflow_id >= :p0 AND workflow_id < :p1)"
    assert q.params == {"p0": "order-", "p1": "order."}
    assert sqlite_q("NOT WorkflowId = 'a'").where == "(NOT (workflow_id = :p0))"
    assert sqlite_q("HistoryLength NOT BETWEEN 1 AND 2").where == "(history_length NOT BETWEEN :p0 AND :p1)"
    assert sqlite_q("ExecutionStatus NOT IN ('Running')").where == "status NOT IN (:p0)"
    assert sqlite_q("CloseTime IS NOT NULL").where == "close_time_ms IS NOT NULL"
    assert sqlite_q("Vip = true").params == {"p0": 1}  # json_extract reads JSON true as 1


def test_spanner_shapes() -> None:
    assert spanner_q("CustomerId = 'x'").where == "JSON_VALUE(search_attributes, '$.CustomerId') = @p0"
    assert spanner_q("Priority > 1").where == "SAFE_CAST(JSON_VALUE(search_attributes, '$.Priority') AS INT64) > @p0"
    assert spanner_q("DueAt > 1").where == "SAFE_CAST(JSON_VALUE(search_attributes, '$.DueAt') AS INT64) > @p0"
    assert spanner_q("Amount > 1").where == "SAFE_CAST(JSON_VALUE(search_attributes, '$.Amount') AS FLOAT64) > @p0"
    q = spanner_q("Vip = true")
    assert q.where == "SAFE_CAST(JSON_VALUE(search_attributes, '$.Vip') AS BOOL) = @p0" and q.params == {"p0": True}
    assert spanner_q("Tags IN ('a', 'b')").where == (
        "EXISTS (SELECT 1 FROM UNNEST(JSON_VALUE_ARRAY(search_attributes, '$.Tags')) AS kw WHERE kw IN (@p0, @p1))"
    )
    assert spanner_q("Tags IS NULL").where == "JSON_QUERY(search_attributes, '$.Tags') IS NULL"
    assert spanner_q("WorkflowId NOT STARTS_WITH 'o'").where == "(NOT STARTS_WITH(workflow_id, @p0))"
    assert spanner_q("ORDER BY Priority DESC").order_by == (
        "SAFE_CAST(JSON_VALUE(search_attributes, '$.Priority') AS INT64) DESC, run_id ASC"
    )


def test_order_by_and_group_by() -> None:
    q = sqlite_q("ORDER BY HistoryLength DESC, CustomerId")
    assert q.order_by == (
        "history_length DESC, json_extract(search_attributes, '$.\"CustomerId\"') ASC, run_id ASC"
    )
    assert sqlite_q("ORDER BY RunId DESC").order_by == "run_id DESC"  # no duplicate tiebreak
    q = sqlite_q("ExecutionStatus != 'Running' GROUP BY ExecutionStatus")
    assert q.group_by == ["ExecutionStatus"] and q.group_by_columns == ["status"]


def test_param_prefix() -> None:
    q = sqlite_q("WorkflowId = 'a' OR WorkflowId = 'b'", param_prefix="vq_")
    assert q.where == "(workflow_id = :vq_0 OR workflow_id = :vq_1)"
    assert q.params == {"vq_0": "a", "vq_1": "b"}


# -- nothing from the query is spliced ---------------------------------------------------------
_JSON_PATH = re.compile(r"""'\$\."?[A-Za-z_][A-Za-z0-9_]*"?'""")
_PLACEHOLDER = re.compile(r"[:@]p\d+")


def assert_no_literals(sql: str) -> None:
    """After removing JSON paths, placeholders and the fixed ``SELECT 1``, no quote or digit may remain."""
    stripped = _PLACEHOLDER.sub("", _JSON_PATH.sub("", sql)).replace("SELECT 1 FROM", "")
    assert not re.search(r"['\"\d;]|--", stripped), sql


def test_injection_via_doubled_quote_is_just_a_value(visibility_db: Db) -> None:
    conn, _ = visibility_db
    q = sqlite_q("WorkflowId = 'x'' OR 1=1 --'")
    assert q.where == "workflow_id = :p0"
    assert q.params == {"p0": "x' OR 1=1 --"}
    assert conn.execute(f"SELECT COUNT(*) FROM visibility WHERE {q.where}", q.params).fetchone() == (0,)
    assert_no_literals(q.where)


def test_injection_via_statement_separator_is_rejected(visibility_db: Db) -> None:
    conn, _ = visibility_db
    with pytest.raises(QueryError) as info:
        sqlite_q('WorkflowId = "a"; DROP TABLE executions')
    assert info.value.position == 16
    assert conn.execute("SELECT COUNT(*) FROM executions").fetchone() == (0,)  # still there


@pytest.mark.parametrize(
    "q",
    [
        "WorkflowId = 'a' -- comment",
        "WorkflowId = 'a' /* x */",
        "WorkflowId = 'a' OR 1=1",
        "1 = 1",
        "'a' = WorkflowId",
        "WorkflowId = 'a' UNION SELECT * FROM executions",
        "WorkflowId = (SELECT run_id FROM visibility)",
        "CustomerId\" = 'x'",
        "CustomerId' = 'x'",
        "`CustomerId` = 'x'",
        "json_extract(search_attributes, '$.a') = 1",
        "WorkflowId = x'00'",
        "WorkflowId = :p0",
        "WorkflowId = @p0",
        "WorkflowId = ?",
    ],
)
def test_sql_fragments_are_not_part_of_the_language(q: str) -> None:
    with pytest.raises(QueryError):
        sqlite_q(q)


@pytest.mark.parametrize("name", ['a"b', "a'b", "a.b", "a]b", "a b", "a$", "a\\b", "x'); DROP TABLE visibility; --"])
def test_attribute_names_with_quotes_cannot_be_registered(name: str) -> None:
    with pytest.raises(ValueError, match="invalid search attribute name"):
        compile_query("", search_attributes={name: "Keyword"})


@pytest.mark.parametrize("dialect", ["sqlite", "spanner"])
def test_hostile_values_only_reach_params(dialect: str) -> None:
    hostile = ["'; DROP TABLE visibility; --", '" OR ""="', "\\' OR 1=1", "$.\"x\"", "@p0", ":p1", "%_*?[", "\x00"]
    for value in hostile:
        lit = "'" + value.replace("'", "''") + "'"
        q = compile_query(
            f"WorkflowId = {lit} OR CustomerId IN ({lit}, {lit}) OR Tags = {lit} OR Note STARTS_WITH {lit}",
            search_attributes=SA, dialect=dialect,  # type: ignore[arg-type]
        )
        assert_no_literals(q.where)
        assert value in q.params.values()


@settings(max_examples=200, deadline=None)
@given(value=st.text(max_size=30))
def test_any_string_value_round_trips_as_a_parameter(value: str) -> None:
    lit = "'" + value.replace("'", "''") + "'"
    q = sqlite_q(f"WorkflowId = {lit} AND CustomerId != {lit}")
    assert q.params == {"p0": value, "p1": value}
    assert_no_literals(q.where)
