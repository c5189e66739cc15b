"""Grammar: every construct parses to the expected typed AST."""

from __future__ import annotations

import pytest

from spindle.controlplane.visibility import (
    BUILTIN_FIELDS,
    And,
    Between,
    Comparison,
    FieldInfo,
    FieldType,
    InList,
    IsNull,
    Not,
    Or,
    OrderTerm,
    Query,
    StartsWith,
    parse_query,
)

SA = {
    "CustomerId": "Keyword",
    "Note": "Text",
    "Priority": "Int",
    "Amount": "Double",
    "Vip": "Bool",
    "DueAt": "Datetime",
    "Tags": "KeywordList",
}


def parse(q: str) -> Query:
    return parse_query(q, search_attributes=SA)


def where(q: str):
    return parse(q).where


def b(name: str) -> FieldInfo:
    return BUILTIN_FIELDS[name]


def c(name: str) -> FieldInfo:
    return FieldInfo(name, FieldType(SA[name]), None)


WID, WTYPE, STATUS, HLEN = b("WorkflowId"), b("WorkflowType"), b("ExecutionStatus"), b("HistoryLength")


# -- empty query ---------------------------------------------------------------------------
@pytest.mark.parametrize("q", ["", "   ", "\n\t "])
def test_empty_query_matches_everything(q: str) -> None:
    assert parse(q) == Query(where=None)


# -- comparisons ---------------------------------------------------------------------------
@pytest.mark.parametrize("op", ["=", "!=", "<", "<=", ">", ">="])
def test_every_comparison_operator(op: str) -> None:
    assert where(f"HistoryLength {op} 10") == Comparison(HLEN, op, 10)


def test_sql_style_not_equal_is_normalised() -> None:
    assert where("WorkflowId <> 'a'") == Comparison(WID, "!=", "a")


def test_no_whitespace_needed() -> None:
    assert where("HistoryLength>=10") == Comparison(HLEN, ">=", 10)
    assert where("WorkflowId='a'AND HistoryLength<3") == And((Comparison(WID, "=", "a"), Comparison(HLEN, "<", 3)))


# -- boolean structure -----------------------------------------------------------------------
A, B_, C_ = "WorkflowId = 'a'", "WorkflowType = 'b'", "HistoryLength = 3"
CA, CB, CC = Comparison(WID, "=", "a"), Comparison(WTYPE, "=", "b"), Comparison(HLEN, "=", 3)


def test_and_binds_tighter_than_or() -> None:
    assert where(f"{A} OR {B_} AND {C_}") == Or((CA, And((CB, CC))))
    assert where(f"{A} AND {B_} OR {C_}") == Or((And((CA, CB)), CC))


def test_parentheses_override_precedence() -> None:
    assert where(f"({A} OR {B_}) AND {C_}") == And((Or((CA, CB)), CC))
    assert where(f"{A} AND ({B_} OR {C_})") == And((CA, Or((CB, CC))))


def test_redundant_parentheses_and_flattening() -> None:
    assert where(f"((({A})))") == CA
    assert where(f"{A} AND {B_} AND {C_}") == And((CA, CB, CC))
    assert where(f"({A} AND {B_}) AND {C_}") == And((CA, CB, CC))
    assert where(f"{A} OR ({B_} OR {C_})") == Or((CA, CB, CC))


def test_not_binds_tighter_than_and() -> None:
    assert where(f"NOT {A} AND {B_}") == And((Not(CA), CB))
    assert where(f"NOT ({A} AND {B_})") == Not(And((CA, CB)))
    assert where(f"NOT NOT {A}") == Not(Not(CA))


@pytest.mark.parametrize(
    "q",
    [
        "workflowid = 'a' and workflowtype = 'b' or historylength = 3",  # fields are case-sensitive: not this one
    ],
)
def test_field_names_are_case_sensitive(q: str) -> None:
    from spindle.controlplane.visibility import QueryError

    with pytest.raises(QueryError, match="did you mean 'WorkflowId'"):
        parse(q)


@pytest.mark.parametrize(
    "q",
    [
        "WorkflowId = 'a' and not (HistoryLength in (1, 2)) or WorkflowType starts_with 'x' order by StartTime desc",
        "WorkflowId = 'a' AND NOT (HistoryLength IN (1, 2)) OR WorkflowType STARTS_WITH 'x' ORDER BY StartTime DESC",
        "WorkflowId = 'a' And Not (HistoryLength In (1, 2)) Or WorkflowType Starts_With 'x' Order By StartTime Desc",
    ],
)
def test_keywords_are_case_insensitive(q: str) -> None:
    expected = Query(
        where=Or(
            (
                And((CA, Not(InList(HLEN, (1, 2))))),
                StartsWith(WTYPE, "x"),
            )
        ),
        order_by=(OrderTerm(b("StartTime"), descending=True),),
    )
    assert parse(q) == expected


# -- IN / BETWEEN / STARTS_WITH / IS NULL ------------------------------------------------------
def test_in_and_not_in() -> None:
    assert where("WorkflowType IN ('a', \"b\", 'c')") == InList(WTYPE, ("a", "b", "c"))
    assert where("WorkflowType NOT IN ('a')") == InList(WTYPE, ("a",), negated=True)
    assert where("ExecutionStatus in ('Running', 'failed')") == InList(STATUS, (1, 3))


def test_between_and_not_between() -> None:
    assert where("HistoryLength BETWEEN 1 AND 5") == Between(HLEN, 1, 5)
    assert where("HistoryLength NOT BETWEEN 1 AND 5 AND WorkflowId = 'a'") == And(
        (Between(HLEN, 1, 5, negated=True), CA)
    )
    assert where("HistoryLength BETWEEN 1 AND 5 OR HistoryLength BETWEEN 8 AND 9") == Or(
        (Between(HLEN, 1, 5), Between(HLEN, 8, 9))
    )


def test_starts_with() -> None:
    assert where("WorkflowId STARTS_WITH 'order-'") == StartsWith(WID, "order-")
    assert where("WorkflowId NOT STARTS_WITH 'order-'") == StartsWith(WID, "order-", negated=True)
    assert where("Note STARTS_WITH 'urgent'") == StartsWith(c("Note"), "urgent")


def test_is_null() -> None:
    assert where("CloseTime IS NULL") == IsNull(b("CloseTime"))
    assert where("CustomerId is not null") == IsNull(c("CustomerId"), negated=True)
    assert where("Tags IS NULL") == IsNull(c("Tags"))


# -- literals ------------------------------------------------------------------------------
def test_string_quotes_and_escaping_by_doubling() -> None:
    assert where("WorkflowId = 'it''s'") == Comparison(WID, "=", "it's")
    assert where('WorkflowId = "say ""hi"""') == Comparison(WID, "=", 'say "hi"')
    assert where("WorkflowId = \"it's\"") == Comparison(WID, "=", "it's")
    assert where("WorkflowId = ''") == Comparison(WID, "=", "")
    assert where("WorkflowId = 'ünïcødé 漢字'") == Comparison(WID, "=", "ünïcødé 漢字")


def test_numbers() -> None:
    assert where("Priority = -3") == Comparison(c("Priority"), "=", -3)
    assert where("Amount > 2") == Comparison(c("Amount"), ">", 2.0)
    assert isinstance(where("Amount > 2").value, float)  # type: ignore[union-attr]
    assert where("Amount > -1.5e2") == Comparison(c("Amount"), ">", -150.0)
    assert where("Amount < .5") == Comparison(c("Amount"), "<", 0.5)


def test_booleans() -> None:
    assert where("Vip = true") == Comparison(c("Vip"), "=", True)
    assert where("Vip != FALSE") == Comparison(c("Vip"), "!=", False)
    assert where("Vip = 'True'") == Comparison(c("Vip"), "=", True)


@pytest.mark.parametrize(
    ("literal", "ms"),
    [
        ("'1970-01-01T00:00:00Z'", 0),
        ("'2024-01-01T00:00:00Z'", 1_704_067_200_000),
        ("'2024-01-01T01:00:00+01:00'", 1_704_067_200_000),
        ("'2024-01-01T00:00:00.123456789Z'", 1_704_067_200_123),
        ("'2024-01-01t00:00:00.5z'", 1_704_067_200_500),
        ("'2024-01-01'", 1_704_067_200_000),
        ("'1969-12-31T23:59:59.999Z'", -1),
        ("1704067200000", 1_704_067_200_000),
    ],
)
def test_datetimes_become_unix_milliseconds(literal: str, ms: int) -> None:
    assert where(f"StartTime >= {literal}") == Comparison(b("StartTime"), ">=", ms)
    assert where(f"DueAt < {literal}") == Comparison(c("DueAt"), "<", ms)


@pytest.mark.parametrize(
    ("literal", "ms"),
    [("'90s'", 90_000), ("'30m'", 1_800_000), ("'1h'", 3_600_000), ("'2d'", 172_800_000), ("'250ms'", 250),
     ("'1h30m'", 5_400_000), ("'1.5h'", 5_400_000), ("'5000'", 5000), ("5000", 5000)],
)
def test_durations_become_milliseconds(literal: str, ms: int) -> None:
    assert where(f"ExecutionDuration > {literal}") == Comparison(b("ExecutionDuration"), ">", ms)


@pytest.mark.parametrize(
    ("name", "code"),
    [("Running", 1), ("COMPLETED", 2), ("failed", 3), ("Canceled", 4), ("Cancelled", 4), ("Terminated", 5),
     ("ContinuedAsNew", 6), ("CONTINUED_AS_NEW", 6), ("continued_as_new", 6), ("TimedOut", 7), ("TIMED_OUT", 7),
     ("WORKFLOW_EXECUTION_STATUS_RUNNING", 1)],
)
def test_status_names_map_to_ints(name: str, code: int) -> None:
    assert where(f"ExecutionStatus = '{name}'") == Comparison(STATUS, "=", code)


def test_keyword_list_contains_and_in() -> None:
    assert where("Tags = 'gold'") == Comparison(c("Tags"), "=", "gold")
    assert where("Tags IN ('gold', 'silver')") == InList(c("Tags"), ("gold", "silver"))


# -- ORDER BY / GROUP BY -----------------------------------------------------------------------
def test_order_by_terms() -> None:
    q = parse("ORDER BY StartTime DESC, WorkflowId, Priority ASC, Amount desc")
    assert q.where is None
    assert q.order_by == (
        OrderTerm(b("StartTime"), True),
        OrderTerm(WID, False),
        OrderTerm(c("Priority"), False),
        OrderTerm(c("Amount"), True),
    )


def test_group_by_status_with_and_without_filter() -> None:
    assert parse("GROUP BY ExecutionStatus") == Query(where=None, group_by=(STATUS,))
    q = parse("WorkflowType = 'b' group by ExecutionStatus")
    assert q.where == CB and q.group_by == (STATUS,)


def test_order_by_and_group_by_together_in_either_order() -> None:
    q1 = parse("WorkflowId = 'a' ORDER BY StartTime GROUP BY ExecutionStatus")
    q2 = parse("WorkflowId = 'a' GROUP BY ExecutionStatus ORDER BY StartTime")
    assert q1 == q2
    assert q1.group_by == (STATUS,) and q1.order_by == (OrderTerm(b("StartTime")),)


def test_every_builtin_field_is_queryable() -> None:
    values = {
        FieldType.KEYWORD: "'x'", FieldType.INT: "1", FieldType.DATETIME: "'2024-01-01T00:00:00Z'",
        FieldType.STATUS: "'Running'", FieldType.DURATION: "'1h'",
    }
    for name, info in BUILTIN_FIELDS.items():
        assert isinstance(where(f"{name} = {values[info.type]}"), Comparison)
        assert parse(f"ORDER BY {name}").order_by[0].field == info
