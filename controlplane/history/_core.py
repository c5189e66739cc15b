"""The history engine's machinery, composed of its parts (interim: the operations still reach it through ``self``).

Operations (starting, signalling, completing tasks, ...) live in the sibling modules
and all follow one pattern: take the workflow id's lock, load the run's state (cache
or store), build a ``Txn``, ``commit`` it (one store transaction fenced by the shard's
range_id), then run the after-commit effects (dispatch tasks, arm timers, wake long
polls). A failed commit evicts the state so nothing half-applied is ever reused.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Iterable
from typing import Any

from spindle.controlplane.clock import Clock
from spindle.controlplane.config import ServerConfig
from spindle.controlplane.matching import Matching
from spindle.controlplane.namespaces import NamespaceRegistry
from spindle.controlplane.store import Mutation, Store

from ._admission import StartAdmission
from ._background import Background
from ._backlog import Backlog
from ._cache import ExecutionCache
from ._commit import Committer
from ._mutable_state import MutableState
from ._outstanding import OutstandingTasks, RunKey
from ._shard import Shard, ShardController
from ._tasks import TM_WORKFLOW_TASK_TIMEOUT, Task
from ._timer_queue import TimerQueue
from ._tokens import StartNonces
from ._transfer_queue import TransferQueue
from ._txn import Txn


class EngineCore:
    """State, locking, commit and background loops shared by every engine operation."""

    def __init__(self, store: Store, config: ServerConfig, clock: Clock, namespaces: NamespaceRegistry) -> None:
        self.store = store
        self.config = config
        self.clock = clock
        self.namespaces = namespaces
        self.background = Background()
        self.admission = StartAdmission(config, self.background)
        self.cache = ExecutionCache(store, namespaces, config.execution_cache_size)
        self._shards = ShardController(store, config.num_shards, self._open_shard)
        self.shards = self._shards.shards
        self.backlog = Backlog(store, self._shards)
        self.matching = Matching(persist=self.backlog.persist)
        self.committer = Committer(store, self._shards, self.cache, self.background,
                                   lambda txn: self.enforce_history_limit(txn))
        self.identity = "spindle-history"
        #: Workflow/activity tasks handed to workers and not finished (the time-skipping clock waits for them).
        self.outstanding = OutstandingTasks(self._outstanding_changed)
        self.nonces = StartNonces()

    def _open_shard(self, shard_id: int, range_id: int, movable: bool) -> Shard:
        def queues(shard: Shard) -> tuple[TransferQueue, TimerQueue]:
            return (TransferQueue(shard_id, self.store, functools.partial(self.process_transfer, shard)),
                    TimerQueue(shard_id, self.store, self.clock, self.config.timer_preload_window,
                               fire=functools.partial(self.handle_timer, shard), due_at=self._due_at,
                               background=self.background, on_fired=self.admission.release))

        return Shard(shard_id, range_id, queues, movable=movable)

    @property
    def shard_lost_hook(self) -> Callable[[int], None] | None:
        return self._shards.lost_hook

    @shard_lost_hook.setter
    def shard_lost_hook(self, hook: Callable[[int], None] | None) -> None:
        self._shards.lost_hook = hook

    @property
    def in_flight(self) -> int:
        return self.background.in_flight

    def _outstanding_changed(self, total: int) -> None:
        pass  # the engine tells its listeners (HistoryEngine.on_outstanding)

    @staticmethod
    def run_key(st: MutableState) -> RunKey:
        return (st.namespace_id, st.workflow_id, st.run_id)

    def next_nonce(self) -> str:
        return self.nonces.new()

    def issued_here(self, nonce: str) -> bool:
        return self.nonces.issued_here(nonce)

    # ------------------------------------------------------------------ lifecycle
    async def start(self, shard_ids: Iterable[int] | None = None) -> None:
        """Acquire ``shard_ids`` (default: every shard) and start the background loops."""
        for shard_id in range(self.config.num_shards) if shard_ids is None else shard_ids:
            await self._shards.acquire(shard_id, self.identity)
        if self.shards:
            await self.backlog.load(self.matching)
        for shard in list(self.shards.values()):
            await shard.transfer.recover()
            shard.timers.start()
        self._shards.start()

    async def add_shard(self, shard_id: int, range_id: int) -> None:
        """Start serving a shard whose ownership was just taken with ``range_id`` (cluster leases)."""
        if shard_id in self.shards:
            await self.remove_shard(shard_id)
        self._forget_shard_state(shard_id)
        shard = self._shards.open(shard_id, range_id, movable=True)
        await self.backlog.load(self.matching, shard_id)
        await shard.transfer.recover()
        shard.timers.start()

    async def remove_shard(self, shard_id: int) -> None:
        """Stop serving a shard (lease lost or handed over)."""
        await self._shards.close(shard_id)
        self._forget_shard_state(shard_id)

    def _forget_shard_state(self, shard_id: int) -> None:
        self.cache.forget_shard(shard_id, self._shards.shard_id_of)
        self.backlog.forget_shard(self.matching, shard_id)

    async def stop(self) -> None:
        self.background.stopping = True
        await self._shards.stop()
        self.background.cancel_all()

    def spawn(self, coro: Any) -> None:
        self.background.spawn(coro)

    # ------------------------------------------------------------------ routing
    def shard_id_of(self, namespace_id: str, workflow_id: str) -> int:
        return self._shards.shard_id_of(namespace_id, workflow_id)

    def shard_for(self, namespace_id: str, workflow_id: str) -> Shard:
        return self._shards.shard_for(namespace_id, workflow_id)

    def locked(self, namespace_id: str, workflow_id: str) -> asyncio.Lock:
        return self.cache.locked(namespace_id, workflow_id)

    # ------------------------------------------------------------------ cache
    async def current_run_id(self, namespace_id: str, workflow_id: str) -> str | None:
        return await self.cache.current_run_id(namespace_id, workflow_id)

    async def load(self, namespace_id: str, workflow_id: str, run_id: str) -> MutableState | None:
        return await self.cache.load(namespace_id, workflow_id, run_id)

    async def start_request_id(self, st: MutableState) -> str:
        return await self.cache.start_request_id(st)

    def cache_put(self, st: MutableState) -> None:
        self.cache.put(st)

    def evict(self, st: MutableState) -> None:
        self.cache.evict(st)

    async def resolve(self, namespace_id: str, workflow_id: str, run_id: str) -> MutableState:
        return await self.cache.resolve(namespace_id, workflow_id, run_id)

    # ------------------------------------------------------------------ commit
    async def commit(self, txn: Txn, *, new: bool = False, current_expect: str | None = None) -> None:
        await self.committer.commit(txn, new=new, current_expect=current_expect)

    def apply_background(self, m: Mutation) -> None:
        self.committer.apply_background(m)

    # ------------------------------------------------------------------ transfer queue
    def process_transfer(self, shard: Shard, t: Task) -> None:
        raise NotImplementedError  # provided by the task processing module

    def enforce_history_limit(self, txn: Txn) -> None:
        raise NotImplementedError  # provided by the workflow task module

    def note_history_length(self, st: MutableState) -> None:
        shard = self.shards.get(st.shard_id)
        if shard is not None and st.running:
            shard.history_lengths[(st.namespace_id, st.run_id)] = st.next_event_id - 1

    def source_ack(self, ref: Any, m: Mutation) -> None:
        self.backlog.source_ack(ref, m)

    # ------------------------------------------------------------------ timers
    def arm_timer(self, shard: Shard, t: Task) -> None:
        shard.timers.arm(t)

    def new_timer(self, txn: Txn, kind: str, fire_time_ms: int, *, event_id: int = 0, attempt: int = 0, sub: str = "",
                  extra: dict[str, Any] | None = None) -> Task:
        st = txn.state
        t = Task(kind, st.namespace_id, st.workflow_id, st.run_id, event_id, attempt, sub, extra or {}, fire_time_ms=fire_time_ms)
        txn.timers.append(t)
        return t

    def _due_at(self, t: Task, now_ms: int) -> int:
        if t.kind == TM_WORKFLOW_TASK_TIMEOUT and not self.issued_here(str(t.extra.get("n", ""))):
            return min(t.fire_time_ms, now_ms)
        return t.fire_time_ms

    def admit_start(self) -> Any:
        return self.admission.admit()

    def note_workflow_poller(self, identity: str) -> None:
        self.admission.note_workflow_poller(identity)

    def workflow_task_scheduled(self, key: tuple[str, str, str, int]) -> None:
        self.admission.workflow_task_scheduled(key)

    def workflow_task_done(self, key: tuple[str, str, str, int]) -> None:
        self.admission.workflow_task_done(key)

    async def handle_timer(self, shard: Shard, t: Task) -> None:
        raise NotImplementedError  # provided by the task processing module

    def timer_done(self, t: Task, txn: Txn | None = None) -> None:
        key = (t.fire_time_ms, t.task_id)
        if txn is not None:
            txn.timer_delete.append(key)
        else:
            self.shard_for(t.namespace_id, t.workflow_id).timers.done(key)
