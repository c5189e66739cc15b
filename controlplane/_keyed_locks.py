"""One asyncio lock per key, alive only while someone holds or waits for it."""

from __future__ import annotations

import asyncio
import weakref

from collections.abc import Hashable


class KeyedLocks:
    """``get(key)`` returns the key's lock, creating it on first use; unused locks are dropped (weak values)."""

    def __init__(self) -> None:
        self._locks: weakref.WeakValueDictionary[Hashable, asyncio.Lock] = weakref.WeakValueDictionary()

    def get(self, key: Hashable) -> asyncio.Lock:
        lock = self._locks.get(key)
        if lock is None:
            lock = asyncio.Lock()
            self._locks[key] = lock
        return lock

    def held(self, key: Hashable) -> bool:
        """Whether the key's lock exists and is held (without creating it)."""
        lock = self._locks.get(key)
        return lock is not None and lock.locked()


__all__ = ["KeyedLocks"]
