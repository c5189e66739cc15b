"""What the frontend does to a request's payloads and failures before anything is written.

Order, for every request that carries payloads (issue 16):

1. ``refuse_blob_refs``: a payload with encoding ``spindle/blob-ref`` is made by the
   server only (large-payload offloading); one arriving from a caller is refused with
   INVALID_ARGUMENT naming the field, anywhere in the request (memo, header and search
   attributes included). Otherwise a hand-made reference would be stored as the
   server's own and make the history unreadable, or point at another namespace's blob.
2. ``cap_failure_depth``: a ``Failure`` whose ``cause`` chain is deeper than
   ``MAX_FAILURE_DEPTH`` is truncated (a copy of the request; the caller's message is
   untouched): the first ``MAX_FAILURE_DEPTH - 1`` failures are kept and the last one
   says how many causes were dropped. Protobuf refuses to parse messages nested more
   than 100 deep; a failure that fits in a request could otherwise be stored and then
   no longer fit in a history page or a workflow task (every read fails, the workflow
   is stuck). Truncating rather than refusing keeps the run going and the useful top
   of the chain visible.
3. ``PayloadIntake.prepare``: large payloads are replaced by references, nothing is
   written yet; the handler then runs its remaining checks on the prepared request.
4. ``async with intake.offloaded(prepared)``: the blobs are written, the handler calls
   the engine inside the block; when it leaves, the blobs no run refers to (a refused
   request, a deduplicated signal, an existing run returned by a start) are deleted.
   After an outcome the server cannot be sure of (the deadline passed, the caller went
   away, the store was unavailable: the write may still land, e.g. an update accepted
   later) the blobs are kept.
"""

from __future__ import annotations

import asyncio

from typing import TypeVar

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from spindle.api import messages_pb2 as pb
from spindle.controlplane.archival import BLOB_REF_ENCODING, PayloadOffloader, PreparedIntake
from spindle.controlplane.errors import (
    AlreadyExists,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    ResourceExhausted,
)
from spindle.controlplane.store import Store

__all__ = ["MAX_FAILURE_DEPTH", "PayloadIntake", "cap_failure_depth", "refuse_blob_refs"]

M = TypeVar("M", bound=Message)

#: Longest ``Failure.cause`` chain kept (the last kept failure marks the truncation).
MAX_FAILURE_DEPTH = 32

_PAYLOAD = pb.Payload.DESCRIPTOR.full_name
_FAILURE = pb.Failure.DESCRIPTOR.full_name
#: Errors after which the engine certainly wrote nothing the request carried (its blobs may go).
_REFUSALS = (InvalidArgument, NotFound, AlreadyExists, FailedPrecondition, ResourceExhausted, PermissionDenied)


# ---------------------------------------------------------------------------------------------- blob refs
def refuse_blob_refs(request: Message) -> None:
    """Raise InvalidArgument if any payload of ``request`` is a blob reference (only the server makes them).

    A byte search first: a request without the encoding name anywhere costs one serialization.
    """
    if BLOB_REF_ENCODING not in request.SerializeToString():
        return
    path = _find_ref(request, "")
    if path is not None:
        raise InvalidArgument(f"{path}: a payload with encoding {BLOB_REF_ENCODING.decode()!r} is a large-payload "
                              "reference that only the server makes; send the value itself")


def _find_ref(msg: Message, path: str) -> str | None:
    if msg.DESCRIPTOR.full_name == _PAYLOAD:
        return path or "payload" if msg.metadata.get("encoding") == BLOB_REF_ENCODING else None
    for fd, value in msg.ListFields():
        if fd.message_type is None:
            continue
        name = f"{path}.{fd.name}" if path else fd.name
        if fd.message_type.GetOptions().map_entry:
            if fd.message_type.fields_by_name["value"].message_type is None:
                continue
            for k, v in value.items():
                found = _find_ref(v, f"{name}[{k!r}]")
                if found:
                    return found
        elif fd.is_repeated:
            for i, v in enumerate(value):
                found = _find_ref(v, f"{name}[{i}]")
                if found:
                    return found
        else:
            found = _find_ref(value, name)
            if found:
                return found
    return None


# ---------------------------------------------------------------------------------------------- failures
_REACHES_FAILURE: dict[str, tuple[FieldDescriptor, ...]] = {}


def _failure_fields(d: Descriptor) -> tuple[FieldDescriptor, ...]:
    """The message fields of ``d`` through which a Failure can be reached (cached per type)."""
    got = _REACHES_FAILURE.get(d.full_name)
    if got is None:
        _REACHES_FAILURE[d.full_name] = ()  # recursion guard (Failure.cause)
        fields = []
        for fd in d.fields:
            mt = _held_message_type(fd)
            if mt is not None and (mt.full_name == _FAILURE or _reaches(mt)):
                fields.append(fd)
        got = _REACHES_FAILURE[d.full_name] = tuple(fields)
    return got


def _reaches(d: Descriptor, seen: frozenset[str] = frozenset()) -> bool:
    if d.full_name == _FAILURE:
        return True
    if d.full_name in seen:
        return False
    seen = seen | {d.full_name}
    return any(mt is not None and _reaches(mt, seen) for mt in map(_held_message_type, d.fields))


def _held_message_type(fd: FieldDescriptor) -> Descriptor | None:
    """The message type a field holds (a map's value type for a map field); None for scalars."""
    mt = fd.message_type
    if mt is not None and mt.GetOptions().map_entry:
        mt = mt.fields_by_name["value"].message_type
    return mt


def _top_failures(msg: Message) -> list[pb.Failure]:
    """The outermost Failure messages inside ``msg`` (live sub-messages)."""
    if msg.DESCRIPTOR.full_name == _FAILURE:
        return [msg]
    out: list[pb.Failure] = []
    fields = _failure_fields(msg.DESCRIPTOR)
    if not fields:
        return out
    for fd in fields:
        if fd.message_type.GetOptions().map_entry:
            for v in getattr(msg, fd.name).values():
                out.extend(_top_failures(v))
        elif fd.is_repeated:
            for v in getattr(msg, fd.name):
                out.extend(_top_failures(v))
        elif msg.HasField(fd.name):
            out.extend(_top_failures(getattr(msg, fd.name)))
    return out


def _too_deep(f: pb.Failure) -> bool:
    depth = 1
    while f.HasField("cause"):
        depth += 1
        if depth > MAX_FAILURE_DEPTH:
            return True
        f = f.cause
    return False


def cap_failure_depth(request: M) -> M:
    """``request``, or a copy whose ``Failure.cause`` chains are cut to ``MAX_FAILURE_DEPTH`` failures.

    The last failure kept replaces the rest of the chain and says how many causes were dropped;
    the first ``MAX_FAILURE_DEPTH - 1`` failures are kept unchanged.
    """
    if not any(_too_deep(f) for f in _top_failures(request)):
        return request
    copy = type(request)()
    copy.CopyFrom(request)
    for f in _top_failures(copy):
        _truncate(f)
    return copy


def _truncate(f: pb.Failure) -> None:
    for _ in range(MAX_FAILURE_DEPTH - 2):
        if not f.HasField("cause"):
            return
        f = f.cause
    if not f.HasField("cause"):
        return
    rest, dropped = f.cause, 0
    while True:
        dropped += 1
        if not rest.HasField("cause"):
            break
        rest = rest.cause
    f.cause.CopyFrom(pb.Failure(
        message=f"{dropped} more cause(s) dropped by the server: a failure's cause chain is limited to "
                f"{MAX_FAILURE_DEPTH} failures",
        source="server",
        application_failure_info=pb.ApplicationFailureInfo(type="CauseChainTruncated", non_retryable=True)))


# ---------------------------------------------------------------------------------------------- offloading
class PayloadIntake:
    """The frontend's payload intake: refusal of client-made references, failure depth, offloading, cleanup.

    Args:
        offloader: the archival service's payload offloader (a no-op without a blob store).
        store: tells which blobs runs refer to (``Store.blob_is_referenced``).
    """

    def __init__(self, offloader: PayloadOffloader, store: Store) -> None:
        self.offloader = offloader
        self.store = store

    async def prepare(self, request: M, field: str, namespace_id: str, *, offload: bool = True,
                      refs_checked: bool = False) -> PreparedIntake:
        """Checks 1 and 2 of the module docstring, then large payloads replaced by references (not written).

        ``offload=False`` (payloads the server never stores: query arguments and answers)
        leaves payloads inline; ``refs_checked``: the caller already ran ``refuse_blob_refs``.

        Raises:
            InvalidArgument: a blob reference in the request.
            ResourceExhausted: more large payloads than ``max_offloaded_payload_bytes``.
        """
        if not refs_checked:
            refuse_blob_refs(request)
        request = cap_failure_depth(request)
        if not offload:
            return PreparedIntake(request, namespace_id)
        return await self.offloader.prepare(request, field, namespace_id)

    def offloaded(self, prepared: PreparedIntake) -> "_Offloaded":
        """An async context: writes the prepared blobs on entry; on leaving, deletes those no run refers to
        (see the module docstring). Without blobs it does nothing.

        Raises (on entry):
            Unavailable: the blob store could not be written (nothing was changed).
        """
        return _Offloaded(self, prepared)

    async def _collect(self, prepared: PreparedIntake) -> None:
        blobs = self.offloader.blobs
        if blobs is None:
            return
        try:
            await asyncio.shield(blobs.delete_unreferenced(prepared.keys, prepared.namespace_id,
                                                           self.store.blob_is_referenced))
        except Exception:  # noqa: BLE001 - cleanup is best effort; the request's outcome stands
            pass


class _Offloaded:
    """``PayloadIntake.offloaded``: a plain class, not a generator context (it runs on every worker answer)."""

    __slots__ = ("_intake", "_prepared")

    def __init__(self, intake: PayloadIntake, prepared: PreparedIntake) -> None:
        self._intake = intake
        self._prepared = prepared

    async def __aenter__(self) -> None:
        if self._prepared.blobs:
            await self._intake.offloader.write(self._prepared)

    async def __aexit__(self, et: object, e: object, tb: object) -> bool:
        if self._prepared.blobs and (et is None or isinstance(e, _REFUSALS)):
            await self._intake._collect(self._prepared)  # an uncertain outcome keeps the blobs
        return False
