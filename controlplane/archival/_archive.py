"""Archived histories: one gzip-compressed protobuf ``History`` object per closed run.

Format (documented in docs/ARCHIVAL.md): the object is ``gzip(History.SerializeToString())``
of ``spindle.v1.History`` from ``sdk/api/messages.proto``, the exact events
the store held (large payloads stay blob references; reads expand them). Protobuf is
lossless and needs nothing but the .proto to read; the shared History JSON format is
one call away (``spindle.client.History.from_proto(...).to_json()``, or ``spindle workflow show
--output json``, which reads the archive transparently).

Layout under the archive URI (``file:///dir`` or ``gs://bucket/prefix``)::

    histories/<namespace id>/<workflow id, escaped>/<run id, escaped>.history.pb.gz
    histories/<namespace id>/<workflow id, escaped>/latest.json   {"run_id", "close_time_ms"}

``latest.json`` names the archived run that closed last, so that a read without a
run id (the current run, deleted by retention) finds it.
"""

from __future__ import annotations

import collections
import gzip
import hashlib
import json
import urllib.parse

from collections.abc import Sequence
from typing import Any

from google.protobuf.message import DecodeError

from spindle.api import messages_pb2 as pb
from spindle.controlplane._keyed_locks import KeyedLocks

from ._objects import ObjectStore

__all__ = ["HistoryArchiver", "escape_key_part"]

_MAX_PART = 180


def escape_key_part(value: str) -> str:
    """``value`` as one safe path segment (percent-escaped; long values shortened with a hash)."""
    part = urllib.parse.quote(value, safe="-_").replace(".", "%2E").replace("~", "%7E")
    if len(part) > _MAX_PART:
        part = part[:_MAX_PART - 65] + "-" + hashlib.sha256(value.encode()).hexdigest()
    return part or "%00"


class HistoryArchiver:
    """Writes and reads archived histories on one ObjectStore."""

    def __init__(self, objects: ObjectStore, *, cache_size: int = 16) -> None:
        self.objects = objects
        self._locks = KeyedLocks()  # per (namespace id, workflow id): its latest.json pointer
        self._cache: collections.OrderedDict[tuple[str, str, str], pb.History] = collections.OrderedDict()
        self._cache_size = cache_size

    @staticmethod
    def _dir(namespace_id: str, workflow_id: str) -> str:
        return f"histories/{escape_key_part(namespace_id)}/{escape_key_part(workflow_id)}"

    def history_key(self, namespace_id: str, workflow_id: str, run_id: str) -> str:
        """The object key of one run's archived history."""
        return f"{self._dir(namespace_id, workflow_id)}/{escape_key_part(run_id)}.history.pb.gz"

    async def archive(self, namespace_id: str, workflow_id: str, run_id: str, events: Sequence[pb.HistoryEvent],
                      close_time_ms: int) -> str:
        """Write the run's history (idempotent) and move ``latest.json`` to it if it closed last.

        Returns the history's key. Raises ObjectStoreError when anything could not be
        written; then the run must not be deleted.
        """
        key = self.history_key(namespace_id, workflow_id, run_id)
        data = gzip.compress(pb.History(events=events).SerializeToString(), compresslevel=6, mtime=0)
        await self.objects.put(key, data)
        pointer = f"{self._dir(namespace_id, workflow_id)}/latest.json"
        async with self._locks.get((namespace_id, workflow_id)):
            current = await self._read_pointer(pointer)
            if current is None or (close_time_ms, run_id) >= (int(current["close_time_ms"]), str(current["run_id"])):
                body = json.dumps({"run_id": run_id, "close_time_ms": close_time_ms}).encode()
                await self.objects.put(pointer, body)
        return key

    async def _read_pointer(self, key: str) -> dict[str, Any] | None:
        raw = await self.objects.get(key)
        if raw is None:
            return None
        try:
            d = json.loads(raw)
            return d if isinstance(d, dict) and "run_id" in d and "close_time_ms" in d else None
        except ValueError:
            return None

    async def latest_run_id(self, namespace_id: str, workflow_id: str) -> str | None:
        """The archived run of ``workflow_id`` that closed last, or None."""
        d = await self._read_pointer(f"{self._dir(namespace_id, workflow_id)}/latest.json")
        return str(d["run_id"]) if d else None

    def forget(self, namespace_id: str, workflow_id: str, run_id: str) -> None:
        """Drop the run's history from this process's read cache (it was erased from the archive)."""
        self._cache.pop((namespace_id, workflow_id, run_id), None)

    async def read(self, namespace_id: str, workflow_id: str, run_id: str) -> pb.History | None:
        """The archived history of one run (a copy the caller may change), or None if not archived.

        Raises ObjectStoreError when the archive cannot be read, ValueError when the
        object is corrupt.
        """
        ck = (namespace_id, workflow_id, run_id)
        hist = self._cache.get(ck)
        if hist is None:
            raw = await self.objects.get(self.history_key(namespace_id, workflow_id, run_id))
            if raw is None:
                return None
            try:
                hist = pb.History.FromString(gzip.decompress(raw))
            except (OSError, EOFError, ValueError, DecodeError) as e:
                raise ValueError(f"archived history of {workflow_id}/{run_id} is corrupt: {e}") from e
            self._cache[ck] = hist
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(ck)
        out = pb.History()
        out.CopyFrom(hist)
        return out
