"""``Scope``: the read-only namespaces (``steps``, ``inputs``, ...) expressions read.

:mod:`spindle.dsl._sandbox` (the environment) looks up only a scope's keys, never its
Python attributes.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

__all__ = ["Scope"]


class Scope:
    """A read-only namespace for expressions: ``scope.key`` and ``scope['key']``.

    Expressions see only its keys (``DslEnvironment`` never looks up its Python
    attributes), so a step called ``label`` or an input called ``items`` is
    always the step or the input.
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
        try:
            return key in self._data
        except TypeError:  # unhashable
            return False

    def __repr__(self) -> str:
        return repr(dict(self._data))

    def items(self) -> Iterable[tuple[str, Any]]:
        """The entries (for measuring and copying; expressions cannot call this)."""
        return self._data.items()
