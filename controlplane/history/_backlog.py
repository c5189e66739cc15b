"""Where history meets matching: task sources, the durable backlog, and a shard's queued tasks.

A workflow or activity task reaches matching from a transfer row (source ``("t", shard
id, task id)``). If a poller waits, that is all (sync match: the row is deleted with the
worker's start). If none does, matching asks ``persist`` to move the task to the task
queue's backlog: one write inserts a backlog row and deletes the transfer row, and the
ref's source becomes ``("b", ...)``. Whoever finally starts the task deletes its source
row in the same write (``source_ack``). When a shard is acquired its backlog rows are
queued again (``load``); when it is lost, its queued tasks are dropped (``forget_shard``).
"""

from __future__ import annotations

import logging

from spindle.controlplane.matching import Matching, TaskQueue, TaskRef
from spindle.controlplane.store import BacklogTask, Mutation, ShardOwnershipLostError, Store, StoreError

from ._shard import ShardController
from ._tasks import Task

log = logging.getLogger("spindle.history")


class Backlog:
    """The durable side of matching's task queues, for the shards this process owns."""

    def __init__(self, store: Store, shards: ShardController) -> None:
        self._store = store
        self._shards = shards

    def _ack_transfer(self, shard_id: int, task_id: int) -> None:
        shard = self._shards.owned.get(shard_id)
        if shard is not None:
            shard.transfer.ack(task_id)

    def source_ack(self, ref: TaskRef, m: Mutation) -> None:
        """Add the write that acknowledges where ``ref`` came from to ``m``."""
        src = ref.source
        if not src:
            return
        if src[0] == "t":
            if src[1] == m.shard_id:
                m.transfer_delete.append(src[2])
            else:
                self._ack_transfer(src[1], src[2])
        elif src[0] == "b":
            m.backlog_delete.append((src[1], src[2], src[3], src[4], src[5]))
        ref.source = None

    async def persist(self, ref: TaskRef, q: TaskQueue) -> None:
        """Matching's ``persist``: move a task no poller took from the transfer queue to ``q``'s backlog.

        Never raises (matching runs it in the background). If the write fails the task stays
        queued in memory with its transfer row as its source. If the shard is no longer served
        here the task is dropped from the queue: its rows belong to the shard's new owner, which
        queues them from the store.
        """
        shard = self._shards.owned.get(self._shards.shard_id_of(ref.namespace_id, ref.workflow_id))
        if shard is None:
            q.discard(ref)
            return
        task_id = shard.next_task_id()
        data = Task("bl", ref.namespace_id, ref.workflow_id, ref.run_id, ref.event_id, ref.attempt,
                    extra={"p": ref.pin} if ref.pin else {}).encode()
        m = Mutation(shard_id=shard.shard_id, range_id=shard.range_id)
        src = ref.source
        m.backlog_insert = [BacklogTask(ref.namespace_id, q.name, q.kind, shard.shard_id, task_id, data)]
        if src and src[0] == "t":
            m.transfer_delete.append(src[2]) if src[1] == shard.shard_id else self._ack_transfer(src[1], src[2])
        ref.source = ("b", ref.namespace_id, q.name, q.kind, shard.shard_id, task_id)
        try:
            await self._store.apply(m)
        except ShardOwnershipLostError:
            ref.source = src
            q.discard(ref)  # the shard moved: its new owner queues the task from the store
            self._shards.lost(shard.shard_id)
        except StoreError as e:
            ref.source = src
            log.warning("could not persist a backlog task (it stays in the transfer queue): %s", e)

    async def load(self, matching: Matching, shard_id: int | None = None) -> None:
        """Queue the backlog rows of ``shard_id`` (default: of every shard this process owns) in matching."""
        for queue_key in await self._store.list_backlog_queues():
            await self._load_queue(matching, *queue_key, shard_id=shard_id)

    async def _load_queue(self, matching: Matching, namespace_id: str, queue_name: str, kind: int,
                          shard_id: int | None) -> None:
        rows = await self._store.load_backlog(namespace_id, queue_name, kind, 100_000)
        owned = self._shards.owned
        for r in rows:
            if (r.shard_id != shard_id) if shard_id is not None else (r.shard_id not in owned):
                continue
            t = Task.decode(r.data)
            ref = TaskRef(kind, t.namespace_id, t.workflow_id, t.run_id, t.event_id, t.attempt,
                          ("b", namespace_id, queue_name, kind, r.shard_id, r.task_id), pin=t.extra.get("p", ""))
            matching.queue(namespace_id, queue_name, kind).push(ref)

    def forget_shard(self, matching: Matching, shard_id: int) -> None:
        """Drop the shard's tasks queued in matching (its next owner queues them from its own rows)."""
        shard_id_of = self._shards.shard_id_of
        for q in matching.queues():
            kept = [r for r in q.tasks if shard_id_of(r.namespace_id, r.workflow_id) != shard_id]
            if len(kept) != len(q.tasks):
                q.tasks.clear()
                q.tasks.extend(kept)


__all__ = ["Backlog"]
