"""The history engine's machinery: shards, the execution cache, locking, commits, timers.

Operations (starting, signalling, completing tasks, ...) live in the sibling modules
and all follow one pattern: take the workflow id's lock, load the run's state (cache
or store), build a ``Txn``, ``commit`` it (one store transaction fenced by the shard's
range_id), then run the after-commit effects (dispatch tasks, arm timers, wake long
polls). A failed commit evicts the state so nothing half-applied is ever reused.
"""

from __future__ import annotations

import asyncio
import collections
import heapq
import itertools
import logging
import uuid
import zlib
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from spindle.controlplane._keyed_locks import KeyedLocks
from spindle.controlplane.clock import Clock
from spindle.controlplane.config import ServerConfig
from spindle.controlplane.errors import NotFound, Unavailable
from spindle.controlplane.matching import Matching, TaskQueue, TaskRef
from spindle.controlplane.namespaces import NamespaceRegistry
from spindle.controlplane.store import (
    CurrentRow,
    BacklogTask,
    ExecutionRow,
    Mutation,
    ShardOwnershipLostError,
    Store,
    StoreError,
    StoreUnavailableError,
    TimerTask,
    TransferTask,
)

from ._outstanding import OutstandingTasks, RunKey
from ._mutable_state import MutableState
from ._tasks import TM_WORKFLOW_TASK_TIMEOUT, Task
from ._txn import Txn

if TYPE_CHECKING:
    pass

log = logging.getLogger("spindle.history")


class Shard:
    """A shard this process owns: its fencing token and task-id allocator."""

    def __init__(self, shard_id: int, range_id: int) -> None:
        self.shard_id = shard_id
        self.range_id = range_id
        self._seq = 0
        self.timer_heap: list[tuple[int, int, Task]] = []
        self.timer_loaded_until = 0
        #: Upper bound of the window load in flight (a timer committed meanwhile may be missed by its read).
        self.timer_loading_until = 0
        self.timer_cursor: tuple[int, int] = (0, 0)
        self.timer_wake = asyncio.Event()
        self.acks: list[int] = []  # transfer task ids done, deleted in the next ack batch
        self.timer_acks: list[tuple[int, int]] = []
        self.visibility: list[Any] = []
        #: (namespace_id, run_id) -> history length of running runs, written with the next ack batch
        #: (coalesced: one row update per run and batch, not a write per workflow task).
        self.history_lengths: dict[tuple[str, str], int] = {}

    def next_task_id(self) -> int:
        self._seq += 1
        return (self.range_id << 32) | self._seq


class _Shards(dict[int, Shard]):
    """Owned shards by id; indexing a shard this process does not own raises Unavailable (retryable)."""

    def __missing__(self, shard_id: int) -> Shard:
        raise Unavailable(f"shard {shard_id} is not owned by this process (it moved); retry")


class EngineCore:
    """State, locking, commit and background loops shared by every engine operation."""

    def __init__(self, store: Store, config: ServerConfig, clock: Clock, namespaces: NamespaceRegistry) -> None:
        self.store = store
        self.config = config
        self.clock = clock
        self.namespaces = namespaces
        self.matching = Matching(persist=self._persist_backlog)
        self.shards: dict[int, Shard] = _Shards()
        #: Per-shard timer loops (a cluster member adds and removes shards at runtime).
        self._shard_loops: dict[int, asyncio.Task[None]] = {}
        #: Cluster hook: called with a shard id when a write finds the shard's range_id
        #: moved on (another process took it). None in a single process.
        self.shard_lost_hook: Callable[[int], None] | None = None
        self._cache: collections.OrderedDict[tuple[str, str, str], MutableState] = collections.OrderedDict()
        self._current: collections.OrderedDict[tuple[str, str], str] = collections.OrderedDict()
        self._locks = KeyedLocks()  # per (namespace id, workflow id)
        self._loops: list[asyncio.Task[None]] = []
        self._background: set[asyncio.Task[Any]] = set()
        self._stopping = False
        self.identity = "spindle-history"
        #: Workflow/activity tasks handed to workers and not finished (the time-skipping clock waits for them).
        self.outstanding = OutstandingTasks(self._outstanding_changed)
        self.in_flight = 0  # commits and timer firings under way (the time-skipping clock waits for zero)
        self.due_timers = 0  # timers popped as due and not yet written
        self._pending_wt: dict[tuple[str, str, str, int], float] = {}
        self._admit_waiters: collections.deque[asyncio.Future[None]] = collections.deque()
        self._admitting = 0
        self._pollers: dict[str, float] = {}  # workflow-task poller identity -> last poll (loop time)
        # Workflow-task start nonces: unique per engine instance, so a restarted or new owner
        # never accepts an answer to a start it did not make, and knows which starts were not its.
        self._nonce_prefix = uuid.uuid4().hex[:8]
        self._nonces = itertools.count(1)

    def _outstanding_changed(self, total: int) -> None:
        pass  # the engine tells its listeners (HistoryEngine.on_outstanding)

    @staticmethod
    def run_key(st: MutableState) -> RunKey:
        return (st.namespace_id, st.workflow_id, st.run_id)

    def next_nonce(self) -> str:
        """A new workflow-task start nonce (its first 8 characters name this engine instance)."""
        return f"{self._nonce_prefix}{next(self._nonces):x}"

    def issued_here(self, nonce: str) -> bool:
        """Whether this engine instance made the start that ``nonce`` names."""
        return nonce.startswith(self._nonce_prefix)

    # ------------------------------------------------------------------ lifecycle
    async def start(self, shard_ids: Iterable[int] | None = None) -> None:
        """Acquire ``shard_ids`` (default: every shard) and start the background loops.

        A cluster member passes ``()`` and then adds the shards its leases give it
        with ``add_shard`` (spindle.controlplane.cluster).
        """
        for shard_id in range(self.config.num_shards) if shard_ids is None else shard_ids:
            range_id = await self.store.acquire_shard(shard_id, self.identity)
            self.shards[shard_id] = Shard(shard_id, range_id)
        if self.shards:
            for queue_key in await self.store.list_backlog_queues():
                await self._load_backlog(*queue_key)
        for shard in self.shards.values():
            await self._recover_transfer(shard)
            self._shard_loops[shard.shard_id] = asyncio.create_task(self._timer_loop(shard), name=f"timers-{shard.shard_id}")
        self._loops.append(asyncio.create_task(self._ack_loop(), name="acks"))

    async def add_shard(self, shard_id: int, range_id: int) -> None:
        """Start serving a shard whose ownership was just taken with ``range_id`` (cluster leases).

        Loads its backlog and unacknowledged transfer tasks and starts its timer loop.
        Cached state of the shard's executions is dropped first: another process may
        have changed them while this one did not own the shard.
        """
        if shard_id in self.shards:
            await self.remove_shard(shard_id)
        self._forget_shard_state(shard_id)
        shard = Shard(shard_id, range_id)
        self.shards[shard_id] = shard
        for queue_key in await self.store.list_backlog_queues():
            await self._load_backlog(*queue_key, shard_id=shard_id)
        await self._recover_transfer(shard)
        self._shard_loops[shard_id] = asyncio.create_task(self._timer_loop(shard), name=f"timers-{shard_id}")

    async def remove_shard(self, shard_id: int) -> None:
        """Stop serving a shard (lease lost or handed over): stop its timers, forget its cached state and queued tasks.

        Writes still in flight for it fail on the store's range_id check, so nothing the
        new owner does is overwritten.
        """
        shard = self.shards.pop(shard_id, None)
        loop = self._shard_loops.pop(shard_id, None)
        if loop is not None:
            loop.cancel()
            try:
                await loop
            except (asyncio.CancelledError, Exception):  # noqa: BLE001 - it is going away
                pass
        if shard is not None and (shard.acks or shard.timer_acks or shard.visibility or shard.history_lengths):
            m = Mutation(shard_id=shard_id, range_id=shard.range_id, transfer_delete=shard.acks,
                         timer_delete=shard.timer_acks, visibility=shard.visibility,
                         visibility_history_length=[(ns, rid, n) for (ns, rid), n in shard.history_lengths.items()])
            try:
                await self.store.apply(m)  # fenced: refused if the shard already moved (then redone by the new owner)
            except StoreError:
                pass
        self._forget_shard_state(shard_id)

    def _forget_shard_state(self, shard_id: int) -> None:
        for key in [k for k, st in self._cache.items() if st.shard_id == shard_id]:
            del self._cache[key]
        for ckey in [k for k in self._current if self.shard_id_of(*k) == shard_id]:
            del self._current[ckey]
        for q in self.matching.queues():
            kept = [r for r in q.tasks if self.shard_id_of(r.namespace_id, r.workflow_id) != shard_id]
            if len(kept) != len(q.tasks):
                q.tasks.clear()
                q.tasks.extend(kept)

    async def stop(self) -> None:
        self._stopping = True
        self._loops.extend(self._shard_loops.values())
        self._shard_loops.clear()
        for t in self._loops:
            t.cancel()
        for t in self._loops:
            try:
                await t
            except (asyncio.CancelledError, Exception):  # noqa: BLE001
                pass
        await self._flush_acks()
        for t in list(self._background):
            t.cancel()
        self._loops.clear()

    def spawn(self, coro: Any) -> None:
        t = asyncio.ensure_future(coro)
        self._background.add(t)
        t.add_done_callback(self._task_done)

    def _task_done(self, t: "asyncio.Task[Any]") -> None:
        self._background.discard(t)
        if not t.cancelled() and t.exception() is not None and not self._stopping:
            log.error("background task failed", exc_info=t.exception())

    # ------------------------------------------------------------------ routing
    def shard_id_of(self, namespace_id: str, workflow_id: str) -> int:
        """The shard a workflow id hashes to (fixed for the life of the database)."""
        return zlib.crc32(f"{namespace_id}/{workflow_id}".encode()) % self.config.num_shards

    def shard_for(self, namespace_id: str, workflow_id: str) -> Shard:
        sid = self.shard_id_of(namespace_id, workflow_id)
        shard = self.shards.get(sid)
        if shard is None:
            raise Unavailable(f"shard {sid} is not owned by this process")
        return shard

    @asynccontextmanager
    async def locked(self, namespace_id: str, workflow_id: str) -> AsyncIterator[None]:
        """Serialize every change to the runs of one workflow id."""
        async with self._locks.get((namespace_id, workflow_id)):
            yield

    # ------------------------------------------------------------------ cache
    async def current_run_id(self, namespace_id: str, workflow_id: str) -> str | None:
        key = (namespace_id, workflow_id)
        rid = self._current.get(key)
        if rid is not None:
            self._current.move_to_end(key)
            return rid
        row = await self.store.get_current(namespace_id, workflow_id)
        if row is None:
            return None
        self._remember_current(namespace_id, workflow_id, row.run_id)
        return row.run_id

    def _remember_current(self, namespace_id: str, workflow_id: str, run_id: str) -> None:
        self._current[(namespace_id, workflow_id)] = run_id
        self._current.move_to_end((namespace_id, workflow_id))
        while len(self._current) > self.config.execution_cache_size:
            self._current.popitem(last=False)

    async def load(self, namespace_id: str, workflow_id: str, run_id: str) -> MutableState | None:
        """The run's state (caller holds the workflow id's lock); None if there is no such run."""
        key = (namespace_id, workflow_id, run_id)
        st = self._cache.get(key)
        if st is not None:
            self._cache.move_to_end(key)
            return st
        loaded = await self.store.load_execution(namespace_id, workflow_id, run_id)
        if loaded is None:
            return None
        ns = self.namespaces.by_id(namespace_id)
        st = MutableState.rebuild(namespace_id, ns.name if ns else "", workflow_id, run_id, loaded.row.shard_id,
                                  events=loaded.events, buffered=loaded.buffered,
                                  activity_state=loaded.row.activity_state, db_version=loaded.row.db_version)
        self.cache_put(st)
        return st

    async def start_request_id(self, st: MutableState) -> str:
        """The request id that started ``st`` (kept on the current-run row; read once after a restart)."""
        rid = st.start_request_id
        if rid is None:
            row = await self.store.get_current(st.namespace_id, st.workflow_id)
            rid = row.start_request_id if row is not None and row.run_id == st.run_id else ""
            st.start_request_id = rid
        return rid

    def cache_put(self, st: MutableState) -> None:
        key = (st.namespace_id, st.workflow_id, st.run_id)
        self._cache[key] = st
        self._cache.move_to_end(key)
        if len(self._cache) > self.config.execution_cache_size:
            # evict the least recently used runs that nobody is working on
            for k in list(self._cache.keys())[: len(self._cache) - self.config.execution_cache_size]:
                old = self._cache[k]
                wt = old.workflow_task
                busy = self._locks.held((k[0], k[1])) or old.pending_updates or (wt is not None and wt.started) \
                    or any(a.started for a in old.activities.values())
                if not busy:
                    del self._cache[k]

    def evict(self, st: MutableState) -> None:
        self._cache.pop((st.namespace_id, st.workflow_id, st.run_id), None)
        # Long polls (history with wait_new_event: handle.result()) wait on this object's
        # `changed` event; nothing will notify a dropped state, so wake them now to reload.
        st.notify()

    async def resolve(self, namespace_id: str, workflow_id: str, run_id: str) -> MutableState:
        """Load a run (current run when run_id is empty); NotFound if missing. Caller holds the lock."""
        if not run_id:
            rid = await self.current_run_id(namespace_id, workflow_id)
            if rid is None:
                raise NotFound(f"workflow_execution: workflow {workflow_id!r} not found")
            run_id = rid
        st = await self.load(namespace_id, workflow_id, run_id)
        if st is None:
            raise NotFound(f"workflow_execution: workflow {workflow_id!r} run {run_id!r} not found")
        return st

    # ------------------------------------------------------------------ commit
    def exec_row(self, st: MutableState) -> ExecutionRow:
        return ExecutionRow(
            namespace_id=st.namespace_id, workflow_id=st.workflow_id, run_id=st.run_id, shard_id=st.shard_id,
            status=st.status, next_event_id=st.next_event_id, db_version=st.db_version + 1,
            workflow_type=st.workflow_type, task_queue=st.task_queue, start_time_ms=st.start_time_ms,
            close_time_ms=st.close_time_ms, activity_state=st.activity_retry_state() if st.running else b"",
        )

    def _task_rows(self, shard: Shard, txn_transfer: list[Task], txn_timers: list[Task]) -> tuple[list[TransferTask], list[TimerTask]]:
        transfer = []
        for t in txn_transfer:
            t.task_id = shard.next_task_id()
            transfer.append(TransferTask(t.task_id, t.encode()))
        timers = []
        for t in txn_timers:
            t.task_id = shard.next_task_id()
            timers.append(TimerTask(t.fire_time_ms, t.task_id, t.encode()))
        return transfer, timers

    async def commit(self, txn: Txn, *, new: bool = False, current_expect: str | None = None) -> None:
        """Write ``txn`` in one transaction and run its after-commit effects.

        Raises Unavailable (nothing written; the state is evicted) when the store refuses.
        Cancelling the caller (a client cancels its RPC, the member that forwarded it dies)
        does not cancel the commit: the write may already be on its way to the store, and
        what it scheduled (a workflow task, a child start, a timer) is dispatched only by the
        after-commit effects. Cancelled mid-way, the write landed but nothing was dispatched
        until a restart, and the cached state no longer matched the store. The caller sees
        its CancelledError only once the commit has finished, so the workflow's lock is held
        until then.
        """
        if not new:
            self.enforce_history_limit(txn)
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
        st = txn.state
        shard = self.shards[st.shard_id]
        transfer, timers = self._task_rows(shard, txn.transfer, txn.timers)
        m = Mutation(shard_id=shard.shard_id, range_id=shard.range_id)
        if txn.events or new or txn.current_status is not None or txn.buffered or txn.clear_buffered or txn.row_changed:
            m.execution = self.exec_row(st)
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
            start_req = txn.start_request_id or await self.start_request_id(st)
            m.current = CurrentRow(st.namespace_id, st.workflow_id, st.run_id, st.status, start_req)
            m.current_expect = current_expect
        if txn.new_run is not None:
            nst, nevents, ntransfer, ntimers = txn.new_run
            ntr, ntm = self._task_rows(shard, ntransfer, ntimers)
            m2 = Mutation(shard_id=shard.shard_id, range_id=shard.range_id)
            m2.execution = self.exec_row(nst)
            m2.expected_version = None
            m2.events = [(e.event_id, e.SerializeToString()) for e in nevents]
            m2.transfer_insert = ntr
            m2.timer_insert = ntm
            m2.current = CurrentRow(nst.namespace_id, nst.workflow_id, nst.run_id, nst.status, txn.new_run_request_id)
            m2.current_expect = st.run_id
            m.current = None
            m.also.append(m2)
        if not m.is_empty():
            self.in_flight += 1
            try:
                await self.store.apply(m)
            except ShardOwnershipLostError as e:
                self.evict(st)
                if self.shard_lost_hook is not None:
                    self.shard_lost_hook(shard.shard_id)  # cluster: stop serving it now
                raise Unavailable(f"shard {shard.shard_id} moved to another owner; retry: {e}") from e
            except StoreError as e:
                self.evict(st)
                if txn.new_run is not None:
                    self.evict(txn.new_run[0])
                if isinstance(e, StoreUnavailableError):
                    # The outcome may be unknown (committed, reply lost): pick up the tasks the
                    # write made if it did commit, as a restart would; else they wait for one.
                    transfer_tasks = list(txn.transfer) + (list(txn.new_run[2]) if txn.new_run else [])
                    timer_tasks = list(txn.timers) + (list(txn.new_run[3]) if txn.new_run else [])
                    if transfer_tasks or timer_tasks:
                        self.spawn(self._pick_up_if_written(shard, transfer_tasks, timer_tasks))
                if isinstance(e, StoreUnavailableError) and e.outcome_unknown:
                    raise Unavailable(f"the write's outcome is unknown (it may have committed); retrying with the "
                                      f"same request id is safe: {e}") from e
                raise Unavailable(f"the store refused the write; nothing was changed: {e}") from e
            finally:
                self.in_flight -= 1
        if m.execution is not None:
            st.db_version += 1
        if txn.new_run is not None:
            nst = txn.new_run[0]
            nst.db_version += 1
            self.cache_put(nst)
            self._remember_current(nst.namespace_id, nst.workflow_id, nst.run_id)
        elif new:
            self._remember_current(st.namespace_id, st.workflow_id, st.run_id)
        if txn.clear_buffered:
            st.buffered.clear()
        st.notify()
        for t in txn.transfer:
            self.process_transfer(shard, t)
        for t in txn.timers:
            self.arm_timer(shard, t)
        if txn.new_run is not None:
            for t in txn.new_run[2]:
                self.process_transfer(shard, t)
            for t in txn.new_run[3]:
                self.arm_timer(shard, t)
        for fn in txn.after_commit:
            fn()

    async def _pick_up_if_written(self, shard: Shard, transfer: list[Task], timers: list[Task]) -> None:
        """After a failed write: process its transfer tasks and arm its timers if they are in the store."""
        try:
            for t in transfer:
                rows = await self.store.load_transfer_tasks(shard.shard_id, t.task_id - 1, 1)
                if rows and rows[0].task_id == t.task_id and self.shards.get(shard.shard_id) is shard:
                    self.process_transfer(shard, t)
            for t in timers:
                found = await self.store.load_timer_tasks(shard.shard_id, t.fire_time_ms + 1,
                                                          (t.fire_time_ms, t.task_id - 1), 1)
                if found and found[0].task_id == t.task_id and self.shards.get(shard.shard_id) is shard:
                    self.arm_timer(shard, t)
        except StoreError as e:
            log.warning("could not check the tasks of a failed write (a restart picks them up): %s", e)

    def apply_background(self, m: Mutation) -> None:
        """Write a mutation whose outcome nobody waits for (task-start bookkeeping, acks)."""
        if m.is_empty():
            return

        async def run() -> None:
            try:
                await self.store.apply(m)
            except StoreError as e:
                log.warning("background write failed (it will be redone after recovery): %s", e)

        self.spawn(run())

    # ------------------------------------------------------------------ transfer queue
    def process_transfer(self, shard: Shard, t: Task) -> None:
        raise NotImplementedError  # provided by the task processing module

    def enforce_history_limit(self, txn: Txn) -> None:
        raise NotImplementedError  # provided by the workflow task module

    async def _recover_transfer(self, shard: Shard) -> None:
        after = 0
        while True:
            rows = await self.store.load_transfer_tasks(shard.shard_id, after, 1000)
            if not rows:
                break
            for r in rows:
                after = r.task_id
                t = Task.decode(r.data, task_id=r.task_id)
                self.process_transfer(shard, t)

    def note_history_length(self, st: MutableState) -> None:
        """Queue ``st``'s history length for its visibility row, with the shard's next ack batch.

        Visibility rows are written when a run starts, upserts search attributes and
        closes; without this ``list_workflows`` kept showing a running run's length at its
        start. Coalesced per run and batch, so it adds no write per event or per task.
        """
        shard = self.shards.get(st.shard_id)
        if shard is not None and st.running:
            shard.history_lengths[(st.namespace_id, st.run_id)] = st.next_event_id - 1

    def ack_transfer(self, shard_id: int, task_id: int) -> None:
        shard = self.shards.get(shard_id)
        if shard is not None:
            shard.acks.append(task_id)

    async def _ack_loop(self) -> None:
        while True:
            await asyncio.sleep(0.05)
            await self._flush_acks()

    async def _flush_acks(self) -> None:
        for shard in self.shards.values():
            if not (shard.acks or shard.timer_acks or shard.visibility or shard.history_lengths):
                continue
            m = Mutation(shard_id=shard.shard_id, range_id=shard.range_id)
            m.transfer_delete, shard.acks = shard.acks, []
            m.timer_delete, shard.timer_acks = shard.timer_acks, []
            m.visibility, shard.visibility = shard.visibility, []
            lengths, shard.history_lengths = shard.history_lengths, {}
            m.visibility_history_length = [(ns, rid, n) for (ns, rid), n in lengths.items()]
            try:
                await self.store.apply(m)
            except StoreError as e:
                # Put the batch back for the next flush (deletes are idempotent; visibility rows are
                # upserts kept in order, so a newer row of a run still wins; history lengths only
                # rise). Dropping it left visibility stale (a completed run listed as running)
                # until a restart.
                shard.acks[:0] = m.transfer_delete
                shard.timer_acks[:0] = m.timer_delete
                shard.visibility[:0] = m.visibility
                for key, n in lengths.items():
                    shard.history_lengths[key] = max(n, shard.history_lengths.get(key, 0))
                log.warning("ack batch failed; retried with the next one: %s", e)

    # ------------------------------------------------------------------ matching glue
    def source_ack(self, ref: TaskRef, m: Mutation) -> None:
        """Add the write that acknowledges where ``ref`` came from to ``m``."""
        src = ref.source
        if not src:
            return
        if src[0] == "t":
            if src[1] == m.shard_id:
                m.transfer_delete.append(src[2])
            else:
                self.ack_transfer(src[1], src[2])
        elif src[0] == "b":
            m.backlog_delete.append((src[1], src[2], src[3], src[4], src[5]))
        ref.source = None

    async def _persist_backlog(self, ref: TaskRef, q: TaskQueue) -> None:
        shard = self.shard_for(ref.namespace_id, ref.workflow_id)
        task_id = shard.next_task_id()
        data = Task("bl", ref.namespace_id, ref.workflow_id, ref.run_id, ref.event_id, ref.attempt).encode()
        m = Mutation(shard_id=shard.shard_id, range_id=shard.range_id)
        src = ref.source
        m.backlog_insert = [BacklogTask(ref.namespace_id, q.name, q.kind, shard.shard_id, task_id, data)]
        if src and src[0] == "t":
            m.transfer_delete.append(src[2]) if src[1] == shard.shard_id else self.ack_transfer(src[1], src[2])
        ref.source = ("b", ref.namespace_id, q.name, q.kind, shard.shard_id, task_id)
        try:
            await self.store.apply(m)
        except StoreError as e:
            ref.source = src
            log.warning("could not persist a backlog task (it stays in the transfer queue): %s", e)

    async def _load_backlog(self, namespace_id: str, queue_name: str, kind: int, shard_id: int | None = None) -> None:
        """Queue a task queue's backlog rows of ``shard_id`` (default: of every shard this process owns)."""
        rows = await self.store.load_backlog(namespace_id, queue_name, kind, 100_000)
        for r in rows:
            if (r.shard_id != shard_id) if shard_id is not None else (r.shard_id not in self.shards):
                continue
            t = Task.decode(r.data)
            ref = TaskRef(kind, t.namespace_id, t.workflow_id, t.run_id, t.event_id, t.attempt,
                          ("b", namespace_id, queue_name, kind, r.shard_id, r.task_id))
            self.matching.queue(namespace_id, queue_name, kind).push(ref)

    # ------------------------------------------------------------------ timers
    def arm_timer(self, shard: Shard, t: Task) -> None:
        """Hold a just-committed timer in memory if it is due within the preload window."""
        if t.fire_time_ms < max(shard.timer_loaded_until, shard.timer_loading_until):
            heapq.heappush(shard.timer_heap, (t.fire_time_ms, t.task_id, t))
            if shard.timer_heap[0][2] is t:
                shard.timer_wake.set()

    def new_timer(self, txn: Txn, kind: str, fire_time_ms: int, *, event_id: int = 0, attempt: int = 0, sub: str = "",
                  extra: dict[str, Any] | None = None) -> Task:
        st = txn.state
        t = Task(kind, st.namespace_id, st.workflow_id, st.run_id, event_id, attempt, sub, extra or {}, fire_time_ms=fire_time_ms)
        txn.timers.append(t)
        return t

    async def _timer_loop(self, shard: Shard) -> None:
        window_ms = int(self.config.timer_preload_window * 1000)
        while True:
            try:
                now = self.clock.now_ms()
                if now + window_ms // 2 >= shard.timer_loaded_until:
                    until = now + window_ms
                    shard.timer_loading_until = until  # arm_timer holds what commits during the reads
                    while True:
                        rows = await self.store.load_timer_tasks(shard.shard_id, until, shard.timer_cursor, 2000)
                        known = {tid for _, tid, _ in shard.timer_heap}
                        for r in rows:
                            shard.timer_cursor = (r.fire_time_ms, r.task_id)
                            if r.task_id not in known:
                                t = Task.decode(r.data, task_id=r.task_id, fire_time_ms=r.fire_time_ms)
                                heapq.heappush(shard.timer_heap, (self._due_at(t, now), r.task_id, t))
                        if len(rows) < 2000:
                            break
                    shard.timer_loaded_until = until
                now = self.clock.now_ms()
                due: list[Task] = []
                while shard.timer_heap and shard.timer_heap[0][0] <= now:
                    due.append(heapq.heappop(shard.timer_heap)[2])
                if due:
                    # Fire without waiting for the batch: a timer that falls due meanwhile is not
                    # held back by the commits of the previous ones.
                    self.due_timers += len(due)
                    for t in due:
                        self.in_flight += 1
                        self.spawn(self._fire_timer(shard, t))
                    continue
                next_fire = shard.timer_heap[0][0] if shard.timer_heap else shard.timer_loaded_until - window_ms // 2
                shard.timer_wake.clear()
                await self.clock.wait_until(min(next_fire, shard.timer_loaded_until - window_ms // 2), shard.timer_wake)
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - keep the loop alive; the timer stays in the store
                log.exception("timer loop error on shard %s", shard.shard_id)
                await asyncio.sleep(0.5)

    def _due_at(self, t: Task, now_ms: int) -> int:
        """When a timer read from the store is handled: its fire time, or now for a dead start's timeout.

        A workflow task started by another process (one that crashed, or the shard's previous
        owner) can never be completed: its worker's answer names a start this engine did not
        make. Its timeout is handled at once (the task is offered again) instead of after the
        rest of the task timeout (for timeouts inside the timer preload window, 30 s by default).
        """
        if t.kind == TM_WORKFLOW_TASK_TIMEOUT and not self.issued_here(str(t.extra.get("n", ""))):
            return min(t.fire_time_ms, now_ms)
        return t.fire_time_ms

    async def _fire_timer(self, shard: Shard, t: Task) -> None:
        try:
            await self.handle_timer(shard, t)
        except Exception as e:  # noqa: BLE001 - retried on the next load of the shard's timers
            log.warning("timer %s for %s failed: %s; retrying in 1 s", t.kind, t.workflow_id, e)
            # (only the heap key moves: fire_time_ms is half of the row's key, which deletes it)
            heapq.heappush(shard.timer_heap, (self.clock.now_ms() + 1000, t.task_id, t))
        finally:
            self.in_flight -= 1
            self.due_timers = max(0, self.due_timers - 1)
            self._release_admission()

    @asynccontextmanager
    async def admit_start(self) -> AsyncIterator[None]:
        """Back-pressure on new starts: work of running executions goes first.

        A start waits (at most ``start_admission_wait`` seconds, first come first served)
        while timers are due but not yet written, or while ``start_admission_max_pending``
        workflow tasks are scheduled and unfinished, so that a burst of starts cannot queue
        in front of the timers, signals and results of executions already running.
        """
        if self._admit_waiters or not self._can_admit():
            fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._admit_waiters.append(fut)
            try:
                await asyncio.wait_for(asyncio.shield(fut), self.config.start_admission_wait)
            except asyncio.TimeoutError:
                pass
            finally:
                if not fut.done():
                    fut.cancel()
                    try:
                        self._admit_waiters.remove(fut)
                    except ValueError:
                        pass
        self._admitting += 1
        try:
            yield
        finally:
            self._admitting -= 1
            self._release_admission()

    def _can_admit(self) -> bool:
        if self.due_timers:
            return False
        return len(self._pending_wt) + self._admitting < self._admission_limit()

    def note_workflow_poller(self, identity: str) -> None:
        """A worker polled for workflow tasks: the admission limit scales with live workers."""
        self._pollers[identity] = asyncio.get_running_loop().time()

    def _admission_limit(self) -> int:
        cfg = self.config
        now = asyncio.get_running_loop().time()
        if len(self._pollers) > 1000:  # forget workers not seen for a while
            for k in [k for k, t in self._pollers.items() if now - t > 120]:
                del self._pollers[k]
        workers = sum(1 for t in self._pollers.values() if now - t <= 120)
        return max(cfg.start_admission_max_pending, cfg.start_admission_per_worker * workers)

    def _release_admission(self) -> None:
        if not self._admit_waiters:
            return
        self._purge_pending_wt()
        while self._admit_waiters and self._can_admit():
            fut = self._admit_waiters.popleft()
            if not fut.done():
                fut.set_result(None)
                self._admitting += 1  # reserved until the waiter runs (it takes its own slot)
                asyncio.get_running_loop().call_soon(self._unreserve)

    def _unreserve(self) -> None:
        self._admitting -= 1

    def workflow_task_scheduled(self, key: tuple[str, str, str, int]) -> None:
        self._pending_wt[key] = asyncio.get_running_loop().time()

    def workflow_task_done(self, key: tuple[str, str, str, int]) -> None:
        if self._pending_wt.pop(key, None) is not None:
            self._release_admission()

    def _purge_pending_wt(self) -> None:
        # A task lost without a trace (it will time out) must not block starts for long.
        if not self._pending_wt:
            return
        old = asyncio.get_running_loop().time() - self.config.start_admission_wait * 10
        stale = [k for k, t in self._pending_wt.items() if t < old]
        for k in stale:
            del self._pending_wt[k]

    async def handle_timer(self, shard: Shard, t: Task) -> None:
        raise NotImplementedError  # provided by the task processing module

    def timer_done(self, t: Task, txn: Txn | None = None) -> None:
        """Delete a processed timer's row (with the txn, or in the next ack batch)."""
        key = (t.fire_time_ms, t.task_id)
        if txn is not None:
            txn.timer_delete.append(key)
        else:
            shard = self.shard_for(t.namespace_id, t.workflow_id)
            shard.timer_acks.append(key)


async def _finish_despite_cancellation(task: "asyncio.Future[Any]") -> None:
    """Wait until ``task`` is done, however often the waiter is cancelled meanwhile (its outcome is dropped)."""
    while not task.done():
        try:
            await asyncio.wait([task])
        except asyncio.CancelledError:
            continue
    if not task.cancelled():
        task.exception()  # retrieved: the caller is gone, the commit logged or evicted what it had to
