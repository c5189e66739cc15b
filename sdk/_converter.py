"""Data conversion: user values <-> ``Payload`` and exceptions <-> ``Failure``.

A :class:`DataConverter` turns Python values into ``spindle.v1.Payload`` messages
(JSON through cattrs, so dataclasses, attrs classes, enums, datetimes and typed
containers round-trip by type hint) and exceptions into ``spindle.v1.Failure``
chains. It is synchronous and pure, so the deterministic workflow runtime can call
it.

A :class:`PayloadCodec` is an asynchronous bytes-to-bytes step (compression,
encryption) applied by the client and worker to every payload that crosses the
wire; the server only ever stores encoded bytes. Codecs are not part of the
``DataConverter`` because they may do I/O (a key service) and must not run inside
workflow code.
"""

from __future__ import annotations

import abc
import asyncio
import dataclasses
import datetime
import decimal
import inspect
import json
import os
import traceback
import types
import uuid
import zlib

from collections.abc import Sequence
from concurrent.futures.process import _RemoteTraceback
from typing import Any, ClassVar

import cattrs

from cattrs.preconf.json import make_converter

from spindle.controlplane.api import messages_pb2 as pb
from spindle import exceptions as exc_mod

__all__ = [
    "DataConverter",
    "PayloadCodec",
    "ZlibCodec",
    "EncryptionCodec",
    "encode_payloads",
    "decode_payloads",
    "ENCODING_JSON",
    "ENCODING_NULL",
    "ENCODING_BINARY",
]

ENCODING_JSON = b"json/plain"
ENCODING_NULL = b"binary/null"
ENCODING_BINARY = b"binary/plain"
ENCODING_ZLIB = b"binary/zlib"
ENCODING_ENCRYPTED = b"binary/encrypted"

_FAILURE_SOURCE = "spindle-python"
_MAX_CAUSE_DEPTH = 64
_PRIMITIVES: frozenset[type] = frozenset({str, int, float, bool})
_NO_HINT: tuple[Any, ...] = (None, Any, object)


def _make_cattrs_converter() -> cattrs.Converter:
    conv = make_converter()
    conv.register_unstructure_hook(uuid.UUID, str)
    conv.register_structure_hook(uuid.UUID, lambda v, _: v if isinstance(v, uuid.UUID) else uuid.UUID(v))
    conv.register_unstructure_hook(decimal.Decimal, str)
    conv.register_structure_hook(decimal.Decimal, lambda v, _: decimal.Decimal(str(v)))
    conv.register_unstructure_hook(datetime.timedelta, lambda v: v.total_seconds())
    conv.register_structure_hook(datetime.timedelta, lambda v, _: datetime.timedelta(seconds=v))
    return conv


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

    default: ClassVar[DataConverter]

    def __post_init__(self) -> None:
        if self.cattrs_converter is None:
            # keep the one we make in the field, so dataclasses.replace() shares it
            object.__setattr__(self, "cattrs_converter", _make_cattrs_converter())
        if self.payload_codec is not None and not isinstance(self.payload_codec, PayloadCodec):
            raise TypeError(f"DataConverter.payload_codec must be a PayloadCodec, got {type(self.payload_codec).__name__}")
        object.__setattr__(self, "_cattrs", self.cattrs_converter)
        object.__setattr__(self, "_dumps",
                           json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=True).encode)
        object.__setattr__(self, "_null_metadata", {"encoding": ENCODING_NULL})

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
            return pb.Payload(metadata=self._null_metadata)
        t = type(value)
        if t is bytes:
            return pb.Payload(metadata={"encoding": ENCODING_BINARY}, data=value)
        if t in _PRIMITIVES:
            obj = value
        else:
            try:
                obj = self._cattrs.unstructure(value)  # type: ignore[attr-defined]
            except Exception as e:  # cattrs raises many kinds; report them uniformly
                raise TypeError(f"cannot convert a value of type {_type_name(value)} to a payload: {e}") from e
        try:
            data = self._dumps(obj)
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
        root = pb.Failure()
        current: BaseException | None = exc
        target = root
        seen: set[int] = set()
        depth = 0
        while current is not None:
            self._fill_failure(current, target)
            seen.add(id(current))
            depth += 1
            nxt = _cause_of(current)
            if isinstance(nxt, _RemoteTraceback):
                # raised in a process pool's child: its traceback there is the one that matters
                target.stack_trace = str(nxt).strip().strip('"').strip() + "\n"
                break
            if nxt is None or id(nxt) in seen or depth >= _MAX_CAUSE_DEPTH:
                break
            target = target.cause
            current = nxt
        return root

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
        chain: list[pb.Failure] = []
        f: pb.Failure | None = failure
        while f is not None and len(chain) < _MAX_CAUSE_DEPTH:
            chain.append(f)
            f = f.cause if f.HasField("cause") else None
        cause: BaseException | None = None
        for item in reversed(chain):
            cause = self._exception_from(item, cause)
        assert cause is not None
        return cause

    # ------------------------------------------------------------------ helpers

    def _safe_payloads(self, values: Sequence[Any]) -> pb.Payloads:
        try:
            return self.to_payloads(values)
        except (TypeError, ValueError):
            return self.to_payloads([repr(v) for v in values])

    def _safe_decode(self, payloads: pb.Payloads) -> list[Any]:
        out: list[Any] = []
        for p in payloads.payloads:
            try:
                out.append(self.from_payload(p))
            except ValueError:
                out.append(p)
        return out

    def _fill_failure(self, exc: BaseException, f: pb.Failure) -> None:
        E = exc_mod
        f.source = _FAILURE_SOURCE
        remote = getattr(exc, "stack_trace", None)
        if isinstance(remote, str) and remote and exc.__traceback__ is None:
            f.stack_trace = remote
        elif exc.__traceback__ is not None:
            f.stack_trace = "".join(traceback.format_tb(exc.__traceback__))
        if isinstance(exc, E.FailureError):
            f.message = exc.message
        else:
            f.message = str(exc)
        if isinstance(exc, E.ApplicationError):
            info = f.application_failure_info
            info.type = exc.type or ""
            info.non_retryable = exc.non_retryable
            if exc.details:
                info.details.CopyFrom(self._safe_payloads(exc.details))
            delay = exc.next_retry_delay
            if isinstance(delay, datetime.timedelta):
                info.next_retry_delay_ms = int(delay.total_seconds() * 1000)
            elif isinstance(delay, (int, float)) and delay:
                info.next_retry_delay_ms = int(delay * 1000)
            info.category = int(exc.category)  # type: ignore[assignment]
        elif isinstance(exc, E.TimeoutError):
            info_t = f.timeout_failure_info
            info_t.timeout_type = _enum_value(pb.TimeoutType, "TIMEOUT_TYPE_", exc.timeout_type)
            if exc.last_heartbeat_details:
                info_t.last_heartbeat_details.CopyFrom(self._safe_payloads(exc.last_heartbeat_details))
        elif isinstance(exc, E.CancelledError):
            f.canceled_failure_info.SetInParent()
            if exc.details:
                f.canceled_failure_info.details.CopyFrom(self._safe_payloads(exc.details))
        elif isinstance(exc, asyncio.CancelledError):
            f.message = str(exc) or "cancelled"
            f.canceled_failure_info.SetInParent()
        elif isinstance(exc, E.TerminatedError):
            f.terminated_failure_info.reason = exc.reason
        elif isinstance(exc, E.ServerError):
            f.server_failure_info.non_retryable = exc.non_retryable
        elif isinstance(exc, E.ActivityError):
            info_a = f.activity_failure_info
            info_a.scheduled_event_id = exc.scheduled_event_id
            info_a.started_event_id = int(getattr(exc, "started_event_id", 0) or 0)
            info_a.activity_type = exc.activity_type
            info_a.activity_id = exc.activity_id
            info_a.retry_state = _enum_value(pb.RetryState, "RETRY_STATE_", exc.retry_state)
        elif isinstance(exc, E.ChildWorkflowError):
            info_c = f.child_workflow_execution_failure_info
            info_c.namespace = exc.namespace
            info_c.workflow_execution.workflow_id = exc.workflow_id
            info_c.workflow_execution.run_id = exc.run_id
            info_c.workflow_type = exc.workflow_type
            info_c.initiated_event_id = int(getattr(exc, "initiated_event_id", 0) or 0)
            info_c.started_event_id = int(getattr(exc, "started_event_id", 0) or 0)
            info_c.retry_state = _enum_value(pb.RetryState, "RETRY_STATE_", getattr(exc, "retry_state", ""))
        else:
            f.application_failure_info.type = type(exc).__name__

    def _exception_from(self, f: pb.Failure, cause: BaseException | None) -> BaseException:
        E = exc_mod
        kind = f.WhichOneof("failure_info")
        result: BaseException
        if kind == "application_failure_info" or kind is None:
            a = f.application_failure_info
            delay = datetime.timedelta(milliseconds=a.next_retry_delay_ms) if a.next_retry_delay_ms else None
            result = E.ApplicationError(
                f.message,
                *self._safe_decode(a.details),
                type=a.type or None,
                non_retryable=a.non_retryable,
                next_retry_delay=delay,
                cause=cause,
                category=_category(a.category),
            )
        elif kind == "timeout_failure_info":
            t = f.timeout_failure_info
            tname = pb.TimeoutType.Name(t.timeout_type).removeprefix("TIMEOUT_TYPE_") if t.timeout_type else None
            result = E.TimeoutError(
                f.message,
                timeout_type=tname,
                last_heartbeat_details=self._safe_decode(t.last_heartbeat_details),
                cause=cause,
            )
        elif kind == "canceled_failure_info":
            result = E.CancelledError(f.message or "cancelled", *self._safe_decode(f.canceled_failure_info.details),
                                      cause=cause)
        elif kind == "terminated_failure_info":
            result = E.TerminatedError(f.terminated_failure_info.reason, cause=cause)
            if f.message:
                result.message = f.message
                result.args = (f.message,)
        elif kind == "server_failure_info":
            result = E.ServerError(f.message, non_retryable=f.server_failure_info.non_retryable, cause=cause)
        elif kind == "activity_failure_info":
            a2 = f.activity_failure_info
            result = E.ActivityError(
                f.message or "activity failed",
                activity_type=a2.activity_type,
                activity_id=a2.activity_id,
                scheduled_event_id=a2.scheduled_event_id,
                retry_state=_retry_state_name(a2.retry_state),
                cause=cause,
            )
            result.started_event_id = a2.started_event_id  # type: ignore[attr-defined]
        else:  # child_workflow_execution_failure_info
            c = f.child_workflow_execution_failure_info
            result = E.ChildWorkflowError(
                f.message or "child workflow failed",
                namespace=c.namespace,
                workflow_id=c.workflow_execution.workflow_id,
                run_id=c.workflow_execution.run_id,
                workflow_type=c.workflow_type,
                cause=cause,
            )
            result.retry_state = _retry_state_name(c.retry_state)  # type: ignore[attr-defined]
            result.initiated_event_id = c.initiated_event_id  # type: ignore[attr-defined]
            result.started_event_id = c.started_event_id  # type: ignore[attr-defined]
        result.stack_trace = f.stack_trace
        if isinstance(result, E.FailureError):
            own = pb.Failure()
            own.CopyFrom(f)
            result._failure = own
        return result


def _hint_name(hint: Any) -> str:
    if isinstance(hint, type) and not isinstance(hint, types.GenericAlias):
        return hint.__qualname__
    return repr(hint)


def _cause_of(exc: BaseException) -> BaseException | None:
    if isinstance(exc, exc_mod.FailureError):
        return exc.cause
    return exc.__cause__


def _enum_value(enum_type: Any, prefix: str, name: str | None) -> Any:
    """Map ``"HEARTBEAT"`` (or ``"TIMEOUT_TYPE_HEARTBEAT"``) to its proto enum number; unknown -> 0."""
    if not name:
        return 0
    key = name if name.startswith(prefix) else prefix + name
    try:
        return int(enum_type.Value(key))
    except ValueError:
        return 0


def _retry_state_name(value: int) -> str:
    if not value:
        return ""
    try:
        return pb.RetryState.Name(value).removeprefix("RETRY_STATE_")
    except ValueError:
        return ""


def _category(value: int) -> exc_mod.ApplicationErrorCategory:
    """The category a failure carries; one this SDK does not know (a newer sender's) reads as UNSPECIFIED."""
    try:
        return exc_mod.ApplicationErrorCategory(value)
    except ValueError:
        return exc_mod.ApplicationErrorCategory.UNSPECIFIED


DataConverter.default = DataConverter()


# ---------------------------------------------------------------------- codecs


class PayloadCodec(abc.ABC):
    """An asynchronous transformation of payloads (compression, encryption).

    ``encode`` runs on the way to the server and ``decode`` on the way back; a
    chain of codecs encodes in order and decodes in reverse order. ``decode`` must
    pass through, unchanged, payloads it did not encode (check the ``encoding``
    metadata), because histories may hold payloads written before the codec was
    added. Codecs run in the client and worker, never inside workflow code, so
    they may do I/O.
    """

    @abc.abstractmethod
    async def encode(self, payloads: Sequence[pb.Payload]) -> list[pb.Payload]:
        """Return one encoded payload per input payload, in order."""

    @abc.abstractmethod
    async def decode(self, payloads: Sequence[pb.Payload]) -> list[pb.Payload]:
        """Return one decoded payload per input payload, in order."""


class ZlibCodec(PayloadCodec):
    """Compresses payloads whose serialised size is at least ``min_size`` bytes.

    The whole original payload (metadata included) is compressed, under encoding
    ``binary/zlib``; smaller payloads pass through unchanged.
    """

    def __init__(self, *, level: int = 6, min_size: int = 64) -> None:
        self.level = level
        self.min_size = min_size

    async def encode(self, payloads: Sequence[pb.Payload]) -> list[pb.Payload]:
        out: list[pb.Payload] = []
        for p in payloads:
            raw = p.SerializeToString()
            if len(raw) < self.min_size:
                out.append(p)
                continue
            out.append(pb.Payload(metadata={"encoding": ENCODING_ZLIB}, data=zlib.compress(raw, self.level)))
        return out

    async def decode(self, payloads: Sequence[pb.Payload]) -> list[pb.Payload]:
        out: list[pb.Payload] = []
        for p in payloads:
            if p.metadata.get("encoding") != ENCODING_ZLIB:
                out.append(p)
                continue
            try:
                out.append(pb.Payload.FromString(zlib.decompress(p.data)))
            except zlib.error as e:
                raise ValueError(f"corrupt binary/zlib payload: {e}") from e
        return out


class EncryptionCodec(PayloadCodec):
    """Encrypts payloads with AES-256-GCM (needs the optional ``cryptography`` package).

    ``key`` is 32 bytes; ``key_id`` is stored in the payload metadata so that keys
    can be rotated: pass older keys in ``previous_keys`` (``{key_id: key}``) to keep
    decoding payloads written with them.

    Raises:
        ImportError: ``cryptography`` is not installed
            (``pip install 'spindle[encryption]'`` or ``pip install cryptography``).
        ValueError: a key is not 32 bytes.
    """

    def __init__(self, key: bytes, *, key_id: str = "default", previous_keys: dict[str, bytes] | None = None) -> None:
        try:
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM
        except ImportError as e:  # optional extra
            raise ImportError(
                "EncryptionCodec needs the 'cryptography' package: pip install 'spindle[encryption]'"
            ) from e
        keys = {key_id: key, **(previous_keys or {})}
        for kid, k in keys.items():
            if len(k) != 32:
                raise ValueError(f"encryption key {kid!r} must be 32 bytes, got {len(k)}")
        self.key_id = key_id
        self._ciphers = {kid: AESGCM(k) for kid, k in keys.items()}

    async def encode(self, payloads: Sequence[pb.Payload]) -> list[pb.Payload]:
        cipher = self._ciphers[self.key_id]
        out: list[pb.Payload] = []
        for p in payloads:
            nonce = os.urandom(12)
            data = nonce + cipher.encrypt(nonce, p.SerializeToString(), None)
            out.append(
                pb.Payload(
                    metadata={"encoding": ENCODING_ENCRYPTED, "encryption-key-id": self.key_id.encode()}, data=data
                )
            )
        return out

    async def decode(self, payloads: Sequence[pb.Payload]) -> list[pb.Payload]:
        out: list[pb.Payload] = []
        for p in payloads:
            if p.metadata.get("encoding") != ENCODING_ENCRYPTED:
                out.append(p)
                continue
            kid = p.metadata.get("encryption-key-id", b"").decode()
            cipher = self._ciphers.get(kid)
            if cipher is None:
                raise ValueError(f"payload encrypted with unknown key id {kid!r}")
            try:
                plain = cipher.decrypt(p.data[:12], p.data[12:], None)
            except Exception as e:
                raise ValueError(f"cannot decrypt payload with key id {kid!r}: {type(e).__name__}") from e
            out.append(pb.Payload.FromString(plain))
        return out


async def encode_payloads(codecs: Sequence[PayloadCodec], payloads: Sequence[pb.Payload]) -> list[pb.Payload]:
    """Run ``payloads`` through each codec's ``encode``, first to last."""
    out = list(payloads)
    for codec in codecs:
        out = await codec.encode(out)
        if len(out) != len(payloads):
            raise ValueError(f"{type(codec).__name__}.encode returned {len(out)} payloads for {len(payloads)}")
    return out


async def decode_payloads(codecs: Sequence[PayloadCodec], payloads: Sequence[pb.Payload]) -> list[pb.Payload]:
    """Run ``payloads`` through each codec's ``decode``, last to first."""
    out = list(payloads)
    for codec in reversed(codecs):
        out = await codec.decode(out)
        if len(out) != len(payloads):
            raise ValueError(f"{type(codec).__name__}.decode returned {len(out)} payloads for {len(payloads)}")
    return out

