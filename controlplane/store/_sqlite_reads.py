"""The SQLite store's reads: a small pool of reader threads with their own connections.

WAL lets readers proceed while the writer commits. A read is a function of a connection,
run on a pool thread (each thread keeps one connection). Point lookups on the path of
every call may use :meth:`SqliteReads.point_reader` instead, on the event-loop thread: a
primary-key lookup costs microseconds, less than the thread hop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import sqlite3
import threading

from typing import Callable, TypeVar

from ._sqlite_schema import connect

T = TypeVar("T")


class SqliteReads:
    """Read connections to one database file (``dsn``)."""

    def __init__(self, dsn: str, *, uri: bool = False) -> None:
        self._dsn = dsn
        self._uri = uri
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._local = threading.local()
        self._conns: list[sqlite3.Connection] = []
        self._point_reader: sqlite3.Connection | None = None

    def start(self) -> None:
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="spindle-sqlite-read")

    def stop(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        for c in self._conns:
            c.close()
        self._conns.clear()
        if self._point_reader is not None:
            self._point_reader.close()
            self._point_reader = None

    def _thread_conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = connect(self._dsn, uri=self._uri)
            self._local.conn = conn
            self._conns.append(conn)
        return conn

    def point_reader(self) -> sqlite3.Connection:
        """A read connection for the event-loop thread (point lookups only)."""
        if self._point_reader is None:
            self._point_reader = connect(self._dsn, uri=self._uri)
        return self._point_reader

    async def read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """``fn(connection)`` on a reader thread."""
        assert self._pool is not None, "store is not open"
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, lambda: fn(self._thread_conn()))


__all__ = ["SqliteReads"]
