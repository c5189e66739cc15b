"""Requests that do not parse: which field is wrong, so the caller gets INVALID_ARGUMENT naming it.

grpcio parses a request before any handler runs, and a parse error there reaches the
client as ``UNKNOWN "Unexpected DecodeError"``. The servicer registers
:func:`lenient_deserializer` instead: a request that does not parse becomes a
:class:`MalformedRequest` that the handler refuses with INVALID_ARGUMENT, naming the field
:func:`find_wire_problem` located (a string that is not UTF-8, a message nested deeper than
protobuf's limit, a truncated field).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from google.protobuf import descriptor as _d
from google.protobuf.message import DecodeError, Message

#: protobuf's parse depth limit (upb's default): levels of messages below the request.
MAX_DEPTH = 100

_T = _d.FieldDescriptor


@dataclass(frozen=True)
class MalformedRequest:
    """A request that did not parse: ``problem`` names the field and what is wrong with it."""

    type_name: str
    problem: str

    def message(self) -> str:
        return f"{self.problem} (the request is not a valid {self.type_name})"


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ValueError("truncated varint")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def _compress(path: list[str]) -> str:
    """``a.cause.cause....cause.b`` written as ``a.cause (x97).b`` so that a deep path stays readable."""
    out: list[str] = []
    i = 0
    while i < len(path):
        j = i
        while j < len(path) and path[j] == path[i]:
            j += 1
        out.append(path[i] if j - i < 3 else f"{path[i]} (x{j - i})")
        i = j
    return ".".join(out)


def find_wire_problem(desc: _d.Descriptor, data: bytes, path: list[str] | None = None, depth: int = 0) -> str | None:
    """The first field of serialized ``data`` (a ``desc`` message) that cannot parse, as ``"<field>: <why>"``."""
    path = path or []
    pos = 0
    while pos < len(data):
        try:
            key, pos = _varint(data, pos)
            number, wire = key >> 3, key & 7
            fd = desc.fields_by_number.get(number)
            here = path + [fd.name if fd is not None else f"#{number}"]
            if wire == 0:
                _, pos = _varint(data, pos)
            elif wire == 1:
                pos += 8
            elif wire == 5:
                pos += 4
            elif wire == 2:
                size, pos = _varint(data, pos)
                chunk = data[pos:pos + size]
                if len(chunk) < size:
                    return f"{_compress(here)}: truncated (declares {size} bytes, {len(chunk)} present)"
                pos += size
                if fd is not None and fd.type == _T.TYPE_STRING:
                    try:
                        chunk.decode("utf-8")
                    except UnicodeDecodeError as e:
                        return f"{_compress(here)}: not valid UTF-8 (byte {e.start} of the string)"
                elif fd is not None and fd.type == _T.TYPE_MESSAGE:
                    if depth + 1 > MAX_DEPTH:
                        return f"{_compress(here)}: messages nested deeper than {MAX_DEPTH} levels"
                    found = find_wire_problem(fd.message_type, chunk, here, depth + 1)
                    if found is not None:
                        return found
            else:
                return f"{_compress(here)}: wire type {wire} is not used by this API"
        except ValueError:
            return f"{_compress(path) or 'request'}: truncated or corrupt field at byte {pos}"
        if pos > len(data):
            return f"{_compress(here)}: truncated"
    return None


def lenient_deserializer(cls: type[Message]) -> Callable[[bytes], Any]:
    """``cls.FromString`` that returns a :class:`MalformedRequest` instead of raising DecodeError."""
    def parse(raw: bytes) -> Any:
        try:
            return cls.FromString(raw)
        except DecodeError as e:
            problem = find_wire_problem(cls.DESCRIPTOR, raw) or f"request: {e}"
            return MalformedRequest(cls.DESCRIPTOR.full_name, problem)
    return parse


__all__ = ["MAX_DEPTH", "MalformedRequest", "find_wire_problem", "lenient_deserializer"]
