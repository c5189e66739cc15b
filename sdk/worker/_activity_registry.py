"""What an activity worker runs and where: its activities by name, and the executor its sync activities use.

Async activities run as tasks on the worker's loop. Sync ones run in a thread pool
(made for the worker when none is given) or, with a
:class:`~spindle.worker.SharedStateManager`, in another executor such as a process
pool; a setup in which every attempt of a sync activity would fail is refused when
the worker is made.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import pickle

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from spindle._activity.definition import ActivityDefinition
from spindle._activity.execution import runs_in_threads
from spindle._activity.shared_state import SharedStateManager

__all__ = ["RegisteredActivity", "check_executor", "register_activities", "sync_executor"]


@dataclasses.dataclass(frozen=True)
class RegisteredActivity:
    """An activity a worker runs: its name, the callable, and whether it is async."""

    name: str
    fn: Callable[..., Any]
    is_async: bool


def register_activities(activities: Sequence[Callable[..., Any]]) -> dict[str, RegisteredActivity]:
    """``activities`` by name.

    Raises:
        TypeError: an entry is not an activity.
        ValueError: two activities share a name.
    """
    registered: dict[str, RegisteredActivity] = {}
    for fn in activities:
        d = ActivityDefinition.must_from_callable(fn)
        if d.name in registered:
            raise ValueError(f"two activities are registered under the name {d.name!r}")
        registered[d.name] = RegisteredActivity(d.name, fn, d.is_async)
    return registered


def check_executor(registered: Iterable[RegisteredActivity], executor: concurrent.futures.Executor | None,
                   shared_state: SharedStateManager | None) -> None:
    """Refuse, at construction, a setup in which every attempt of a sync activity would fail.

    Raises:
        ValueError: a sync activity would run in a non-thread executor without ``shared_state``.
        TypeError: a sync activity would run in a ``ProcessPoolExecutor`` but cannot be pickled.
    """
    if runs_in_threads(executor):
        return
    sync = [r for r in registered if not r.is_async]
    if not sync:
        return
    kind = type(executor).__name__
    if shared_state is None:
        raise ValueError(
            f"sync activity {sync[0].name!r} would run in activity_executor={kind}, which is not a "
            f"ThreadPoolExecutor, so its heartbeats and cancellation must cross processes: pass "
            f"shared_state_manager=SharedStateManager.create_from_multiprocessing(multiprocessing.Manager()) "
            f"(from spindle.worker), use a ThreadPoolExecutor, or make the activity async")
    if isinstance(executor, concurrent.futures.ProcessPoolExecutor):
        for r in sync:
            try:
                pickle.dumps(r.fn)
            except Exception as e:
                raise TypeError(
                    f"sync activity {r.name!r} cannot run in a ProcessPoolExecutor: it must be picklable "
                    f"(a module-level function), but pickling it failed: {e}") from e


def sync_executor(registered: Iterable[RegisteredActivity], executor: concurrent.futures.Executor | None,
                  max_concurrent: int, task_queue: str) -> tuple[concurrent.futures.Executor | None, bool]:
    """The executor sync activities run in, and whether the worker made it (and so must shut it down).

    ``executor`` when given; else a thread pool of ``max_concurrent`` threads if a sync
    activity is registered; else ``None``.
    """
    if executor is None and any(not r.is_async for r in registered):
        return concurrent.futures.ThreadPoolExecutor(
            max_workers=max_concurrent, thread_name_prefix=f"spindle-activity-{task_queue}"), True
    return executor, False
