"""Temporal's encoding converters: ``binary/null``, ``binary/plain``, ``json/protobuf``, ``binary/protobuf``, ``json/plain``.

Each handles one ``encoding``; :class:`~spindle.converter.DefaultPayloadConverter`
holds one of each, in that order. :class:`JSONPlainPayloadConverter` without an
``encoder`` writes Spindle's bytes (cattrs, compact JSON); with ``encoder=`` (e.g.
:class:`AdvancedJSONEncoder` or your own ``json.JSONEncoder``) it writes what that
encoder produces. :class:`JSONTypeConverter` s turn decoded JSON into types cattrs
does not know.
"""

from __future__ import annotations

import abc
import dataclasses
import datetime
import enum
import json
import uuid

from collections.abc import Sequence
from typing import Any, ClassVar

import cattrs

from google.protobuf import json_format, message, symbol_database

from spindle.api import messages_pb2 as pb
from spindle.converter._cattrs_hooks import compact_json_dumps, make_cattrs_converter
from spindle.converter._payload_converter import DefaultPayloadConverter, EncodingPayloadConverter

__all__ = ["BinaryNullPayloadConverter", "BinaryPlainPayloadConverter", "JSONProtoPayloadConverter",
           "BinaryProtoPayloadConverter", "JSONPlainPayloadConverter", "AdvancedJSONEncoder", "JSONTypeConverter",
           "value_to_type"]


class BinaryNullPayloadConverter(EncodingPayloadConverter):
    """``None`` as a ``binary/null`` payload with no data."""

    @property
    def encoding(self) -> str:
        return "binary/null"

    def to_payload(self, value: Any) -> pb.Payload | None:
        return pb.Payload(metadata={"encoding": b"binary/null"}) if value is None else None

    def from_payload(self, payload: pb.Payload, type_hint: Any = None) -> Any:
        if payload.data:
            raise RuntimeError("a binary/null payload has data")
        return None


class BinaryPlainPayloadConverter(EncodingPayloadConverter):
    """``bytes`` as they are, in a ``binary/plain`` payload."""

    @property
    def encoding(self) -> str:
        return "binary/plain"

    def to_payload(self, value: Any) -> pb.Payload | None:
        return pb.Payload(metadata={"encoding": b"binary/plain"}, data=value) if isinstance(value, bytes) else None

    def from_payload(self, payload: pb.Payload, type_hint: Any = None) -> Any:
        return payload.data


def _message_class(payload: pb.Payload) -> type[message.Message]:
    name = payload.metadata.get("messageType", b"").decode()
    if not name:
        raise RuntimeError("a protobuf payload has no messageType metadata")
    try:
        cls: type[message.Message] = symbol_database.Default().GetSymbol(name)
    except KeyError as e:
        raise RuntimeError(f"protobuf message type {name!r} is not known here (import its _pb2 module)") from e
    return cls


class JSONProtoPayloadConverter(EncodingPayloadConverter):
    """Protobuf messages as their JSON form (``json/protobuf``, ``messageType`` metadata names the type)."""

    @property
    def encoding(self) -> str:
        return "json/protobuf"

    def to_payload(self, value: Any) -> pb.Payload | None:
        if not isinstance(value, message.Message):
            return None
        data = json_format.MessageToJson(value, preserving_proto_field_name=True, indent=None)
        return pb.Payload(metadata={"encoding": b"json/protobuf",
                                    "messageType": value.DESCRIPTOR.full_name.encode()}, data=data.encode())

    def from_payload(self, payload: pb.Payload, type_hint: Any = None) -> Any:
        return json_format.Parse(payload.data, _message_class(payload)(), ignore_unknown_fields=True)


class BinaryProtoPayloadConverter(EncodingPayloadConverter):
    """Protobuf messages serialized (``binary/protobuf``); after the JSON one in the default order, so it only decodes."""

    @property
    def encoding(self) -> str:
        return "binary/protobuf"

    def to_payload(self, value: Any) -> pb.Payload | None:
        if not isinstance(value, message.Message):
            return None
        return pb.Payload(metadata={"encoding": b"binary/protobuf",
                                    "messageType": value.DESCRIPTOR.full_name.encode()},
                          data=value.SerializeToString())

    def from_payload(self, payload: pb.Payload, type_hint: Any = None) -> Any:
        msg = _message_class(payload)()
        msg.ParseFromString(payload.data)
        return msg


class AdvancedJSONEncoder(json.JSONEncoder):
    """A ``json.JSONEncoder`` that also writes dataclasses, pydantic models, datetimes, UUIDs and enums.

    Temporal's ``AdvancedJSONEncoder``: subclass it and override ``default`` to add types.
    """

    def default(self, o: Any) -> Any:
        if dataclasses.is_dataclass(o) and not isinstance(o, type):
            return dataclasses.asdict(o)
        if isinstance(o, (datetime.datetime, datetime.date, datetime.time)):
            return o.isoformat()
        if isinstance(o, uuid.UUID):
            return str(o)
        if isinstance(o, enum.Enum):
            return o.value
        dump = getattr(o, "model_dump", None) or getattr(o, "dict", None)  # pydantic v2, then v1
        if callable(dump):
            return dump()
        return super().default(o)


class JSONTypeConverter(abc.ABC):
    """Turns a decoded JSON value into a type hint's value (Temporal's ``JSONTypeConverter``)."""

    #: Returned by :meth:`to_typed_value` when the converter does not handle the hint.
    Unhandled: ClassVar[object] = object()

    @abc.abstractmethod
    def to_typed_value(self, hint: Any, value: Any) -> Any:
        """``value`` as ``hint``, or :attr:`JSONTypeConverter.Unhandled` to let the next converter (then cattrs) try."""


_VALUE_TO_TYPE = make_cattrs_converter()


def value_to_type(hint: Any, value: Any, custom_converters: Sequence[JSONTypeConverter] = ()) -> Any:
    """``value`` (decoded JSON) structured into ``hint``: the custom converters first, then Spindle's cattrs rules.

    The custom converters see the top-level hint only (nested fields go through cattrs).
    A class with pydantic's ``model_validate`` (v2) or ``parse_obj`` (v1) is built by it.

    Raises:
        TypeError: ``value`` does not fit ``hint`` (the message says where).
    """
    for c in custom_converters:
        out = c.to_typed_value(hint, value)
        if out is not JSONTypeConverter.Unhandled:
            return out
    if hint is None or hint is Any or hint is object:
        return value
    if isinstance(hint, type):
        validate = getattr(hint, "model_validate", None) or getattr(hint, "parse_obj", None)
        if callable(validate):
            return validate(value)
    try:
        return _VALUE_TO_TYPE.structure(value, hint)
    except Exception as e:
        detail = "; ".join(cattrs.transform_error(e)) if isinstance(e, cattrs.BaseValidationError) else str(e)
        raise TypeError(f"value does not fit {hint!r}: {detail}") from e


class JSONPlainPayloadConverter(EncodingPayloadConverter):
    """Any JSON-representable value as ``json/plain`` (or the ``encoding`` given).

    ``encoder=None`` (the default here) writes Spindle's bytes: cattrs unstructuring,
    then compact JSON. ``encoder=`` a ``json.JSONEncoder`` class writes
    ``json.dumps(value, cls=encoder, separators=(",", ":"), sort_keys=True)``
    (Temporal's form). ``decoder=`` is the ``json.JSONDecoder`` class to read with;
    ``custom_type_converters`` are tried before cattrs when a type hint is given.
    """

    def __init__(self, encoder: type[json.JSONEncoder] | None = None, decoder: type[json.JSONDecoder] | None = None,
                 encoding: str = "json/plain", custom_type_converters: Sequence[JSONTypeConverter] = ()) -> None:
        self._encoder = encoder
        self._decoder = decoder
        self._encoding = encoding
        self._encoding_bytes = encoding.encode()
        self._custom = tuple(custom_type_converters)
        self._cattrs = make_cattrs_converter()
        self._dumps = compact_json_dumps()

    @property
    def encoding(self) -> str:
        return self._encoding

    def to_payload(self, value: Any) -> pb.Payload | None:
        if self._encoder is not None:
            data = json.dumps(value, cls=self._encoder, separators=(",", ":"), sort_keys=True)
        else:
            obj = value if type(value) in (str, int, float, bool) else self._cattrs.unstructure(value)
            data = self._dumps(obj)
        return pb.Payload(metadata={"encoding": self._encoding_bytes}, data=data.encode())

    def from_payload(self, payload: pb.Payload, type_hint: Any = None) -> Any:
        obj = json.loads(payload.data, cls=self._decoder)
        if type_hint is None:
            return obj
        return value_to_type(type_hint, obj, self._custom)


DefaultPayloadConverter.default_encoding_payload_converters = (
    BinaryNullPayloadConverter(), BinaryPlainPayloadConverter(), JSONProtoPayloadConverter(),
    BinaryProtoPayloadConverter(), JSONPlainPayloadConverter(),
)
