"""The blob store for large payloads, and the offloading / expansion of payloads in messages.

A payload larger than ``ServerConfig.large_payload_threshold_bytes`` (256 KiB) that
arrives at the frontend is written to the blob store and replaced, before the
history engine sees the request, by a *reference payload*::

    Payload(metadata={"encoding": b"spindle/blob-ref"},
            data=b'{"key": "blobs/3f/3f9a...", "sha256": "3f9a...", "size": 10485812}')

The blob is the original ``Payload`` serialized (metadata included), stored under
its SHA-256 (content-addressed: identical values are stored once, and a retried
write is harmless). The store, the history, the archive and the visibility rows
only ever hold the reference. Whenever the frontend returns payloads to a client or
a worker (history pages, workflow and activity tasks, query and update results,
describe) it expands references back into the original payloads, checking size
and SHA-256.

Blobs are not deleted by retention (several runs may share one); a bucket lifecycle
rule or an operator job may remove blobs older than the longest archive retention.
"""

from __future__ import annotations

import asyncio
import collections
import hashlib
import json
import re
from collections.abc import Sequence

from google.protobuf.message import Message

from spindle.controlplane.api import messages_pb2 as pb
from spindle.controlplane.errors import ResourceExhausted, Unavailable

from ._objects import ObjectStore, ObjectStoreError
from ._visitor import iter_payloads

__all__ = ["BLOB_REF_ENCODING", "BlobStore", "BlobError", "PayloadOffloader", "is_blob_ref"]

BLOB_REF_ENCODING = b"spindle/blob-ref"
_KEY_RE = re.compile(r"^blobs/[0-9a-f]{2}/[0-9a-f]{64}$")


class BlobError(Exception):
    """A referenced blob is missing, unreadable or does not match its reference."""


def is_blob_ref(p: pb.Payload) -> bool:
    """Whether ``p`` is a reference to a blob (not a value)."""
    return p.metadata.get("encoding") == BLOB_REF_ENCODING


class BlobStore:
    """Content-addressed payload blobs on an ObjectStore, with a small read cache.

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
        return f"blobs/{digest[:2]}/{digest}"

    async def put(self, data: bytes) -> pb.Payload:
        """Store ``data`` durably and return the reference payload for it."""
        digest = hashlib.sha256(data).hexdigest()
        key = self.key_for(digest)
        await self.objects.put(key, data, if_absent=True)
        self._remember(key, data)
        ref = {"key": key, "sha256": digest, "size": len(data)}
        return pb.Payload(metadata={"encoding": BLOB_REF_ENCODING}, data=json.dumps(ref, sort_keys=True).encode())

    async def get(self, ref: pb.Payload) -> bytes:
        """The bytes a reference payload points at, verified against its size and SHA-256.

        Raises:
            BlobError: malformed reference, missing blob or a mismatch.
            ObjectStoreError: the blob store could not be read.
        """
        try:
            d = json.loads(ref.data)
            key, digest, size = str(d["key"]), str(d["sha256"]), int(d["size"])
        except (ValueError, KeyError, TypeError) as e:
            raise BlobError(f"malformed blob reference {ref.data[:200]!r}") from e
        if not _KEY_RE.match(key) or key != self.key_for(digest):
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

    def _remember(self, key: str, data: bytes) -> None:
        if len(data) > self.cache_bytes // 4 or key in self._cache:
            return
        self._cache[key] = data
        self._cached += len(data)
        while self._cached > self.cache_bytes and self._cache:
            _, old = self._cache.popitem(last=False)
            self._cached -= len(old)


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

    async def intake(self, request: Message, field: str) -> Message:
        """Return ``request`` with its large payloads replaced by blob references.

        The caller's message is never changed: when something is offloaded, a copy is
        returned. References already in the request are left as they are.

        Raises:
            ResourceExhausted: the payloads to offload exceed ``max_offloaded``.
            Unavailable: the blob store could not be written (nothing was changed).
        """
        blobs = self.blobs
        if blobs is None or request.ByteSize() <= self.threshold:
            return request
        big = [p for p in iter_payloads(request) if p.ByteSize() > self.threshold and not is_blob_ref(p)]
        if not big:
            return request
        total = sum(p.ByteSize() for p in big)
        if total > self.max_offloaded:
            raise ResourceExhausted(f"{field}: {total} bytes of payloads is over the limit of {self.max_offloaded} bytes "
                                    "for large payloads (store large values elsewhere and pass a reference)")
        copy = type(request)()
        copy.CopyFrom(request)
        targets = [p for p in iter_payloads(copy) if p.ByteSize() > self.threshold and not is_blob_ref(p)]
        try:
            refs = await asyncio.gather(*(blobs.put(p.SerializeToString()) for p in targets))
        except ObjectStoreError as e:
            raise Unavailable(f"{field}: the large-payload store could not be written; retry: {e}") from e
        for p, ref in zip(targets, refs):
            p.Clear()
            p.CopyFrom(ref)
        return copy

    async def expand(self, message: Message) -> Message:
        """Replace every blob reference inside ``message`` (in place) by the original payload.

        Raises:
            Unavailable: a blob could not be read (the store is down); retryable.
        """
        blobs = self.blobs
        # Cheap pre-check (C serialization + byte search, ~15x faster than walking the
        # message in Python): every reference carries its encoding name verbatim.
        if blobs is None or BLOB_REF_ENCODING not in message.SerializeToString():
            return message
        refs = [p for p in iter_payloads(message) if is_blob_ref(p)]
        if not refs:
            return message
        try:
            datas: Sequence[bytes] = await asyncio.gather(*(blobs.get(p) for p in refs))
        except (ObjectStoreError, BlobError) as e:
            raise Unavailable(f"a large payload could not be read from the blob store: {e}") from e
        for p, data in zip(refs, datas):
            p.Clear()
            p.ParseFromString(data)
        return message
