"""Recursive-descent parser for the visibility list-filter language.

Grammar (keywords case-insensitive; ``AND`` binds tighter than ``OR``)::

    query      := [or_expr] { ORDER BY order_term {"," order_term}
                            | GROUP BY field {"," field} } EOF      (each clause at most once)
    or_expr    := and_expr { OR and_expr }
    and_expr   := not_expr { AND not_expr }
    not_expr   := NOT not_expr | "(" or_expr ")" | predicate
    predicate  := field ( cmp_op value
                        | [NOT] IN "(" value {"," value} ")"
                        | [NOT] BETWEEN value AND value
                        | [NOT] STARTS_WITH value
                        | IS [NOT] NULL )
    cmp_op     := "=" | "!=" | "<>" | "<" | "<=" | ">" | ">="
    value      := STRING | NUMBER | TRUE | FALSE
    order_term := field [ASC | DESC]

Fields are resolved and literals type-checked while parsing, so a returned
:class:`Query` is always well-typed.
"""

from __future__ import annotations

from collections.abc import Mapping

from ._ast import And, Between, Comparison, Expr, InList, IsNull, Not, Or, OrderTerm, Query, StartsWith
from ._errors import QueryError
from ._query_lexer import KEYWORDS, Token, TokenKind, tokenize
from ._schema import GROUPABLE_FIELDS, SORTABLE_TYPES, FieldInfo, Schema, Value, check_operator, coerce_value

#: Deepest nesting of parentheses and NOTs accepted.
MAX_DEPTH = 32
#: Most predicates (comparisons, IN, BETWEEN, ...) in one query.
MAX_PREDICATES = 256
#: Most literal values in one query (all IN lists together).
MAX_VALUES = 1_000

_PREDICATE_OPS = "=, !=, <, <=, >, >=, IN, NOT IN, BETWEEN, STARTS_WITH, IS NULL, IS NOT NULL"


def parse_query(query: str, *, search_attributes: Mapping[str, str] | Schema) -> Query:
    """Parse and type-check ``query`` against the built-in fields and ``search_attributes``.

    An empty (or all-whitespace) query yields ``Query(where=None)``: everything matches.

    Raises:
        QueryError: the query is malformed, uses an unknown field, an operator the
            field's type does not allow, a literal of the wrong type, or exceeds a
            size limit (:data:`MAX_DEPTH`, :data:`MAX_PREDICATES`, :data:`MAX_VALUES`,
            ``MAX_QUERY_LENGTH``). ``.position`` points at the offending character.
        ValueError: ``search_attributes`` itself is invalid (bad name or type).
    """
    schema = search_attributes if isinstance(search_attributes, Schema) else Schema(search_attributes)
    return _Parser(tokenize(query), schema).parse()


class _Parser:
    def __init__(self, tokens: list[Token], schema: Schema) -> None:
        self._tokens = tokens
        self._i = 0
        self._schema = schema
        self._depth = 0
        self._predicates = 0
        self._values = 0

    # -- token helpers ------------------------------------------------------------
    def _peek(self) -> Token:
        return self._tokens[self._i]

    def _advance(self) -> Token:
        tok = self._tokens[self._i]
        if tok.kind is not TokenKind.EOF:
            self._i += 1
        return tok

    @staticmethod
    def _is_kw(tok: Token, *words: str) -> bool:
        return tok.kind is TokenKind.IDENT and tok.upper in words

    def _expect_kw(self, word: str, context: str) -> Token:
        tok = self._peek()
        if not self._is_kw(tok, word):
            raise QueryError.at(tok.position, f"expected {word} {context} (got {tok.describe()})")
        return self._advance()

    def _enter(self, tok: Token) -> None:
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise QueryError.at(tok.position, f"query is nested too deeply (more than {MAX_DEPTH} levels)")

    # -- query --------------------------------------------------------------------
    def parse(self) -> Query:
        where: Expr | None = None
        if not self._at_clause_end():
            where = self._or()
        order: tuple[OrderTerm, ...] | None = None
        group: tuple[FieldInfo, ...] | None = None
        while True:
            tok = self._peek()
            if tok.kind is TokenKind.EOF:
                break
            if self._is_kw(tok, "ORDER"):
                if order is not None:
                    raise QueryError.at(tok.position, "ORDER BY may appear only once")
                self._advance()
                self._expect_kw("BY", "after ORDER")
                order = self._order_terms()
            elif self._is_kw(tok, "GROUP"):
                if group is not None:
                    raise QueryError.at(tok.position, "GROUP BY may appear only once")
                self._advance()
                self._expect_kw("BY", "after GROUP")
                group = self._group_fields()
            else:
                options = ["AND", "OR"] if order is None and group is None else []
                options += [name for name, seen in (("ORDER BY", order), ("GROUP BY", group)) if seen is None]
                expected = ", ".join(options) + (" or " if options else "") + "end of query"
                if tok.kind is TokenKind.RPAREN:
                    raise QueryError.at(tok.position, "unbalanced ')' (no matching '(')")
                raise QueryError.at(tok.position, f"expected {expected} (got {tok.describe()})")
        return Query(where=where, order_by=order or (), group_by=group or ())

    def _at_clause_end(self) -> bool:
        tok = self._peek()
        return tok.kind is TokenKind.EOF or self._is_kw(tok, "ORDER", "GROUP")

    # -- boolean structure ----------------------------------------------------------
    def _or(self) -> Expr:
        operands = [self._and()]
        while self._is_kw(self._peek(), "OR"):
            self._advance()
            operands.append(self._and())
        return operands[0] if len(operands) == 1 else Or(_flatten(Or, operands))

    def _and(self) -> Expr:
        operands = [self._not()]
        while self._is_kw(self._peek(), "AND"):
            self._advance()
            operands.append(self._not())
        return operands[0] if len(operands) == 1 else And(_flatten(And, operands))

    def _not(self) -> Expr:
        tok = self._peek()
        if self._is_kw(tok, "NOT"):
            self._advance()
            self._enter(tok)
            operand = self._not()
            self._depth -= 1
            return Not(operand)
        if tok.kind is TokenKind.LPAREN:
            self._advance()
            self._enter(tok)
            inner = self._or()
            close = self._peek()
            if close.kind is not TokenKind.RPAREN:
                raise QueryError.at(
                    close.position,
                    f"expected ')' to close the '(' at position {tok.position} (got {close.describe()})",
                )
            self._advance()
            self._depth -= 1
            return inner
        if tok.kind is TokenKind.IDENT and tok.upper not in KEYWORDS:
            return self._predicate()
        raise QueryError.at(tok.position, f"expected a field name, NOT or '(' (got {tok.describe()})")

    # -- predicates -----------------------------------------------------------------
    def _predicate(self) -> Expr:
        name = self._advance()
        field = self._schema.field(name.text, name.position)
        self._predicates += 1
        if self._predicates > MAX_PREDICATES:
            raise QueryError.at(name.position, f"query has more than {MAX_PREDICATES} conditions")
        tok = self._peek()
        if tok.kind is TokenKind.OP:
            self._advance()
            check_operator(field, tok.text, tok.position)
            return Comparison(field, tok.text, self._value(field, f"'{tok.text}'"), name.position)
        negated = False
        if self._is_kw(tok, "NOT"):
            self._advance()
            negated = True
            nxt = self._peek()
            if not self._is_kw(nxt, "IN", "BETWEEN", "STARTS_WITH"):
                raise QueryError.at(
                    nxt.position, f"expected IN, BETWEEN or STARTS_WITH after NOT (got {nxt.describe()})"
                )
        op_tok = self._peek()
        prefix = "NOT " if negated else ""
        if self._is_kw(op_tok, "IN"):
            self._advance()
            check_operator(field, prefix + "IN", tok.position)
            return InList(field, self._value_list(field), negated, name.position)
        if self._is_kw(op_tok, "BETWEEN"):
            self._advance()
            check_operator(field, prefix + "BETWEEN", tok.position)
            low = self._value(field, "BETWEEN")
            self._expect_kw("AND", "between the two values of BETWEEN")
            high = self._value(field, "AND")
            return Between(field, low, high, negated, name.position)
        if self._is_kw(op_tok, "STARTS_WITH"):
            self._advance()
            check_operator(field, prefix + "STARTS_WITH", tok.position)
            value = self._value(field, "STARTS_WITH")
            assert isinstance(value, str)  # STARTS_WITH is only allowed on string types
            return StartsWith(field, value, negated, name.position)
        if self._is_kw(op_tok, "IS"):
            self._advance()
            is_not = False
            if self._is_kw(self._peek(), "NOT"):
                self._advance()
                is_not = True
            self._expect_kw("NULL", "after IS NOT" if is_not else "after IS")
            check_operator(field, "IS NOT NULL" if is_not else "IS NULL", tok.position)
            return IsNull(field, is_not, name.position)
        raise QueryError.at(
            tok.position, f"expected an operator after {name.text!r} ({_PREDICATE_OPS}) (got {tok.describe()})"
        )

    def _value(self, field: FieldInfo, after: str) -> Value:
        tok = self._peek()
        is_bool = self._is_kw(tok, "TRUE", "FALSE")
        if tok.kind in (TokenKind.STRING, TokenKind.NUMBER) or is_bool:
            self._values += 1
            if self._values > MAX_VALUES:
                raise QueryError.at(tok.position, f"query has more than {MAX_VALUES} values")
            value = coerce_value(field, tok)
            self._advance()
            return value
        hint = ""
        if tok.kind is TokenKind.IDENT and tok.upper not in KEYWORDS:
            hint = f"; strings must be quoted, e.g. '{tok.text}'"
        raise QueryError.at(tok.position, f"expected a value after {after} (got {tok.describe()}){hint}")

    def _value_list(self, field: FieldInfo) -> tuple[Value, ...]:
        tok = self._peek()
        if tok.kind is not TokenKind.LPAREN:
            raise QueryError.at(tok.position, f"expected '(' after IN (got {tok.describe()})")
        self._advance()
        values = [self._value(field, "'('")]
        while True:
            tok = self._peek()
            if tok.kind is TokenKind.RPAREN:
                self._advance()
                return tuple(values)
            if tok.kind is not TokenKind.COMMA:
                raise QueryError.at(tok.position, f"expected ',' or ')' in the IN list (got {tok.describe()})")
            self._advance()
            values.append(self._value(field, "','"))

    # -- ORDER BY / GROUP BY --------------------------------------------------------
    def _field_name(self, context: str) -> tuple[FieldInfo, Token]:
        tok = self._peek()
        if tok.kind is not TokenKind.IDENT or tok.upper in KEYWORDS:
            raise QueryError.at(tok.position, f"expected a field name after {context} (got {tok.describe()})")
        self._advance()
        return self._schema.field(tok.text, tok.position), tok

    def _order_terms(self) -> tuple[OrderTerm, ...]:
        terms: list[OrderTerm] = []
        context = "ORDER BY"
        while True:
            field, tok = self._field_name(context)
            if field.type not in SORTABLE_TYPES:
                raise QueryError.at(
                    tok.position, f"cannot ORDER BY {field.type.value} field {field.name!r} (it has no useful order)"
                )
            if any(t.field.name == field.name for t in terms):
                raise QueryError.at(tok.position, f"{field.name!r} appears twice in ORDER BY")
            descending = False
            if self._is_kw(self._peek(), "ASC", "DESC"):
                descending = self._advance().upper == "DESC"
            terms.append(OrderTerm(field, descending))
            if self._peek().kind is not TokenKind.COMMA:
                return tuple(terms)
            self._advance()
            context = "','"

    def _group_fields(self) -> tuple[FieldInfo, ...]:
        fields: list[FieldInfo] = []
        context = "GROUP BY"
        while True:
            field, tok = self._field_name(context)
            if field.name not in GROUPABLE_FIELDS:
                raise QueryError.at(
                    tok.position, f"GROUP BY supports only {', '.join(sorted(GROUPABLE_FIELDS))} (got {field.name!r})"
                )
            if field in fields:
                raise QueryError.at(tok.position, f"{field.name!r} appears twice in GROUP BY")
            fields.append(field)
            if self._peek().kind is not TokenKind.COMMA:
                return tuple(fields)
            self._advance()
            context = "','"


def _flatten(kind: type[And | Or], operands: list[Expr]) -> tuple[Expr, ...]:
    flat: list[Expr] = []
    for op in operands:
        if isinstance(op, kind):
            flat.extend(op.operands)
        else:
            flat.append(op)
    return tuple(flat)
