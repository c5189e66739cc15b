"""Shards: the unit of ownership of executions, and the registry of the shards this process owns.

A workflow id hashes to one of ``ServerConfig.num_shards`` shards, fixed for the life of
the database (``ShardController.shard_id_of``). A process owns a shard by holding its
``range_id``, a fencing token from the store: every write for the shard's executions
carries it, and the store refuses the write once another process took the shard (and
with it a higher range id). Owning a shard is having its ``Shard`` object (opened by the
controller); losing it is closing that object.

A ``Shard`` allocates task ids (range id in the high bits, so ids never repeat across
owners) and owns its transfer queue and timer queue. It also batches the writes that
nobody waits for (acknowledged transfer and timer rows, visibility rows, running runs'
history lengths): the controller's ack loop writes each shard's batch as one mutation
every 50 ms.
"""

from __future__ import annotations

import asyncio
import logging
import zlib

from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

from spindle.controlplane.errors import ShardNotOwned
from spindle.controlplane.store import Mutation, Store, StoreError, VisibilityRow

from ._timer_queue import TimerQueue
from ._transfer_queue import TransferQueue

log = logging.getLogger("spindle.history")

T = TypeVar("T")

#: Seconds between two ack batches of a shard.
ACK_INTERVAL = 0.05
#: In every error about a shard this process does not own (a cluster member retries at the owner on it).
NOT_OWNED = "is not owned by this process"


class Shard:
    """A shard this process owns: its fencing token, task-id allocator, queues and ack batch."""

    def __init__(self, shard_id: int, range_id: int, queues: Callable[["Shard"], tuple[TransferQueue, TimerQueue]], *,
                 movable: bool = False) -> None:
        self.shard_id = shard_id
        self.range_id = range_id
        self._seq = 0
        self.visibility: list[VisibilityRow] = []
        #: (namespace_id, run_id) -> history length of running runs, written with the next ack batch
        #: (coalesced: one row update per run and batch, not a write per workflow task).
        self.history_lengths: dict[tuple[str, str], int] = {}
        #: Set when the shard is closed; None for a shard owned from the start (never handed over).
        self.released: asyncio.Event | None = asyncio.Event() if movable else None
        self.transfer, self.timers = queues(self)

    def next_task_id(self) -> int:
        self._seq += 1
        return (self.range_id << 32) | self._seq

    # ------------------------------------------------------------------ the ack batch
    def _has_batch(self) -> bool:
        return bool(self.transfer.acks or self.timers.acks or self.visibility or self.history_lengths)

    async def flush(self, store: Store) -> None:
        """Write the ack batch as one mutation; on failure it is kept for the next flush."""
        if not self._has_batch():
            return
        m = Mutation(shard_id=self.shard_id, range_id=self.range_id)
        m.transfer_delete, self.transfer.acks = self.transfer.acks, []
        m.timer_delete, self.timers.acks = self.timers.acks, []
        m.visibility, self.visibility = self.visibility, []
        lengths, self.history_lengths = self.history_lengths, {}
        m.visibility_history_length = [(ns, rid, n) for (ns, rid), n in lengths.items()]
        try:
            await store.apply(m)
        except StoreError as e:
            # Put the batch back for the next flush (deletes are idempotent; visibility rows are
            # upserts kept in order, so a newer row of a run still wins; history lengths only
            # rise). Dropping it left visibility stale (a completed run listed as running)
            # until a restart.
            self.transfer.acks[:0] = m.transfer_delete
            self.timers.acks[:0] = m.timer_delete
            self.visibility[:0] = m.visibility
            for key, n in lengths.items():
                self.history_lengths[key] = max(n, self.history_lengths.get(key, 0))
            log.warning("ack batch failed; retried with the next one: %s", e)

    async def close(self, store: Store) -> None:
        """Stop the timer loop and write what the batch still holds (fenced: refused if the shard already moved)."""
        if self.released is not None:
            self.released.set()
        await self.timers.stop()
        if self._has_batch():
            m = Mutation(shard_id=self.shard_id, range_id=self.range_id, transfer_delete=self.transfer.acks,
                         timer_delete=self.timers.acks, visibility=self.visibility,
                         visibility_history_length=[(ns, rid, n) for (ns, rid), n in self.history_lengths.items()])
            try:
                await store.apply(m)  # refused if the shard already moved (then redone by the new owner)
            except StoreError:
                pass


class _Shards(dict[int, Shard]):
    """Owned shards by id; indexing a shard this process does not own raises ShardNotOwned (retryable)."""

    def __missing__(self, shard_id: int) -> Shard:
        raise ShardNotOwned(f"shard {shard_id} {NOT_OWNED} (it moved); retry")


class ShardController:
    """The shards this process owns, where a workflow id lives, and the ack loop.

    ``open_shard(shard_id, range_id, movable)`` builds a ``Shard`` with its queues (the
    engine wires them to its executors).
    """

    def __init__(self, store: Store, num_shards: int, open_shard: Callable[[int, int, bool], Shard]) -> None:
        self._store = store
        self._num_shards = num_shards
        self._open_shard = open_shard
        #: The shards this process owns, by id (indexing one it does not own raises ShardNotOwned).
        self.owned: dict[int, Shard] = _Shards()
        #: Cluster hook: called with a shard id when a write finds the shard's range_id moved on
        #: (another process took it). None in a single process.
        self.lost_hook: Callable[[int], None] | None = None
        #: Counts ownership changes (a ``ServerMetrics``), or None.
        self.metrics: Any = None
        self._ack_loop: asyncio.Task[None] | None = None

    # ------------------------------------------------------------------ routing
    def shard_id_of(self, namespace_id: str, workflow_id: str) -> int:
        """The shard a workflow id hashes to (fixed for the life of the database)."""
        return zlib.crc32(f"{namespace_id}/{workflow_id}".encode()) % self._num_shards

    def shard_for(self, namespace_id: str, workflow_id: str) -> Shard:
        """The owned shard of a workflow id; ShardNotOwned when this process does not own it (nothing loaded)."""
        sid = self.shard_id_of(namespace_id, workflow_id)
        shard = self.owned.get(sid)
        if shard is None:
            raise ShardNotOwned(f"shard {sid} {NOT_OWNED}")
        return shard

    # ------------------------------------------------------------------ ownership
    async def acquire(self, shard_id: int, identity: str) -> Shard:
        """Take ownership of a shard in the store (a single process owning every shard) and open it."""
        range_id = await self._store.acquire_shard(shard_id, identity)
        return self.open(shard_id, range_id)

    def open(self, shard_id: int, range_id: int, *, movable: bool = False) -> Shard:
        """Register the shard whose ownership is held with ``range_id``."""
        shard = self._open_shard(shard_id, range_id, movable)
        self.owned[shard_id] = shard
        if self.metrics is not None:
            self.metrics.shard_ownership("acquired")
        return shard

    async def close(self, shard_id: int) -> None:
        """Stop serving a shard: unregister it, stop its timers and write its last ack batch."""
        shard = self.owned.pop(shard_id, None)
        if shard is not None:
            if self.metrics is not None:
                self.metrics.shard_ownership("released")
            await shard.close(self._store)

    def lost(self, shard_id: int) -> None:
        """A write found the shard fenced: tell the cluster (it stops serving the shard)."""
        if self.lost_hook is not None:
            self.lost_hook(shard_id)

    def while_owned(self, namespace_id: str, workflow_id: str, call: Coroutine[Any, Any, T]) -> Awaitable[T]:
        """``call``, ended with ShardNotOwned if the workflow's shard is handed over first (retry at the new owner).

        Calls that wait (history long polls, queries, updates) must not keep waiting on
        state this process no longer changes. A shard owned since start is never handed
        over: its calls are returned as they are (no extra task or await).
        """
        sid = self.shard_id_of(namespace_id, workflow_id)
        shard = self.owned.get(sid)
        if shard is None:
            call.close()
            raise ShardNotOwned(f"shard {sid} {NOT_OWNED}")
        if shard.released is None:
            return call
        return self._until_released(sid, shard.released, call)

    @staticmethod
    async def _until_released(sid: int, released: asyncio.Event, call: Coroutine[Any, Any, T]) -> T:
        task = asyncio.ensure_future(call)
        gone = asyncio.ensure_future(released.wait())
        try:
            await asyncio.wait({task, gone}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            gone.cancel()
            if not task.done():
                task.cancel()
        if not task.cancelled() and task.done():
            return task.result()
        raise ShardNotOwned(f"shard {sid} was handed over while waiting; retry")

    # ------------------------------------------------------------------ the ack loop
    def start(self) -> None:
        self._ack_loop = asyncio.create_task(self._acks(), name="acks")

    async def _acks(self) -> None:
        while True:
            await asyncio.sleep(ACK_INTERVAL)
            await self.flush()

    async def flush(self) -> None:
        for shard in list(self.owned.values()):
            await shard.flush(self._store)

    async def stop(self) -> None:
        """Stop the ack loop and every timer loop, then write the last ack batches (the shards stay open)."""
        shards = list(self.owned.values())
        for shard in shards:
            shard.timers.cancel()
        ack_loop, self._ack_loop = self._ack_loop, None
        if ack_loop is not None:
            ack_loop.cancel()
        for shard in shards:
            await shard.timers.stop()
        if ack_loop is not None:
            try:
                await ack_loop
            except (asyncio.CancelledError, Exception):  # noqa: BLE001 - stopping
                pass
        await self.flush()


__all__ = ["ACK_INTERVAL", "NOT_OWNED", "Shard", "ShardController"]
