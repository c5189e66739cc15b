"""``ExecutionBrowser``: filter, count and page through executions; open one as a ``HistoryGraph``."""

from __future__ import annotations

import asyncio
import os
import re

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import ipywidgets as w

from spindle.widgets._background import Runner
from spindle.widgets._export import export_html
from spindle.widgets._history_graph import HistoryGraph
from spindle.widgets._svg import PALETTE, escape, status_badge

__all__ = ["BUILD_ATTRIBUTE", "ExecutionBrowser", "STATUS_NAMES", "build_of", "scheduled_by_query", "split_query"]

#: Visibility names of the execution statuses, in display order.
STATUS_NAMES: tuple[str, ...] = ("Running", "Completed", "Failed", "Canceled", "Terminated", "ContinuedAsNew",
                                 "TimedOut")
_PALETTE_KEY = {"Running": "running", "Completed": "completed", "Failed": "failed", "Canceled": "canceled",
                "Terminated": "terminated", "ContinuedAsNew": "continued_as_new", "TimedOut": "timed_out"}
_TAIL = re.compile(r"\b(ORDER|GROUP)\s+BY\b", re.IGNORECASE)
_POSITION = re.compile(r"position (\d+)")
_COLUMNS = (("status", "110px"), ("workflow id", "230px"), ("type", "150px"), ("started", "190px"),
            ("closed", "190px"), ("events", "60px"))
#: The build column, shown when a row of the page ran on a versioned worker (worker build versioning).
_BUILD_COLUMN = ("build", "170px")
#: The system search attribute naming the build (``DEPLOYMENT.BUILD``) an execution runs on.
BUILD_ATTRIBUTE = "TemporalWorkerDeploymentVersion"


def split_query(query: str) -> tuple[str, str]:
    """``(filter, tail)``: the query split before its first ``ORDER BY`` / ``GROUP BY`` outside quotes."""
    quote = ""
    index = 0
    while index < len(query):
        char = query[index]
        if quote:
            if char == quote:
                quote = "" if query[index + 1:index + 2] != quote else quote
                if quote:
                    index += 1
        elif char in "'\"":
            quote = char
        else:
            match = _TAIL.match(query, index)
            if match and (index == 0 or not (query[index - 1].isalnum() or query[index - 1] == "_")):
                return query[:index].strip(), query[index:].strip()
        index += 1
    return query.strip(), ""


def scheduled_by_query(query: str, schedule_id: str | None) -> str:
    """``query`` narrowed to the runs the schedule ``schedule_id`` started (``ScheduledById = '...'``).

    The user's filter is kept in parentheses and its ``ORDER BY`` / ``GROUP BY`` tail after
    the combined filter; ``None`` or ``""`` leaves the query as it is.
    """
    if not schedule_id:
        return query
    condition = "ScheduledById = '" + schedule_id.replace("'", "''") + "'"
    where, tail = split_query(query)
    combined = f"{condition} AND ({where})" if where else condition
    return f"{combined} {tail}".strip()


def _status_name(desc: Any) -> str:
    status = getattr(desc, "status", None)
    return str(getattr(status, "name", status or "")).replace("_", " ").title().replace(" ", "")


def build_of(desc: Any) -> str:
    """The build (``DEPLOYMENT.BUILD``) a listed execution runs on, from its search attributes ("" if unversioned)."""
    value = (getattr(desc, "search_attributes", None) or {}).get(BUILD_ATTRIBUTE)
    if isinstance(value, (list, tuple)):
        value = value[0] if value else None
    return str(value) if value else ""


def _time(value: Any) -> str:
    return value.isoformat(sep=" ", timespec="seconds") if value is not None else "—"


def _close_tree(widget: w.Widget) -> None:
    for child in getattr(widget, "children", ()):
        _close_tree(child)
    widget.close()


class ExecutionBrowser(w.VBox):
    """A table of the executions matching a list-filter query, with status counts and paging.

    Args:
        client: a connected ``spindle.client.Client``.
        query: the initial list-filter query (``""`` lists everything).
        page_size: rows per page.
        live_graphs: whether opened ``HistoryGraph`` widgets follow running executions.
        scheduled_by: show only the runs this schedule started (``ScheduledById``); the
            "schedule" box changes it (empty: every execution).
        loop: the event loop the client belongs to (default: the loop running in
            this thread, else the widgets' background loop).

    The status counts come from one ``client.count_workflows_by(query)`` call
    (the server's ``GROUP BY ExecutionStatus``); pages are read with
    ``client.list_workflows_page`` and their page tokens, so going back to a
    page reads it again (fresh statuses) without re-reading the pages before it.
    A malformed query shows the parser's message with a caret at its position.
    When a row of the page ran on a versioned worker, a "build" column shows the
    build (``DEPLOYMENT.BUILD``) of each row, from its ``TemporalWorkerDeploymentVersion``
    search attribute; a page of unversioned executions has no such column.
    Clicking a row's "open" button shows that run's ``HistoryGraph`` below the
    table (``open_row(index)`` does the same from code; the graph opens children
    through ``handle.client``). Loading never blocks the kernel: it is
    scheduled, or awaited with ``await browser.refresh()``.
    """

    def __init__(self, client: Any, query: str = "", *, page_size: int = 20, live_graphs: bool = True,
                 scheduled_by: str | None = None, loop: asyncio.AbstractEventLoop | None = None) -> None:
        super().__init__(layout=w.Layout(width="100%"))
        self.client = client
        self.scheduled_by = scheduled_by or None
        self.page_size = page_size
        self.live_graphs = live_graphs
        self._runner = Runner(loop)
        self.query = query
        self.page = 0
        self.rows: list[Any] = []
        self.total: int | None = None
        self.status_counts: dict[str, int] = {}
        self.error: str | None = None
        self.error_position: int | None = None
        self.graph: HistoryGraph | None = None
        #: ``_tokens[p]``: the page token of page ``p`` (``None`` for the first page).
        self._tokens: list[bytes | None] = [None]
        #: The index of the last page, once a page came back without a next token.
        self._last_page: int | None = None
        self._lock: asyncio.Lock | None = None
        self._build_widgets()
        self._task = self._runner.spawn(lambda: self._locked(self._reload))

    # ------------------------------------------------------------------ public API

    async def refresh(self) -> None:
        """Re-run the query (counts and the first page)."""
        self._task.cancel()
        await self._runner.call(lambda: self._locked(self._reload))

    async def set_query(self, query: str) -> None:
        """Change the query and reload."""
        self.query = query
        self.query_box.value = query
        await self.refresh()

    async def set_scheduled_by(self, schedule_id: str | None) -> None:
        """Show only the runs the schedule ``schedule_id`` started (``None``: every execution), and reload."""
        self.scheduled_by = schedule_id or None
        self.schedule_box.value = schedule_id or ""
        await self.refresh()

    @property
    def effective_query(self) -> str:
        """The query sent to the server: :attr:`query`, narrowed by :attr:`scheduled_by` if set."""
        return scheduled_by_query(self.query, self.scheduled_by)

    async def goto(self, page: int) -> None:
        """Show page ``page`` (0-based; clamped to the pages that exist)."""
        await self._runner.call(lambda: self._locked(lambda: self._goto(page)))

    def open_row(self, index: int) -> HistoryGraph:
        """Open the ``HistoryGraph`` of row ``index`` of the current page below the table."""
        desc = self.rows[index]
        handle = self.client.get_workflow_handle(desc.id, run_id=desc.run_id or None)
        if self.graph is not None:
            self.graph.close()
        self.graph = HistoryGraph(handle, live=self.live_graphs, loop=self._runner.loop)
        self.detail.children = [w.HTML(f"<h4 style='margin:6px 0'>{escape(desc.id)} "
                                       f"<span style='color:#78909c'>{escape(desc.run_id)}</span></h4>"), self.graph]
        return self.graph

    def close(self) -> None:
        """Close the browser and any graph it opened."""
        task = getattr(self, "_task", None)
        if task is not None:
            task.cancel()
        graph = getattr(self, "graph", None)
        if graph is not None:
            graph.close()
        super().close()

    @property
    def shows_builds(self) -> bool:
        """Whether the page has the build column: a row of it ran on a versioned worker."""
        return any(build_of(desc) for desc in self.rows)

    def to_svg(self) -> str:
        """The counts and the current page as a standalone SVG table (with a build column when a row has one)."""
        builds = self.shows_builds
        row_h, width = 20, 1080 if builds else 960
        height = 60 + row_h * (len(self.rows) + 1)
        out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="spindle-browser" width="{width}" height="{height}" '
               f'font-family="sans-serif" font-size="12"><rect width="{width}" height="{height}" fill="#fff"/>',
               f'<text x="8" y="18" font-weight="600">{escape(self.effective_query or "all executions")} · '
               f'{self.total if self.total is not None else "?"} matching</text>']
        x = 8.0
        for name in STATUS_NAMES:
            count = self.status_counts.get(name, 0)
            fill, stroke = PALETTE[_PALETTE_KEY[name]]
            label = f"{name} {count}"
            out.append(f'<rect x="{x}" y="28" width="{len(label) * 7 + 10}" height="16" rx="7" fill="{fill}" '
                       f'stroke="{stroke}"/><text x="{x + 5}" y="40">{escape(label)}</text>')
            x += len(label) * 7 + 18
        xs = [8, 118, 348, 498, 688, 878]
        titles = ("status", "workflow id", "type", "started", "closed", "build")[:6 if builds else 5]
        y = 64
        for col, title in zip(xs, titles):
            out.append(f'<text x="{col}" y="{y}" font-weight="600" fill="#546e7a">{title}</text>')
        for desc in self.rows:
            y += row_h
            status = _status_name(desc)
            fill, stroke = PALETTE.get(_PALETTE_KEY.get(status, ""), ("#fff", "#999"))
            out.append(f'<g class="spindle-row" data-workflow-id="{escape(desc.id)}">'
                       f'<rect x="6" y="{y - 13}" width="100" height="16" rx="7" fill="{fill}" stroke="{stroke}"/>'
                       f'<text x="12" y="{y}">{escape(status)}</text><text x="{xs[1]}" y="{y}">{escape(desc.id)}</text>'
                       f'<text x="{xs[2]}" y="{y}">{escape(desc.workflow_type)}</text>'
                       f'<text x="{xs[3]}" y="{y}">{escape(_time(desc.start_time))}</text>'
                       f'<text x="{xs[4]}" y="{y}">{escape(_time(desc.close_time))}</text>'
                       + (f'<text x="{xs[5]}" y="{y}" class="spindle-build">{escape(build_of(desc))}</text>'
                          if builds else "") + '</g>')
        out.append("</svg>")
        return "".join(out)

    def to_html(self, path: str | os.PathLike[str], *, self_contained: bool = False) -> Path:
        """Write the browser (as it is now) as an HTML page that renders offline."""
        return export_html(self, path, title="executions", self_contained=self_contained)

    # ------------------------------------------------------------------ widgets

    def _build_widgets(self) -> None:
        self.query_box = w.Text(value=self.query, placeholder="WorkflowType = 'Order' AND ExecutionStatus = 'Running'",
                                continuous_update=False, layout=w.Layout(width="70%"))
        self.schedule_box = w.Text(value=self.scheduled_by or "", placeholder="schedule id", continuous_update=False,
                                   layout=w.Layout(width="20%"), tooltip="only runs this schedule started")
        self.apply_button = w.Button(description="filter", layout=w.Layout(width="90px"))
        self.error_view = w.HTML()
        self.counts_view = w.HTML()
        self.table = w.VBox()
        self.prev_button = w.Button(description="◀ prev", layout=w.Layout(width="80px"))
        self.next_button = w.Button(description="next ▶", layout=w.Layout(width="80px"))
        self.page_label = w.HTML()
        self.detail = w.VBox()
        self.children = [w.HBox([self.query_box, self.schedule_box, self.apply_button]), self.error_view, self.counts_view, self.table,
                         w.HBox([self.prev_button, self.page_label, self.next_button]), self.detail]
        self.apply_button.on_click(lambda _b: self._submit())
        self.query_box.observe(lambda _c: self._submit(), names="value")
        self.schedule_box.observe(lambda _c: self._submit(), names="value")
        self.prev_button.on_click(lambda _b: self._spawn_goto(self.page - 1))
        self.next_button.on_click(lambda _b: self._spawn_goto(self.page + 1))

    def _submit(self) -> None:
        self.query = self.query_box.value
        self.scheduled_by = self.schedule_box.value.strip() or None
        self._task.cancel()  # a reload replaces whatever was loading
        self._task = self._runner.spawn(lambda: self._locked(self._reload))

    def _spawn_goto(self, page: int) -> None:
        self._task = self._runner.spawn(lambda: self._locked(lambda: self._goto(page)))

    # ------------------------------------------------------------------ loading (on the client's loop)

    async def _locked(self, factory: Callable[[], Awaitable[None]]) -> None:
        """Run one load at a time: they share the page tokens."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            await factory()

    async def _reload(self) -> None:
        self._tokens, self._last_page, self.page, self.rows = [None], None, 0, []
        self.status_counts, self.total = {}, None
        self.error_view.value = "<i>loading…</i>"
        try:
            counts = await self.client.count_workflows_by(self.effective_query)  # one call: the server's GROUP BY
        except Exception as error:  # noqa: BLE001 - the query is the user's; show why it is wrong
            await self._show_query_error(error)
            return
        self.error = self.error_position = None
        self.error_view.value = ""
        self.status_counts = {name: int(counts.get(name, 0)) for name in STATUS_NAMES}
        self.total = sum(counts.values())
        await self._goto(0)

    async def _show_query_error(self, error: BaseException) -> None:
        """Show why the query is wrong, with positions in the text the user typed.

        ``count_workflows_by`` sends the query with ``GROUP BY`` appended, so its
        error may point past the user's text; asking for the plain count gives
        the parser's message about the query as typed (only on this error path).
        """
        try:
            await self.client.count_workflows(self.effective_query)
        except Exception as plain:  # noqa: BLE001 - the message to show
            error = plain
        self._show_error(getattr(error, "message", None) or str(error))

    async def _goto(self, page: int) -> None:
        """Show page ``page``, read with its page token (pages before it are read for their tokens first)."""
        page = max(0, page)
        while True:
            if self._last_page is not None:
                page = min(page, self._last_page)
            index = min(page, len(self._tokens) - 1)
            rows, token = await self.client.list_workflows_page(self.effective_query, page_size=self.page_size,
                                                                next_page_token=self._tokens[index])
            if not rows and index > 0:  # the previous page ended exactly at the last row
                self._last_page = index - 1
                del self._tokens[index:]
                continue
            if index == len(self._tokens) - 1:
                if token is None:
                    self._last_page = index
                else:
                    self._tokens.append(token)
            if index == page:
                break
        self.page = page
        self.rows = rows
        self._render()

    # ------------------------------------------------------------------ rendering

    def _show_error(self, message: str) -> None:
        found = _POSITION.search(message)
        self.error = message
        self.error_position = int(found.group(1)) if found else None
        caret = ""
        if self.error_position is not None:
            caret = "\n" + " " * self.error_position + "^"
        self.error_view.value = (f"<pre class='spindle-query-error' style='color:#c62828;background:#fff5f5;"
                                 f"padding:4px;margin:2px 0'>{escape(self.effective_query)}{caret}\n{escape(message)}</pre>")
        self.counts_view.value = ""
        self.table.children = []
        self.page_label.value = ""

    def _render(self) -> None:
        badges = " ".join(status_badge(_PALETTE_KEY[name], f"{name} {count}")
                          for name, count in self.status_counts.items())
        self.counts_view.value = (f"<div style='font:13px sans-serif;margin:4px 0'><b>{self.total}</b> matching "
                                  f"&nbsp;{badges}</div>")
        builds = self.shows_builds
        columns = (*_COLUMNS, _BUILD_COLUMN) if builds else _COLUMNS
        header = w.HTML("<div style='display:flex;font:600 12px sans-serif;color:#546e7a'>" + "".join(
            f"<div style='width:{width}'>{name}</div>" for name, width in columns) + "</div>")
        rows: list[w.Widget] = [header]
        for index, desc in enumerate(self.rows):
            status = _status_name(desc)
            cells = [status_badge(_PALETTE_KEY.get(status, ""), status), escape(desc.id),
                     escape(desc.workflow_type), _time(desc.start_time), _time(desc.close_time),
                     str(desc.history_length)]
            if builds:
                cells.append(f"<span class='spindle-build'>{escape(build_of(desc))}</span>")
            html = w.HTML("<div style='display:flex;font:12px sans-serif'>" + "".join(
                f"<div style='width:{width};overflow:hidden;white-space:nowrap'>{cell}</div>"
                for cell, (_name, width) in zip(cells, columns)) + "</div>")
            button = w.Button(description="open", layout=w.Layout(width="60px", height="22px"))
            button.on_click(lambda _b, i=index: self.open_row(i))
            rows.append(w.HBox([html, button]))
        old = self.table.children
        self.table.children = rows
        for widget in old:
            _close_tree(widget)
        shown = f"{self.page * self.page_size + 1}–{self.page * self.page_size + len(self.rows)}" if self.rows else "0"
        self.page_label.value = (f"<span style='font:12px sans-serif;padding:0 8px'>page {self.page + 1} · "
                                 f"rows {shown} of {self.total}</span>")
        self.prev_button.disabled = self.page == 0
        self.next_button.disabled = self._last_page is not None and self.page >= self._last_page
