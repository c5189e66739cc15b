"""Typed search attributes (Temporal's ``SearchAttributeKey`` / ``TypedSearchAttributes``).

A search attribute is an indexed value of a run that visibility queries filter on
(``client.list_workflows("Tags = 'urgent'")``). Spindle also accepts plain mappings
(``search_attributes={"Tags": ["urgent"]}``); the typed form checks each value
against its key's type on the client, before anything is sent::

    TAGS = SearchAttributeKey.for_keyword_list("Tags")
    await client.start_workflow(W.run, id="w", task_queue="q",
                                search_attributes=TypedSearchAttributes([SearchAttributePair(TAGS, ["a", "b"])]))

On the wire a search attribute is a JSON payload; typed values also carry their
type name in the payload metadata (``"type": b"KeywordList"``), which is how
``describe().typed_search_attributes`` knows it later.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json

from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from typing import Any, ClassVar, Generic, NamedTuple, TypeVar, overload

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc

__all__ = [
    "SearchAttributeIndexedValueType",
    "SearchAttributeKey",
    "SearchAttributePair",
    "SearchAttributeUpdate",
    "TypedSearchAttributes",
    "search_attributes_to_payloads",
    "updates_to_mapping",
    "typed_from_payloads",
]

T = TypeVar("T")
D = TypeVar("D")

#: Payload metadata key holding the attribute's type name (as Temporal's server writes it).
TYPE_METADATA_KEY = "type"


class SearchAttributeIndexedValueType(enum.IntEnum):
    """How the server indexes a search attribute; the value is Spindle's wire number.

    Usable wherever the client takes a type (``create_namespace(search_attributes=
    {"Tags": SearchAttributeIndexedValueType.KEYWORD_LIST})``).
    """

    KEYWORD = svc.SEARCH_ATTRIBUTE_TYPE_KEYWORD
    TEXT = svc.SEARCH_ATTRIBUTE_TYPE_TEXT
    INT = svc.SEARCH_ATTRIBUTE_TYPE_INT
    DOUBLE = svc.SEARCH_ATTRIBUTE_TYPE_DOUBLE
    BOOL = svc.SEARCH_ATTRIBUTE_TYPE_BOOL
    DATETIME = svc.SEARCH_ATTRIBUTE_TYPE_DATETIME
    KEYWORD_LIST = svc.SEARCH_ATTRIBUTE_TYPE_KEYWORD_LIST

    @property
    def type_name(self) -> str:
        """The type's name as namespaces and queries spell it (``"KeywordList"``)."""
        return _TYPE_NAMES[self]


_TYPE_NAMES: dict[SearchAttributeIndexedValueType, str] = {
    SearchAttributeIndexedValueType.KEYWORD: "Keyword",
    SearchAttributeIndexedValueType.TEXT: "Text",
    SearchAttributeIndexedValueType.INT: "Int",
    SearchAttributeIndexedValueType.DOUBLE: "Double",
    SearchAttributeIndexedValueType.BOOL: "Bool",
    SearchAttributeIndexedValueType.DATETIME: "Datetime",
    SearchAttributeIndexedValueType.KEYWORD_LIST: "KeywordList",
}
_BY_NAME = {name: t for t, name in _TYPE_NAMES.items()}

# The Python type of each kind's values (as Temporal's keys report it).
_VALUE_TYPES: dict[SearchAttributeIndexedValueType, Any] = {
    SearchAttributeIndexedValueType.KEYWORD: str,
    SearchAttributeIndexedValueType.TEXT: str,
    SearchAttributeIndexedValueType.INT: int,
    SearchAttributeIndexedValueType.DOUBLE: float,
    SearchAttributeIndexedValueType.BOOL: bool,
    SearchAttributeIndexedValueType.DATETIME: datetime.datetime,
    SearchAttributeIndexedValueType.KEYWORD_LIST: Sequence[str],
}


@dataclasses.dataclass(frozen=True)
class SearchAttributeKey(Generic[T]):
    """A search attribute's name and type. Make one with a ``for_*`` method.

    Two keys are equal when name and type are.
    """

    name: str
    indexed_value_type: SearchAttributeIndexedValueType

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"a search attribute key needs a non-empty name, got {self.name!r}")
        object.__setattr__(self, "indexed_value_type", SearchAttributeIndexedValueType(self.indexed_value_type))

    @property
    def value_type(self) -> Any:
        """The Python type of the values (``Sequence[str]`` for a keyword list)."""
        return _VALUE_TYPES[self.indexed_value_type]

    @property
    def origin_value_type(self) -> type:
        """:attr:`value_type` without generics (usable with ``isinstance``)."""
        return Sequence if self.indexed_value_type is SearchAttributeIndexedValueType.KEYWORD_LIST else self.value_type

    def value_set(self, value: T) -> SearchAttributeUpdate[T]:
        """An update setting this attribute to ``value`` (for ``upsert_search_attributes``)."""
        return SearchAttributeUpdate(self, value)

    def value_unset(self) -> SearchAttributeUpdate[T]:
        """An update removing this attribute's value."""
        return SearchAttributeUpdate(self, None)

    @staticmethod
    def for_text(name: str) -> SearchAttributeKey[str]:
        """A ``Text`` attribute (full-text)."""
        return SearchAttributeKey(name, SearchAttributeIndexedValueType.TEXT)

    @staticmethod
    def for_keyword(name: str) -> SearchAttributeKey[str]:
        """A ``Keyword`` attribute (exact match)."""
        return SearchAttributeKey(name, SearchAttributeIndexedValueType.KEYWORD)

    @staticmethod
    def for_int(name: str) -> SearchAttributeKey[int]:
        """An ``Int`` attribute."""
        return SearchAttributeKey(name, SearchAttributeIndexedValueType.INT)

    @staticmethod
    def for_float(name: str) -> SearchAttributeKey[float]:
        """A ``Double`` attribute."""
        return SearchAttributeKey(name, SearchAttributeIndexedValueType.DOUBLE)

    @staticmethod
    def for_bool(name: str) -> SearchAttributeKey[bool]:
        """A ``Bool`` attribute."""
        return SearchAttributeKey(name, SearchAttributeIndexedValueType.BOOL)

    @staticmethod
    def for_datetime(name: str) -> SearchAttributeKey[datetime.datetime]:
        """A ``Datetime`` attribute (values must be timezone-aware)."""
        return SearchAttributeKey(name, SearchAttributeIndexedValueType.DATETIME)

    @staticmethod
    def for_keyword_list(name: str) -> SearchAttributeKey[Sequence[str]]:
        """A ``KeywordList`` attribute: a list of keywords; ``Tags = 'a'`` matches a list containing ``'a'``."""
        return SearchAttributeKey(name, SearchAttributeIndexedValueType.KEYWORD_LIST)

    @staticmethod
    def from_type_name(name: str, type_name: str) -> SearchAttributeKey[Any]:
        """The key for ``name`` of the type called ``type_name`` (``"KeywordList"``; case and ``_`` ignored).

        Raises:
            ValueError: ``type_name`` is not a search attribute type.
        """
        t = _type_from_name(type_name)
        if t is None:
            raise ValueError(f"unknown search attribute type {type_name!r} for {name!r} "
                             f"(use one of: {', '.join(_BY_NAME)})")
        return SearchAttributeKey(name, t)


def _type_from_name(type_name: str) -> SearchAttributeIndexedValueType | None:
    norm = type_name.removeprefix("INDEXED_VALUE_TYPE_").removeprefix("SEARCH_ATTRIBUTE_TYPE_").replace("_", "").lower()
    for name, t in _BY_NAME.items():
        if name.lower() == norm:
            return t
    return None


class SearchAttributePair(NamedTuple, Generic[T]):
    """A key and its value (an entry of :class:`TypedSearchAttributes`)."""

    key: SearchAttributeKey[T]
    value: T


@dataclasses.dataclass(frozen=True)
class SearchAttributeUpdate(Generic[T]):
    """Set (``value``) or unset (``value is None``) one attribute; made by ``key.value_set(v)`` / ``value_unset()``."""

    key: SearchAttributeKey[T]
    value: T | None


@dataclasses.dataclass(frozen=True)
class TypedSearchAttributes(Collection[SearchAttributePair[Any]]):
    """An immutable collection of :class:`SearchAttributePair`, sorted by name, one per name.

    Raises:
        ValueError: from the constructor, when two pairs have the same name.
        TypeError: from the constructor, when an entry is not a ``SearchAttributePair``.
    """

    search_attributes: Sequence[SearchAttributePair[Any]]

    empty: ClassVar[TypedSearchAttributes]

    def __post_init__(self) -> None:
        pairs = list(self.search_attributes)
        for p in pairs:
            if not isinstance(p, tuple) or len(p) != 2 or not isinstance(p[0], SearchAttributeKey):
                raise TypeError(f"TypedSearchAttributes takes SearchAttributePair(key, value) entries, got {p!r}")
        pairs = [p if isinstance(p, SearchAttributePair) else SearchAttributePair(p[0], p[1]) for p in pairs]
        pairs.sort(key=lambda p: p.key.name)
        for a, b in zip(pairs, pairs[1:]):
            if a.key.name == b.key.name:
                raise ValueError(f"search attribute {a.key.name!r} appears twice")
        object.__setattr__(self, "search_attributes", tuple(pairs))

    def __len__(self) -> int:
        return len(self.search_attributes)

    def __iter__(self) -> Iterator[SearchAttributePair[Any]]:
        return iter(self.search_attributes)

    def __contains__(self, key: object) -> bool:
        """Whether a pair has this key (same name and type)."""
        return any(p.key == key for p in self.search_attributes)

    def __getitem__(self, key: SearchAttributeKey[T]) -> T:
        """The value of ``key`` (same name and type).

        Raises:
            KeyError: no such key.
        """
        for p in self.search_attributes:
            if p.key == key:
                return p.value  # type: ignore[no-any-return]
        raise KeyError(key.name)

    @overload
    def get(self, key: SearchAttributeKey[T]) -> T | None: ...

    @overload
    def get(self, key: SearchAttributeKey[T], default: D) -> T | D: ...

    def get(self, key: SearchAttributeKey[Any], default: Any = None) -> Any:
        """The value of ``key``, or ``default``."""
        try:
            return self[key]
        except KeyError:
            return default

    def updated(self, *pairs: SearchAttributePair[Any]) -> TypedSearchAttributes:
        """A copy where each pair replaces the one of the same name (or is added)."""
        by_name = {p.key.name: p for p in self.search_attributes}
        for p in pairs:
            by_name[p.key.name] = p
        return TypedSearchAttributes(list(by_name.values()))


TypedSearchAttributes.empty = TypedSearchAttributes(())


# ---------------------------------------------------------------------- conversion


def _check_value(key: SearchAttributeKey[Any], value: Any, where: str) -> Any:
    """``value`` as JSON-ready data for ``key``'s type.

    Raises:
        TypeError: the value does not fit the type.
        ValueError: a naive datetime.
    """
    t = key.indexed_value_type
    bad = f"{where}: search attribute {key.name!r} is {t.type_name}, got {value!r} ({type(value).__name__})"
    if t in (SearchAttributeIndexedValueType.KEYWORD, SearchAttributeIndexedValueType.TEXT):
        if not isinstance(value, str):
            raise TypeError(bad + "; expected a str")
        return value
    if t is SearchAttributeIndexedValueType.INT:
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(bad + "; expected an int")
        return value
    if t is SearchAttributeIndexedValueType.DOUBLE:
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise TypeError(bad + "; expected a float")
        return float(value)
    if t is SearchAttributeIndexedValueType.BOOL:
        if not isinstance(value, bool):
            raise TypeError(bad + "; expected a bool")
        return value
    if t is SearchAttributeIndexedValueType.DATETIME:
        if not isinstance(value, datetime.datetime):
            raise TypeError(bad + "; expected a datetime")
        if value.tzinfo is None:
            raise ValueError(f"{where}: search attribute {key.name!r}: the datetime {value!r} has no time zone")
        return value.isoformat()
    # KEYWORD_LIST
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise TypeError(bad + "; expected a list of str")
    items = list(value)
    for item in items:
        if not isinstance(item, str):
            raise TypeError(bad + f"; expected a list of str, but {item!r} is a {type(item).__name__}")
    return items


def _json_payload(data: Any, type_name: str | None) -> pb.Payload:
    if data is None:
        return pb.Payload(metadata={"encoding": b"binary/null"})
    metadata = {"encoding": b"json/plain"}
    if type_name:
        metadata[TYPE_METADATA_KEY] = type_name.encode()
    return pb.Payload(metadata=metadata,
                      data=json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode())


def search_attributes_to_payloads(values: TypedSearchAttributes | Mapping[str, Any] | None, converter: Any,
                                  *, where: str = "search_attributes") -> dict[str, pb.Payload]:
    """Encode search attributes for a request.

    ``values`` is a :class:`TypedSearchAttributes` (each value is checked against its
    key and tagged with its type) or a plain mapping (values encoded by
    ``converter``; the server checks them against the namespace's types).

    Raises:
        TypeError: a typed value does not fit its key, or ``values`` is neither form.
        ValueError: a typed datetime without a time zone.
    """
    if values is None:
        return {}
    if isinstance(values, TypedSearchAttributes):
        return {p.key.name: _json_payload(_check_value(p.key, p.value, where), p.key.indexed_value_type.type_name)
                for p in values}
    if isinstance(values, Mapping):
        return {k: converter.to_payload(v) for k, v in values.items()}
    raise TypeError(f"{where}: expected a TypedSearchAttributes or a mapping of name to value, "
                    f"got {type(values).__name__}")


def updates_to_mapping(updates: Iterable[SearchAttributeUpdate[Any]], *,
                       where: str = "upsert_search_attributes") -> dict[str, Any]:
    """Temporal-style updates (``[key.value_set(v), other.value_unset()]``) as a name -> value mapping.

    Unset becomes ``None``; datetimes become ISO 8601 strings. This is the form
    ``workflow.upsert_search_attributes`` records.

    Raises:
        TypeError: an entry is not a ``SearchAttributeUpdate`` or a value does not fit its key.
        ValueError: a datetime without a time zone, or the same name twice.
    """
    out: dict[str, Any] = {}
    for u in updates:
        if not isinstance(u, SearchAttributeUpdate):
            raise TypeError(f"{where}: expected SearchAttributeUpdate entries (key.value_set(v)), got {u!r}")
        if u.key.name in out:
            raise ValueError(f"{where}: search attribute {u.key.name!r} is updated twice")
        out[u.key.name] = None if u.value is None else _check_value(u.key, u.value, where)
    return out


def _from_json(key: SearchAttributeKey[Any], value: Any) -> Any:
    t = key.indexed_value_type
    if t is SearchAttributeIndexedValueType.DATETIME:
        if isinstance(value, str):
            return datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
        if isinstance(value, int):  # Unix milliseconds
            return datetime.datetime.fromtimestamp(value / 1000, datetime.timezone.utc)
    if t is SearchAttributeIndexedValueType.DOUBLE and isinstance(value, int):
        return float(value)
    return value


def _guess(name: str, value: Any) -> SearchAttributeKey[Any] | None:
    if isinstance(value, bool):
        return SearchAttributeKey.for_bool(name)
    if isinstance(value, int):
        return SearchAttributeKey.for_int(name)
    if isinstance(value, float):
        return SearchAttributeKey.for_float(name)
    if isinstance(value, str):
        return SearchAttributeKey.for_keyword(name)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return SearchAttributeKey.for_keyword_list(name)
    return None


def typed_from_payloads(fields: Mapping[str, pb.Payload]) -> TypedSearchAttributes:
    """Rebuild typed attributes from the payloads of a description.

    The type comes from the payload's ``type`` metadata (typed values sent by this
    client carry it); otherwise it is inferred from the JSON value: str -> Keyword,
    list of str -> KeywordList, int -> Int, float -> Double, bool -> Bool (so an
    untagged Text or Datetime value appears as Keyword). Unset and undecodable
    values are left out.
    """
    pairs: list[SearchAttributePair[Any]] = []
    for name, p in fields.items():
        if p.metadata.get("encoding") != b"json/plain":
            continue
        try:
            value = json.loads(p.data)
        except ValueError:
            continue
        if value is None:
            continue
        tagged = p.metadata.get(TYPE_METADATA_KEY)
        t = _type_from_name(tagged.decode(errors="replace")) if tagged else None
        key = SearchAttributeKey(name, t) if t is not None else _guess(name, value)
        if key is None:
            continue
        try:
            pairs.append(SearchAttributePair(key, _from_json(key, value)))
        except ValueError:
            continue
    return TypedSearchAttributes(pairs)
