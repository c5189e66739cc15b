"""The workflow worker's sticky cache: recently used workflow instances by run id, and their eviction.

A sticky task carries only the events after the previous task, so the worker keeps
the :class:`WorkflowInstance` of recently used runs and resumes them. The cache is an
LRU of at most ``max_cached`` runs; a run whose task is being processed (its lock is
held) is never the one evicted to make room. Evicting a run closes its instance, and
that cleanup is workflow code too, so it runs under the deadlock deadline.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import logging

from typing import Any

from spindle._workflow.deadlock import ActivationWatchdog, DeadlockError

__all__ = ["CachedRun", "RunCache"]

log = logging.getLogger("spindle.worker")


@dataclasses.dataclass
class CachedRun:
    """One run's workflow instance (``None`` until built), the last task it processed, and its task lock."""

    instance: Any
    started_event_id: int = 0
    lock: asyncio.Lock = dataclasses.field(default_factory=asyncio.Lock)


class RunCache:
    """An LRU of :class:`CachedRun` by run id, holding at most ``max_cached`` runs.

    ``entries`` is the cache itself (least recently used first): read it and
    ``move_to_end`` a run that is used; add and remove runs only with :meth:`insert`
    and :meth:`evict`, which close the instances they drop.
    """

    def __init__(self, max_cached: int, watchdog: ActivationWatchdog | None) -> None:
        self.max_cached = max_cached
        self.entries: collections.OrderedDict[str, CachedRun] = collections.OrderedDict()
        self._watchdog = watchdog

    def __len__(self) -> int:
        return len(self.entries)

    def insert(self, run_id: str, entry: CachedRun) -> None:
        """Make ``entry`` the most recently used run (replacing another entry of the run), then evict to fit."""
        cache = self.entries
        if cache.get(run_id) is not entry:
            old = cache.pop(run_id, None)
            if old is not None and old.instance is not None:
                old.instance.close()
            cache[run_id] = entry
        cache.move_to_end(run_id)
        while len(cache) > self.max_cached:
            victim = next((rid for rid, e in cache.items() if not e.lock.locked() and rid != run_id), None)
            if victim is None:
                break
            self.evict(victim)

    def evict(self, run_id: str, entry: CachedRun | None = None) -> None:
        """Drop the run (only if it is ``entry``, when given) and close ``entry``'s or the cached instance."""
        cached = self.entries.get(run_id)
        if cached is not None and (entry is None or cached is entry):
            del self.entries[run_id]
        target = entry if entry is not None else cached
        if target is not None and target.instance is not None:
            inst, target.instance = target.instance, None
            self.close_instance(inst, run_id)

    def evict_all(self) -> None:
        """Evict every cached run (the worker is shutting down)."""
        for run_id in list(self.entries):
            self.evict(run_id)

    def close_instance(self, inst: Any, run_id: str) -> None:
        """Evict ``inst``: its coroutines' cleanup is workflow code too, so it runs under the deadline.

        Never raises: a deadline overrun or an error in the cleanup is logged.
        """
        wd = self._watchdog
        try:
            if wd is None:
                inst.close()
            else:
                wd.run(lambda: f"the eviction of workflow run {run_id}", inst.close)
        except DeadlockError as e:
            log.error("evicting workflow run %s: %s", run_id, e)
        except Exception:
            log.exception("closing workflow instance of run %s failed", run_id)
