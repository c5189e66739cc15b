"""``${{ ... }}`` expressions: finding, checking and evaluating them.

The expression language is Jinja2's expression syntax, evaluated by
``jinja2.sandbox.ImmutableSandboxedEnvironment`` (README.md says why). Nothing here
runs Python written by the user: Jinja parses its own small grammar, and the
sandbox refuses private attributes, mutation of lists and dicts, and unsafe
callables. The few Jinja globals and filters that are not deterministic
(``random``, ``lipsum``) or that hold state (``cycler``, ``joiner``,
``namespace``) are removed, so an expression's value depends only on its context.
"""

from __future__ import annotations

import functools
import json
import re

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Union

import jinja2

from jinja2 import nodes
from jinja2.parser import Parser
from jinja2.sandbox import ImmutableSandboxedEnvironment

__all__ = [
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

_OPEN = "${{"
_CLOSE = "}}"
_REMOVED_GLOBALS = ("lipsum", "cycler", "joiner", "namespace")
_REMOVED_FILTERS = ("random",)


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


def _make_environment() -> ImmutableSandboxedEnvironment:
    env = ImmutableSandboxedEnvironment(undefined=_Undefined, autoescape=False)
    for name in _REMOVED_GLOBALS:
        env.globals.pop(name, None)
    for name in _REMOVED_FILTERS:
        env.filters.pop(name, None)
    return env


ENVIRONMENT = _make_environment()

#: Names an expression may use besides the context (Jinja globals kept above).
GLOBAL_NAMES = frozenset(ENVIRONMENT.globals)


def has_expression(value: object) -> bool:
    """True if ``value`` is a string holding at least one ``${{``."""
    return isinstance(value, str) and _OPEN in value


def _parse(source: str) -> nodes.Expr:
    parser = Parser(ENVIRONMENT, source, state="variable")
    expr = parser.parse_expression()
    if parser.stream.current.type != "eof":
        token = parser.stream.current
        raise jinja2.TemplateSyntaxError(
            f"unexpected {token.value!r} after the expression", token.lineno
        )
    return expr


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
        start = text.find(_OPEN, position)
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
    inner_start = start + len(_OPEN)
    end = text.find(_CLOSE, inner_start)
    first_error: Exception | None = None
    while end >= 0:
        raw = text[inner_start:end]
        try:
            tree = _parse(raw)
        except jinja2.TemplateSyntaxError as exc:
            first_error = first_error or exc
            end = text.find(_CLOSE, end + 1)
            continue
        if not raw.strip():
            raise ExpressionError("empty expression '${{ }}'", start)
        refs: list[Reference] = []
        _collect_references(tree, refs)
        every = [tree, *tree.find_all(nodes.Node)]  # find_all skips the root itself
        filters = tuple(sorted({n.name for n in every if isinstance(n, nodes.Filter)}))
        tests = tuple(sorted({n.name for n in every if isinstance(n, nodes.Test)}))
        return Expression(raw, start, end + len(_CLOSE), tuple(refs), filters, tests)
    if first_error is None:
        raise ExpressionError(f"unterminated expression: {_OPEN} without {_CLOSE}", start)
    message = getattr(first_error, "message", None) or str(first_error)
    raise ExpressionError(f"expression does not parse: {message}", start)


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


class Scope:
    """A read-only namespace for expressions: ``scope.key`` and ``scope['key']``.

    Plain dicts would let a step called ``items`` or an input called ``keys`` be
    shadowed by the dict method of that name, because Jinja tries attributes first.
    """

    __slots__ = ("_data", "label")

    def __init__(self, data: Mapping[str, Any], label: str = "mapping") -> None:
        self._data = data
        self.label = label

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __repr__(self) -> str:
        return repr(dict(self._data))

    def to_plain(self) -> dict[str, Any]:
        """The mapping as plain data."""
        return {key: to_plain(value) for key, value in self._data.items()}


def to_plain(value: Any) -> Any:
    """Turn an expression's value into JSON-like data (lists, dicts, scalars)."""
    if isinstance(value, jinja2.Undefined):
        value._fail_with_undefined_error()  # raises UndefinedError
    if isinstance(value, Scope):
        return value.to_plain()
    if isinstance(value, str):
        return str.__str__(value)  # plain str, also for Jinja's Markup
    if isinstance(value, Mapping):
        return {key: to_plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple, range)) or _is_iterator(value):
        return [to_plain(item) for item in value]
    return value


def _is_iterator(value: Any) -> bool:
    return hasattr(value, "__next__") and hasattr(value, "__iter__")


@functools.lru_cache(maxsize=4096)
def _compiled(source: str) -> Callable[..., Any]:
    return ENVIRONMENT.compile_expression(source, undefined_to_none=False)


def evaluate(source: str, context: Mapping[str, Any]) -> Any:
    """Evaluate one expression (the text between ``${{`` and ``}}``).

    Raises:
        ExpressionError: the expression failed (an undefined key, a bad operand, a
            call the sandbox refuses, ...).
    """
    try:
        return to_plain(_compiled(source)(**context))
    except jinja2.TemplateError as exc:
        raise ExpressionError(f"expression '{source.strip()}' failed: {exc}") from None
    except (TypeError, ValueError, ArithmeticError, LookupError, AttributeError) as exc:
        raise ExpressionError(
            f"expression '{source.strip()}' failed: {type(exc).__name__}: {exc}"
        ) from None


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
        if _OPEN not in value:
            return value
        parts = split_template(value)
        single = whole_expression(parts)
        if single is not None:
            return evaluate(single.source, context)
        return "".join(
            part if isinstance(part, str) else _interpolated(evaluate(part.source, context))
            for part in parts
        )
    if isinstance(value, list):
        return [render(item, context) for item in value]
    if isinstance(value, dict):
        return {key: render(item, context) for key, item in value.items()}
    return value
