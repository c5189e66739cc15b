"""Threads that run Cloud Spanner calls for the asyncio store.

The client library is synchronous. Reads go to a small thread pool. Read-write
transactions go through one writer thread (``writers`` threads if configured): it
drains every queued mutation into as few transactions as it can (group commit, see
``_spanner_write``) and runs administrative transactions (namespaces, leases) on
their own. ``urgent`` calls jump the queue. (The store runs lease transactions on a
runner of their own, so they never wait behind history writes at all.) One writer per process also suits the emulator, which runs one
read-write transaction at a time and aborts the others.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import queue
import threading

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from ._model import ConditionFailedError, Mutation, StoreUnavailableError
from ._spanner_write import apply_batch, conflict_keys

T = TypeVar("T")
log = logging.getLogger("spindle.store.spanner")


@dataclass
class _Item:
    """One queued unit of work: a mutation, or a function run as its own transaction."""

    future: asyncio.Future[Any]
    loop: asyncio.AbstractEventLoop
    mutation: Mutation | None = None
    fn: Callable[[Any], Any] | None = None
    keys: frozenset[tuple[Any, ...]] = frozenset()
    seq: int = 0
    priority: int = 1  # 0 urgent (leases), 1 normal

    def __lt__(self, other: "_Item") -> bool:  # (ties in the priority queue never compare items; this is a guard)
        return self.seq < other.seq


def _resolve(fut: asyncio.Future[Any], value: Any, err: BaseException | None) -> None:
    if fut.done():
        return
    if err is None:
        fut.set_result(value)
    else:
        fut.set_exception(err)


def map_error(e: BaseException) -> BaseException:
    """A store error for a failed commit: a broken precondition, or unavailability."""
    from google.api_core import exceptions as gexc

    if isinstance(e, (ConditionFailedError, StoreUnavailableError)):
        return e
    if isinstance(e, (gexc.AlreadyExists, gexc.NotFound, gexc.FailedPrecondition)):
        return ConditionFailedError(f"spanner refused the write: {e}")
    return StoreUnavailableError(f"spanner write failed: {type(e).__name__}: {e}")


class TxnRunner:
    """Runs read-write transactions on writer thread(s), batching mutations."""

    def __init__(self, database: Any, *, max_batch: int = 64, writers: int = 1, retry_delay: float | None = None) -> None:
        self.database = database
        self.max_batch = max_batch
        self.retry_delay = retry_delay
        #: (priority, sequence, item): urgent work first, then FIFO; None (priority 2) stops a writer.
        self._queue: queue.PriorityQueue[tuple[int, int, _Item | None]] = queue.PriorityQueue()
        self._seq = itertools.count()
        self._threads = [threading.Thread(target=self._loop, name=f"spindle-spanner-writer-{i}", daemon=True)
                         for i in range(max(1, writers))]
        #: Counters for benchmarks: transactions, mutations, time in commit (s).
        self.stats = {"transactions": 0, "mutations": 0, "batches_split": 0, "seconds": 0.0}

    def start(self) -> None:
        for t in self._threads:
            t.start()

    def stop(self) -> None:
        for _ in self._threads:
            self._queue.put((2, next(self._seq), None))
        for t in self._threads:
            t.join()

    def _run_txn(self, fn: Callable[[Any], T]) -> T:
        import time

        kw: dict[str, Any] = {}
        if self.retry_delay is not None:
            kw["default_retry_delay"] = self.retry_delay
        t0 = time.perf_counter()
        try:
            return self.database.run_in_transaction(fn, **kw)
        finally:
            self.stats["transactions"] += 1
            self.stats["seconds"] += time.perf_counter() - t0

    # ------------------------------------------------------------------ submission (event loop side)
    async def mutation(self, m: Mutation) -> None:
        """Apply ``m`` (possibly together with other queued mutations); raises its own error only."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        self._put(_Item(fut, loop, mutation=m, keys=frozenset(conflict_keys(m))))
        await fut

    async def call(self, fn: Callable[[Any], T], *, urgent: bool = False) -> T:
        """Run ``fn(transaction)`` as one read-write transaction (retried on abort) and return its result.

        ``urgent`` work (lease renewals) runs before any queued normal work.
        """
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[T] = loop.create_future()
        self._put(_Item(fut, loop, fn=fn, priority=0 if urgent else 1))
        return await fut

    def _put(self, item: _Item) -> None:
        item.seq = next(self._seq)
        self._queue.put((item.priority, item.seq, item))

    # ------------------------------------------------------------------ writer thread
    def _next(self, block: bool) -> tuple[bool, _Item | None]:
        """(got one, item): the most urgent, oldest queued item; item None means stop."""
        try:
            _, _, item = self._queue.get() if block else self._queue.get_nowait()
        except queue.Empty:
            return False, None
        return True, item

    def _loop(self) -> None:
        while True:
            _, item = self._next(True)
            if item is None:
                return
            if item.fn is not None:
                self._run_fn(item)
                continue
            batch = [item]
            keys = set(item.keys)
            while len(batch) < self.max_batch:
                got, nxt = self._next(False)
                if not got:
                    break
                if nxt is None or nxt.fn is not None or keys & nxt.keys:
                    # starts a later transaction: back in the queue at its place (same priority and sequence)
                    self._queue.put((2, next(self._seq), None) if nxt is None else (nxt.priority, nxt.seq, nxt))
                    break
                batch.append(nxt)
                keys |= nxt.keys
            self._run_batch(batch)

    def _run_fn(self, item: _Item) -> None:
        try:
            value = self._run_txn(item.fn)  # type: ignore[arg-type]
            item.loop.call_soon_threadsafe(_resolve, item.future, value, None)
        except BaseException as e:  # noqa: BLE001 - reported to the caller
            err = e if isinstance(e, (ConditionFailedError, ValueError, KeyError)) else map_error(e)
            item.loop.call_soon_threadsafe(_resolve, item.future, None, err)

    def _run_batch(self, batch: list[_Item]) -> None:
        mutations = [i.mutation for i in batch if i.mutation is not None]
        state = {"sent": False}

        def body(txn: Any) -> list[BaseException | None]:
            state["sent"] = False
            out = apply_batch(txn, mutations)
            state["sent"] = True  # the client commits as soon as this returns
            return out

        results: list[BaseException | None]
        try:
            results = self._run_txn(body)
            self.stats["mutations"] += len(mutations)
        except BaseException as e:  # noqa: BLE001 - narrowed below
            if state["sent"] and not _refused(e):
                # the commit was sent and no answer says it was refused: it may have been applied
                unknown = StoreUnavailableError(f"spanner commit outcome unknown: {type(e).__name__}: {e}",
                                                outcome_unknown=True)
                results = [unknown] * len(batch)
            elif len(batch) > 1:
                self.stats["batches_split"] += 1
                for one in batch:  # find which mutation broke the commit; the others still apply
                    self._run_batch([one])
                return
            else:
                results = [map_error(e)]
        for it, err in zip(batch, results):
            it.loop.call_soon_threadsafe(_resolve, it.future, None, err)


def _refused(e: BaseException) -> bool:
    """The commit was answered with a refusal (nothing applied), as opposed to a lost or failed reply."""
    from google.api_core import exceptions as gexc

    return isinstance(e, (gexc.AlreadyExists, gexc.NotFound, gexc.FailedPrecondition, gexc.InvalidArgument,
                          ValueError, ConditionFailedError))


__all__ = ["TxnRunner", "map_error"]
