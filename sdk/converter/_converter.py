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
workflow code. A codec that also implements :class:`WithSerializationContext` is
told, for each payload, which namespace and workflow it belongs to and its role
(:class:`WorkflowSerializationContext`); plain codecs are called as before.
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

from collections.abc import Mapping, Sequence
from concurrent.futures.process import _RemoteTraceback
from typing import Any, ClassVar

import cattrs

from cattrs.preconf.json import make_converter

from spindle.api import messages_pb2 as pb
from spindle import exceptions as exc_mod

__all__ = [
    "DataConverter",
    "PayloadCodec",
    "ZlibCodec",
    "EncryptionCodec",
    "SerializationContext",
    "WorkflowSerializationContext",
    "WithSerializationContext",
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


# ---------------------------------------------------------------------- serialization context


class SerializationContext:
    """What a payload belongs to, given to codecs that ask for it (Temporal's base class)."""

    __slots__ = ()


@dataclasses.dataclass(frozen=True)
class WorkflowSerializationContext(SerializationContext):
    """The workflow a payload belongs to and what it is (Temporal's class, plus ``field``).

    ``workflow_id`` is the workflow of which the payload is an input or output: for a
    child workflow's input and result, or a signal sent to another workflow, that is the
    child's or the signalled workflow's id. ``field`` is the payload's role, the same at
    every hop (``"workflow.input"``, ``"signal.input"``, ``"activity.result"``,
    ``"failure"``, ``"memo.<key>"``, ... : see :mod:`spindle.converter._payload_visitor`). Either may be
    empty when the sender does not know it (an activity completed by task token: use
    ``AsyncActivityHandle.with_context``).
    """

    namespace: str
    workflow_id: str
    field: str = ""

    def describe(self) -> str:
        """``'signal.input of workflow "order-1" in namespace "default"'``, for error messages."""
        what = self.field or "a payload"
        return f"{what} of workflow {self.workflow_id!r} in namespace {self.namespace!r}"


class WithSerializationContext:
    """A codec that wants each payload's context implements :meth:`with_context` (Temporal's interface).

    The client and worker call ``codec.with_context(ctx).encode(payloads)`` (and
    ``decode``) once per distinct context in a message, instead of one call for all.
    """

    def with_context(self, context: SerializationContext) -> Any:
        """A copy of this object that uses ``context`` (the default returns ``self``)."""
        return self


# ---------------------------------------------------------------------- codecs


class PayloadCodec(abc.ABC):
    """An asynchronous transformation of payloads (compression, encryption).

    ``encode`` runs on the way to the server and ``decode`` on the way back; a
    chain of codecs encodes in order and decodes in reverse order. ``decode`` must
    pass through, unchanged, payloads it did not encode (check the ``encoding``
    metadata), because histories may hold payloads written before the codec was
    added. Codecs run in the client and worker, never inside workflow code, so
    they may do I/O. Errors: raise ``ValueError`` saying what is wrong with which
    payload; the worker fails the workflow task with it (the task is retried).

    Set ``encode_common_attributes = True`` on a codec that protects secrets: failure
    messages and stack traces then travel inside an encoded payload too (see
    :mod:`spindle.converter._payload_visitor`).
    """

    #: Whether failure messages and stack traces must be encoded along with the payloads.
    encode_common_attributes: ClassVar[bool] = False

    @abc.abstractmethod
    async def encode(self, payloads: Sequence[pb.Payload]) -> list[pb.Payload]:
        """Return one encoded payload per input payload, in order."""

    @abc.abstractmethod
    async def decode(self, payloads: Sequence[pb.Payload]) -> list[pb.Payload]:
        """Return one decoded payload per input payload, in order."""


#: ZlibCodec's default limit on a decompressed payload: the largest payload a request may carry.
DEFAULT_MAX_DECOMPRESSED_SIZE = 64 * 1024 * 1024
_INFLATE_CHUNK = 1024 * 1024


class ZlibCodec(PayloadCodec):
    """Compresses payloads whose serialised size is at least ``min_size`` bytes.

    The whole original payload (metadata included) is compressed, under encoding
    ``binary/zlib``; smaller payloads pass through unchanged. Decompression stops at
    ``max_decompressed_size`` bytes (64 MiB by default, the most a request may carry):
    a payload that inflates beyond it (a decompression bomb) is refused with a
    ``ValueError`` instead of exhausting the worker's memory.

    Raises:
        ValueError: ``level`` is not 0-9, or ``max_decompressed_size`` is not positive.
    """

    def __init__(self, *, level: int = 6, min_size: int = 64,
                 max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> None:
        if not 0 <= level <= 9:
            raise ValueError(f"ZlibCodec level must be 0-9, got {level}")
        if max_decompressed_size <= 0:
            raise ValueError(f"ZlibCodec max_decompressed_size must be positive, got {max_decompressed_size}")
        self.level = level
        self.min_size = min_size
        self.max_decompressed_size = max_decompressed_size

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
            out.append(pb.Payload.FromString(self._inflate(p.data)))
        return out

    def _inflate(self, data: bytes) -> bytes:
        """Decompress ``data``, holding at most ``max_decompressed_size`` bytes (plus one chunk) at any time."""
        limit = self.max_decompressed_size
        inflater = zlib.decompressobj()
        chunks: list[bytes] = []
        size = 0
        pending = data
        try:
            while pending and not inflater.eof:
                chunk = inflater.decompress(pending, _INFLATE_CHUNK)
                size += len(chunk)
                if size > limit:
                    raise ValueError(
                        f"binary/zlib payload of {len(data)} bytes inflates beyond max_decompressed_size "
                        f"({limit} bytes): refused (a decompression bomb?); raise "
                        "ZlibCodec(max_decompressed_size=...) if values this large are expected")
                chunks.append(chunk)
                pending = inflater.unconsumed_tail
                if not chunk and not pending:
                    break
            tail = inflater.flush() if not inflater.eof else b""
        except zlib.error as e:
            raise ValueError(f"corrupt binary/zlib payload: {e}") from e
        if tail:
            size += len(tail)
            if size > limit:
                raise ValueError(f"binary/zlib payload of {len(data)} bytes inflates beyond max_decompressed_size "
                                 f"({limit} bytes): refused")
            chunks.append(tail)
        if not inflater.eof:
            raise ValueError("corrupt binary/zlib payload: the compressed stream is truncated")
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)


_AAD_MARKER = b"spindle/v1"


class EncryptionCodec(PayloadCodec, WithSerializationContext):
    """Encrypts payloads with AES-256-GCM (needs the optional ``cryptography`` package).

    Keys: ``key`` is the current 32-byte key, stored under ``key_id`` in each payload's
    metadata. For rotation, pass the keys still needed to decrypt older payloads in
    ``previous_keys`` (``{key_id: key}``), or give every key in ``keys`` and name the
    current one with ``key_id``: payloads are encrypted with the current key and
    decrypted with whichever key their id names.

    Binding (``bind_context=True``, the default): inside a client or worker, each
    ciphertext is bound (AES-GCM associated data) to its namespace, workflow id and role
    (:class:`WorkflowSerializationContext`), so a ciphertext copied into another
    workflow, namespace or field fails to decrypt. A payload whose workflow is unknown
    at encoding (an activity completed by task token without
    ``AsyncActivityHandle.with_context``) is refused. Payloads encrypted before binding
    existed (no ``encryption-aad`` metadata) still decrypt, unless ``strict``.

    ``strict=True`` refuses, on decode, any payload that is not encrypted (or, with
    binding, not bound): a plaintext signal or start input from someone without the key
    fails the workflow task with a clear error instead of reaching workflow code.

    Failure messages and stack traces are encrypted too (``encode_common_attributes``).

    Raises:
        ImportError: ``cryptography`` is not installed
            (``pip install 'spindle[encryption]'`` or ``pip install cryptography``).
        ValueError: a key is not 32 bytes, no key is given, or ``key_id`` is not among ``keys``.
    """

    encode_common_attributes: ClassVar[bool] = True

    def __init__(self, key: bytes | None = None, *, key_id: str = "default",
                 previous_keys: Mapping[str, bytes] | None = None, keys: Mapping[str, bytes] | None = None,
                 strict: bool = False, bind_context: bool = True) -> None:
        try:
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM
        except ImportError as e:  # optional extra
            raise ImportError(
                "EncryptionCodec needs the 'cryptography' package: pip install 'spindle[encryption]'"
            ) from e
        all_keys: dict[str, bytes] = dict(keys or {})
        if key is not None:
            all_keys[key_id] = key
        all_keys.update({k: v for k, v in (previous_keys or {}).items() if k not in all_keys})
        if not all_keys:
            raise ValueError("EncryptionCodec needs a key (key=...) or keys={key_id: key, ...}")
        if key_id not in all_keys:
            raise ValueError(f"EncryptionCodec key_id {key_id!r} is not among the keys given ({sorted(all_keys)})")
        for kid, k in all_keys.items():
            if not isinstance(k, (bytes, bytearray)) or len(k) != 32:
                size = len(k) if isinstance(k, (bytes, bytearray)) else type(k).__name__
                raise ValueError(f"encryption key {kid!r} must be 32 bytes, got {size}")
        self.key_id = key_id
        self.strict = strict
        self.bind_context = bind_context
        self._ciphers = {kid: AESGCM(bytes(k)) for kid, k in all_keys.items()}
        self._context: WorkflowSerializationContext | None = None

    def with_context(self, context: SerializationContext) -> EncryptionCodec:
        """This codec bound to ``context`` (called by the client and worker for each payload's context)."""
        if not isinstance(context, WorkflowSerializationContext) or not self.bind_context:
            return self
        bound = object.__new__(EncryptionCodec)
        bound.__dict__.update(self.__dict__)
        bound._context = context
        return bound

    @property
    def key_ids(self) -> list[str]:
        """Every key id this codec can decrypt, current first."""
        return [self.key_id, *sorted(k for k in self._ciphers if k != self.key_id)]

    def _where(self) -> str:
        return f" ({self._context.describe()})" if self._context is not None else ""

    def _aad(self) -> bytes | None:
        ctx = self._context
        if ctx is None:
            return None
        return json.dumps([ctx.namespace, ctx.workflow_id, ctx.field]).encode()

    async def encode(self, payloads: Sequence[pb.Payload]) -> list[pb.Payload]:
        cipher = self._ciphers[self.key_id]
        aad = self._aad()
        ctx = self._context
        if aad is not None and ctx is not None and not ctx.workflow_id:
            raise ValueError(
                f"EncryptionCodec binds each payload to its workflow, but the workflow of this "
                f"{ctx.field or 'payload'} is not known here: complete an activity by task token "
                "through client.get_async_activity_handle(token).with_context(WorkflowSerializationContext("
                "namespace, workflow_id)), or use EncryptionCodec(bind_context=False)")
        metadata: dict[str, bytes] = {"encoding": ENCODING_ENCRYPTED, "encryption-key-id": self.key_id.encode()}
        if aad is not None:
            metadata["encryption-aad"] = _AAD_MARKER
        out: list[pb.Payload] = []
        for p in payloads:
            nonce = os.urandom(12)
            data = nonce + cipher.encrypt(nonce, p.SerializeToString(), aad)
            out.append(pb.Payload(metadata=metadata, data=data))
        return out

    async def decode(self, payloads: Sequence[pb.Payload]) -> list[pb.Payload]:
        out: list[pb.Payload] = []
        for p in payloads:
            encoding = p.metadata.get("encoding", b"")
            if encoding != ENCODING_ENCRYPTED:
                if self.strict:
                    raise ValueError(
                        f"EncryptionCodec(strict=True) refuses an unencrypted payload (encoding "
                        f"{encoding.decode(errors='replace') or 'none'!r}){self._where()}: it was not written by a "
                        "holder of the key")
                out.append(p)
                continue
            kid = p.metadata.get("encryption-key-id", b"").decode(errors="replace")
            cipher = self._ciphers.get(kid)
            if cipher is None:
                raise ValueError(f"payload{self._where()} is encrypted with unknown key id {kid!r} "
                                 f"(this codec knows {self.key_ids})")
            marker = p.metadata.get("encryption-aad")
            aad: bytes | None = None
            if marker is not None:
                if marker != _AAD_MARKER:
                    raise ValueError(f"payload{self._where()} is bound with an unknown scheme {marker!r}")
                aad = self._aad()
                if aad is None:
                    raise ValueError("payload is bound to its workflow and role: decode it through a Client or "
                                     "Worker, or with codec.with_context(WorkflowSerializationContext(...))")
            elif self.strict and self.bind_context and self._context is not None:
                raise ValueError(f"EncryptionCodec(strict=True) refuses a payload{self._where()} that is not bound "
                                 "to its workflow (encrypted without context)")
            if len(p.data) < 12 + 16:
                raise ValueError(f"encrypted payload{self._where()} is too short ({len(p.data)} bytes)")
            try:
                plain = cipher.decrypt(p.data[:12], p.data[12:], aad)
            except Exception as e:
                hint = (": it was encrypted for another workflow, namespace or field, or it was altered"
                        if aad is not None else ": it was altered or the key is wrong")
                raise ValueError(f"cannot decrypt payload{self._where()} with key id {kid!r}{hint} "
                                 f"({type(e).__name__})") from e
            out.append(pb.Payload.FromString(plain))
        return out


async def _run_codec(codec: PayloadCodec, payloads: list[pb.Payload],
                     contexts: Sequence[SerializationContext] | None, encode: bool) -> list[pb.Payload]:
    """One codec over ``payloads``: one call, or one call per distinct context for a context-aware codec."""
    if contexts is None or not isinstance(codec, WithSerializationContext):
        out = await (codec.encode(payloads) if encode else codec.decode(payloads))
        result = list(out)
        if len(result) != len(payloads):
            what = "encode" if encode else "decode"
            raise ValueError(f"{type(codec).__name__}.{what} returned {len(result)} payloads for {len(payloads)}")
        return result
    groups: dict[SerializationContext, list[int]] = {}
    for i, ctx in enumerate(contexts):
        groups.setdefault(ctx, []).append(i)
    merged: list[pb.Payload | None] = [None] * len(payloads)
    for ctx, indexes in groups.items():
        bound = codec.with_context(ctx)
        part = [payloads[i] for i in indexes]
        got = list(await (bound.encode(part) if encode else bound.decode(part)))
        if len(got) != len(part):
            what = "encode" if encode else "decode"
            raise ValueError(f"{type(codec).__name__}.{what} returned {len(got)} payloads for {len(part)}")
        for i, p in zip(indexes, got):
            merged[i] = p
    return merged  # type: ignore[return-value]


async def encode_payloads(codecs: Sequence[PayloadCodec], payloads: Sequence[pb.Payload],
                          contexts: Sequence[SerializationContext] | None = None) -> list[pb.Payload]:
    """Run ``payloads`` through each codec's ``encode``, first to last.

    ``contexts`` (one per payload) is given to codecs that implement
    :class:`WithSerializationContext`; other codecs see one batch.
    """
    out = list(payloads)
    for codec in codecs:
        out = await _run_codec(codec, out, contexts, True)
    return out


async def decode_payloads(codecs: Sequence[PayloadCodec], payloads: Sequence[pb.Payload],
                          contexts: Sequence[SerializationContext] | None = None) -> list[pb.Payload]:
    """Run ``payloads`` through each codec's ``decode``, last to first (``contexts`` as in :func:`encode_payloads`)."""
    out = list(payloads)
    for codec in reversed(codecs):
        out = await _run_codec(codec, out, contexts, False)
    return out
