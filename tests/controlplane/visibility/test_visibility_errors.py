"""Invalid queries: exact positions and messages; type errors; limits; bad registries."""

from __future__ import annotations

import pytest

from spindle.controlplane.visibility import QueryError, compile_query, parse_query, validate_search_attributes

SA = {"CustomerId": "Keyword", "Note": "Text", "Priority": "Int", "Amount": "Double", "Vip": "Bool",
      "DueAt": "Datetime", "Tags": "KeywordList"}


def error(q: str) -> QueryError:
    with pytest.raises(QueryError) as info:
        parse_query(q, search_attributes=SA)
    err: QueryError = info.value
    assert isinstance(err, ValueError)  # QueryError is a ValueError
    return err


def test_message_format_for_missing_value() -> None:
    e = error("WorkflowType = 'x' AND HistoryLength =")
    assert e.position == 38
    assert str(e) == "invalid query at position 38: expected a value after '=' (got end of query)"
    assert e.detail == "expected a value after '=' (got end of query)"


def test_message_format_for_unknown_field() -> None:
    e = error("Foo = 'x'")
    assert e.position == 0
    assert str(e) == (
        "unknown field 'Foo' at position 0 (known: WorkflowId, RunId, WorkflowType, ExecutionStatus, TaskQueue, "
        "StartTime, CloseTime, ExecutionDuration, HistoryLength; custom: Amount, CustomerId, DueAt, Note, "
        "Priority, Tags, Vip)"
    )


def test_unknown_field_without_custom_attributes() -> None:
    with pytest.raises(QueryError, match=r"custom: none\)$"):
        parse_query("CustomerId = 'x'", search_attributes={})


@pytest.mark.parametrize(
    ("q", "position", "fragment"),
    [
        # syntax
        ("WorkflowId", 10, "expected an operator after 'WorkflowId'"),
        ("WorkflowId 'a'", 11, "expected an operator after 'WorkflowId'"),
        ("WorkflowId = ", 13, "expected a value after '=' (got end of query)"),
        ("WorkflowId = Running", 13, "strings must be quoted, e.g. 'Running'"),
        ("WorkflowId = 'a' AND", 20, "expected a field name, NOT or '(' (got end of query)"),
        ("WorkflowId = 'a' OR OR WorkflowId = 'b'", 20, "(got keyword OR)"),
        ("AND WorkflowId = 'a'", 0, "expected a field name, NOT or '(' (got keyword AND)"),
        ("WorkflowId = 'a' 'b'", 17, "expected AND, OR, ORDER BY, GROUP BY or end of query (got string 'b')"),
        ("WorkflowId = 'a' WorkflowType = 'b'", 17, "expected AND, OR, ORDER BY, GROUP BY or end of query"),
        ("(WorkflowId = 'a'", 17, "expected ')' to close the '(' at position 0 (got end of query)"),
        ("WorkflowId = 'a')", 16, "unbalanced ')'"),
        ("()", 1, "expected a field name, NOT or '(' (got ')')"),
        ("WorkflowId = 'abc", 13, "unterminated string (missing closing ')"),
        ('WorkflowId = "abc', 13, 'unterminated string (missing closing ")'),
        ("WorkflowId = 'it''s", 13, "unterminated string"),
        ("WorkflowId == 'a' && HistoryLength = 1", 18, "unexpected character '&'"),
        ("WorkflowId = 'a' ; ", 17, "unexpected character ';'"),
        ("HistoryLength = 10x", 16, "malformed number '10x'"),
        ("HistoryLength = 1.", 16, "malformed number"),
        ("ExecutionDuration > 1h", 20, "durations and dates must be quoted"),
        ("WorkflowId IN 'a'", 14, "expected '(' after IN (got string 'a')"),
        ("WorkflowId IN ()", 15, "expected a value after '(' (got ')')"),
        ("WorkflowId IN ('a' 'b')", 19, "expected ',' or ')' in the IN list (got string 'b')"),
        ("WorkflowId IN ('a',)", 19, "expected a value after ',' (got ')')"),
        ("HistoryLength BETWEEN 1 OR 2", 24, "expected AND between the two values of BETWEEN (got keyword OR)"),
        ("HistoryLength BETWEEN 1 AND", 27, "expected a value after AND (got end of query)"),
        ("WorkflowId NOT = 'a'", 15, "expected IN, BETWEEN or STARTS_WITH after NOT (got '=')"),
        ("CloseTime IS", 12, "expected NULL after IS (got end of query)"),
        ("CloseTime IS NOT 5", 17, "expected NULL after IS NOT (got number 5)"),
        ("ORDER StartTime", 6, "expected BY after ORDER"),
        ("ORDER BY", 8, "expected a field name after ORDER BY (got end of query)"),
        ("ORDER BY StartTime,", 19, "expected a field name after ',' (got end of query)"),
        ("ORDER BY StartTime DESC ASC", 24, "expected GROUP BY or end of query (got keyword ASC)"),
        ("ORDER BY StartTime ORDER BY RunId", 19, "ORDER BY may appear only once"),
        ("ORDER BY StartTime, StartTime", 20, "'StartTime' appears twice in ORDER BY"),
        ("ORDER BY Note", 9, "cannot ORDER BY Text field 'Note'"),
        ("ORDER BY Tags", 9, "cannot ORDER BY KeywordList field 'Tags'"),
        ("GROUP BY WorkflowType", 9, "GROUP BY supports only ExecutionStatus (got 'WorkflowType')"),
        ("GROUP ExecutionStatus", 6, "expected BY after GROUP"),
        ("GROUP BY ExecutionStatus, ExecutionStatus", 26, "appears twice in GROUP BY"),
        # types
        ("HistoryLength = 'ten'", 16, "Int field 'HistoryLength' (built-in) needs an integer (got string 'ten')"),
        ("HistoryLength = 1.5", 16, "needs an integer (got number 1.5)"),
        ("HistoryLength = true", 16, "needs an integer (got keyword TRUE)"),
        ("Priority > 99999999999999999999", 11, "out of range (must fit in a signed 64-bit integer)"),
        ("Amount > 1e999", 9, "out of range for a Double"),
        ("Amount > 'x'", 9, "Double field 'Amount' (custom) needs a number (got string 'x')"),
        ("WorkflowId = 5", 13, "Keyword field 'WorkflowId' (built-in) needs a quoted string (got number 5)"),
        ("Vip = 1", 6, "Bool field 'Vip' (custom) needs true or false (got number 1)"),
        ("Vip = 'yes'", 6, "needs true or false"),
        ("StartTime > 'yesterday'", 12, "expected an RFC 3339 timestamp"),
        ("StartTime > '2024-01-01T00:00:00'", 12, "expected an RFC 3339 timestamp"),  # no UTC offset
        ("StartTime > '2024-13-01T00:00:00Z'", 12, "out-of-range"),
        ("StartTime > 1.5", 12, "needs an integer"),
        ("ExecutionDuration > '1 hour'", 20, "expected a duration such as '90s'"),
        ("ExecutionDuration > '-1h'", 20, "expected a duration"),
        ("ExecutionStatus = 'Done'", 18, ("unknown ExecutionStatus 'Done' (one of Running, Completed, Failed, "
                                          "Canceled, Terminated, ContinuedAsNew, TimedOut)")),
        ("ExecutionStatus = 1", 18, "needs a status name string such as 'Running'"),
        ("WorkflowId STARTS_WITH 5", 23, "needs a quoted string (got number 5)"),
        ("WorkflowId BETWEEN 'a' AND 3", 27, "needs a quoted string"),
        ("Priority IN (1, 'two')", 16, "needs an integer (got string 'two')"),
        # operators not allowed for the type
        ("ExecutionStatus > 'Running'", 16, "operator > is not allowed on ExecutionStatus field 'ExecutionStatus'"),
        ("ExecutionStatus STARTS_WITH 'R'", 16, "operator STARTS_WITH is not allowed"),
        ("Note > 'a'", 5, ("operator > is not allowed on Text field 'Note' (custom) (allowed: =, !=, STARTS_WITH, "
                           "NOT STARTS_WITH, IS NULL, IS NOT NULL)")),
        ("Note IN ('a')", 5, "operator IN is not allowed on Text field 'Note'"),
        ("Vip < true", 4, "operator < is not allowed on Bool field 'Vip'"),
        ("Vip BETWEEN true AND false", 4, "operator BETWEEN is not allowed"),
        ("HistoryLength STARTS_WITH '1'", 14, "operator STARTS_WITH is not allowed on Int field"),
        ("Tags != 'a'", 5, "write NOT (Tags = ...) instead"),
        ("Tags NOT IN ('a')", 5, "write NOT (Tags IN ...) instead"),
        ("Tags > 'a'", 5, "operator > is not allowed on KeywordList field 'Tags'"),
        ("Tags STARTS_WITH 'a'", 5, "operator STARTS_WITH is not allowed on KeywordList"),
        ("Amount NOT STARTS_WITH 'a'", 7, "operator NOT STARTS_WITH is not allowed on Double"),
        # unknown fields deeper in the query
        ("WorkflowId = 'a' AND Bogus = 1", 21, "unknown field 'Bogus' at position 21"),
        ("ORDER BY Bogus", 9, "unknown field 'Bogus' at position 9"),
        ("historyLength = 1", 0, "did you mean 'HistoryLength'?"),
        ("customerid = 'x'", 0, "did you mean 'CustomerId'?"),
    ],
)
def test_invalid_query_position_and_message(q: str, position: int, fragment: str) -> None:
    e = error(q)
    assert e.position == position, str(e)
    assert fragment in str(e), str(e)
    if not str(e).startswith("unknown field"):
        assert str(e).startswith(f"invalid query at position {position}: ")


def test_keyword_cannot_be_used_as_field() -> None:
    e = error("ORDER = 'x'")
    assert e.position == 6 and "expected BY after ORDER" in str(e)
    e = error("Null = 'x'")
    assert e.position == 0 and "got keyword NULL" in str(e)


def test_nesting_limit() -> None:
    ok = "(" * 30 + "HistoryLength = 1" + ")" * 30
    parse_query(ok, search_attributes={})
    e = error("(" * 40 + "HistoryLength = 1" + ")" * 40)
    assert e.position == 32 and "nested too deeply" in str(e)
    e = error("NOT " * 40 + "HistoryLength = 1")
    assert e.position == 4 * 32 and "nested too deeply" in str(e)


def test_size_limits() -> None:
    many = " OR ".join(f"HistoryLength = {i}" for i in range(257))
    e = error(many)
    assert "more than 256 conditions" in str(e)
    values = ", ".join(str(i) for i in range(1001))
    e = error(f"HistoryLength IN ({values})")
    assert "more than 1000 values" in str(e)
    e = error("WorkflowId = '" + "x" * 20_000 + "'")
    assert e.position == 16_384 and "longer than 16384 characters" in str(e)


@pytest.mark.parametrize(
    ("registry", "fragment"),
    [
        ({"Bad Name": "Keyword"}, "invalid search attribute name 'Bad Name'"),
        ({"x'); DROP TABLE t; --": "Keyword"}, "invalid search attribute name"),
        ({'a"b': "Keyword"}, "invalid search attribute name"),
        ({"$.x": "Keyword"}, "invalid search attribute name"),
        ({"1abc": "Int"}, "invalid search attribute name"),
        ({"": "Int"}, "invalid search attribute name"),
        ({"x" * 101: "Int"}, "invalid search attribute name"),
        ({"Order": "Keyword"}, "reserved word"),
        ({"workflowid": "Keyword"}, "collides with a built-in field"),
        ({"Ok": "Blob"}, "unknown search attribute type 'Blob'"),
    ],
)
def test_invalid_registry_is_a_plain_value_error(registry: dict[str, str], fragment: str) -> None:
    with pytest.raises(ValueError) as info:
        compile_query("", search_attributes=registry)
    assert not isinstance(info.value, QueryError)
    assert fragment in str(info.value)


def test_registry_types_are_normalised() -> None:
    assert validate_search_attributes({"A": "keyword_list", "B": "INT", "C": "Datetime"}) == {
        "A": "KeywordList", "B": "Int", "C": "Datetime"
    }


def test_bad_dialect_and_prefix() -> None:
    with pytest.raises(ValueError, match="unknown SQL dialect"):
        compile_query("", search_attributes={}, dialect="postgres")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="invalid param_prefix"):
        compile_query("", search_attributes={}, param_prefix="p; DROP")
