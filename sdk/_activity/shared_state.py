"""What a sync activity running in another process needs from the worker's process.

A ``ProcessPoolExecutor`` runs the activity function in a child process, where the
worker's threads and event loop do not exist. Heartbeats go back over a queue and
cancellation comes in through an event, both made by a
:class:`SharedStateManager` (usually over a ``multiprocessing.Manager()``), which
``Worker(shared_state_manager=...)`` takes.
"""

from __future__ import annotations

import abc
import asyncio
import logging
import multiprocessing.managers
import queue
import threading

from collections.abc import Callable, Sequence
from typing import Any, Protocol

__all__ = ["CancelEvent", "SharedHeartbeatSender", "SharedStateManager"]

log = logging.getLogger("spindle.worker")

#: How long the queue reader waits for an item before it checks whether it should stop.
_POLL_SECONDS = 0.5
#: How long a child process waits for room in the heartbeat queue.
_PUT_TIMEOUT = 30.0
#: The most heartbeats waiting in the queue at once.
_QUEUE_SIZE = 1000


class CancelEvent(Protocol):
    """The part of ``threading.Event`` a cancellation flag needs (manager events have it too)."""

    def is_set(self) -> bool: ...

    def set(self) -> None: ...

    def wait(self, timeout: float | None = None) -> bool: ...


class SharedHeartbeatSender(abc.ABC):
    """Sends heartbeats from a child process to the worker; must be picklable."""

    @abc.abstractmethod
    def send_heartbeat(self, task_token: bytes, *details: Any) -> None:
        """Hand ``details`` (picklable values) to the worker for the attempt ``task_token``."""


class SharedStateManager(abc.ABC):
    """Makes the cross-process primitives sync activities in a non-thread executor need.

    ``Worker`` requires one when ``activity_executor`` is not a
    ``ThreadPoolExecutor`` and a registered activity is a plain ``def``. One manager
    may serve several workers.
    """

    @staticmethod
    def create_from_multiprocessing(mgr: multiprocessing.managers.SyncManager) -> SharedStateManager:
        """A manager whose events and heartbeat queue live in ``mgr`` (e.g. ``multiprocessing.Manager()``).

        The caller owns ``mgr`` and shuts it down after the workers using it stopped.
        """
        return _MultiprocessingSharedStateManager(mgr)

    @abc.abstractmethod
    def new_event(self) -> CancelEvent:
        """A new, unset event that child processes can read (the attempt's cancellation flag)."""

    @abc.abstractmethod
    async def register_heartbeater(self, task_token: bytes,
                                   heartbeat: Callable[[Sequence[Any]], None]) -> SharedHeartbeatSender:
        """Route the heartbeats sent for ``task_token`` to ``heartbeat`` (called with the details tuple,
        from a thread of the worker's process); return the sender the child process uses."""

    @abc.abstractmethod
    async def unregister_heartbeater(self, task_token: bytes) -> None:
        """Stop routing ``task_token``'s heartbeats, after delivering every one already sent."""


_DONE = "__spindle_heartbeats_done__"


class _QueueSender(SharedHeartbeatSender):
    def __init__(self, q: Any) -> None:
        self._queue = q

    def send_heartbeat(self, task_token: bytes, *details: Any) -> None:
        self._queue.put((task_token, details), True, _PUT_TIMEOUT)


class _MultiprocessingSharedStateManager(SharedStateManager):
    """Events from the manager; one manager queue for all heartbeats, read by one thread here."""

    def __init__(self, mgr: multiprocessing.managers.SyncManager) -> None:
        self._mgr = mgr
        self._queue: Any = mgr.Queue(_QUEUE_SIZE)
        self._lock = threading.Lock()
        self._heartbeaters: dict[bytes, Callable[[Sequence[Any]], None]] = {}
        self._flushed: dict[bytes, Callable[[], None]] = {}
        self._reader: threading.Thread | None = None

    def new_event(self) -> CancelEvent:
        return self._mgr.Event()

    async def register_heartbeater(self, task_token: bytes,
                                   heartbeat: Callable[[Sequence[Any]], None]) -> SharedHeartbeatSender:
        with self._lock:
            self._heartbeaters[task_token] = heartbeat
            if self._reader is None or not self._reader.is_alive():
                self._reader = threading.Thread(target=self._read, name="spindle-heartbeat-reader", daemon=True)
                self._reader.start()
        return _QueueSender(self._queue)

    async def unregister_heartbeater(self, task_token: bytes) -> None:
        loop = asyncio.get_running_loop()
        flushed = asyncio.Event()
        with self._lock:
            def set_flushed() -> None:
                loop.call_soon_threadsafe(flushed.set)

            self._flushed[task_token] = set_flushed
        try:
            # the marker goes behind every heartbeat the child put before it returned
            await loop.run_in_executor(None, self._queue.put, (task_token, _DONE), True, _PUT_TIMEOUT)
            try:
                await asyncio.wait_for(flushed.wait(), _PUT_TIMEOUT)
            except asyncio.TimeoutError:
                log.warning("heartbeats of a process-pool activity were not all delivered within %.0f s",
                            _PUT_TIMEOUT)
        finally:
            with self._lock:
                self._flushed.pop(task_token, None)
                self._heartbeaters.pop(task_token, None)

    def _read(self) -> None:
        while True:
            with self._lock:
                if not self._heartbeaters:
                    self._reader = None
                    return
            try:
                token, details = self._queue.get(True, _POLL_SECONDS)
            except queue.Empty:
                continue
            except (EOFError, OSError, BrokenPipeError):
                log.warning("the shared state manager's heartbeat queue is gone; heartbeats of process-pool "
                            "activities are no longer delivered")
                with self._lock:
                    self._reader = None
                return
            with self._lock:
                if details == _DONE:
                    self._heartbeaters.pop(token, None)
                    done = self._flushed.get(token)
                    fn = None
                else:
                    done = None
                    fn = self._heartbeaters.get(token)
            try:
                if done is not None:
                    done()
                elif fn is not None:
                    fn(details)
            except Exception:
                log.exception("delivering a heartbeat from a process-pool activity failed")
