"""The execution cache: runs' mutable state in memory, their locks, and the current run of each workflow id.

The only place that knows how runs are cached. Every operation on a run follows one
pattern: take the workflow id's lock (``locked``), get the run's state (``load`` or
``resolve``: from memory, else rebuilt from the store), change it through a ``Txn`` and
commit. A failed commit evicts the state (``evict``), so a half-applied change is never
reused; the next operation reloads it from the store.

Only runs of shards this process owns (and has opened) are loaded: ``load``, ``resolve``
and ``current_run_id`` raise ShardNotOwned before reading anything otherwise. A cluster
member lists itself as a shard's owner as soon as it claims the lease, but serves the
shard only once its engine opened it; an operation that arrived in between used to load
the run, fail its commit, and leave what it applied (a signal's request id) in memory,
where the retry found it and answered OK without writing anything.

Both maps are LRU-bounded by ``ServerConfig.execution_cache_size``; a run somebody works
on (its lock held, a task started, an update pending) is not evicted for space.
"""

from __future__ import annotations

import asyncio
import collections

from collections.abc import Callable
from typing import Any

from spindle.controlplane._keyed_locks import KeyedLocks
from spindle.controlplane.errors import NotFound
from spindle.controlplane.namespaces import NamespaceRegistry
from spindle.controlplane.store import Store

from ._mutable_state import MutableState
from ._outstanding import RunKey


class ExecutionCache:
    """Cached runs by (namespace id, workflow id, run id), current run ids, and one lock per workflow id."""

    def __init__(self, store: Store, namespaces: NamespaceRegistry, size: int,
                 require_owned: Callable[[str, str], Any]) -> None:
        """``require_owned(namespace_id, workflow_id)`` raises ShardNotOwned unless the workflow's shard is open here."""
        self._store = store
        self._require_owned = require_owned
        self._namespaces = namespaces
        self._size = size
        self._runs: collections.OrderedDict[RunKey, MutableState] = collections.OrderedDict()
        self._current: collections.OrderedDict[tuple[str, str], str] = collections.OrderedDict()
        self._locks = KeyedLocks()  # per (namespace id, workflow id)

    def locked(self, namespace_id: str, workflow_id: str) -> asyncio.Lock:
        """The lock that serializes every change to the runs of one workflow id (``async with``)."""
        return self._locks.get((namespace_id, workflow_id))

    def get(self, key: RunKey) -> MutableState | None:
        """The cached state of a run, or None (no store read; the LRU order is not touched)."""
        return self._runs.get(key)

    # ------------------------------------------------------------------ loading
    async def load(self, namespace_id: str, workflow_id: str, run_id: str) -> MutableState | None:
        """The run's state (caller holds the workflow id's lock); None if there is no such run.

        Raises ShardNotOwned (nothing read) when this process does not serve the run's shard.
        """
        self._require_owned(namespace_id, workflow_id)
        key = (namespace_id, workflow_id, run_id)
        st = self._runs.get(key)
        if st is not None:
            self._runs.move_to_end(key)
            return st
        loaded = await self._store.load_execution(namespace_id, workflow_id, run_id)
        if loaded is None:
            return None
        ns = self._namespaces.by_id(namespace_id)
        st = MutableState.rebuild(namespace_id, ns.name if ns else "", workflow_id, run_id, loaded.row.shard_id,
                                  events=loaded.events, buffered=loaded.buffered,
                                  activity_state=loaded.row.activity_state, db_version=loaded.row.db_version)
        self.put(st)
        return st

    async def resolve(self, namespace_id: str, workflow_id: str, run_id: str) -> MutableState:
        """Load a run (the current run when run_id is empty); NotFound if missing. Caller holds the lock."""
        if not run_id:
            rid = await self.current_run_id(namespace_id, workflow_id)
            if rid is None:
                raise NotFound(f"workflow_execution: workflow {workflow_id!r} not found")
            run_id = rid
        st = await self.load(namespace_id, workflow_id, run_id)
        if st is None:
            raise NotFound(f"workflow_execution: workflow {workflow_id!r} run {run_id!r} not found")
        return st

    async def start_request_id(self, st: MutableState) -> str:
        """The request id that started ``st`` (kept on the current-run row; read once after a restart)."""
        rid = st.start_request_id
        if rid is None:
            row = await self._store.get_current(st.namespace_id, st.workflow_id)
            rid = row.start_request_id if row is not None and row.run_id == st.run_id else ""
            st.start_request_id = rid
        return rid

    # ------------------------------------------------------------------ runs
    def put(self, st: MutableState) -> None:
        """Cache ``st`` as the most recently used run; evict the least recently used idle runs beyond the size."""
        key = (st.namespace_id, st.workflow_id, st.run_id)
        self._runs[key] = st
        self._runs.move_to_end(key)
        if len(self._runs) > self._size:
            # evict the least recently used runs that nobody is working on
            for k in list(self._runs.keys())[: len(self._runs) - self._size]:
                old = self._runs[k]
                wt = old.workflow_task
                busy = self._locks.held((k[0], k[1])) or old.pending_updates or (wt is not None and wt.started) \
                    or any(a.started for a in old.activities.values())
                if not busy:
                    del self._runs[k]

    def evict(self, st: MutableState) -> None:
        """Drop ``st`` (its in-memory state may not match the store); the next load rebuilds it."""
        self._runs.pop((st.namespace_id, st.workflow_id, st.run_id), None)
        # Long polls (history with wait_new_event: handle.result()) wait on this object's
        # `changed` event; nothing will notify a dropped state, so wake them now to reload.
        st.notify()

    # ------------------------------------------------------------------ current runs
    async def current_run_id(self, namespace_id: str, workflow_id: str) -> str | None:
        """The run id the workflow id's current-run row points at, or None (ShardNotOwned as ``load``)."""
        self._require_owned(namespace_id, workflow_id)
        key = (namespace_id, workflow_id)
        rid = self._current.get(key)
        if rid is not None:
            self._current.move_to_end(key)
            return rid
        row = await self._store.get_current(namespace_id, workflow_id)
        if row is None:
            return None
        self.remember_current(namespace_id, workflow_id, row.run_id)
        return row.run_id

    def remember_current(self, namespace_id: str, workflow_id: str, run_id: str) -> None:
        """The current-run row now points at ``run_id`` (after a committed start)."""
        self._current[(namespace_id, workflow_id)] = run_id
        self._current.move_to_end((namespace_id, workflow_id))
        while len(self._current) > self._size:
            self._current.popitem(last=False)

    def forget_current(self, namespace_id: str, workflow_id: str, run_id: str) -> None:
        """The run was deleted: forget it as the workflow id's current run (if it is)."""
        if self._current.get((namespace_id, workflow_id)) == run_id:
            del self._current[(namespace_id, workflow_id)]

    # ------------------------------------------------------------------ shards
    def forget_shard(self, shard_id: int, shard_id_of: Callable[[str, str], int]) -> None:
        """Drop everything cached about a shard's executions (another process may change them now)."""
        for key in [k for k, st in self._runs.items() if st.shard_id == shard_id]:
            del self._runs[key]
        for ckey in [k for k in self._current if shard_id_of(*k) == shard_id]:
            del self._current[ckey]


__all__ = ["ExecutionCache"]
