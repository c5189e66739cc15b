"""Tokenizer for the visibility list-filter language.

Turns query text into a list of :class:`Token` ending with one ``EOF`` token.
It knows nothing about fields or types; keywords are ordinary ``IDENT`` tokens
that the parser recognises case-insensitively.
"""

from __future__ import annotations

import enum

from dataclasses import dataclass

from ._errors import QueryError

#: Queries longer than this are rejected before tokenizing (characters).
MAX_QUERY_LENGTH = 16_384

#: Reserved words (matched case-insensitively). They cannot name a custom search attribute.
KEYWORDS = frozenset(
    {"AND", "OR", "NOT", "IN", "BETWEEN", "STARTS_WITH", "IS", "NULL", "ORDER", "GROUP", "BY",
     "ASC", "DESC", "TRUE", "FALSE"}
)


class TokenKind(enum.Enum):
    """The lexical classes of the language."""

    IDENT = "identifier"
    STRING = "string"
    NUMBER = "number"
    OP = "operator"
    LPAREN = "'('"
    RPAREN = "')'"
    COMMA = "','"
    EOF = "end of query"


@dataclass(frozen=True, slots=True)
class Token:
    """One token.

    ``text`` is the source text (for STRING: the decoded value without quotes and
    with doubled quotes collapsed; for OP: the canonical operator, ``<>`` becomes
    ``!=``). ``position`` is the 0-based offset of the token's first character.
    """

    kind: TokenKind
    text: str
    position: int

    @property
    def upper(self) -> str:
        """The text upper-cased, for case-insensitive keyword checks."""
        return self.text.upper()

    def describe(self) -> str:
        """A short human description used in error messages."""
        if self.kind is TokenKind.EOF:
            return "end of query"
        if self.kind is TokenKind.STRING:
            return f"string {_quote(self.text)}"
        if self.kind is TokenKind.NUMBER:
            return f"number {self.text}"
        if self.kind is TokenKind.IDENT:
            if self.upper in KEYWORDS:
                return f"keyword {self.upper}"
            return f"identifier {self.text!r}"
        return f"'{self.text}'"


def _quote(value: str, limit: int = 40) -> str:
    shown = value if len(value) <= limit else value[: limit - 3] + "..."
    return "'" + shown.replace("'", "''") + "'"


_TWO_CHAR_OPS = {"!=": "!=", "<>": "!=", "<=": "<=", ">=": ">=", "==": "="}
_ONE_CHAR_OPS = {"=", "<", ">"}
_SINGLE = {"(": TokenKind.LPAREN, ")": TokenKind.RPAREN, ",": TokenKind.COMMA}


def _is_ident_start(ch: str) -> bool:
    return ch == "_" or ("a" <= ch <= "z") or ("A" <= ch <= "Z")


def _is_ident_char(ch: str) -> bool:
    return _is_ident_start(ch) or ("0" <= ch <= "9")


def _is_digit(ch: str) -> bool:
    return "0" <= ch <= "9"


def tokenize(query: str) -> list[Token]:
    """Split ``query`` into tokens.

    Guarantees: the result is non-empty and ends with exactly one EOF token whose
    position is ``len(query)``; every other token's position points at its first
    character in ``query``.

    Raises:
        QueryError: an unterminated string, a malformed number, a character that
            is not part of the language (e.g. ``;`` or ``--``), or a query longer
            than :data:`MAX_QUERY_LENGTH`.
    """
    if len(query) > MAX_QUERY_LENGTH:
        raise QueryError.at(MAX_QUERY_LENGTH, f"query is longer than {MAX_QUERY_LENGTH} characters")
    tokens: list[Token] = []
    i, n = 0, len(query)
    while i < n:
        ch = query[i]
        if ch.isspace():
            i += 1
            continue
        if ch in "'\"":
            value, i_next = _read_string(query, i)
            tokens.append(Token(TokenKind.STRING, value, i))
            i = i_next
            continue
        if _is_digit(ch) or (ch in "-+." and i + 1 < n and _is_digit(query[i + 1])):
            text, i_next = _read_number(query, i)
            tokens.append(Token(TokenKind.NUMBER, text, i))
            i = i_next
            continue
        if _is_ident_start(ch):
            j = i + 1
            while j < n and _is_ident_char(query[j]):
                j += 1
            tokens.append(Token(TokenKind.IDENT, query[i:j], i))
            i = j
            continue
        pair = query[i : i + 2]
        if pair in _TWO_CHAR_OPS:
            tokens.append(Token(TokenKind.OP, _TWO_CHAR_OPS[pair], i))
            i += 2
            continue
        if ch in _ONE_CHAR_OPS:
            tokens.append(Token(TokenKind.OP, ch, i))
            i += 1
            continue
        if ch in _SINGLE:
            tokens.append(Token(_SINGLE[ch], ch, i))
            i += 1
            continue
        raise QueryError.at(i, f"unexpected character {ch!r}")
    tokens.append(Token(TokenKind.EOF, "", n))
    return tokens


def _read_string(query: str, start: int) -> tuple[str, int]:
    """Read a quoted string starting at ``start``; a doubled quote is one quote."""
    quote = query[start]
    parts: list[str] = []
    i, n = start + 1, len(query)
    while i < n:
        ch = query[i]
        if ch == quote:
            if i + 1 < n and query[i + 1] == quote:
                parts.append(quote)
                i += 2
                continue
            value = "".join(parts)
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise QueryError.at(start, "string contains characters that are not valid Unicode") from None
            return value, i + 1
        parts.append(ch)
        i += 1
    raise QueryError.at(start, f"unterminated string (missing closing {quote})")


#: Longest number literal: a signed 64-bit integer has 20 characters, a double's shortest exact form fewer than 30.
MAX_NUMBER_LENGTH = 40


def _read_number(query: str, start: int) -> tuple[str, int]:
    """Read ``[+-]digits[.digits][e[+-]digits]``; a letter glued to it is an error."""
    i, n = start, len(query)
    if query[i] in "+-":
        i += 1
    while i < n and _is_digit(query[i]):
        i += 1
    if i < n and query[i] == ".":
        i += 1
        if not (i < n and _is_digit(query[i])):
            raise QueryError.at(start, "malformed number (expected digits after '.')")
        while i < n and _is_digit(query[i]):
            i += 1
    if i < n and query[i] in "eE":
        j = i + 1
        if j < n and query[j] in "+-":
            j += 1
        if j < n and _is_digit(query[j]):
            i = j
            while i < n and _is_digit(query[i]):
                i += 1
    if i < n and (_is_ident_char(query[i]) or query[i] == "."):
        raise QueryError.at(start, f"malformed number {query[start:i + 1]!r} (durations and dates must be quoted, e.g. '1h')")
    if i - start > MAX_NUMBER_LENGTH:  # no Int or Double needs it; int() of thousands of digits is refused anyway
        raise QueryError.at(start, f"number of {i - start} characters is too long (at most {MAX_NUMBER_LENGTH})")
    return query[start:i], i
