"""Tasks handed to workers and not finished yet, by run (the time-skipping clock waits for them).

Every task is counted under a key, so releasing it is idempotent: a task is released
when its outcome is recorded, when its timeout fires, when its worker's answer turns
out stale (NOT_FOUND), and when its run closes, whichever comes first. A task is never
counted twice, and none stays counted after its run closed (a cancelled workflow whose
activity ignores the cancellation used to keep the count at 1 for good, which froze
time skipping for the rest of a test environment).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

#: Kinds of outstanding task.
WORKFLOW = "workflow"
ACTIVITY = "activity"

RunKey = tuple[str, str, str]  # (namespace_id, workflow_id, run_id)


def workflow_task_key(nonce: str) -> tuple[str, str]:
    """The key of a started workflow task (its start nonce is unique per start)."""
    return ("w", nonce)


def activity_task_key(scheduled_event_id: int, attempt: int) -> tuple[str, int, int]:
    """The key of a started activity attempt."""
    return ("a", scheduled_event_id, attempt)


class OutstandingTasks:
    """Counts of started, unfinished workflow and activity tasks; ``on_change(total)`` after each change."""

    def __init__(self, on_change: Callable[[int], Any]) -> None:
        self._runs: dict[RunKey, dict[Hashable, str]] = {}
        self._counts = {WORKFLOW: 0, ACTIVITY: 0}
        self._on_change = on_change

    @property
    def total(self) -> int:
        return self._counts[WORKFLOW] + self._counts[ACTIVITY]

    @property
    def workflow_tasks(self) -> int:
        return self._counts[WORKFLOW]

    @property
    def activity_tasks(self) -> int:
        return self._counts[ACTIVITY]

    def add(self, run: RunKey, key: Hashable, kind: str) -> None:
        """A task of ``run`` was handed to a worker (adding a key again changes nothing)."""
        tasks = self._runs.setdefault(run, {})
        if key in tasks:
            return
        tasks[key] = kind
        self._counts[kind] += 1
        self._on_change(self.total)

    def discard(self, run: RunKey, key: Hashable) -> None:
        """The task is over (or its worker's answer no longer counts); unknown keys are ignored."""
        tasks = self._runs.get(run)
        if tasks is None or key not in tasks:
            return
        self._counts[tasks.pop(key)] -= 1
        if not tasks:
            del self._runs[run]
        self._on_change(self.total)

    def discard_run(self, run: RunKey) -> None:
        """The run closed: none of its tasks counts any more (their late answers get NOT_FOUND)."""
        tasks = self._runs.pop(run, None)
        if not tasks:
            return
        for kind in tasks.values():
            self._counts[kind] -= 1
        self._on_change(self.total)


__all__ = ["ACTIVITY", "OutstandingTasks", "RunKey", "WORKFLOW", "activity_task_key", "workflow_task_key"]
