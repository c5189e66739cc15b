"""What the language's definition (``_language.py``) is written in: shapes of YAML values.

Each shape does two things from the same fields: ``check`` a located YAML node,
recording every problem as a ``DslError`` at its line and column (with the step it is
in), and ``json`` writes the same rule as JSON Schema (draft 2020-12) for
``schema.json``. A limit, enum or pattern is given to a shape once and both use it.
Mappings and step bodies are in ``_shape_maps.py``.

Expressions (``${{ ... }}``) in values are parsed while checking (``Ctx.expressions``
turns that off, leaving the structure only: what a JSON Schema can say), and where
each is found is recorded for ``_validate.py``.
"""

from __future__ import annotations

import difflib
import re

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from spindle.dsl._durations import DURATION, parse_duration
from spindle.dsl._errors import DslError, Pos
from spindle.dsl._expressions import (
    CLOSE,
    OPEN,
    Expression,
    ExpressionError,
    TemplatePart,
    split_template,
    whole_expression,
)
from spindle.dsl._model import ExprSite, json_type
from spindle.dsl._parser import YMap, YNode, YScalar, YSeq, plain

__all__ = [
    "At", "Boolean", "Ctx", "Duration", "Either", "Enum", "Integer", "Interval", "ListOf", "LiteralOrExpression",
    "Number", "Pattern", "SchemaWriter", "Shape", "Text", "Value", "describe", "suggest",
]

#: A string that may be exactly one expression (whether it is, parsing says).
EXPRESSION = rf"\s*{re.escape(OPEN)}[\s\S]*{re.escape(CLOSE)}\s*"
_EXPRESSION = re.compile(EXPRESSION)
#: A duration that is not zero: some digit 1-9 before the end (of the string, or of an interval's period).
_POSITIVE = r"(?=[^1-9/]*[1-9])"


def suggest(word: str, candidates: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest candidate, if one is close."""
    close = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def describe(node: YNode) -> str:
    """What a node is, for ``got ...`` in messages."""
    if isinstance(node, YMap):
        return "a mapping"
    if isinstance(node, YSeq):
        return "a list"
    value = node.value
    if value is None:
        return "nothing (null)"
    return f"{json_type(value)} {value!r}"


def _expression_pos(node: YScalar, offset: int) -> Pos:
    return node.text_pos.shifted(offset) if node.text_pos is not None else node.pos


class Ctx:
    """Checking one document: the errors, the nodes that failed, the expressions found."""

    __slots__ = ("bad", "errors", "expressions", "file", "sites")

    def __init__(self, file: str, *, expressions: bool = True) -> None:
        self.file = file
        self.errors: list[DslError] = []
        #: ids of the nodes that failed their check (a node fails when anything inside it does).
        self.bad: set[int] = set()
        #: id of a step body (or the document) -> the expressions found in it.
        self.sites: dict[int, list[ExprSite]] = {}
        self.expressions = expressions

    def error(self, reason: str, pos: Pos, step: str | None) -> Literal[False]:
        """Record a problem; ``False``, so that checks can ``return ctx.error(...)``."""
        self.errors.append(DslError(reason, file=self.file, pos=pos, step=step))
        return False

    def check(self, shape: Shape, node: YNode, at: At) -> bool:
        """``shape.check``, remembering the node if it failed."""
        if shape.check(node, at, self):
            return True
        self.bad.add(id(node))
        return False

    def ok(self, node: YNode) -> bool:
        """True if ``node`` (and everything in it) passed its check."""
        return id(node) not in self.bad

    def template(self, node: YScalar, at: At) -> tuple[TemplatePart, ...] | None:
        """Parse the expressions in a string, recording each at ``at``; None after a parse error."""
        try:
            parts = split_template(node.value)
        except ExpressionError as exc:
            self.error(str(exc), _expression_pos(node, exc.offset), at.step)
            return None
        if at.sites is not None:
            at.sites.extend(ExprSite(at.key, part, _expression_pos(node, part.offset))
                            for part in parts if isinstance(part, Expression))
        return parts


class At:
    """Where a value is: how messages name it, the step it is in, where its expressions go."""

    __slots__ = ("key", "owner", "sites", "step", "what")

    def __init__(self, what: str, step: str | None = None, key: str = "", sites: list[ExprSite] | None = None,
                 owner: str = "") -> None:
        self.what = what  # e.g. "'retry'", "step #2", "the type of input 'n'"
        self.step = step
        self.key = key  # the key expressions found here are recorded under ("args", "outputs.total")
        self.sites = sites
        self.owner = owner  # how messages name the mapping the value is in ("input 'n'")


class SchemaWriter:
    """Collects the named shapes (``$defs``) while a schema is written."""

    def __init__(self) -> None:
        self.defs: dict[str, Any] = {}
        self._named: dict[str, Shape] = {}

    def of(self, shape: Shape) -> dict[str, Any]:
        """The schema of ``shape``: a ``$ref`` to ``$defs`` if it has a name, else inline."""
        if shape.name is None:
            return shape.json(self)
        if shape.name not in self._named:
            self._named[shape.name] = shape
            self.defs[shape.name] = {}  # reserve the place (and stop recursion)
            self.defs[shape.name] = shape.json(self)
        elif self._named[shape.name] is not shape:
            raise ValueError(f"two different shapes are named {shape.name!r}")
        return {"$ref": f"#/$defs/{shape.name}"}


def _described(schema: dict[str, Any], description: str | None) -> dict[str, Any]:
    return {**schema, "description": description} if description else schema


@dataclass(frozen=True)
class Shape:
    """A kind of value. ``name``: written once under ``$defs`` and referred to."""

    name: str | None = field(default=None, kw_only=True)
    description: str | None = field(default=None, kw_only=True)

    def check(self, node: YNode, at: At, ctx: Ctx) -> bool:
        """Record every problem of ``node``; True if there is none."""
        raise NotImplementedError

    def fits(self, node: YNode) -> bool:
        """True if ``node`` is of this shape's type (its other rules aside): for unions."""
        raise NotImplementedError

    def json(self, out: SchemaWriter) -> dict[str, Any]:
        """This shape as JSON Schema."""
        raise NotImplementedError


@dataclass(frozen=True)
class Pattern:
    """A regular expression a whole string must match, and the rule in words."""

    regex: str
    rule: str  # completes "'x' must ...": "be an identifier (letters, digits, '_'; ...)"
    compiled: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "compiled", re.compile(self.regex))

    def matches(self, text: str) -> bool:
        """True if all of ``text`` matches."""
        return self.compiled.fullmatch(text) is not None


@dataclass(frozen=True)
class Text(Shape):
    """A string. ``plain``: a literal name (no ``${{``, not blank); ``template``: may hold expressions."""

    mode: Literal["free", "plain", "template"] = "free"
    pattern: Pattern | None = None
    naming: str | None = None  # how a pattern error names the value ("step id"); default: what
    why: str = ""  # said after a pattern error

    def fits(self, node: YNode) -> bool:
        return isinstance(node, YScalar) and isinstance(node.value, str)

    def check(self, node: YNode, at: At, ctx: Ctx) -> bool:
        if not self.fits(node):
            return ctx.error(f"{at.what} must be a string, got {describe(node)}", node.pos, at.step)
        assert isinstance(node, YScalar)
        value: str = node.value
        if self.mode == "plain":
            if OPEN in value:
                return ctx.error(f"{at.what} must be a plain value, not an expression", node.pos, at.step)
            if not value.strip():
                return ctx.error(f"{at.what} must not be empty", node.pos, at.step)
        if self.pattern is not None and not self.pattern.matches(value):
            return ctx.error(f"{self.naming or at.what} {value!r} must {self.pattern.rule}{self.why}", node.pos, at.step)
        if self.mode == "template" and ctx.expressions and OPEN in value:
            return ctx.template(node, at) is not None
        return True

    def json(self, out: SchemaWriter) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "string"}
        if self.pattern is not None:
            schema["pattern"] = f"^(?:{self.pattern.regex})$"
        elif self.mode == "plain":
            schema["pattern"] = r"\S"
        if self.mode == "plain":
            schema["not"] = {"pattern": re.escape(OPEN)}
        return _described(schema, self.description)


@dataclass(frozen=True)
class Duration(Shape):
    """A duration (``_durations``), greater than zero."""

    def fits(self, node: YNode) -> bool:
        return isinstance(node, YScalar) and isinstance(node.value, str)

    def check(self, node: YNode, at: At, ctx: Ctx) -> bool:
        try:
            parse_duration(node.value if isinstance(node, YScalar) else plain(node))
        except ValueError as exc:
            return ctx.error(f"{at.what}: {exc}", node.pos, at.step)
        return True

    def json(self, out: SchemaWriter) -> dict[str, Any]:
        return _described({"type": "string", "pattern": rf"^\s*{_POSITIVE}{DURATION}\s*$"}, self.description)


@dataclass(frozen=True)
class Interval(Shape):
    """``EVERY`` or ``EVERY/PHASE``, two durations (what else an interval must be, the schedule checks)."""

    help: str = ""  # said after a bad duration

    def fits(self, node: YNode) -> bool:
        return isinstance(node, YScalar) and isinstance(node.value, str)

    def check(self, node: YNode, at: At, ctx: Ctx) -> bool:
        if not self.fits(node):
            return ctx.error(f"{at.what} must be a string, got {describe(node)}", node.pos, at.step)
        assert isinstance(node, YScalar)
        every, sep, phase = node.value.partition("/")
        try:
            for part in (every, phase) if sep else (every,):
                parse_duration(part)
        except ValueError as exc:
            return ctx.error(f"{at.what}: {exc}{self.help}", node.pos, at.step)
        return True

    def json(self, out: SchemaWriter) -> dict[str, Any]:
        one = rf"\s*{_POSITIVE}{DURATION}\s*"
        return _described({"type": "string", "pattern": f"^{one}(?:/{one})?$"}, self.description)


@dataclass(frozen=True)
class Integer(Shape):
    """An integer (as JSON Schema counts them: ``2.0`` is one), at least ``minimum``."""

    minimum: int | None = None
    note: str = ""  # said after "must be at least N"

    def fits(self, node: YNode) -> bool:
        value = node.value if isinstance(node, YScalar) else None
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer())

    def check(self, node: YNode, at: At, ctx: Ctx) -> bool:
        if not self.fits(node):
            return ctx.error(f"{at.what} must be an integer, got {describe(node)}", node.pos, at.step)
        assert isinstance(node, YScalar)
        if self.minimum is not None and node.value < self.minimum:
            return ctx.error(f"{at.what} must be at least {self.minimum}{self.note}", node.pos, at.step)
        return True

    def json(self, out: SchemaWriter) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "integer"}
        if self.minimum is not None:
            schema["minimum"] = self.minimum
        return _described(schema, self.description)


@dataclass(frozen=True)
class Number(Shape):
    """A number (an integer is one), at least ``minimum``."""

    minimum: float | None = None

    def fits(self, node: YNode) -> bool:
        value = node.value if isinstance(node, YScalar) else None
        return isinstance(value, (int, float)) and not isinstance(value, bool)

    def check(self, node: YNode, at: At, ctx: Ctx) -> bool:
        if not self.fits(node):
            return ctx.error(f"{at.what} must be a number, got {describe(node)}", node.pos, at.step)
        assert isinstance(node, YScalar)
        if self.minimum is not None and node.value < self.minimum:
            return ctx.error(f"{at.what} must be at least {self.minimum:g}", node.pos, at.step)
        return True

    def json(self, out: SchemaWriter) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "number"}
        if self.minimum is not None:
            schema["minimum"] = self.minimum
        return _described(schema, self.description)


@dataclass(frozen=True)
class Boolean(Shape):
    """``true`` or ``false``."""

    def fits(self, node: YNode) -> bool:
        return isinstance(node, YScalar) and isinstance(node.value, bool)

    def check(self, node: YNode, at: At, ctx: Ctx) -> bool:
        if not self.fits(node):
            return ctx.error(f"{at.what} must be true or false, got {describe(node)}", node.pos, at.step)
        return True

    def json(self, out: SchemaWriter) -> dict[str, Any]:
        return _described({"type": "boolean"}, self.description)


@dataclass(frozen=True)
class Enum(Shape):
    """One of ``values``. ``message`` may use {what}, {owner}, {value} (repr), {suggest}, {choices} (``a, b``)
    and {alternatives} (``'a' or 'b'``)."""

    values: tuple[str, ...]
    message: str = "{what} must be {alternatives}, got {value}{suggest}"

    def fits(self, node: YNode) -> bool:
        return isinstance(node, YScalar) and isinstance(node.value, str) and node.value in self.values

    def check(self, node: YNode, at: At, ctx: Ctx) -> bool:
        if not (isinstance(node, YScalar) and isinstance(node.value, str)):
            return ctx.error(f"{at.what} must be a string, got {describe(node)}", node.pos, at.step)
        if node.value not in self.values:
            quoted = [repr(value) for value in self.values]
            alternatives = " or ".join([", ".join(quoted[:-1]), quoted[-1]] if len(quoted) > 1 else quoted)
            reason = self.message.format(what=at.what, owner=at.owner, value=repr(node.value),
                                         suggest=suggest(node.value, self.values), choices=", ".join(self.values),
                                         alternatives=alternatives)
            return ctx.error(reason, node.pos, at.step)
        return True

    def json(self, out: SchemaWriter) -> dict[str, Any]:
        return _described({"enum": list(self.values)}, self.description)


@dataclass(frozen=True)
class Value(Shape):
    """Anything. ``template``: strings in it may hold expressions (parsed and recorded)."""

    template: bool = True

    def fits(self, node: YNode) -> bool:
        return True

    def check(self, node: YNode, at: At, ctx: Ctx) -> bool:
        if not (self.template and ctx.expressions):
            return True
        ok = True
        pending = [node]
        while pending:
            item = pending.pop()
            if isinstance(item, YScalar):
                if isinstance(item.value, str) and OPEN in item.value:
                    ok = ctx.template(item, at) is not None and ok
            else:
                pending.extend(reversed(item.items if isinstance(item, YSeq) else list(item.items.values())))
        return ok

    def json(self, out: SchemaWriter) -> dict[str, Any]:
        return _described({}, self.description)


@dataclass(frozen=True)
class LiteralOrExpression(Shape):
    """A literal of shape ``literal`` or a string that is exactly one expression (``when``, ``for_each``)."""

    literal: Shape
    words: str  # the literal in words: "true/false", "a list"

    def fits(self, node: YNode) -> bool:
        return self.literal.fits(node) or (isinstance(node, YScalar) and isinstance(node.value, str))

    def check(self, node: YNode, at: At, ctx: Ctx) -> bool:
        if isinstance(node, YScalar) and isinstance(node.value, str):
            if _EXPRESSION.fullmatch(node.value):
                if not ctx.expressions:
                    return True
                parts = ctx.template(node, at)
                if parts is None:
                    return False
                if whole_expression(parts) is not None:
                    return True
            return ctx.error(f"{at.what} must be {self.words} or exactly one '${{{{ ... }}}}' expression, "
                             f"got {node.value!r}", node.pos, at.step)
        if self.literal.fits(node):
            return ctx.check(self.literal, node, at)
        return ctx.error(f"{at.what} must be {self.words} or a '${{{{ ... }}}}' expression, got {describe(node)}",
                         node.pos, at.step)

    def json(self, out: SchemaWriter) -> dict[str, Any]:
        return _described({"oneOf": [out.of(self.literal), out.of(_ONE_EXPRESSION)]}, self.description)


_ONE_EXPRESSION = Text(pattern=Pattern(EXPRESSION, "be one expression"), name="expression",
                       description="Exactly one ${{ ... }} expression (Jinja2 expression syntax).")


@dataclass(frozen=True)
class ListOf(Shape):
    """A list of ``item``s. ``single``: one item may stand alone, for a list of one."""

    item: Shape
    of: str = ""  # what the items are, in words: "step ids"
    one: str = ""  # one item, in words, when ``single``: "a step id"
    item_what: str = "an item of {what}"  # how messages name an item; {n} is its 1-based position
    min_items: int = 0
    empty: str = "{what} must not be an empty list"
    unique: bool = False
    single: bool = False

    def fits(self, node: YNode) -> bool:
        return isinstance(node, YSeq) or (self.single and self.item.fits(node))

    def check(self, node: YNode, at: At, ctx: Ctx) -> bool:
        if not self.fits(node):
            words = f"a list of {self.of}" if self.of else "a list"
            if self.single:
                words = f"{self.one} or {words}"
            return ctx.error(f"{at.what} must be {words}, got {describe(node)}", node.pos, at.step)
        items = node.items if isinstance(node, YSeq) else [node]
        if len(items) < self.min_items:
            return ctx.error(self.empty.format(what=at.what), node.pos, at.step)
        ok = True
        seen: set[Any] = set()
        for index, item in enumerate(items):
            item_at = At(self.item_what.format(what=at.what, n=index + 1), at.step, at.key, at.sites, at.owner)
            ok = ctx.check(self.item, item, item_at) and ok
            if self.unique and isinstance(item, YScalar):
                if item.value in seen:
                    ok = ctx.error(f"{at.what} lists {item.value!r} twice", item.pos, at.step)
                seen.add(item.value)
        return ok

    def json(self, out: SchemaWriter) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "array", "items": out.of(self.item)}
        if self.min_items:
            schema["minItems"] = self.min_items
        if self.unique:
            schema["uniqueItems"] = True
        if self.single:
            schema = {"oneOf": [out.of(self.item), schema]}
        return _described(schema, self.description)


@dataclass(frozen=True)
class Either(Shape):
    """One of ``choices``: the one the node's type fits decides; none fits is an error."""

    choices: tuple[Shape, ...]
    expected: str  # the choices in words
    show: Literal["describe", "repr"] = "describe"  # how "got ..." shows a scalar

    def fits(self, node: YNode) -> bool:
        return any(choice.fits(node) for choice in self.choices)

    def check(self, node: YNode, at: At, ctx: Ctx) -> bool:
        for choice in self.choices:
            if choice.fits(node):
                return ctx.check(choice, node, at)
        got = repr(node.value) if self.show == "repr" and isinstance(node, YScalar) else describe(node)
        return ctx.error(f"{at.what} must be {self.expected}, got {got}", node.pos, at.step)

    def json(self, out: SchemaWriter) -> dict[str, Any]:
        return _described({"oneOf": [out.of(choice) for choice in self.choices]}, self.description)
