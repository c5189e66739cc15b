"""``${{ ... }}`` expressions: finding, checking and evaluating them.

The expression language is Jinja2's expression syntax, evaluated in
``_sandbox.DslEnvironment``, a narrowed ``jinja2.sandbox.ImmutableSandboxedEnvironment``
(README.md says why). Nothing here runs Python written by the user: Jinja parses
its own small grammar, and the sandbox refuses private attributes, mutation of
lists and dicts, calls outside an allow-list, and work or values over its limits.
The few Jinja globals and filters that are not deterministic (``random``,
``lipsum``) or that hold state (``cycler``, ``joiner``, ``namespace``) are
removed, so an expression's value depends only on its context. Parsing is limited
too: brackets at most :data:`MAX_EXPRESSION_BRACKETS` deep and a syntax tree at
most :data:`MAX_EXPRESSION_DEPTH` deep, so no expression exhausts the stack.
"""

from __future__ import annotations

import functools
import json
import re

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Union

import jinja2

from jinja2 import nodes
from jinja2.environment import TemplateExpression
from jinja2.parser import Parser

from spindle.dsl._sandbox import (
    MAX_INT_BITS,
    MAX_RESULT_SIZE,
    MAX_VALUE_NESTING,
    MAX_VALUE_SIZE,
    MAX_WORK,
    DslEnvironment,
    LimitExceeded,
    NotData,
    Scope,
    evaluation,
    plain_result,
)

__all__ = [
    "CLOSE",
    "MAX_EXPRESSION_BRACKETS",
    "MAX_EXPRESSION_DEPTH",
    "MAX_INT_BITS",
    "MAX_RESULT_SIZE",
    "MAX_VALUE_NESTING",
    "MAX_VALUE_SIZE",
    "MAX_WORK",
    "OPEN",
    "Expression",
    "ExpressionError",
    "Reference",
    "Scope",
    "TemplatePart",
    "evaluate",
    "has_expression",
    "render",
    "split_template",
    "whole_expression",
]

#: What opens and closes an expression in a string.
OPEN = "${{"
CLOSE = "}}"
#: Brackets ``()``, ``[]``, ``{}`` may nest at most this deep in one expression.
MAX_EXPRESSION_BRACKETS = 20
#: An expression's syntax tree (operators, filters, lookups) may be at most this deep.
MAX_EXPRESSION_DEPTH = 64

class ExpressionError(ValueError):
    """An expression does not parse, or failed when evaluated.

    ``offset`` is the character offset of the problem in the string holding the
    expression (the start of its ``${{``).
    """

    def __init__(self, message: str, offset: int = 0) -> None:
        super().__init__(message)
        self.offset = offset


@dataclass(frozen=True)
class Reference:
    """A name an expression reads, with the constant keys that follow it.

    ``steps.extract.result`` is ``Reference("steps", ("extract", "result"))``;
    ``inputs['date']`` is ``Reference("inputs", ("date",))``.
    """

    root: str
    path: tuple[str | int, ...]


@dataclass(frozen=True)
class Expression:
    """One ``${{ source }}`` found at ``offset`` in its string."""

    source: str
    offset: int
    end: int
    references: tuple[Reference, ...]
    filters: tuple[str, ...]
    tests: tuple[str, ...]


TemplatePart = Union[str, Expression]


class _Undefined(jinja2.StrictUndefined):
    """Strict undefined whose message names the DSL namespace that lacks the key."""

    @property
    def _undefined_message(self) -> str:
        owner = self._undefined_obj
        if isinstance(owner, Scope):
            return f"{owner.label} has no {self._undefined_name!r}"
        return str(super()._undefined_message)


ENVIRONMENT = DslEnvironment(undefined=_Undefined)

#: Names an expression may use besides the context (Jinja globals kept by the sandbox).
GLOBAL_NAMES = frozenset(ENVIRONMENT.globals)


def has_expression(value: object) -> bool:
    """True if ``value`` is a string holding at least one ``${{``."""
    return isinstance(value, str) and OPEN in value


def _parse(source: str) -> nodes.Expr:
    """Parse one expression, within the nesting limits.

    Raises:
        jinja2.TemplateSyntaxError: it does not parse, or nests too deeply.
    """
    depth = _bracket_depth(source)
    if depth > MAX_EXPRESSION_BRACKETS:
        raise jinja2.TemplateSyntaxError(
            f"brackets nested {depth} deep; expressions may nest at most {MAX_EXPRESSION_BRACKETS}", 1)
    try:
        parser = Parser(ENVIRONMENT, source, state="variable")
        expr = parser.parse_expression()
        if parser.stream.current.type != "eof":
            token = parser.stream.current
            raise jinja2.TemplateSyntaxError(f"unexpected {token.value!r} after the expression", token.lineno)
    except RecursionError:
        raise jinja2.TemplateSyntaxError(_TOO_DEEP, 1) from None
    except ValueError:  # Python refuses integer literals of over 4300 digits
        raise jinja2.TemplateSyntaxError("a number literal has too many digits", 1) from None
    if _tree_depth(expr) > MAX_EXPRESSION_DEPTH:
        raise jinja2.TemplateSyntaxError(_TOO_DEEP, 1)
    return expr


_TOO_DEEP = f"the expression nests more than {MAX_EXPRESSION_DEPTH} operations deep"


def _bracket_depth(source: str) -> int:
    """The deepest nesting of ``()``, ``[]`` and ``{}`` outside string literals."""
    depth = deepest = 0
    for token in _BRACKETS.findall(source):
        if token in "([{":
            depth += 1
            deepest = max(deepest, depth)
        elif token in ")]}":
            depth = max(0, depth - 1)
    return deepest


#: A string literal (skipped) or one bracket.
_BRACKETS = re.compile(r"'(?:[^'\\]|\\.)*'?|\"(?:[^\"\\]|\\.)*\"?|[()\[\]{}]", re.S)


def _tree_depth(root: nodes.Node) -> int:
    """The depth of an expression's syntax tree (iteratively: no recursion limit)."""
    deepest = 0
    stack = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth > MAX_EXPRESSION_DEPTH:
            break
        stack.extend((child, depth + 1) for child in node.iter_child_nodes())
    return deepest


@functools.lru_cache(maxsize=4096)
def split_template(text: str) -> tuple[TemplatePart, ...]:
    """Split ``text`` into literal strings and expressions, in order.

    The end of an expression is the first ``}}`` after which the inside parses, so
    ``${{ {'a': {'b': 1}} }}`` works.

    Raises:
        ExpressionError: an expression is unterminated or does not parse.
    """
    parts: list[TemplatePart] = []
    position = 0
    while True:
        start = text.find(OPEN, position)
        if start < 0:
            if position < len(text):
                parts.append(text[position:])
            return tuple(parts)
        if start > position:
            parts.append(text[position:start])
        expression = _expression_at(text, start)
        parts.append(expression)
        position = expression.end


def _expression_at(text: str, start: int) -> Expression:
    inner_start = start + len(OPEN)
    end = _closing(text, inner_start)
    if end < 0:
        end = text.find(CLOSE, inner_start)  # unbalanced: let the parser say what is wrong
    if end < 0:
        raise ExpressionError(f"unterminated expression: {OPEN} without {CLOSE}", start)
    raw = text[inner_start:end]
    if not raw.strip():
        raise ExpressionError("empty expression '${{ }}'", start)
    try:
        tree = _parse(raw)
    except jinja2.TemplateSyntaxError as exc:
        message = getattr(exc, "message", None) or str(exc)
        raise ExpressionError(f"expression does not parse: {message}", start) from None
    refs: list[Reference] = []
    _collect_references(tree, refs)
    every = [tree, *tree.find_all(nodes.Node)]  # find_all skips the root itself
    filters = tuple(sorted({n.name for n in every if isinstance(n, nodes.Filter)}))
    tests = tuple(sorted({n.name for n in every if isinstance(n, nodes.Test)}))
    return Expression(raw, start, end + len(CLOSE), tuple(refs), filters, tests)


def _closing(text: str, position: int) -> int:
    """Where the ``}}`` that closes an expression starting at ``position`` is, or -1.

    It is the first ``}}`` outside string literals and brackets, so
    ``${{ {'a': {'b': 1}} }}`` and ``${{ '}}' }}`` work; found in one pass.
    """
    depth = 0
    for match in _TOKENS.finditer(text, position):
        token = match.group()
        if token in ("(", "[", "{"):
            depth += 1
        elif token == "}" and depth == 0 and text.startswith(CLOSE, match.start()):
            return match.start()
        elif token in (")", "]", "}"):
            depth = max(0, depth - 1)
    return -1


#: What matters for finding the end of an expression: string literals and brackets.
_TOKENS = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|[()\[\]{}]", re.S)


def _collect_references(node: nodes.Node, out: list[Reference]) -> None:
    """Append every ``name.key[...]`` chain read by ``node``, outermost first."""
    if isinstance(node, (nodes.Getattr, nodes.Getitem, nodes.Name)):
        path: list[str | int] = []
        current: nodes.Node = node
        while True:
            if isinstance(current, nodes.Getattr):
                path.append(current.attr)
                current = current.node
            elif (
                isinstance(current, nodes.Getitem)
                and isinstance(current.arg, nodes.Const)
                and isinstance(current.arg.value, (str, int))
            ):
                path.append(current.arg.value)
                current = current.node
            else:
                break
        if isinstance(current, nodes.Name):
            out.append(Reference(current.name, tuple(reversed(path))))
            return
        node = current
    for child in node.iter_child_nodes():
        _collect_references(child, out)


@functools.lru_cache(maxsize=4096)
def _compiled(source: str) -> TemplateExpression:
    template = nodes.Template([nodes.Assign(nodes.Name("result", "store"), _parse(source), lineno=1)], lineno=1)
    template.set_environment(ENVIRONMENT)
    return TemplateExpression(ENVIRONMENT.from_string(template), undefined_to_none=False)


def evaluate(source: str, context: Mapping[str, Any]) -> Any:
    """Evaluate one expression (the text between ``${{`` and ``}}``) to JSON data.

    Deterministic: the same expression and context give the same value or the
    same error, on any machine (the limits count sizes and operations, never time).

    Raises:
        ExpressionError: the expression failed (an undefined key, a bad operand, a
            call the sandbox refuses, a value that is not data, a limit, ...).
    """
    shown = source.strip()
    with evaluation():
        try:
            return plain_result(_compiled(source)(**context))
        except LimitExceeded as exc:
            raise ExpressionError(f"expression '{shown}' is over a limit: {exc}") from None
        except NotData as exc:
            raise ExpressionError(f"expression '{shown}' failed: {exc}") from None
        except jinja2.TemplateError as exc:
            raise ExpressionError(f"expression '{shown}' failed: {exc}") from None
        except (TypeError, ValueError, ArithmeticError, LookupError, AttributeError) as exc:
            raise ExpressionError(f"expression '{shown}' failed: {type(exc).__name__}: {exc}") from None


def whole_expression(parts: tuple[TemplatePart, ...]) -> Expression | None:
    """The expression, if the parts are one expression with at most blanks around it."""
    found = [part for part in parts if isinstance(part, Expression)]
    if len(found) == 1 and all(isinstance(p, Expression) or not p.strip() for p in parts):
        return found[0]
    return None


def _interpolated(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=False, default=str)
    return str(value)


def render(value: Any, context: Mapping[str, Any]) -> Any:
    """Evaluate every expression inside ``value`` (nested lists and dicts too).

    A string that is exactly one ``${{ expr }}`` becomes the expression's value,
    whatever its type; expressions embedded in longer strings are interpolated as
    text (null as empty, booleans as ``true``/``false``, lists and objects as JSON).
    """
    if isinstance(value, str):
        if OPEN not in value:
            return value
        parts = split_template(value)
        single = whole_expression(parts)
        if single is not None:
            return evaluate(single.source, context)
        text = "".join(
            part if isinstance(part, str) else _interpolated(evaluate(part.source, context))
            for part in parts
        )
        if len(text) > MAX_RESULT_SIZE:
            raise ExpressionError(f"the text {value[:60]!r}... is over a limit: it would be longer than "
                                  f"{MAX_RESULT_SIZE:,} characters")
        return text
    if isinstance(value, list):
        return [render(item, context) for item in value]
    if isinstance(value, dict):
        return {key: render(item, context) for key, item in value.items()}
    return value
