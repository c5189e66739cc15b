"""YAML text -> a tree of located nodes (every value knows its line and column).

The tree is composed here from the parser's events (libyaml's when available),
keeping the marks that ``yaml.safe_load`` throws away, without recursion and
within limits on nesting and alias expansion; scalars are resolved to Python
values with PyYAML's safe resolver and constructor, so the types are the same as
``safe_load`` would give.
"""

from __future__ import annotations

import re

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Union

import yaml

from spindle.dsl._errors import DslError, Pos

__all__ = ["YMap", "YNode", "YScalar", "YSeq", "parse_yaml", "plain"]


@dataclass(frozen=True)
class YScalar:
    """A scalar (string, number, boolean or null) and where it starts.

    ``text_pos`` is where the characters of the value start on a single-line scalar
    (after an opening quote), so that positions of expressions inside the string
    can be computed; it is ``None`` for multi-line or escaped scalars and for
    strings without ``${{``.
    """

    value: Any
    pos: Pos
    text_pos: Pos | None = None


@dataclass(frozen=True)
class YSeq:
    """A sequence of nodes."""

    items: list[YNode]
    pos: Pos


@dataclass(frozen=True)
class YMap:
    """A mapping with string keys, in document order, with each key's position."""

    items: dict[str, YNode]
    pos: Pos
    key_pos: dict[str, Pos] = field(default_factory=dict)

    def where(self, key: str) -> Pos:
        """The position of ``key`` if present, else of the mapping itself."""
        return self.key_pos.get(key, self.pos)


YNode = Union[YScalar, YSeq, YMap]

_STEP_ID_LINE = re.compile(r"^\s*(?:-\s+)?(?:&\S+\s+)?\{?\s*id:\s*['\"]?([A-Za-z_][A-Za-z0-9_]*)")


def _pos(mark: yaml.Mark) -> Pos:
    return Pos(mark.line + 1, mark.column + 1)


def _step_around(text: str, line: int) -> str | None:
    """Best effort: the id of the step whose text contains 1-based ``line``."""
    lines = text.splitlines()
    for index in range(min(line, len(lines)) - 1, -1, -1):
        candidate = lines[index]
        if re.match(r"^[A-Za-z_]", candidate):  # reached a header key: not in a step
            return None
        found = _STEP_ID_LINE.match(candidate)
        if found:
            return found.group(1)
    return None


#: YAML nodes may nest at most this deep (mappings and lists, counting aliases expanded).
MAX_YAML_DEPTH = 100
#: Aliases (``*name``) may add at most this many nodes to the document in total.
MAX_ALIAS_NODES = 10_000

_STR_TAG = "tag:yaml.org,2002:str"
_MERGE_TAG = "tag:yaml.org,2002:merge"
#: libyaml's event parser when PyYAML was built with it (fast); else PyYAML's own.
_FAST_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def parse_yaml(text: str, file: str) -> YNode:
    """Parse one YAML document into located nodes.

    The document is composed from the parser's events without recursion, in
    time linear in its size, with limits (README.md, "Limits"): nesting at most
    :data:`MAX_YAML_DEPTH` deep, aliases adding at most :data:`MAX_ALIAS_NODES`
    nodes, no alias inside the node it names.

    Raises:
        DslError: on a YAML syntax error, a duplicate or non-string key, an
            empty document, or a document over a limit.
    """
    try:
        root = _Composer(file, text).compose(yaml.parse(text, Loader=_FAST_LOADER))
    except yaml.MarkedYAMLError as exc:
        if "maximum nesting depth" in str(exc.problem):  # libyaml's own limit (1000 levels)
            mark = exc.problem_mark or exc.context_mark
            pos = _pos(mark) if mark is not None else Pos(1, 1)
            raise DslError(f"the document nests more than {MAX_YAML_DEPTH} levels deep", file=file, pos=pos,
                           step=_step_around(text, pos.line)) from None
        raise _syntax_error(_python_parser_error(text) or exc, file, text) from None
    except yaml.YAMLError as exc:  # e.g. a character YAML does not allow
        raise DslError(f"YAML error: {exc}", file=file) from None
    if root is None:
        raise DslError("the document is empty", file=file)
    return root


def _python_parser_error(text: str) -> yaml.MarkedYAMLError | None:
    """PyYAML's own parser's error for ``text`` (its messages say more than libyaml's)."""
    if _FAST_LOADER is yaml.SafeLoader:
        return None
    try:
        for _ in yaml.parse(text, Loader=yaml.SafeLoader):
            pass
    except yaml.MarkedYAMLError as exc:
        return exc
    except yaml.YAMLError:
        return None
    return None


def _syntax_error(exc: yaml.MarkedYAMLError, file: str, text: str) -> DslError:
    mark = exc.problem_mark or exc.context_mark
    pos = _pos(mark) if mark is not None else Pos(1, 1)
    problem = exc.problem or "invalid YAML"
    if exc.context:
        problem = f"{exc.context}, {problem}"
    return DslError(f"YAML syntax error: {problem}", file=file, pos=pos, step=_step_around(text, pos.line))


class _Open:
    """A mapping or sequence being composed."""

    __slots__ = ("anchor", "height", "items", "key", "key_at", "key_pos", "merges", "pos", "size")

    def __init__(self, pos: Pos, anchor: str | None, mapping: bool) -> None:
        self.pos = pos
        self.anchor = anchor
        self.items: Any = {} if mapping else []
        self.key: str | None = None  # mapping: the key whose value comes next
        self.key_at: Pos | None = None
        self.key_pos: dict[str, Pos] = {}
        self.merges: list[tuple[YNode, Pos]] = []
        self.size = 1  # nodes in this subtree, aliases expanded
        self.height = 1


class _Composer:
    """Builds located nodes from parser events, iteratively, enforcing the limits."""

    def __init__(self, file: str, text: str) -> None:
        self._file = file
        self._text = text
        self._lines: list[str] | None = None
        self._loader = yaml.SafeLoader("")  # resolver and constructor for scalars
        #: anchor -> (node, size, height) of a finished node.
        self._anchors: dict[str, tuple[YNode, int, int, Pos]] = {}
        self._open_anchors: set[str] = set()
        self._alias_nodes = 0

    def _error(self, reason: str, mark: yaml.Mark) -> DslError:
        pos = _pos(mark)
        return DslError(reason, file=self._file, pos=pos, step=_step_around(self._text, pos.line))

    def compose(self, events: Iterator[yaml.Event]) -> YNode | None:
        stack: list[_Open] = []
        root: YNode | None = None
        documents = 0
        scalar, mapping_start, sequence_start = yaml.ScalarEvent, yaml.MappingStartEvent, yaml.SequenceStartEvent
        ends = (yaml.MappingEndEvent, yaml.SequenceEndEvent)
        for event in events:
            kind = type(event)
            if kind is scalar:
                node: YNode = self._scalar(event)
                if event.anchor is not None:
                    self._check_new_anchor(event)
                    self._anchors[event.anchor] = (node, 1, 1, node.pos)
                root = self._add(stack, node, 1, 1, event)
            elif kind is mapping_start or kind is sequence_start:
                if len(stack) >= MAX_YAML_DEPTH:
                    raise self._error(f"the document nests more than {MAX_YAML_DEPTH} levels deep", event.start_mark)
                if event.anchor is not None:
                    self._check_new_anchor(event)
                    self._open_anchors.add(event.anchor)
                mark = event.start_mark
                stack.append(_Open(Pos(mark.line + 1, mark.column + 1), event.anchor, kind is mapping_start))
            elif kind in ends:
                done = stack.pop()
                node = self._finish(done)
                if done.anchor is not None:
                    self._open_anchors.discard(done.anchor)
                    self._anchors[done.anchor] = (node, done.size, done.height, done.pos)
                root = self._add(stack, node, done.size, done.height, event)
            elif kind is yaml.AliasEvent:
                node, size, height = self._alias(event, len(stack))
                root = self._add(stack, node, size, height, event)
            elif kind is yaml.DocumentStartEvent:
                documents += 1
                if documents > 1:
                    raise self._error(
                        "YAML syntax error: expected a single document in the stream, but found another document",
                        event.start_mark)
        return root

    def _check_new_anchor(self, event: yaml.NodeEvent) -> None:
        anchor = event.anchor
        assert anchor is not None
        if anchor in self._anchors or anchor in self._open_anchors:
            first = self._anchors[anchor][3].line if anchor in self._anchors else None
            where = f" (first at line {first})" if first is not None else ""
            raise self._error(f"YAML syntax error: found duplicate anchor {anchor!r}{where}", event.start_mark)

    def _alias(self, event: yaml.AliasEvent, depth: int) -> tuple[YNode, int, int]:
        anchor = event.anchor
        if anchor in self._open_anchors:
            raise self._error(
                f"recursive alias *{anchor}: it is inside the node &{anchor} names", event.start_mark)
        if anchor not in self._anchors:
            raise self._error(f"YAML syntax error: found undefined alias {anchor!r}", event.start_mark)
        node, size, height, _ = self._anchors[anchor]
        if depth + height > MAX_YAML_DEPTH:
            raise self._error(
                f"the document nests more than {MAX_YAML_DEPTH} levels deep (with alias *{anchor} expanded)",
                event.start_mark)
        self._alias_nodes += size
        if self._alias_nodes > MAX_ALIAS_NODES:
            raise self._error(
                f"aliases expand to more than {MAX_ALIAS_NODES} nodes (alias *{anchor} adds {size}); "
                "write the repeated parts out, or use fewer aliases", event.start_mark)
        return node, size, height

    def _add(self, stack: list[_Open], node: YNode, size: int, height: int, event: yaml.Event) -> YNode | None:
        """Attach ``node`` to the innermost open collection; return it if it is the root."""
        if isinstance(node, YScalar) and node.value is _MERGE and not (
            stack and isinstance(stack[-1].items, dict) and stack[-1].key_at is None
        ):  # '<<' anywhere but as a key is the string
            node = YScalar("<<", node.pos, node.text_pos)
        if not stack:
            return node
        parent = stack[-1]
        parent.size += size
        parent.height = max(parent.height, height + 1)
        if isinstance(parent.items, list):
            parent.items.append(node)
            return None
        if parent.key is None and parent.key_at is None:  # this node is a key
            parent.key_at = node.pos
            if isinstance(node, YScalar) and node.value is _MERGE:
                parent.key = _MERGE_KEY
                return None
            if not isinstance(node, YScalar) or not isinstance(node.value, str):
                shown = repr(node.value) if isinstance(node, YScalar) else ("a mapping" if isinstance(node, YMap) else "a list")
                raise self._error(f"keys must be strings, got {shown}", event.start_mark)
            if node.value in parent.key_pos:
                raise self._error(
                    f"duplicate key {node.value!r} (first at line {parent.key_pos[node.value].line})",
                    event.start_mark)
            parent.key = node.value
            return None
        key, key_at = parent.key, parent.key_at
        parent.key, parent.key_at = None, None
        assert key is not None and key_at is not None
        if key is _MERGE_KEY:
            parent.merges.append((node, key_at))
        else:
            parent.items[key] = node
            parent.key_pos[key] = key_at
        return None

    def _finish(self, done: _Open) -> YNode:
        if isinstance(done.items, list):
            return YSeq(done.items, done.pos)
        if not done.merges:
            return YMap(done.items, done.pos, done.key_pos)
        items: dict[str, YNode] = {}
        key_pos: dict[str, Pos] = {}
        for value, at in done.merges:  # YAML merge keys: explicit keys win, then earlier merges
            sources = value.items if isinstance(value, YSeq) else [value]
            for source in sources:
                if not isinstance(source, YMap):
                    raise DslError("'<<' (merge) needs a mapping or a list of mappings",
                                   file=self._file, pos=source.pos, step=_step_around(self._text, at.line))
                for key, item in source.items.items():
                    if key not in done.items and key not in items:
                        items[key] = item
                        key_pos[key] = source.where(key)
        items.update(done.items)
        key_pos.update(done.key_pos)
        return YMap(items, done.pos, key_pos)

    def _scalar(self, event: yaml.ScalarEvent) -> YScalar:
        tag = event.tag
        if tag is None or tag == "!":
            tag = self._loader.resolve(yaml.ScalarNode, event.value, event.implicit)
        if tag == _STR_TAG:
            value: Any = event.value
            if "${{" not in value:  # the common case, kept short
                mark = event.start_mark
                return YScalar(value, Pos(mark.line + 1, mark.column + 1))
        elif tag == _MERGE_TAG:
            value = _MERGE
        else:
            node = yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark, event.style)
            try:
                value = self._loader.construct_object(node, deep=True)
            except yaml.YAMLError as exc:
                raise DslError(f"bad YAML value: {exc}", file=self._file, pos=_pos(event.start_mark)) from None
            finally:
                self._loader.constructed_objects.clear()
        # Positions inside a string are only asked for expressions ("${{").
        text_pos = self._text_pos(event) if "${{" in event.value else None
        return YScalar(value, _pos(event.start_mark), text_pos)

    def _text_pos(self, event: yaml.ScalarEvent) -> Pos | None:
        start, end = event.start_mark, event.end_mark
        if start.line != end.line:
            return None
        if event.style in (None, "", "'", '"'):
            quote = 1 if event.style in ("'", '"') else 0
            if self._lines is None:
                self._lines = self._text.splitlines()
            if start.line >= len(self._lines):
                return None
            raw = self._lines[start.line]
            if raw.startswith(event.value, start.column + quote):  # no escapes: offsets map 1:1
                return Pos(start.line + 1, start.column + 1 + quote)
        return None


class _MergeMarker:
    """The value of a ``<<`` merge key while composing (never in a finished node)."""

    def __repr__(self) -> str:
        return "'<<'"


_MERGE = _MergeMarker()
_MERGE_KEY = "\0<<"


def plain(node: YNode) -> Any:
    """Strip the positions: the plain Python value of a node."""
    if isinstance(node, YScalar):
        return node.value
    if isinstance(node, YSeq):
        return [plain(item) for item in node.items]
    return {key: plain(value) for key, value in node.items.items()}
