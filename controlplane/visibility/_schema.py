"""Fields, their types, which operators each type allows, and literal coercion.

The parser asks this module two things about every predicate: "what is this
field?" (:meth:`Schema.field`) and "is this literal a valid value for it?"
(:func:`coerce_value`). Values come back in their storage form: ``str`` for
Keyword/Text/KeywordList, ``int`` for Int, status, Datetime (Unix ms) and
Duration (ms), ``float`` for Double, ``bool`` for Bool.
"""

from __future__ import annotations

import enum
import math
import re

from collections.abc import Mapping
from dataclasses import dataclass

from ._errors import QueryError
from ._literals import parse_duration_ms, parse_rfc3339_ms
from ._query_lexer import KEYWORDS, Token, TokenKind

Value = str | int | float | bool

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


class FieldType(enum.StrEnum):
    """Value types. The first seven may be registered as custom search attributes."""

    KEYWORD = "Keyword"
    TEXT = "Text"
    INT = "Int"
    DOUBLE = "Double"
    BOOL = "Bool"
    DATETIME = "Datetime"
    KEYWORD_LIST = "KeywordList"
    #: Built-in only: ExecutionStatus (names in the query, ints 1..7 in storage).
    STATUS = "ExecutionStatus"
    #: Built-in only: ExecutionDuration (duration strings or integer ms in the query, ms in storage).
    DURATION = "Duration"


CUSTOM_TYPES: frozenset[FieldType] = frozenset(
    {FieldType.KEYWORD, FieldType.TEXT, FieldType.INT, FieldType.DOUBLE, FieldType.BOOL,
     FieldType.DATETIME, FieldType.KEYWORD_LIST}
)


@dataclass(frozen=True, slots=True)
class FieldInfo:
    """A resolved field: its query name, type and, for built-ins, its SQL column."""

    name: str
    type: FieldType
    #: Visibility-table column for built-in fields; None for custom search attributes.
    column: str | None

    @property
    def is_custom(self) -> bool:
        """True for a custom search attribute (stored inside ``search_attributes``)."""
        return self.column is None


#: Built-in fields in documentation order, with their visibility-table columns.
BUILTIN_FIELDS: Mapping[str, FieldInfo] = {
    f.name: f
    for f in (
        FieldInfo("WorkflowId", FieldType.KEYWORD, "workflow_id"),
        FieldInfo("RunId", FieldType.KEYWORD, "run_id"),
        FieldInfo("WorkflowType", FieldType.KEYWORD, "workflow_type"),
        FieldInfo("ExecutionStatus", FieldType.STATUS, "status"),
        FieldInfo("TaskQueue", FieldType.KEYWORD, "task_queue"),
        FieldInfo("StartTime", FieldType.DATETIME, "start_time_ms"),
        FieldInfo("CloseTime", FieldType.DATETIME, "close_time_ms"),
        FieldInfo("ExecutionDuration", FieldType.DURATION, "execution_duration_ms"),
        FieldInfo("HistoryLength", FieldType.INT, "history_length"),
    )
}

#: ExecutionStatus names (as shown to users) -> stored ints (= spindle.v1 WorkflowExecutionStatus).
EXECUTION_STATUS: Mapping[str, int] = {
    "Running": 1, "Completed": 2, "Failed": 3, "Canceled": 4,
    "Terminated": 5, "ContinuedAsNew": 6, "TimedOut": 7,
}
#: Stored int -> display name, e.g. for ``COUNT ... GROUP BY ExecutionStatus`` results.
STATUS_NAMES: Mapping[int, str] = {v: k for k, v in EXECUTION_STATUS.items()}

_STATUS_LOOKUP = {k.lower(): v for k, v in EXECUTION_STATUS.items()} | {"cancelled": 4}

# Operators per type. Negated forms are listed explicitly because KeywordList allows IN but not NOT IN.
_EQ = frozenset({"=", "!="})
_RANGE = frozenset({"<", "<=", ">", ">=", "BETWEEN", "NOT BETWEEN"})
_IN = frozenset({"IN", "NOT IN"})
_PREFIX = frozenset({"STARTS_WITH", "NOT STARTS_WITH"})
_NULL = frozenset({"IS NULL", "IS NOT NULL"})
ALLOWED_OPERATORS: Mapping[FieldType, frozenset[str]] = {
    FieldType.KEYWORD: _EQ | _RANGE | _IN | _PREFIX | _NULL,
    FieldType.TEXT: _EQ | _PREFIX | _NULL,
    FieldType.INT: _EQ | _RANGE | _IN | _NULL,
    FieldType.DOUBLE: _EQ | _RANGE | _IN | _NULL,
    FieldType.BOOL: _EQ | _NULL,
    FieldType.DATETIME: _EQ | _RANGE | _IN | _NULL,
    FieldType.KEYWORD_LIST: frozenset({"=", "IN"}) | _NULL,
    FieldType.STATUS: _EQ | _IN | _NULL,
    FieldType.DURATION: _EQ | _RANGE | _IN | _NULL,
}
_OP_ORDER = ["=", "!=", "<", "<=", ">", ">=", "IN", "NOT IN", "BETWEEN", "NOT BETWEEN",
             "STARTS_WITH", "NOT STARTS_WITH", "IS NULL", "IS NOT NULL"]

#: Types that ORDER BY accepts (free text and lists have no useful order).
SORTABLE_TYPES: frozenset[FieldType] = frozenset(ALLOWED_OPERATORS) - {FieldType.TEXT, FieldType.KEYWORD_LIST}
#: Fields that GROUP BY accepts.
GROUPABLE_FIELDS: frozenset[str] = frozenset({"ExecutionStatus"})

_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,99}")


def _normalize_type(type_name: str) -> FieldType:
    wanted = str(type_name).replace("_", "").lower()
    wanted = wanted.removeprefix("indexedvaluetype")
    for t in CUSTOM_TYPES:
        if t.value.lower() == wanted:
            return t
    names = ", ".join(sorted(t.value for t in CUSTOM_TYPES))
    raise ValueError(f"unknown search attribute type {type_name!r} (one of {names})")


def validate_search_attributes(search_attributes: Mapping[str, str]) -> dict[str, FieldType]:
    """Check a namespace's custom search attribute registry and normalise its types.

    Guarantees: every returned name matches ``[A-Za-z_][A-Za-z0-9_]{0,99}``, is not a
    keyword and does not collide (case-insensitively) with a built-in field, so it
    is safe to embed in a JSON path inside SQL. Type names are matched
    case-insensitively (``"keyword_list"`` and ``"KeywordList"`` are the same).

    Raises:
        ValueError: a name or type is invalid (a configuration error, not a QueryError).
    """
    builtin_lower = {name.lower() for name in BUILTIN_FIELDS}
    result: dict[str, FieldType] = {}
    for name, type_name in search_attributes.items():
        if not isinstance(name, str) or _NAME_RE.fullmatch(name) is None:
            raise ValueError(
                f"invalid search attribute name {name!r}: use letters, digits and '_', starting with a letter or '_' "
                "(at most 100 characters)"
            )
        if name.upper() in KEYWORDS:
            raise ValueError(f"invalid search attribute name {name!r}: it is a reserved word of the query language")
        if name.lower() in builtin_lower:
            raise ValueError(f"invalid search attribute name {name!r}: it collides with a built-in field")
        result[name] = _normalize_type(type_name)
    return result


class Schema:
    """The fields a query may use: the built-ins plus one namespace's custom attributes."""

    def __init__(self, search_attributes: Mapping[str, str]) -> None:
        """Validate ``search_attributes`` (see :func:`validate_search_attributes`; raises ValueError)."""
        self.custom: dict[str, FieldInfo] = {
            name: FieldInfo(name, t, None) for name, t in validate_search_attributes(search_attributes).items()
        }

    def field(self, name: str, position: int) -> FieldInfo:
        """Resolve a field name (case-sensitive).

        Raises:
            QueryError: the field is unknown; the message lists the known fields and
                suggests a case-insensitive match if there is one.
        """
        found = BUILTIN_FIELDS.get(name) or self.custom.get(name)
        if found is not None:
            return found
        hint = ""
        for known in [*BUILTIN_FIELDS, *self.custom]:
            if known.lower() == name.lower():
                hint = f"did you mean {known!r}? "
                break
        custom = ", ".join(sorted(self.custom)) or "none"
        message = (
            f"unknown field {name!r} at position {position} "
            f"({hint}known: {', '.join(BUILTIN_FIELDS)}; custom: {custom})"
        )
        raise QueryError(message, position)


def check_operator(field: FieldInfo, op: str, position: int) -> None:
    """Raise QueryError if ``op`` (e.g. ``"<"``, ``"NOT IN"``, ``"IS NULL"``) is not allowed on ``field``."""
    allowed = ALLOWED_OPERATORS[field.type]
    if op in allowed:
        return
    listed = ", ".join(o for o in _OP_ORDER if o in allowed)
    hint = ""
    if field.type is FieldType.KEYWORD_LIST and op in ("!=", "NOT IN"):
        hint = f"; write NOT ({field.name} {'=' if op == '!=' else 'IN'} ...) instead"
    raise QueryError.at(
        position,
        f"operator {op} is not allowed on {_describe_field(field)} (allowed: {listed}){hint}",
    )


def _describe_field(field: FieldInfo) -> str:
    kind = "built-in" if not field.is_custom else "custom"
    return f"{field.type.value} field {field.name!r} ({kind})"


def coerce_value(field: FieldInfo, token: Token) -> Value:
    """Convert a literal token to ``field``'s storage value.

    Raises:
        QueryError: the literal has the wrong type for the field (e.g. a string for
            an Int field), is out of range (Int, Datetime and Duration values must
            fit in 64 bits; Double must be finite), or is an unknown status name.
    """
    t = field.type
    if token.kind is TokenKind.STRING:
        return _coerce_string(field, token)
    if token.kind is TokenKind.NUMBER:
        return _coerce_number(field, token)
    if token.kind is TokenKind.IDENT and token.upper in ("TRUE", "FALSE"):
        if t is FieldType.BOOL:
            return token.upper == "TRUE"
        raise _type_error(field, token)
    raise QueryError.at(token.position, f"expected a value (got {token.describe()})")


def _coerce_string(field: FieldInfo, token: Token) -> Value:
    t, text = field.type, token.text
    if t in (FieldType.KEYWORD, FieldType.TEXT, FieldType.KEYWORD_LIST):
        return text
    if t is FieldType.STATUS:
        key = text.strip().replace("_", "").replace(" ", "").lower().removeprefix("workflowexecutionstatus")
        if key in _STATUS_LOOKUP:
            return _STATUS_LOOKUP[key]
        raise QueryError.at(
            token.position,
            f"unknown ExecutionStatus {token.describe().removeprefix('string ')} "
            f"(one of {', '.join(EXECUTION_STATUS)})",
        )
    if t is FieldType.BOOL and text.lower() in ("true", "false"):
        return text.lower() == "true"
    if t is FieldType.DATETIME:
        try:
            return _int64(parse_rfc3339_ms(text), token)
        except ValueError as e:
            raise QueryError.at(token.position, f"{_describe_field(field)}: {e} (got {token.describe()})") from None
    if t is FieldType.DURATION:
        try:
            return _int64(parse_duration_ms(text), token)
        except ValueError as e:
            raise QueryError.at(token.position, f"{_describe_field(field)}: {e} (got {token.describe()})") from None
    raise _type_error(field, token)


def _coerce_number(field: FieldInfo, token: Token) -> Value:
    t, text = field.type, token.text
    is_integer = re.fullmatch(r"[+-]?\d+", text) is not None
    if t in (FieldType.INT, FieldType.DATETIME, FieldType.DURATION):
        if not is_integer:
            raise QueryError.at(token.position, f"{_describe_field(field)} needs an integer (got {token.describe()})")
        return _int64(int(text), token)
    if t is FieldType.DOUBLE:
        value = float(text)
        if not math.isfinite(value):
            raise QueryError.at(token.position, f"number {text} is out of range for a Double")
        return value
    raise _type_error(field, token)


def _int64(value: int, token: Token) -> int:
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise QueryError.at(token.position, f"{token.describe()} is out of range (must fit in a signed 64-bit integer)")
    return value


_EXPECTED = {
    FieldType.KEYWORD: "a quoted string",
    FieldType.TEXT: "a quoted string",
    FieldType.KEYWORD_LIST: "a quoted string",
    FieldType.INT: "an integer",
    FieldType.DOUBLE: "a number",
    FieldType.BOOL: "true or false",
    FieldType.DATETIME: "an RFC 3339 timestamp string such as '2024-05-01T00:00:00Z' or integer Unix milliseconds",
    FieldType.STATUS: "a status name string such as 'Running'",
    FieldType.DURATION: "a duration string such as '1h' or integer milliseconds",
}


def _type_error(field: FieldInfo, token: Token) -> QueryError:
    return QueryError.at(token.position, f"{_describe_field(field)} needs {_EXPECTED[field.type]} (got {token.describe()})")
