"""A shard's transfer queue: the transactional outbox.

A transfer task is written in the same store transaction as the events that made it:
a workflow or activity task to hand to matching, a visibility record, a closed run whose
parent and children must hear of it, a child to start, another workflow to signal or
cancel. Nothing reaches another part of the system before that transaction commits, and
nothing is lost when the process dies right after it.

No loop polls the store: once the write committed, the commit path hands each of its
tasks to ``process`` at once (in-memory, no read). A task is done when matching took it
or its handler finished; its row is then deleted, with the write that carries the task
further (a worker's start; a task moved to the matching backlog) or in the shard's next
ack batch (``acks``, flushed every 50 ms). The rows still in the store are exactly the
tasks not known to be done.

Recovery: when the shard is acquired (at start, or when it moves to this process),
``recover`` reads every remaining row and processes it again. Doing a task twice changes
nothing: every handler checks the execution's state (and the request ids it wrote) first.
"""

from __future__ import annotations

from collections.abc import Callable

from spindle.controlplane.store import Store

from ._tasks import Task

#: Rows read per store call while recovering.
RECOVER_BATCH = 1000


class TransferQueue:
    """The transfer tasks of one shard: processing (``process``), acknowledgement (``ack``) and recovery.

    ``process(task)`` runs the task's executor right away (handlers that reach other
    executions run as background tasks, retried with backoff).
    """

    def __init__(self, shard_id: int, store: Store, execute: Callable[[Task], None]) -> None:
        self.shard_id = shard_id
        self._store = store
        #: Process a committed (or recovered) task: the executor itself, not a wrapper (hot path).
        self.process = execute
        #: Ids of done tasks, deleted in the shard's next ack batch.
        self.acks: list[int] = []

    def ack(self, task_id: int) -> None:
        """The task is done: delete its row with the next ack batch."""
        self.acks.append(task_id)

    async def recover(self) -> None:
        """Process every task whose row is still in the store (after a restart or a shard move)."""
        after = 0
        while True:
            rows = await self._store.load_transfer_tasks(self.shard_id, after, RECOVER_BATCH)
            if not rows:
                break
            for r in rows:
                after = r.task_id
                self.process(Task.decode(r.data, task_id=r.task_id))


__all__ = ["TransferQueue"]
