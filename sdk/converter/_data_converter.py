"""Data conversion: user values <-> ``Payload``, exceptions <-> ``Failure`` (by ``_failure_converter``).

A :class:`DataConverter` turns Python values into ``spindle.v1.Payload`` messages
(JSON through cattrs, so dataclasses, attrs classes, enums, datetimes and typed
containers round-trip by type hint) and exceptions into ``spindle.v1.Failure``
chains. It is synchronous and pure, so the deterministic workflow runtime can call
it. The asynchronous steps on the wire (compression, encryption) are payload codecs
(:mod:`spindle.converter._payload_codec`), which the client and worker apply.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import types

from collections.abc import Sequence
from typing import Any, ClassVar

import cattrs

from spindle.api import messages_pb2 as pb
from spindle.common._raw_value import RawValue
from spindle.converter import (
    _encoding_converters,  # noqa: F401  # fills DefaultPayloadConverter.default_encoding_payload_converters
    _failure_converter,
)
from spindle.converter._cattrs_hooks import compact_json_dumps, make_cattrs_converter
from spindle.converter._encodings import (
    ENCODING_BINARY,
    ENCODING_ENCRYPTED,
    ENCODING_JSON,
    ENCODING_NULL,
    ENCODING_ZLIB,
)
from spindle.converter._payload_codec import PayloadCodec
from spindle.converter._payload_converter import DefaultPayloadConverter, PayloadConverter

__all__ = ["DataConverter"]

_PRIMITIVES: frozenset[type] = frozenset({str, int, float, bool})
_NO_HINT: tuple[Any, ...] = (None, Any, object)


def _type_name(value: Any) -> str:
    t = type(value)
    return t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


@dataclasses.dataclass(frozen=True)
class DataConverter:
    """Converts values to and from payloads, and exceptions to and from failures.

    Encoding: ``None`` is ``binary/null``, ``bytes`` is ``binary/plain``, everything
    else is JSON (``json/plain``) after cattrs unstructuring. Decoding with a type
    hint structures the JSON into that type (dataclasses, attrs classes, enums,
    ``datetime`` (ISO 8601), ``date``, ``Decimal``, ``UUID``, ``timedelta``,
    ``list[X]``, ``dict[str, X]``, tuples, ``Optional`` and unions cattrs can
    disambiguate); without a hint, plain JSON values come back.

    Customise by passing your own cattrs converter (e.g. one with extra hooks)::

        conv = DataConverter.default.cattrs.copy()
        conv.register_structure_hook(Money, ...)
        client = await Client.connect(..., data_converter=DataConverter(cattrs_converter=conv))

    ``payload_codec`` is Temporal's way to add a codec: a client connected with
    ``data_converter=dataclasses.replace(converter.default(), payload_codec=MyCodec())``
    (and its workers) run every payload through it, after the client's ``codecs``.
    The converter itself never calls the codec (conversion stays synchronous and
    pure, so the deterministic workflow runtime can use it).

    Instances are immutable (a frozen dataclass: derive variants with
    ``dataclasses.replace``) and safe to share between threads.
    """

    #: The cattrs converter that (un)structures values; ``None`` makes a default one.
    cattrs_converter: cattrs.Converter | None = None
    #: A codec the client and worker apply to every payload (Temporal's ``DataConverter.payload_codec``).
    payload_codec: PayloadCodec | None = None
    #: The payload converter to build (Temporal's field). The default keeps Spindle's
    #: built-in path above; any other class converts every value and payload.
    payload_converter_class: type[PayloadConverter] = DefaultPayloadConverter
    #: The instance of ``payload_converter_class`` this converter holds.
    payload_converter: PayloadConverter = dataclasses.field(init=False, repr=False, compare=False)

    default: ClassVar[DataConverter]

    def __post_init__(self) -> None:
        if self.cattrs_converter is None:
            # keep the one we make in the field, so dataclasses.replace() shares it
            object.__setattr__(self, "cattrs_converter", make_cattrs_converter())
        if self.payload_codec is not None and not isinstance(self.payload_codec, PayloadCodec):
            raise TypeError(f"DataConverter.payload_codec must be a PayloadCodec, got {type(self.payload_codec).__name__}")
        object.__setattr__(self, "_cattrs", self.cattrs_converter)
        object.__setattr__(self, "_dumps", compact_json_dumps())
        object.__setattr__(self, "_null_metadata", {"encoding": ENCODING_NULL})
        if not (isinstance(self.payload_converter_class, type) and issubclass(self.payload_converter_class,
                                                                               PayloadConverter)):
            raise TypeError("DataConverter.payload_converter_class must be a PayloadConverter subclass, "
                            f"got {self.payload_converter_class!r}")
        object.__setattr__(self, "payload_converter", self.payload_converter_class())
        if self.payload_converter_class is not DefaultPayloadConverter:
            # a custom converter replaces the built-in path on this instance only: the default path
            # stays as it is (no extra check per value)
            object.__setattr__(self, "to_payload", self._custom_to_payload)
            object.__setattr__(self, "from_payload", self._custom_from_payload)

    @property
    def cattrs(self) -> cattrs.Converter:
        """The cattrs converter in use (``cattrs_converter``, or the default one made for this instance)."""
        conv: cattrs.Converter = self._cattrs  # type: ignore[attr-defined]  # set in __post_init__
        return conv

    # ------------------------------------------------------------------ payloads

    def to_payload(self, value: Any) -> pb.Payload:
        """Encode one value.

        Raises:
            TypeError: the value (or a value nested in it) cannot be represented as
                JSON; the message names its type.
        """
        if value is None:
            return pb.Payload(metadata=self._null_metadata)  # type: ignore[attr-defined]  # set with object.__setattr__ in __init__ (the converter is frozen)
        t = type(value)
        if t is bytes:
            return pb.Payload(metadata={"encoding": ENCODING_BINARY}, data=value)
        if t in _PRIMITIVES:
            obj = value
        elif t is RawValue:  # passed through as it is
            raw: RawValue = value
            return raw.payload
        else:
            try:
                obj = self._cattrs.unstructure(value)  # type: ignore[attr-defined]
            except Exception as e:  # cattrs raises many kinds; report them uniformly
                raise TypeError(f"cannot convert a value of type {_type_name(value)} to a payload: {e}") from e
        try:
            data = self._dumps(obj)  # type: ignore[attr-defined]  # set with object.__setattr__ in __init__ (the converter is frozen)
        except (TypeError, ValueError) as e:
            raise TypeError(f"cannot convert a value of type {_type_name(value)} to a payload: {e}") from e
        return pb.Payload(metadata={"encoding": ENCODING_JSON}, data=data.encode())

    def to_payloads(self, values: Sequence[Any]) -> pb.Payloads:
        """Encode several values (e.g. the positional arguments of a call), in order.

        Raises:
            TypeError: a value cannot be converted (see :meth:`to_payload`).
        """
        return pb.Payloads(payloads=[self.to_payload(v) for v in values])

    def from_payload(self, payload: pb.Payload, type_hint: Any = None) -> Any:
        """Decode one payload, structuring it into ``type_hint`` when given.

        Raises:
            ValueError: the payload's encoding is unknown (for example it is still
                encoded by a codec the caller did not configure), its data is not
                valid, or it does not fit ``type_hint``.
        """
        if type_hint is RawValue:  # the payload as it arrived
            return RawValue(payload)
        encoding = payload.metadata.get("encoding", b"")
        if encoding == ENCODING_JSON:
            try:
                obj = json.loads(payload.data)
            except ValueError as e:
                raise ValueError(f"payload is not valid JSON: {e}") from e
            if type_hint in _NO_HINT or type_hint is inspect.Parameter.empty:
                return obj
            if type_hint in _PRIMITIVES and type(obj) is type_hint:
                return obj
            try:
                return self._cattrs.structure(obj, type_hint)  # type: ignore[attr-defined]
            except Exception as e:
                detail = "; ".join(cattrs.transform_error(e)) if isinstance(e, cattrs.BaseValidationError) else str(e)
                raise ValueError(f"cannot convert payload to {_hint_name(type_hint)}: {detail}") from e
        if encoding == ENCODING_NULL:
            return None
        if encoding == ENCODING_BINARY:
            return payload.data
        if encoding in (ENCODING_ZLIB, ENCODING_ENCRYPTED):
            raise ValueError(
                f"payload is encoded with {encoding.decode()!r}: configure the matching PayloadCodec "
                "on the client and worker (codecs=[...])"
            )
        raise ValueError(f"unknown payload encoding {encoding!r}")

    def from_payloads(self, payloads: pb.Payloads | None, type_hints: Sequence[Any] | None = None) -> list[Any]:
        """Decode every payload of ``payloads`` (``None`` or empty gives ``[]``).

        The i-th payload is structured into ``type_hints[i]`` when there is one;
        payloads beyond the hints are decoded as plain JSON values.

        Raises:
            ValueError: see :meth:`from_payload`.
        """
        if payloads is None:
            return []
        items = payloads.payloads
        if not type_hints:
            return [self.from_payload(p) for p in items]
        n = len(type_hints)
        return [self.from_payload(p, type_hints[i] if i < n else None) for i, p in enumerate(items)]

    def _custom_to_payload(self, value: Any) -> pb.Payload:
        try:
            return self.payload_converter.to_payloads([value])[0]
        except (RuntimeError, TypeError, ValueError) as e:
            raise TypeError(f"cannot convert a value of type {_type_name(value)} to a payload: {e}") from e

    def _custom_from_payload(self, payload: pb.Payload, type_hint: Any = None) -> Any:
        if type_hint is inspect.Parameter.empty:
            type_hint = None
        try:
            return self.payload_converter.from_payloads([payload], None if type_hint is None else [type_hint])[0]
        except (KeyError, RuntimeError, TypeError, ValueError) as e:
            cause = f" ({e.__cause__})" if e.__cause__ is not None else ""
            raise ValueError(f"cannot convert payload to {_hint_name(type_hint)}: {e}{cause}") from e

    # ------------------------------------------------------------------ failures

    def to_failure(self, exc: BaseException) -> pb.Failure:
        """Convert an exception and its ``cause`` chain to a ``Failure``.

        Spindle errors keep their kind (application, timeout, cancelled, terminated,
        server, activity, child workflow) and fields; ``asyncio.CancelledError``
        becomes a cancelled failure; any other exception becomes an application
        failure whose ``type`` is the exception's class name. The stack trace is
        kept (for an exception raised in a process pool's child, the child's). Details that cannot be converted are replaced by their ``repr`` so
        that reporting a failure never fails.
        """
        return _failure_converter.to_failure(exc, self)

    def from_failure(self, failure: pb.Failure) -> BaseException:
        """Rebuild the exception chain described by ``failure``.

        Returns an :class:`~spindle.exceptions.ApplicationError`,
        :class:`~spindle.exceptions.TimeoutError`, :class:`~spindle.exceptions.CancelledError`,
        :class:`~spindle.exceptions.TerminatedError`, :class:`~spindle.exceptions.ServerError`,
        :class:`~spindle.exceptions.ActivityError` or :class:`~spindle.exceptions.ChildWorkflowError`
        whose ``cause`` is the next failure of the chain. The remote stack trace is
        available as ``exc.stack_trace``. Never raises for a well-formed failure;
        details that cannot be decoded are left as their raw payloads.
        """
        return _failure_converter.from_failure(failure, self)

    # ------------------------------------------------------------------ helpers

    def _safe_decode(self, payloads: pb.Payloads) -> list[Any]:
        """Every payload decoded, or left as the raw ``Payload`` when it cannot be (never raises ``ValueError``)."""
        return _failure_converter.safe_decode(self, payloads)


def _hint_name(hint: Any) -> str:
    if isinstance(hint, type) and not isinstance(hint, types.GenericAlias):
        return hint.__qualname__
    return repr(hint)


DataConverter.default = DataConverter()
