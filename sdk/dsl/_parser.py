"""YAML text -> a tree of located nodes (every value knows its line and column).

``yaml.compose`` keeps the marks that ``yaml.safe_load`` throws away; scalars are
then resolved to Python values with PyYAML's safe constructor, so the types are the
same as ``safe_load`` would give.
"""

from __future__ import annotations

import re

from dataclasses import dataclass, field
from typing import Any, Union

import yaml

from spindle.dsl._errors import DslError, Pos

__all__ = ["YMap", "YNode", "YScalar", "YSeq", "parse_yaml", "plain"]


@dataclass(frozen=True)
class YScalar:
    """A scalar (string, number, boolean or null) and where it starts.

    ``text_pos`` is where the characters of the value start on a single-line scalar
    (after an opening quote), so that positions inside the string can be computed;
    it is ``None`` for multi-line or escaped scalars.
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

_STEP_ID_LINE = re.compile(r"^\s*(?:-\s+)?id:\s*['\"]?([A-Za-z_][A-Za-z0-9_]*)")


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


def parse_yaml(text: str, file: str) -> YNode:
    """Parse one YAML document into located nodes.

    Raises:
        DslError: on a YAML syntax error, a duplicate or non-string key, or an empty
            document.
    """
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        pos = _pos(mark) if mark is not None else Pos(1, 1)
        problem = exc.problem or "invalid YAML"
        if exc.context:
            problem = f"{exc.context}, {problem}"
        raise DslError(
            f"YAML syntax error: {problem}", file=file, pos=pos, step=_step_around(text, pos.line)
        ) from None
    except yaml.YAMLError as exc:  # e.g. a second document in the stream
        raise DslError(f"YAML error: {exc}", file=file) from None
    if root is None:
        raise DslError("the document is empty", file=file)
    return _Converter(file, text).convert(root)


class _Converter:
    """Turns composed PyYAML nodes into located nodes."""

    def __init__(self, file: str, text: str) -> None:
        self._file = file
        self._text = text
        self._constructor = yaml.SafeLoader("")

    def convert(self, node: yaml.Node) -> YNode:
        if isinstance(node, yaml.MappingNode):
            return self._mapping(node)
        if isinstance(node, yaml.SequenceNode):
            return YSeq([self.convert(item) for item in node.value], _pos(node.start_mark))
        assert isinstance(node, yaml.ScalarNode)
        try:
            value = self._constructor.construct_object(node, deep=True)
        except yaml.YAMLError as exc:
            raise DslError(
                f"bad YAML value: {exc}", file=self._file, pos=_pos(node.start_mark)
            ) from None
        return YScalar(value, _pos(node.start_mark), self._text_pos(node))

    def _text_pos(self, node: yaml.ScalarNode) -> Pos | None:
        start, end = node.start_mark, node.end_mark
        if start.line != end.line or not isinstance(node.value, str):
            return None
        if node.style in (None, "", "'", '"'):
            quote = 1 if node.style in ("'", '"') else 0
            raw = self._text.splitlines()[start.line][start.column + quote :]
            if raw.startswith(node.value):  # no escapes: offsets map 1:1 onto columns
                return Pos(start.line + 1, start.column + 1 + quote)
        return None

    def _mapping(self, node: yaml.MappingNode) -> YMap:
        self._constructor.flatten_mapping(node)  # resolve YAML merge keys (<<)
        items: dict[str, YNode] = {}
        key_pos: dict[str, Pos] = {}
        for key_node, value_node in node.value:
            key_at = _pos(key_node.start_mark)
            key = self._constructor.construct_object(key_node, deep=True)
            if not isinstance(key, str):
                raise DslError(
                    f"keys must be strings, got {key!r}",
                    file=self._file,
                    pos=key_at,
                    step=_step_around(self._text, key_at.line),
                )
            if key in items:
                raise DslError(
                    f"duplicate key {key!r} (first at line {key_pos[key].line})",
                    file=self._file,
                    pos=key_at,
                    step=_step_around(self._text, key_at.line),
                )
            items[key] = self.convert(value_node)
            key_pos[key] = key_at
        return YMap(items, _pos(node.start_mark), key_pos)


def plain(node: YNode) -> Any:
    """Strip the positions: the plain Python value of a node."""
    if isinstance(node, YScalar):
        return node.value
    if isinstance(node, YSeq):
        return [plain(item) for item in node.items]
    return {key: plain(value) for key, value in node.items.items()}
