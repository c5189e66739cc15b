"""The blob store for large payloads, and the offloading / expansion of payloads in messages.

A payload larger than ``ServerConfig.large_payload_threshold_bytes`` (256 KiB) that
arrives at the frontend is written to the blob store and replaced, before the
history engine sees the request, by a *reference payload*::

    Payload(metadata={"encoding": b"spindle/blob-ref"},
            data=b'{"key": "blobs/<namespace id>/3f/3f9a....<16 hex>", "sha256": "3f9a...", "size": 10485812}')

Only the server makes references: the frontend refuses any request that carries one
(``controlplane/frontend/_payload_intake.py``). The blob is the original ``Payload``
serialized (metadata included). Its key is scoped by the namespace and unique per
offload (SHA-256 + 64 random bits): a reference never expands in another namespace,
and no two requests share a blob, so a blob can be deleted as soon as no run refers to
it. Runs refer to blobs through ``blob_refs`` rows the committer writes with the events
(``blob_keys_in``); retention deletes a run's rows and then every blob no other run
refers to (runs share a blob when the server copies a payload: a child's input, a
signal to another workflow, continue-as-new). Keys written before issue 16
(``blobs/<2 hex>/<64 hex>``, content-addressed, shared across namespaces) still expand
and are never deleted.

Whenever the frontend returns payloads to a client or a worker (history pages,
workflow and activity tasks, query and update results, describe) it expands
references back into the original payloads, checking size and SHA-256.
"""

from __future__ import annotations

import asyncio
import collections
import hashlib
import json
import re
import secrets

from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field

from google.protobuf.message import Message

from spindle.api import messages_pb2 as pb
from spindle.controlplane.errors import ResourceExhausted, Unavailable

from ._objects import ObjectStore, ObjectStoreError
from ._visitor import iter_payloads

__all__ = ["BLOB_REF_ENCODING", "BlobStore", "BlobError", "PayloadOffloader", "PreparedIntake", "blob_keys_in",
           "is_blob_ref", "ref_expanded_size"]

BLOB_REF_ENCODING = b"spindle/blob-ref"
_LEGACY_KEY_RE = re.compile(r"^blobs/[0-9a-f]{2}/[0-9a-f]{64}$")
_KEY_RE = re.compile(r"^blobs/(?P<ns>[A-Za-z0-9_-]{1,128})/(?P<fan>[0-9a-f]{2})/(?P<sha>[0-9a-f]{64})\.[0-9a-f]{16}$")
#: A (new-style) blob key anywhere in serialized bytes: the committer's reference scan.
_KEY_IN_BYTES = re.compile(rb"blobs/([A-Za-z0-9_-]{1,128})/[0-9a-f]{2}/[0-9a-f]{64}\.[0-9a-f]{16}")
#: Hashing this many bytes or more runs in a thread (the event loop keeps serving).
_HASH_IN_THREAD = 1024 * 1024


class BlobError(Exception):
    """A referenced blob is missing, unreadable or does not match its reference."""


def is_blob_ref(p: pb.Payload) -> bool:
    """Whether ``p`` is a reference to a blob (not a value)."""
    return p.metadata.get("encoding") == BLOB_REF_ENCODING


def blob_keys_in(data: bytes, namespace_id: str) -> list[str]:
    """Keys of ``namespace_id``'s blobs referred to inside serialized bytes (an event, a row), without parsing.

    A byte search for the reference encoding first, so bytes without references cost one scan.
    """
    if BLOB_REF_ENCODING not in data:
        return []
    ns = namespace_id.encode()
    return sorted({m.group(0).decode() for m in _KEY_IN_BYTES.finditer(data) if m.group(1) == ns})


def _parse_ref(ref: pb.Payload) -> tuple[str, str, int]:
    try:
        d = json.loads(ref.data)
        key, digest, size = str(d["key"]), str(d["sha256"]), int(d["size"])
    except (ValueError, KeyError, TypeError) as e:
        raise BlobError(f"malformed blob reference {ref.data[:200]!r}") from e
    return key, digest, size


def ref_expanded_size(ref: pb.Payload) -> int:
    """Bytes the payload ``ref`` stands for once expanded (its own size for a malformed reference)."""
    try:
        return _parse_ref(ref)[2]
    except BlobError:
        return ref.ByteSize()


class BlobStore:
    """Payload blobs on an ObjectStore, scoped by namespace, with a small read cache.

    Args:
        objects: where blobs live (``file://`` directory or ``gs://`` bucket).
        cache_bytes: bytes of recently read blobs kept in memory (workflow tasks
            resend the whole history to a worker without a cached instance).
    """

    def __init__(self, objects: ObjectStore, *, cache_bytes: int = 64 * 1024 * 1024) -> None:
        self.objects = objects
        self.cache_bytes = cache_bytes
        self._cache: collections.OrderedDict[str, bytes] = collections.OrderedDict()
        self._cached = 0

    @staticmethod
    def key_for(digest: str) -> str:
        """The content-addressed key blobs had before issue 16 (still readable, never deleted)."""
        return f"blobs/{digest[:2]}/{digest}"

    @staticmethod
    def namespace_prefix(namespace_id: str) -> str:
        """The prefix under which every blob of a namespace is stored."""
        return f"blobs/{namespace_id}/"

    @staticmethod
    def new_key(namespace_id: str, digest: str) -> str:
        """A fresh key for one offloaded payload of ``namespace_id`` (unique: 64 random bits)."""
        if not re.fullmatch(r"[A-Za-z0-9_-]{1,128}", namespace_id):
            raise ValueError(f"namespace id {namespace_id!r} cannot name a blob")
        return f"blobs/{namespace_id}/{digest[:2]}/{digest}.{secrets.token_hex(8)}"

    @staticmethod
    def ref_payload(key: str, digest: str, size: int) -> pb.Payload:
        ref = {"key": key, "sha256": digest, "size": size}
        return pb.Payload(metadata={"encoding": BLOB_REF_ENCODING}, data=json.dumps(ref, sort_keys=True).encode())

    async def put(self, data: bytes, namespace_id: str) -> pb.Payload:
        """Store ``data`` durably as a new blob of ``namespace_id`` and return the reference payload for it."""
        digest = await _sha256(data)
        key = self.new_key(namespace_id, digest)
        await self.write(key, data)
        return self.ref_payload(key, digest, len(data))

    async def write(self, key: str, data: bytes) -> None:
        await self.objects.put(key, data, if_absent=True)
        self._remember(key, data)

    async def delete(self, key: str) -> None:
        """Delete one blob (no error if it is gone). Raises ObjectStoreError."""
        self._forget(key)
        await self.objects.delete(key)

    async def get(self, ref: pb.Payload, namespace_id: str | None = None) -> bytes:
        """The bytes a reference payload points at, verified against its size and SHA-256.

        Args:
            namespace_id: the namespace the reference was read in; a blob of another
                namespace is refused (``None``: no check).

        Raises:
            BlobError: malformed reference, another namespace's blob, missing blob or a mismatch.
            ObjectStoreError: the blob store could not be read.
        """
        key, digest, size = _parse_ref(ref)
        m = _KEY_RE.match(key)
        if m is not None:
            if m.group("sha") != digest or m.group("fan") != digest[:2]:
                raise BlobError(f"malformed blob reference key {key!r}")
            if namespace_id is not None and m.group("ns") != namespace_id:
                raise BlobError(f"blob {key} belongs to another namespace")
        elif not _LEGACY_KEY_RE.match(key) or key != self.key_for(digest):
            raise BlobError(f"malformed blob reference key {key!r}")
        data = self._cache.get(key)
        if data is not None:
            self._cache.move_to_end(key)
            return data
        data = await self.objects.get(key)
        if data is None:
            raise BlobError(f"blob {key} is missing from {self.objects.uri}")
        if len(data) != size or hashlib.sha256(data).hexdigest() != digest:
            raise BlobError(f"blob {key} does not match its reference (size or sha256)")
        self._remember(key, data)
        return data

    async def delete_unreferenced(self, keys: Iterable[str], namespace_id: str,
                                  is_referenced: Callable[[str, str], Awaitable[bool]]) -> list[str]:
        """Delete each of ``keys`` (blobs of ``namespace_id``) that no run refers to any more; returns those deleted.

        Only keys of the current format in ``namespace_id`` are considered (legacy content-addressed
        blobs may be shared by anything and are kept). Raises ObjectStoreError / StoreError.
        """
        deleted = []
        for key in keys:
            m = _KEY_RE.match(key)
            if m is None or m.group("ns") != namespace_id:
                continue
            if await is_referenced(namespace_id, key):
                continue
            await self.delete(key)
            deleted.append(key)
        return deleted

    async def delete_namespace(self, namespace_id: str) -> int:
        """Delete every blob of a namespace (it was deleted); returns how many. Raises ObjectStoreError."""
        keys = await self.objects.list_keys(self.namespace_prefix(namespace_id))
        for key in keys:
            await self.delete(key)
        return len(keys)

    def _remember(self, key: str, data: bytes) -> None:
        if len(data) > self.cache_bytes // 4 or key in self._cache:
            return
        self._cache[key] = data
        self._cached += len(data)
        while self._cached > self.cache_bytes and self._cache:
            _, old = self._cache.popitem(last=False)
            self._cached -= len(old)

    def _forget(self, key: str) -> None:
        data = self._cache.pop(key, None)
        if data is not None:
            self._cached -= len(data)


async def _sha256(data: bytes) -> str:
    if len(data) >= _HASH_IN_THREAD:
        return await asyncio.to_thread(lambda: hashlib.sha256(data).hexdigest())
    return hashlib.sha256(data).hexdigest()


@dataclass
class PreparedIntake:
    """A request with its large payloads replaced by references whose blobs are not written yet.

    The frontend checks ``request`` (inline sizes, everything else) and only then calls
    ``PayloadOffloader.write``: a refused request writes nothing.
    """

    request: Message
    namespace_id: str
    #: (key, serialized payload) of each blob to write.
    blobs: list[tuple[str, bytes]] = field(default_factory=list)
    written: bool = False

    @property
    def keys(self) -> list[str]:
        return [k for k, _ in self.blobs]


class PayloadOffloader:
    """Moves large payloads of incoming requests to the blob store and expands outgoing ones.

    Args:
        blobs: the blob store, or None (then nothing is offloaded and the usual
            ``max_payload_bytes`` limit applies to every request).
        threshold: payloads whose serialized size is above this are offloaded.
        max_offloaded: largest accepted request whose payloads are offloaded (each
            offloaded payload, and all of them together), bytes.
    """

    def __init__(self, blobs: BlobStore | None, *, threshold: int, max_offloaded: int) -> None:
        self.blobs = blobs
        self.threshold = threshold
        self.max_offloaded = max_offloaded

    @property
    def enabled(self) -> bool:
        return self.blobs is not None

    async def prepare(self, request: Message, field: str, namespace_id: str) -> PreparedIntake:
        """``request`` with its large payloads replaced by references to blobs of ``namespace_id``, nothing written.

        The caller's message is never changed: when something is offloaded, the prepared
        request is a copy. Payloads that already are references are not offloaded again
        (the frontend refuses requests carrying them before this).

        Raises:
            ResourceExhausted: the payloads to offload exceed ``max_offloaded``.
        """
        blobs = self.blobs
        if blobs is None or request.ByteSize() <= self.threshold:
            return PreparedIntake(request, namespace_id)
        big = [p for p in iter_payloads(request) if p.ByteSize() > self.threshold and not is_blob_ref(p)]
        if not big:
            return PreparedIntake(request, namespace_id)
        total = sum(p.ByteSize() for p in big)
        if total > self.max_offloaded:
            raise ResourceExhausted(f"{field}: {total} bytes of payloads is over the limit of {self.max_offloaded} bytes "
                                    "for large payloads (store large values elsewhere and pass a reference)")
        copy = type(request)()
        copy.CopyFrom(request)
        targets = [p for p in iter_payloads(copy) if p.ByteSize() > self.threshold and not is_blob_ref(p)]
        out = PreparedIntake(copy, namespace_id)
        for p in targets:
            data = p.SerializeToString()
            digest = await _sha256(data)
            key = blobs.new_key(namespace_id, digest)
            out.blobs.append((key, data))
            p.Clear()
            p.CopyFrom(blobs.ref_payload(key, digest, len(data)))
        return out

    async def write(self, prepared: PreparedIntake) -> None:
        """Write the blobs of a prepared request durably.

        Raises:
            Unavailable: the blob store could not be written (what was written is deleted again).
        """
        blobs = self.blobs
        if blobs is None or not prepared.blobs or prepared.written:
            return
        try:
            await asyncio.gather(*(blobs.write(k, d) for k, d in prepared.blobs))
        except ObjectStoreError as e:
            await self.discard(prepared)
            raise Unavailable(f"the large-payload store could not be written; retry: {e}") from e
        prepared.written = True

    async def discard(self, prepared: PreparedIntake) -> None:
        """Delete the blobs of a prepared request (nothing refers to them); best effort."""
        blobs = self.blobs
        if blobs is None:
            return
        for key, _ in prepared.blobs:
            try:
                await blobs.delete(key)
            except ObjectStoreError:
                pass

    async def intake(self, request: Message, field: str, namespace_id: str) -> Message:
        """``prepare`` and ``write`` in one step (no checks in between).

        Raises:
            ResourceExhausted: the payloads to offload exceed ``max_offloaded``.
            Unavailable: the blob store could not be written (nothing was changed).
        """
        prepared = await self.prepare(request, field, namespace_id)
        try:
            await self.write(prepared)
        except Unavailable as e:
            raise Unavailable(f"{field}: {e}") from e
        return prepared.request

    async def expand(self, message: Message, namespace_id: str | None = None, *, keep_missing: bool = False) -> Message:
        """Replace every blob reference inside ``message`` (in place) by the original payload.

        Args:
            namespace_id: the namespace ``message`` belongs to: a reference to another
                namespace's blob is refused (``None``: not checked).
            keep_missing: leave a reference whose blob is missing, malformed or foreign as
                it is instead of failing (retention archiving a run).

        Raises:
            Unavailable: a blob could not be read (the store is down: retryable), or
                (without ``keep_missing``) a reference is broken.
        """
        blobs = self.blobs
        # Cheap pre-check (C serialization + byte search, ~15x faster than walking the
        # message in Python): every reference carries its encoding name verbatim.
        if blobs is None or BLOB_REF_ENCODING not in message.SerializeToString():
            return message
        refs = [p for p in iter_payloads(message) if is_blob_ref(p)]
        if not refs:
            return message

        async def one(p: pb.Payload) -> bytes | None:
            try:
                return await blobs.get(p, namespace_id)
            except BlobError:
                if keep_missing:
                    return None
                raise

        try:
            datas: Sequence[bytes | None] = await asyncio.gather(*(one(p) for p in refs))
        except (ObjectStoreError, BlobError) as e:
            raise Unavailable(f"a large payload could not be read from the blob store: {e}") from e
        for p, data in zip(refs, datas):
            if data is None:
                continue
            p.Clear()
            p.ParseFromString(data)
        return message
