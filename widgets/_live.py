"""Keeping a history graph up to date while the execution runs.

The public SDK has no long-poll for *new* history events (``handle.result()``
long-polls only for the close event), so :class:`HistoryFeed` polls
``handle.fetch_history()``: every ``interval[0]`` seconds while events arrive,
backing off by x1.5 up to ``interval[1]`` while nothing changes. It stops when
the run closes, when :meth:`HistoryFeed.stop` is called, or after repeated
errors. Each poll re-reads the whole history; only events newer than the last
one seen are fed to the builder.
"""

from __future__ import annotations

import asyncio

from collections.abc import Callable
from typing import Any

from sdk import History
from widgets._background import Cancellable, Runner
from widgets._graph_model import HistoryGraphBuilder

__all__ = ["HistoryFeed"]

_MAX_ERRORS = 5


class HistoryFeed:
    """Feeds a :class:`HistoryGraphBuilder` from a workflow handle, once or continuously."""

    def __init__(
        self,
        handle: Any,
        runner: Runner,
        builder: HistoryGraphBuilder,
        on_change: Callable[[list[str]], None],
        on_state: Callable[[], None],
        *,
        interval: tuple[float, float] = (0.5, 2.0),
    ) -> None:
        self.handle = handle
        self.runner = runner
        self.builder = builder
        self.interval = interval
        self.polls = 0
        self.error: BaseException | None = None
        self.live = False
        self._on_change = on_change
        self._on_state = on_state
        self._task: Cancellable | None = None
        self._stopped = False

    def apply(self, history: History) -> bool:
        """Feed the events of ``history`` that are new; True if any were.

        A history of another run (the workflow continued as new between polls)
        is ignored: the feed follows the run it started with.
        """
        if not self.builder.run_id:
            self.builder.run_id = history.run_id
            self.builder.workflow_id = self.builder.workflow_id or history.workflow_id
            self.builder.graph.graph.update(run_id=history.run_id, workflow_id=self.builder.workflow_id)
        elif history.run_id and history.run_id != self.builder.run_id:
            self._stopped = True
            return False
        if not history.events or history.events[-1].event_id <= self.builder.last_event_id:
            return False
        changed = self.builder.add_events(history.events)
        self._on_change(changed)
        return True

    async def fetch(self) -> bool:
        """Fetch the history once (on the home loop) and apply it; True if it grew."""
        self.polls += 1
        history = await self.handle.fetch_history()
        self.error = None
        return self.apply(history)

    def start(self, *, live: bool) -> None:
        """Fetch now (without blocking), then keep polling while ``live`` and the run is open."""
        self.stop()
        self._stopped = False
        self.live = live
        self._task = self.runner.spawn(self._poll if live else self.fetch, lambda _r, e: self._finished(e))
        self._on_state()

    def stop(self) -> None:
        """Stop polling (idempotent)."""
        self._stopped = True
        if self._task is not None and not self._task.done():
            self._task.cancel()
        self._task = None
        if self.live:
            self.live = False
            self._on_state()

    @property
    def polling(self) -> bool:
        """True while a poll loop is scheduled or running."""
        return self._task is not None and not self._task.done()

    def _finished(self, error: BaseException | None) -> None:
        if error is not None and not isinstance(error, asyncio.CancelledError):
            self.error = error
        self.live = False
        self._on_state()

    async def _poll(self) -> None:
        low, high = self.interval
        delay = low
        errors = 0
        while not self._stopped:
            try:
                grew = await self.fetch()
                errors = 0
            except asyncio.CancelledError:
                raise
            except Exception as error:  # noqa: BLE001 - shown in the widget, then retried
                errors += 1
                self.error = error
                self._on_state()
                if errors >= _MAX_ERRORS:
                    return
                await asyncio.sleep(high)
                continue
            if self.builder.status != "running" or self._stopped:
                return
            delay = low if grew else min(high, delay * 1.5)
            await asyncio.sleep(delay)
