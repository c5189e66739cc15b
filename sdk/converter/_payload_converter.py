"""Temporal's payload-converter shape: :class:`PayloadConverter`, one converter per encoding, and their composite.

A :class:`CompositePayloadConverter` holds :class:`EncodingPayloadConverter` s in
order: a value goes to the first one whose ``to_payload`` does not return ``None``;
a payload goes back through the one whose ``encoding`` matches its ``encoding``
metadata. :class:`DefaultPayloadConverter` is the composite Spindle uses unless
told otherwise (null, bytes, protobuf JSON, protobuf binary, then JSON); its JSON
writes the same bytes as :class:`~spindle.converter.DataConverter`'s built-in path.
"""

from __future__ import annotations

import abc

from collections.abc import Sequence
from typing import Any, ClassVar

from spindle.api import messages_pb2 as pb

__all__ = ["PayloadConverter", "EncodingPayloadConverter", "CompositePayloadConverter", "DefaultPayloadConverter"]


class PayloadConverter(abc.ABC):
    """Converts values to payloads and back (Temporal's ``temporalio.converter.PayloadConverter``)."""

    @abc.abstractmethod
    def to_payloads(self, values: Sequence[Any]) -> list[pb.Payload]:
        """Encode ``values`` in order, one payload each.

        Raises:
            RuntimeError: a value has no converter (the message names its index and type).
        """

    @abc.abstractmethod
    def from_payloads(self, payloads: Sequence[pb.Payload], type_hints: list[Any] | None = None) -> list[Any]:
        """Decode ``payloads`` in order, the i-th into ``type_hints[i]`` when given.

        Raises:
            KeyError: a payload's encoding has no converter.
            RuntimeError: a payload could not be decoded (the cause is chained).
        """

    def to_payload(self, value: Any) -> pb.Payload:
        """Encode one value (``to_payloads([value])[0]``)."""
        return self.to_payloads([value])[0]

    def from_payload(self, payload: pb.Payload, type_hint: Any = None) -> Any:
        """Decode one payload (``from_payloads([payload], [type_hint])[0]``)."""
        return self.from_payloads([payload], None if type_hint is None else [type_hint])[0]


class EncodingPayloadConverter(abc.ABC):
    """Converts the values of one encoding (Temporal's ``EncodingPayloadConverter``)."""

    @property
    @abc.abstractmethod
    def encoding(self) -> str:
        """The ``encoding`` metadata this converter writes and reads (e.g. ``"json/plain"``)."""

    @abc.abstractmethod
    def to_payload(self, value: Any) -> pb.Payload | None:
        """A payload for ``value``, or ``None`` when this converter does not handle it (the next one is tried)."""

    @abc.abstractmethod
    def from_payload(self, payload: pb.Payload, type_hint: Any = None) -> Any:
        """The value of ``payload`` (of this converter's encoding), structured into ``type_hint`` when given."""


class CompositePayloadConverter(PayloadConverter):
    """Tries its encoding converters in order to encode; picks one by the payload's ``encoding`` to decode.

    Temporal's ``CompositePayloadConverter(*converters)``: put a custom converter in
    front of the defaults with
    ``CompositePayloadConverter(MyConverter(), *DefaultPayloadConverter.default_encoding_payload_converters)``.
    When two converters share an encoding, the later one decodes it.
    """

    converters: dict[bytes, EncodingPayloadConverter]

    def __init__(self, *converters: EncodingPayloadConverter) -> None:
        for c in converters:
            if not isinstance(c, EncodingPayloadConverter):
                raise TypeError(f"CompositePayloadConverter takes EncodingPayloadConverters, got {type(c).__name__}")
        self._ordered = tuple(converters)
        self.converters = {c.encoding.encode(): c for c in converters}

    def to_payloads(self, values: Sequence[Any]) -> list[pb.Payload]:
        out = []
        for index, value in enumerate(values):
            for c in self._ordered:
                payload = c.to_payload(value)
                if payload is not None:
                    out.append(payload)
                    break
            else:
                raise RuntimeError(f"Value at index {index} of type {type(value).__name__} has no known converter")
        return out

    def from_payloads(self, payloads: Sequence[pb.Payload], type_hints: list[Any] | None = None) -> list[Any]:
        out = []
        for index, payload in enumerate(payloads):
            encoding = payload.metadata.get("encoding", b"<unknown>")
            c = self.converters.get(encoding)
            if c is None:
                raise KeyError(f"Unknown payload encoding {encoding.decode(errors='replace')}")
            hint = type_hints[index] if type_hints and index < len(type_hints) else None
            try:
                out.append(c.from_payload(payload, hint))
            except RuntimeError:
                raise
            except Exception as e:
                raise RuntimeError(
                    f"Payload at index {index} with encoding {encoding.decode(errors='replace')} could not be converted"
                ) from e
        return out


class DefaultPayloadConverter(CompositePayloadConverter):
    """The default composite: null, bytes, protobuf JSON, protobuf binary, JSON (Temporal's order and encodings).

    Its ``json/plain`` converter is Spindle's (cattrs), so it writes the bytes
    :class:`~spindle.converter.DataConverter` always wrote.
    """

    #: The converters a default instance holds, in order (set by the encoding-converters module).
    default_encoding_payload_converters: ClassVar[tuple[EncodingPayloadConverter, ...]] = ()

    def __init__(self) -> None:
        super().__init__(*DefaultPayloadConverter.default_encoding_payload_converters)
