"""Mappings with known keys, and step bodies: one kind key (``activity``, ``sleep``...) plus its options.

Shapes like those in ``_shapes.py``: each checks located nodes with precise messages and
writes the same rules as JSON Schema. Rules between the keys of one mapping (``max_parallel``
needs ``for_each``, an input's default has its type) are ``Rule`` objects, also written both ways.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from spindle.dsl._expressions import OPEN
from spindle.dsl._model import json_type, value_matches
from spindle.dsl._parser import YMap, YNode, YScalar, plain
from spindle.dsl._shapes import At, Ctx, SchemaWriter, Shape, Text, describe, suggest

__all__ = ["AnyOf", "Body", "DefaultOfType", "Field", "Kind", "Map", "NotBoth", "Requires", "Rule"]


@dataclass(frozen=True)
class Field:
    """A key of a mapping: the shape of its value, and what messages and the schema say of it."""

    shape: Shape
    description: str | None = None
    required: bool = False
    #: When required and absent; {what} names the mapping, {key} the key.
    missing: str = "{what} has no '{key}'"
    #: How messages name the value; {owner} names the mapping. None: the mapping's ``field_what``.
    what: str | None = None
    #: The default, for the schema (the loader's defaults are in ``_model``).
    default: Any = None


def _property(out: SchemaWriter, f: Field) -> dict[str, Any]:
    schema = dict(out.of(f.shape))
    if f.description:
        schema["description"] = f.description
    if f.default is not None:
        schema["default"] = f.default
    return schema


class Rule:
    """A rule between the keys of one mapping."""

    def check(self, node: YMap, at: At, ctx: Ctx) -> bool:
        """Record the problem, if any; True if there is none."""
        raise NotImplementedError

    def json(self) -> dict[str, Any]:
        """Keywords to add to the mapping's schema."""
        raise NotImplementedError


@dataclass(frozen=True)
class Requires(Rule):
    """``key`` may be given only with ``needed``."""

    key: str
    needed: str

    def check(self, node: YMap, at: At, ctx: Ctx) -> bool:
        if self.key in node.items and self.needed not in node.items:
            return ctx.error(f"{self.key!r} needs {self.needed!r}", node.where(self.key), at.step)
        return True

    def json(self) -> dict[str, Any]:
        return {"dependentRequired": {self.key: [self.needed]}}


@dataclass(frozen=True)
class AnyOf(Rule):
    """At least one of ``keys``; ``message`` may use {what}."""

    keys: tuple[str, ...]
    message: str

    def check(self, node: YMap, at: At, ctx: Ctx) -> bool:
        if not any(key in node.items for key in self.keys):
            return ctx.error(self.message.format(what=at.what), node.pos, at.step)
        return True

    def json(self) -> dict[str, Any]:
        return {"anyOf": [{"required": [key]} for key in self.keys]}


@dataclass(frozen=True)
class NotBoth(Rule):
    """``flag: true`` and ``other`` may not both be given; ``message`` may use {what}."""

    flag: str
    other: str
    message: str

    def check(self, node: YMap, at: At, ctx: Ctx) -> bool:
        flag = node.items.get(self.flag)
        if isinstance(flag, YScalar) and flag.value is True and self.other in node.items:
            return ctx.error(self.message.format(what=at.what), node.where(self.flag), at.step)
        return True

    def json(self) -> dict[str, Any]:
        return {"not": {"required": [self.flag, self.other], "properties": {self.flag: {"const": True}}}}


@dataclass(frozen=True)
class DefaultOfType(Rule):
    """``default`` is a value of the type named by ``type`` (one of ``types``, JSON Schema's names)."""

    types: tuple[str, ...]

    def check(self, node: YMap, at: At, ctx: Ctx) -> bool:
        type_node, default_node = node.items.get("type"), node.items.get("default")
        if default_node is None or not isinstance(type_node, YScalar) or type_node.value not in self.types:
            return True
        default = self.loaded(plain(default_node), type_node.value)
        if not value_matches(default, type_node.value):
            return ctx.error(f"the default of {at.what} must be of type {type_node.value}, got "
                             f"{json_type(default)} {default!r}", default_node.pos, at.step)
        return True

    @staticmethod
    def loaded(default: Any, type_name: str) -> Any:
        """The default as loaded: ``2.0`` for an integer is ``2`` (JSON Schema counts it an integer)."""
        if type_name == "integer" and isinstance(default, float) and default.is_integer():
            return int(default)
        return default

    def json(self) -> dict[str, Any]:
        return {"allOf": [
            {"if": {"properties": {"type": {"const": name}}, "required": ["type", "default"]},
             "then": {"properties": {"default": {"type": name}}}}
            for name in self.types
        ]}


def _with_rules(schema: dict[str, Any], rules: tuple[Rule, ...]) -> dict[str, Any]:
    for rule in rules:
        for keyword, value in rule.json().items():
            if keyword == "dependentRequired" and keyword in schema:
                schema[keyword] = {**schema[keyword], **value}
            elif keyword == "allOf":
                schema["allOf"] = [*schema.get("allOf", []), *value]
            elif keyword in schema:
                schema["allOf"] = [*schema.get("allOf", []), {keyword: value}]
            else:
                schema[keyword] = value
    return schema


@dataclass(frozen=True)
class Map(Shape):
    """A mapping: known ``fields``, and other keys only if ``values`` says what they hold."""

    fields: Mapping[str, Field] = field(default_factory=dict)
    values: Shape | None = None  # the shape of the values of other keys (None: other keys are refused)
    keys: Text | None = None  # the shape of those keys
    called: str | None = None  # how "unknown key" messages name the mapping (default: what)
    field_what: str = "'{key}'"  # how messages name a field's value; {owner} is the mapping, {key} the key
    value_what: str = "{owner}"  # how messages name the value of another key
    name_sites: bool = False  # expressions in another key's value are recorded as "<key of this>.<key>"
    own_sites: bool = False  # expressions inside are recorded for this mapping (the document)
    shorthand: str | None = None  # a string stands for {shorthand: string}
    rules: tuple[Rule, ...] = ()

    def fits(self, node: YNode) -> bool:
        return isinstance(node, YMap) or (
            self.shorthand is not None and isinstance(node, YScalar) and isinstance(node.value, str))

    def expand(self, node: YNode) -> YNode:
        """The node, with a shorthand string made the mapping it stands for."""
        if self.shorthand is not None and isinstance(node, YScalar) and isinstance(node.value, str):
            return YMap({self.shorthand: node}, node.pos, {self.shorthand: node.pos})
        return node

    def check(self, node: YNode, at: At, ctx: Ctx) -> bool:
        node = self.expand(node)
        if not isinstance(node, YMap):
            also = f" or a {self.shorthand} name" if self.shorthand else ""
            return ctx.error(f"{at.what} must be a mapping{also}, got {describe(node)}", node.pos, at.step)
        sites = at.sites
        if self.own_sites:
            sites = ctx.sites[id(node)] = []
        ok = True
        for key, child in node.items.items():
            known = self.fields.get(key)
            if known is not None:
                what = (known.what or self.field_what).format(owner=at.what, key=key)
                ok = ctx.check(known.shape, child, At(what, at.step, key, sites, at.what)) and ok
            elif self.values is None:
                ok = ctx.error(f"unknown key {key!r} in {self.called or at.what}{suggest(key, self.fields)}",
                               node.where(key), at.step)
            elif self.keys is not None and not self.keys.check(YScalar(key, node.where(key)), At(repr(key), at.step), ctx):
                ok = False
            else:
                site_key = f"{at.key}.{key}" if self.name_sites else at.key
                what = self.value_what.format(owner=at.what, key=key)
                ok = ctx.check(self.values, child, At(what, at.step, site_key, sites, at.what)) and ok
        for key, known in self.fields.items():
            if known.required and key not in node.items:
                ok = ctx.error(known.missing.format(what=at.what, key=key), node.pos, at.step)
        for rule in self.rules:
            ok = rule.check(node, at, ctx) and ok
        return ok

    def json(self, out: SchemaWriter) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "object"}
        if self.fields:
            schema["properties"] = {key: _property(out, f) for key, f in self.fields.items()}
            required = [key for key, f in self.fields.items() if f.required]
            if required:
                schema["required"] = required
        if self.keys is not None:
            schema["propertyNames"] = out.of(self.keys)
        schema["additionalProperties"] = False if self.values is None else out.of(self.values)
        if schema["additionalProperties"] == {}:
            del schema["additionalProperties"]
        schema = _with_rules(schema, self.rules)
        if self.shorthand is not None:
            schema = {"oneOf": [out.of(self.fields[self.shorthand].shape), schema]}
        return {**schema, "description": self.description} if self.description else schema


@dataclass(frozen=True)
class Kind:
    """A kind of step: the shape of its key's value, its options, options of others it refuses and why."""

    value: Field
    options: Mapping[str, Field] = field(default_factory=dict)
    refused: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Body(Shape):
    """A step, an ``on_failure`` handler or a compensation: exactly one kind key, its options and ``fields``."""

    kinds: Mapping[str, Kind]
    fields: Mapping[str, Field]
    called: str  # "a step": how messages about its keys name it
    label: str | None = None  # the field whose value names the step in errors; None: the enclosing step's
    not_here: tuple[str, ...] = ()  # keys of other bodies: "'depends_on' is not allowed in 'on_failure'"
    rules: tuple[Rule, ...] = ()

    def fits(self, node: YNode) -> bool:
        return isinstance(node, YMap)

    def kind_of(self, node: YMap) -> str:
        """The kind key of a body that passed its check."""
        return next(key for key in node.items if key in self.kinds)

    def _misplaced(self, key: str, kind_key: str) -> str | None:
        refused = self.kinds[kind_key].refused.get(key)
        if refused is not None:
            return refused
        owners = [name for name, kind in self.kinds.items() if key in kind.options]
        if owners:
            article = "an" if kind_key[0] in "aeiou" else "a"
            return f"{key!r} does not apply to {article} {kind_key} step (it is an option of {' and '.join(owners)})"
        if key in self.not_here:
            return f"{key!r} is not allowed in {self.called}"
        return None

    def check(self, node: YNode, at: At, ctx: Ctx) -> bool:
        if not isinstance(node, YMap):
            return ctx.error(f"{at.what} must be a mapping, got {describe(node)}", node.pos, at.step)
        for key, known in self.fields.items():
            if known.required and key not in node.items:
                return ctx.error(known.missing.format(what=at.what, key=key), node.pos, at.step)
        step = at.step
        if self.label is not None:  # named by its own id (or the step it undoes), if that looks like one
            named = node.items[self.label]
            text = named.value if isinstance(named, YScalar) else None
            step = text if isinstance(text, str) and text.strip() and OPEN not in text else None
        kinds = [key for key in node.items if key in self.kinds]
        if len(kinds) != 1:
            return self._kind_error(node, kinds, step, ctx)
        kind_key = kinds[0]
        kind = self.kinds[kind_key]
        allowed = {kind_key: kind.value, **kind.options, **self.fields}
        sites = ctx.sites[id(node)] = []
        ok = True
        for key, child in node.items.items():
            given = allowed.get(key)
            if given is None:
                reason = self._misplaced(key, kind_key) or (
                    f"unknown key {key!r} in {self.called}{suggest(key, [*self.kinds, *self.fields, *kind.options])}")
                ok = ctx.error(reason, node.where(key), step)
            else:
                what = (given.what or "'{key}'").format(owner=at.what, key=key)
                ok = ctx.check(given.shape, child, At(what, step, key, sites, self.called)) and ok
        for rule in self.rules:
            ok = rule.check(node, At(at.what, step), ctx) and ok
        return ok

    def _kind_error(self, node: YMap, kinds: list[str], step: str | None, ctx: Ctx) -> bool:
        names = ", ".join(self.kinds)
        if kinds:
            return ctx.error(f"{self.called} needs exactly one of {names}; found both {kinds[0]!r} and {kinds[1]!r}",
                             node.where(kinds[1]), step)
        # A misspelt kind ("activty: ...") is the likeliest cause: point at it.
        options = {key for kind in self.kinds.values() for key in kind.options}
        for key in node.items:
            if key not in self.fields and key not in options and key not in self.not_here:
                hint = suggest(key, self.kinds)
                if hint:
                    return ctx.error(f"unknown key {key!r}{hint}", node.where(key), step)
        return ctx.error(f"{self.called} needs exactly one of {names}; found none", node.pos, step)

    def json(self, out: SchemaWriter) -> dict[str, Any]:
        variants = []
        required = [key for key, f in self.fields.items() if f.required]
        for kind_key, kind in self.kinds.items():
            properties = {key: _property(out, f) for key, f in {kind_key: kind.value, **kind.options}.items()}
            properties.update({key: _property(out, f) for key, f in self.fields.items()})
            variant: dict[str, Any] = {"title": kind_key, "type": "object", "additionalProperties": False,
                                       "required": [kind_key, *required], "properties": properties}
            variants.append(_with_rules(variant, self.rules))
        schema: dict[str, Any] = {"oneOf": variants}
        return {**schema, "description": self.description} if self.description else schema
