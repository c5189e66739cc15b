"""The SQLite store's writes: one writer thread, group commit.

Every write goes through one writer thread that drains every queued mutation into a single
transaction (each mutation in its own SAVEPOINT, so one failed optimistic check does not
undo the others), commits once (one fsync for the whole batch, with ``synchronous=FULL``
so a commit is on disk before anyone is told it succeeded), then resolves each caller's
future, with one wake-up per event loop and batch.
"""

from __future__ import annotations

import asyncio
import queue
import sqlite3
import threading

from collections.abc import Sequence
from typing import Any, Callable, TypeVar

from ._model import ConditionFailedError, Mutation, ShardOwnershipLostError, StoreUnavailableError
from ._sqlite_mutation import apply_mutation

T = TypeVar("T")

#: An administrative write: a function of the writer's connection, run in the batch's transaction.
Admin = Callable[[sqlite3.Connection], None]


class _Pending:
    __slots__ = ("mutation", "future", "loop", "admin")

    def __init__(
        self,
        mutation: Mutation,
        future: asyncio.Future[None],
        loop: asyncio.AbstractEventLoop,
        admin: Admin | None = None,
    ) -> None:
        self.mutation = mutation
        self.future = future
        self.loop = loop
        self.admin = admin


class GroupCommitWriter:
    """The writer thread of one database connection; :meth:`apply` and :meth:`write` queue work for it."""

    def __init__(self, max_batch: int) -> None:
        self.max_batch = max_batch
        #: The writer's connection, from :meth:`start` to :meth:`close`.
        self.conn: sqlite3.Connection | None = None
        self._queue: queue.SimpleQueue[_Pending | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        #: Test hook: called with (stage, mutations) at "before_commit" / "after_commit".
        self.fault_hook: Callable[[str, Sequence[Mutation]], None] | None = None

    def start(self, conn: sqlite3.Connection) -> None:
        """Start the writer thread on ``conn`` (an open database: ``_sqlite_schema.connect``)."""
        self.conn = conn
        self._thread = threading.Thread(target=self._writer_loop, name="spindle-sqlite-writer", daemon=True)
        self._thread.start()

    async def stop(self) -> None:
        """Let the queued work finish, then end the thread (the connection stays open until :meth:`close`)."""
        if self._thread is not None:
            self._queue.put(None)
            await asyncio.get_running_loop().run_in_executor(None, self._thread.join)
            self._thread = None

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    async def apply(self, mutation: Mutation) -> None:
        await self._enqueue(mutation, None)

    async def write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run a small administrative transaction through the writer thread."""
        result: dict[str, Any] = {}

        def run(conn: sqlite3.Connection) -> None:
            result["v"] = fn(conn)

        await self._enqueue(Mutation(shard_id=-1, range_id=-1), run)
        return result.get("v")  # type: ignore[return-value]

    async def _enqueue(self, mutation: Mutation, admin: Admin | None) -> None:
        if self._thread is None:
            raise StoreUnavailableError("store is closed")
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        self._queue.put(_Pending(mutation, fut, loop, admin))
        await fut

    def _writer_loop(self) -> None:
        conn = self.conn
        assert conn is not None
        stop = False
        while not stop:
            item = self._queue.get()
            if item is None:
                break
            batch = [item]
            while len(batch) < self.max_batch:
                try:
                    nxt = self._queue.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    stop = True
                    break
                batch.append(nxt)
            results = self._commit_batch(conn, batch)
            by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[None], BaseException | None]]] = {}
            for p, err in zip(batch, results):
                by_loop.setdefault(p.loop, []).append((p.future, err))
            for loop, items in by_loop.items():  # one wake-up per loop and batch
                try:
                    loop.call_soon_threadsafe(_resolve_all, items)
                except RuntimeError:  # the loop is closed: nobody waits any more
                    pass

    def _commit_batch(self, conn: sqlite3.Connection, batch: list[_Pending]) -> list[BaseException | None]:
        results: list[BaseException | None] = [None] * len(batch)
        try:
            conn.execute("BEGIN IMMEDIATE")
            ranges: dict[int, int] = {}
            shard_ids = {p.mutation.shard_id for p in batch if p.mutation.shard_id >= 0}
            if shard_ids:
                q = ",".join("?" * len(shard_ids))
                for sid, rid in conn.execute(f"SELECT shard_id, range_id FROM shards WHERE shard_id IN ({q})", tuple(shard_ids)):
                    ranges[sid] = rid
            for i, p in enumerate(batch):
                m = p.mutation
                admin = p.admin
                if admin is None and ranges.get(m.shard_id) != m.range_id:
                    results[i] = ShardOwnershipLostError(
                        f"shard {m.shard_id}: range_id {m.range_id} is stale (now {ranges.get(m.shard_id)})"
                    )
                    continue
                # Only writes with a condition (version, current run, unique key) can fail half
                # way; the others (task inserts and deletes, visibility) skip the savepoint.
                guarded = (admin is not None or m.execution is not None or m.current is not None or bool(m.backlog_insert)
                           or m.schedule is not None or m.schedule_delete is not None)
                if not guarded:
                    apply_mutation(conn, m)
                    continue
                conn.execute("SAVEPOINT m")
                try:
                    if admin is not None:
                        admin(conn)
                    else:
                        apply_mutation(conn, m)
                    conn.execute("RELEASE m")
                except (ConditionFailedError, sqlite3.IntegrityError, ValueError) as e:
                    conn.execute("ROLLBACK TO m")
                    conn.execute("RELEASE m")
                    results[i] = e if not isinstance(e, sqlite3.IntegrityError) else ConditionFailedError(str(e))
            if self.fault_hook is not None:
                self.fault_hook("before_commit", [p.mutation for p in batch])
            conn.execute("COMMIT")
        except Exception as e:  # noqa: BLE001 - the whole batch failed; report to every caller
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            err = StoreUnavailableError(f"sqlite write failed: {e}")
            return [err] * len(batch)
        if self.fault_hook is not None:
            try:
                self.fault_hook("after_commit", [p.mutation for p in batch])
            except Exception as e:  # noqa: BLE001 - committed, but the caller is told it failed
                return [StoreUnavailableError(f"reply lost after commit: {e}", outcome_unknown=True)] * len(batch)
        return results


def _resolve_all(items: list[tuple[asyncio.Future[None], BaseException | None]]) -> None:
    for fut, err in items:
        if fut.done():
            continue
        if err is None:
            fut.set_result(None)
        else:
            fut.set_exception(err)


__all__ = ["Admin", "GroupCommitWriter"]
