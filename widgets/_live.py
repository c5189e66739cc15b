"""Keeping a history graph up to date while the execution runs.

:class:`HistoryFeed` follows a running execution with
``handle.watch_history()``: the server long-polls for new events (nothing is
fetched while the run is idle) and the watch ends by itself after the close
event. The events of one server response arrive without a pause in between, so
they are fed to the builder, and the widget redrawn, once per response rather
than once per event. The feed stops when the run closes, when
:meth:`HistoryFeed.stop` is called, or after repeated errors (it resumes from
the last event it saw after each error).

A handle-like object without ``watch_history`` (anything with an async
``fetch_history``) is polled instead: every ``interval[0]`` seconds while
events arrive, backing off by x1.5 up to ``interval[1]`` while nothing changes.
"""

from __future__ import annotations

import asyncio

from collections.abc import Callable
from typing import Any

from spindle.client import History, HistoryEvent
from spindle.widgets._background import Cancellable, Runner
from spindle.widgets._graph_model import HistoryGraphBuilder

__all__ = ["FollowsExecution", "HistoryFeed"]

_MAX_ERRORS = 5


class HistoryFeed:
    """Feeds a :class:`HistoryGraphBuilder` from a workflow handle, once or continuously.

    ``polls`` counts the batches of history read (one per ``fetch`` or per
    server response of the watch).
    """

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
        if not self._adopt_run(history.workflow_id, history.run_id):
            return False
        return self._feed(history.events)

    def _adopt_run(self, workflow_id: str, run_id: str) -> bool:
        """Take the run id on first sight; False (and stop) for another run's events."""
        if not self.builder.run_id:
            self.builder.run_id = run_id
            self.builder.workflow_id = self.builder.workflow_id or workflow_id
            self.builder.graph.graph.update(run_id=run_id, workflow_id=self.builder.workflow_id)
        elif run_id and run_id != self.builder.run_id:
            self._stopped = True
            return False
        return True

    def _feed(self, events: list[HistoryEvent]) -> bool:
        if not events or events[-1].event_id <= self.builder.last_event_id:
            return False
        changed = self.builder.add_events(events)
        self._on_change(changed)
        return True

    async def fetch(self) -> bool:
        """Fetch the history once (on the home loop) and apply it; True if it grew."""
        self.polls += 1
        history = await self.handle.fetch_history()
        self.error = None
        return self.apply(history)

    def start(self, *, live: bool) -> None:
        """Fetch now (without blocking), then keep following while ``live`` and the run is open."""
        self.stop()
        self._stopped = False
        self.live = live
        follow = self._watch if callable(getattr(self.handle, "watch_history", None)) else self._poll
        self._task = self.runner.spawn(follow if live else self.fetch, lambda _r, e: self._finished(e))
        self._on_state()

    def stop(self) -> None:
        """Stop following (idempotent)."""
        self._stopped = True
        if self._task is not None and not self._task.done():
            self._task.cancel()
        self._task = None
        if self.live:
            self.live = False
            self._on_state()

    @property
    def polling(self) -> bool:
        """True while a watch or poll loop is scheduled or running."""
        return self._task is not None and not self._task.done()

    def _finished(self, error: BaseException | None) -> None:
        if error is not None and not isinstance(error, asyncio.CancelledError):
            self.error = error
        self.live = False
        self._on_state()

    async def _pinned_handle(self) -> Any:
        """The handle of the run to follow (a handle without a run id means the current run)."""
        handle = self.handle
        run_id = self.builder.run_id or getattr(handle, "run_id", None)
        if not run_id:
            run_id = (await handle.describe()).run_id
        if not self._adopt_run(str(getattr(handle, "id", "")), run_id):
            return None
        client = getattr(handle, "client", None)
        if getattr(handle, "run_id", None) == run_id or client is None:
            return handle
        return client.get_workflow_handle(handle.id, run_id=run_id)

    async def _watch(self) -> None:
        """Follow the run with ``watch_history`` (server long-poll), one batch per server response."""
        loop = asyncio.get_running_loop()
        errors = 0
        batch: list[HistoryEvent] = []
        flush_scheduled = False

        def flush() -> None:
            nonlocal flush_scheduled
            flush_scheduled = False
            if batch and not self._stopped:
                events = batch[:]
                batch.clear()
                self.polls += 1
                self._feed(events)

        while not self._stopped:
            try:
                handle = await self._pinned_handle()
                if handle is None:
                    return
                async for event in handle.watch_history(start_event_id=self.builder.last_event_id + 1):
                    if self._stopped:
                        return
                    batch.append(event)
                    errors = 0
                    if self.error is not None:
                        self.error = None
                        self._on_state()
                    if not flush_scheduled:
                        # runs once the watch awaits the server again: after the whole response
                        flush_scheduled = True
                        loop.call_soon(flush)
                flush()
                return  # the run closed
            except asyncio.CancelledError:
                raise
            except Exception as error:  # noqa: BLE001 - shown in the widget, then retried
                flush()
                errors += 1
                self.error = error
                self._on_state()
                if errors >= _MAX_ERRORS:
                    return
                await asyncio.sleep(self.interval[1])

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


class FollowsExecution:
    """What a widget drawing one execution's history says and does about following it (``self._feed``)."""

    _feed: HistoryFeed | None

    @property
    def live(self) -> bool:
        """True while the widget follows the running execution."""
        return self._feed is not None and self._feed.polling

    async def refresh(self) -> None:
        """Fetch the execution's history now (handles only) and redraw if it grew."""
        if self._feed is not None:
            await self._feed.runner.call(self._feed.fetch)

    def stop(self) -> None:
        """Stop following the execution (the drawing stays)."""
        feed = getattr(self, "_feed", None)  # close() may run from __del__ of a half-built widget
        if feed is not None:
            feed.stop()
