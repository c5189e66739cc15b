"""Pydantic v2 models as workflow and activity values (Temporal's ``temporalio.contrib.pydantic``).

Connect with ``data_converter=pydantic_data_converter`` (client and workers): values
are written by pydantic (``pydantic_core.to_json``: models, dataclasses, datetimes,
IP addresses, UUIDs, ...) as ``json/plain`` payloads, and read back by validating
the JSON against the parameter's or return's type hint
(``TypeAdapter(hint).validate_json``), so ``list[MyModel]`` comes back as models.
``None``, ``bytes`` and protobuf messages keep their default encodings.

Needs pydantic 2 (``pip install 'spindle[pydantic]'``); importing this module without
it raises ``ImportError`` saying so.
"""

from __future__ import annotations

import functools
import json

from typing import Any

try:
    import pydantic
    import pydantic_core
except ImportError as e:  # pragma: no cover - exercised in a subprocess by the tests
    raise ImportError(
        "spindle.contrib.pydantic needs pydantic 2 (pip install 'spindle[pydantic]')") from e

from spindle.api import messages_pb2 as pb
from spindle.converter import (
    CompositePayloadConverter,
    DataConverter,
    DefaultPayloadConverter,
    EncodingPayloadConverter,
    JSONPlainPayloadConverter,
)

if not pydantic.VERSION.startswith("2."):  # pragma: no cover
    raise ImportError(f"spindle.contrib.pydantic needs pydantic 2, found pydantic {pydantic.VERSION}")

__all__ = ["PydanticJSONPlainPayloadConverter", "PydanticPayloadConverter", "pydantic_data_converter"]


@functools.lru_cache(maxsize=256)
def _adapter(hint: Any) -> pydantic.TypeAdapter[Any]:
    return pydantic.TypeAdapter(hint)


class PydanticJSONPlainPayloadConverter(EncodingPayloadConverter):
    """``json/plain`` written by pydantic and read by validating against the type hint.

    Without a type hint the JSON comes back as plain values (dicts, lists, ...).
    Decoding raises pydantic's ``ValidationError`` when the data does not fit the hint.
    """

    @property
    def encoding(self) -> str:
        return "json/plain"

    def to_payload(self, value: Any) -> pb.Payload | None:
        return pb.Payload(metadata={"encoding": b"json/plain"}, data=pydantic_core.to_json(value))

    def from_payload(self, payload: pb.Payload, type_hint: Any = None) -> Any:
        if type_hint is None or type_hint is Any:
            return json.loads(payload.data)
        try:
            adapter = _adapter(type_hint)
        except TypeError:  # an unhashable hint: not cached
            adapter = pydantic.TypeAdapter(type_hint)
        return adapter.validate_json(payload.data)


class PydanticPayloadConverter(CompositePayloadConverter):
    """The default converters with ``json/plain`` replaced by :class:`PydanticJSONPlainPayloadConverter`."""

    def __init__(self) -> None:
        super().__init__(*(PydanticJSONPlainPayloadConverter() if isinstance(c, JSONPlainPayloadConverter) else c
                           for c in DefaultPayloadConverter.default_encoding_payload_converters))


#: A data converter for pydantic models (Temporal's ``pydantic_data_converter``).
pydantic_data_converter = DataConverter(payload_converter_class=PydanticPayloadConverter)
