"""The commit path: a ``Txn`` becomes one store ``Mutation``, then its after-commit effects run.

``Committer.commit(txn)`` is the only way a change to a run reaches the store:

1. ``before_commit(txn)`` (the history-size rule: a write that brings a running run to
   ``history_max_events`` also fails the run);
2. the txn's events, execution row, buffered events, transfer and timer rows (their task
   ids allocated from the shard), current-run row and, for continue-as-new and
   TERMINATE_EXISTING, the new run's rows are put into ONE mutation, fenced by the shard's
   range id and the run's db version;
3. after the write: the cached state's version moves on, the current run is remembered,
   long polls are woken, the transfer tasks are processed (``TransferQueue.process``),
   the timers armed (``TimerQueue.arm``) and the txn's ``after_commit`` callbacks run.

A txn that does not commit, for whatever reason, evicts its state (nothing half-applied is
reused: not its events, not its request ids); a refused write raises Unavailable (ShardNotOwned
when the shard is not, or no longer, this process's); when the outcome is unknown the write's
tasks are picked up if they turn out to be in the store. Cancelling the caller never cuts a
commit short (see ``commit``).
"""

from __future__ import annotations

import asyncio
import logging

from collections.abc import Callable
from typing import Any

from spindle.controlplane.archival import BLOB_REF_ENCODING, blob_keys_in
from spindle.controlplane.errors import ShardNotOwned, Unavailable
from spindle.controlplane.store import (
    CurrentRow,
    ExecutionRow,
    Mutation,
    ShardOwnershipLostError,
    Store,
    StoreError,
    StoreUnavailableError,
    TimerTask,
    TransferTask,
)

from ._background import Background
from ._cache import ExecutionCache
from ._mutable_state import MutableState
from ._shard import Shard, ShardController
from ._tasks import Task
from ._txn import Txn

log = logging.getLogger("spindle.history")


def exec_row(st: MutableState) -> ExecutionRow:
    """The execution row of ``st`` as the next write leaves it (db version + 1)."""
    return ExecutionRow(
        namespace_id=st.namespace_id, workflow_id=st.workflow_id, run_id=st.run_id, shard_id=st.shard_id,
        status=st.status, next_event_id=st.next_event_id, db_version=st.db_version + 1,
        workflow_type=st.workflow_type, task_queue=st.task_queue, start_time_ms=st.start_time_ms,
        close_time_ms=st.close_time_ms, activity_state=st.activity_retry_state() if st.running else b"",
    )


def _task_rows(shard: Shard, txn_transfer: list[Task], txn_timers: list[Task]) -> tuple[list[TransferTask], list[TimerTask]]:
    transfer = []
    for t in txn_transfer:
        t.task_id = shard.next_task_id()
        transfer.append(TransferTask(t.task_id, t.encode()))
    timers = []
    for t in txn_timers:
        t.task_id = shard.next_task_id()
        timers.append(TimerTask(t.fire_time_ms, t.task_id, t.encode()))
    return transfer, timers


class Committer:
    """Writes transactions of the shards' runs and runs what they scheduled."""

    def __init__(self, store: Store, shards: ShardController, cache: ExecutionCache, background: Background) -> None:
        self._store = store
        self._shards = shards
        self._cache = cache
        self._background = background
        #: Called with every txn of an existing run before it is written (the engine's history-size rule).
        self.before_commit: Callable[[Txn], None] = _nothing
        #: Counts the starts and closes written (``ServerMetrics``); None: not counted.
        self.metrics: Any = None

    async def commit(self, txn: Txn, *, new: bool = False, current_expect: str | None = None) -> None:
        """Write ``txn`` in one transaction and run its after-commit effects.

        Raises Unavailable (nothing written; the state is evicted) when the store refuses, and
        ShardNotOwned when this process does not serve the run's shard.
        Cancelling the caller (a client cancels its RPC, the member that forwarded it dies)
        does not cancel the commit: the write may already be on its way to the store, and
        what it scheduled (a workflow task, a child start, a timer) is dispatched only by the
        after-commit effects. Cancelled mid-way, the write landed but nothing was dispatched
        until a restart, and the cached state no longer matched the store. The caller sees
        its CancelledError only once the commit has finished, so the workflow's lock is held
        until then.
        """
        task = asyncio.ensure_future(self._commit(txn, new=new, current_expect=current_expect))
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            if not task.done():
                await _finish_despite_cancellation(task)
                raise
            if task.cancelled():
                raise
            task.result()  # the commit's own outcome (an error of the write) wins over a late cancellation
            raise

    async def _commit(self, txn: Txn, *, new: bool, current_expect: str | None) -> None:
        try:
            shard, m = await self._mutation(txn, new=new, current_expect=current_expect)
            if not m.is_empty():
                await self._write(shard, m, txn)
        except BaseException:
            # Nothing of a txn that did not commit may be remembered: its events, request ids and
            # flags were applied to the cached state as they were added. Every way out before
            # the write landed (the shard was not open or moved meanwhile, a store read failed,
            # the store refused, the caller's task was cancelled) drops that state; the next
            # operation rebuilds it from what the store holds.
            self._cache.evict(txn.state)
            if txn.new_run is not None:
                self._cache.evict(txn.new_run[0])
            raise
        self._after_write(shard, m, txn, new=new)

    async def _mutation(self, txn: Txn, *, new: bool, current_expect: str | None) -> tuple[Shard, Mutation]:
        """The shard that writes ``txn`` and the one mutation it becomes (task ids allocated).

        Raises ShardNotOwned when this process does not serve the run's shard (nothing written).
        """
        if not new:
            self.before_commit(txn)
        st = txn.state
        shard = self._shards.owned[st.shard_id]
        transfer, timers = _task_rows(shard, txn.transfer, txn.timers)
        m = Mutation(shard_id=shard.shard_id, range_id=shard.range_id)
        if txn.events or new or txn.current_status is not None or txn.buffered or txn.clear_buffered or txn.row_changed:
            m.execution = exec_row(st)
            m.expected_version = None if new else st.db_version
        m.events = [(e.event_id, e.SerializeToString()) for e in txn.events]
        m.add_buffered = [e.SerializeToString() for e in txn.buffered]
        m.clear_buffered = txn.clear_buffered
        m.transfer_insert = transfer
        m.timer_insert = timers
        m.timer_delete = txn.timer_delete
        m.transfer_delete = txn.transfer_delete
        m.visibility = txn.visibility
        if new or txn.current_status is not None:
            # keep the start's request id on the current row when the run closes (start idempotency)
            start_req = txn.start_request_id or await self._cache.start_request_id(st)
            m.current = CurrentRow(st.namespace_id, st.workflow_id, st.run_id, st.status, start_req)
            m.current_expect = current_expect
        _record_blob_refs(m, st)
        if txn.new_run is not None:
            nst, nevents, ntransfer, ntimers = txn.new_run
            ntr, ntm = _task_rows(shard, ntransfer, ntimers)
            m2 = Mutation(shard_id=shard.shard_id, range_id=shard.range_id)
            m2.execution = exec_row(nst)
            m2.expected_version = None
            m2.events = [(e.event_id, e.SerializeToString()) for e in nevents]
            m2.transfer_insert = ntr
            m2.timer_insert = ntm
            m2.current = CurrentRow(nst.namespace_id, nst.workflow_id, nst.run_id, nst.status, txn.new_run_request_id)
            m2.current_expect = st.run_id
            _record_blob_refs(m2, nst)
            m.current = None
            m.also.append(m2)
        return shard, m

    async def _write(self, shard: Shard, m: Mutation, txn: Txn) -> None:
        """Apply ``m``; a refusal becomes Unavailable (the caller evicts the state)."""
        self._background.in_flight += 1
        try:
            await self._store.apply(m)
        except ShardOwnershipLostError as e:
            self._shards.lost(shard.shard_id)  # cluster: stop serving it now
            raise ShardNotOwned(f"shard {shard.shard_id} moved to another owner; retry: {e}") from e
        except StoreError as e:
            if isinstance(e, StoreUnavailableError):
                # The outcome may be unknown (committed, reply lost): pick up the tasks the
                # write made if it did commit, as a restart would; else they wait for one.
                transfer_tasks = list(txn.transfer) + (list(txn.new_run[2]) if txn.new_run else [])
                timer_tasks = list(txn.timers) + (list(txn.new_run[3]) if txn.new_run else [])
                if transfer_tasks or timer_tasks:
                    self._background.spawn(self._pick_up_if_written(shard, transfer_tasks, timer_tasks))
            if isinstance(e, StoreUnavailableError) and e.outcome_unknown:
                raise Unavailable(f"the write's outcome is unknown (it may have committed); retrying with the "
                                  f"same request id is safe: {e}") from e
            raise Unavailable(f"the store refused the write; nothing was changed: {e}") from e
        finally:
            self._background.in_flight -= 1

    def _after_write(self, shard: Shard, m: Mutation, txn: Txn, *, new: bool) -> None:
        """The write landed: move the cached state on, wake waiters, dispatch tasks, arm timers, run callbacks."""
        st = txn.state
        cache = self._cache
        if m.execution is not None:
            st.db_version += 1
        if self.metrics is not None:
            self.metrics.events_written(st.namespace, txn.events)
            if txn.new_run is not None:
                self.metrics.events_written(txn.new_run[0].namespace, txn.new_run[1])
        if txn.new_run is not None:
            nst = txn.new_run[0]
            nst.db_version += 1
            cache.put(nst)
            cache.remember_current(nst.namespace_id, nst.workflow_id, nst.run_id)
        elif new:
            cache.remember_current(st.namespace_id, st.workflow_id, st.run_id)
        if txn.clear_buffered:
            st.buffered.clear()
        st.notify()
        process, arm = shard.transfer.process, shard.timers.arm
        for t in txn.transfer:
            process(t)
        for t in txn.timers:
            arm(t)
        if txn.new_run is not None:
            for t in txn.new_run[2]:
                process(t)
            for t in txn.new_run[3]:
                arm(t)
        for fn in txn.after_commit:
            fn()

    async def _pick_up_if_written(self, shard: Shard, transfer: list[Task], timers: list[Task]) -> None:
        """After a failed write: process its transfer tasks and arm its timers if they are in the store."""
        shards = self._shards.owned
        try:
            for t in transfer:
                rows = await self._store.load_transfer_tasks(shard.shard_id, t.task_id - 1, 1)
                if rows and rows[0].task_id == t.task_id and shards.get(shard.shard_id) is shard:
                    shard.transfer.process(t)
            for t in timers:
                found = await self._store.load_timer_tasks(shard.shard_id, t.fire_time_ms + 1,
                                                           (t.fire_time_ms, t.task_id - 1), 1)
                if found and found[0].task_id == t.task_id and shards.get(shard.shard_id) is shard:
                    shard.timers.arm(t)
        except StoreError as e:
            log.warning("could not check the tasks of a failed write (a restart picks them up): %s", e)

    def apply_background(self, m: Mutation) -> None:
        """Write a mutation whose outcome nobody waits for (task-start bookkeeping, acks)."""
        if m.is_empty():
            return

        async def run() -> None:
            try:
                await self._store.apply(m)
            except StoreError as e:
                log.warning("background write failed (it will be redone after recovery): %s", e)

        self._background.spawn(run())


def _record_blob_refs(m: Mutation, st: MutableState) -> None:
    """Add a ``blob_refs`` row for each large-payload blob the rows of ``m`` refer to (retention collects
    a blob once no row is left). A byte search per written value; nothing is parsed without a reference."""
    ns = st.namespace_id
    keys: set[str] = set()
    for _, data in m.events:
        if BLOB_REF_ENCODING in data:
            st.may_hold_blob_refs = True
            keys.update(blob_keys_in(data, ns))
    for data in m.add_buffered:
        keys.update(blob_keys_in(data, ns))
    if m.execution is not None and m.execution.activity_state:
        keys.update(blob_keys_in(m.execution.activity_state, ns))
    if keys:
        m.blob_refs = [(ns, st.workflow_id, st.run_id, k) for k in sorted(keys)]


def _nothing(txn: Txn) -> None:
    pass


async def _finish_despite_cancellation(task: "asyncio.Future[Any]") -> None:
    """Wait until ``task`` is done, however often the waiter is cancelled meanwhile (its outcome is dropped)."""
    while not task.done():
        try:
            await asyncio.wait([task])
        except asyncio.CancelledError:
            continue
    if not task.cancelled():
        task.exception()  # retrieved: the caller is gone, the commit logged or evicted what it had to


__all__ = ["Committer", "exec_row"]
