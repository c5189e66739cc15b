"""``ScheduleView``: one schedule's state, its recent actions (with their runs) and its next action times."""

from __future__ import annotations

import asyncio
import os

from pathlib import Path
from typing import Any

import ipywidgets as w

from spindle.widgets._background import Runner
from spindle.widgets._export import export_html
from spindle.widgets._svg import escape, status_badge

__all__ = ["ScheduleView"]


def _time(value: Any) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S UTC") if value is not None else "—"


def _every(seconds: float) -> str:
    out, rest = "", int(seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if rest >= size:
            out += f"{rest // size}{unit}"
            rest %= size
    return out or "0s"


def spec_summary(desc: Any) -> str:
    """``cron '0 6 * * *' (Europe/Berlin), every 1h at +15m``: when a schedule acts, in one line."""
    spec = desc.schedule.spec
    parts = [f"cron {c!r}" for c in spec.cron_expressions]
    if parts and spec.time_zone_name != "UTC":
        parts[-1] += f" ({spec.time_zone_name})"
    for iv in spec.intervals:
        offset = iv.offset.total_seconds()
        parts.append(f"every {_every(iv.every.total_seconds())}" + (f" at +{_every(offset)}" if offset else ""))
    return ", ".join(parts) or "no times (trigger and backfill only)"


class ScheduleView(w.VBox):
    """A schedule at a glance: paused or active (with its note), when it acts, what it did, what comes next.

    Args:
        handle: a ``spindle.client.ScheduleHandle`` (``client.get_schedule_handle(id)``).
        loop: the event loop its client belongs to (default: the loop running in this
            thread, else the widgets' background loop).

    ``await view.refresh()`` (or the refresh button) describes the schedule again; the
    view loads once when made, without blocking the kernel. ``to_html(path)`` writes the
    view as it is now as a page that renders offline, ``to_svg()`` as an SVG. Each recent
    action shows its nominal time, when the run started, and the run's workflow id.
    """

    def __init__(self, handle: Any, *, loop: asyncio.AbstractEventLoop | None = None) -> None:
        super().__init__(layout=w.Layout(width="100%"))
        self.handle = handle
        self.description: Any = None
        self.error: str | None = None
        self._runner = Runner(loop)
        self.header = w.HTML()
        self.recent_view = w.HTML()
        self.next_view = w.HTML()
        self.refresh_button = w.Button(description="refresh", layout=w.Layout(width="90px"))
        self.refresh_button.on_click(lambda _b: self._spawn())
        self.children = [w.HBox([self.header, self.refresh_button]), self.recent_view, self.next_view]
        self.header.value = f"<b>schedule {escape(handle.id)}</b> <i>loading…</i>"
        self._task = self._runner.spawn(self._load)

    async def refresh(self) -> None:
        """Describe the schedule again and redraw."""
        self._task.cancel()
        await self._runner.call(self._load)

    def close(self) -> None:
        """Stop loading and close the view."""
        task = getattr(self, "_task", None)
        if task is not None:
            task.cancel()
        super().close()

    def _spawn(self) -> None:
        self._task.cancel()
        self._task = self._runner.spawn(self._load)

    async def _load(self) -> None:
        try:
            self.description = await self.handle.describe()
        except Exception as error:  # noqa: BLE001 - shown in the view (e.g. the schedule was deleted)
            self.error = getattr(error, "message", None) or str(error)
            self.header.value = (f"<b>schedule {escape(self.handle.id)}</b> "
                                 f"<span style='color:#c62828'>{escape(self.error)}</span>")
            self.recent_view.value = self.next_view.value = ""
            return
        self.error = None
        self._render()

    # ------------------------------------------------------------------ rendering
    def _render(self) -> None:
        d = self.description
        state = d.schedule.state
        badge = status_badge("canceled", "paused") if state.paused else status_badge("running", "active")
        note = f" — {escape(state.note)}" if state.note else ""
        action = d.schedule.action
        self.header.value = (
            f"<div style='font:13px sans-serif'><b>schedule {escape(d.id)}</b> {badge}{note}<br>"
            f"<span style='color:#546e7a'>{escape(spec_summary(d))} · starts {escape(action.workflow)} on "
            f"{escape(action.task_queue)} · {d.schedule.policy.overlap.name} · {d.info.num_actions} actions, "
            f"{d.info.num_actions_skipped_overlap} skipped (overlap), {d.info.num_actions_missed_catchup_window} "
            f"missed (catch-up window)</span></div>")
        rows = "".join(
            f"<tr class='spindle-recent-action' data-workflow-id='{escape(a.workflow_id)}'>"
            f"<td>{escape(_time(a.scheduled_at))}</td><td>{escape(_time(a.started_at))}</td>"
            f"<td>{escape(a.workflow_id)}</td><td style='color:#78909c'>{escape(a.run_id[:8])}</td></tr>"
            for a in reversed(d.info.recent_actions))
        self.recent_view.value = (
            "<div style='font:12px sans-serif;margin-top:6px'><b>recent actions</b> (latest first)"
            "<table style='border-collapse:collapse;font:12px sans-serif'><tr style='color:#546e7a'>"
            "<th align=left>scheduled</th><th align=left>started</th><th align=left>workflow id</th>"
            f"<th align=left>run</th></tr>{rows or '<tr><td colspan=4><i>none yet</i></td></tr>'}</table></div>")
        upcoming = "".join(f"<li class='spindle-next-action'>{escape(_time(t))}</li>" for t in d.info.next_action_times)
        self.next_view.value = ("<div style='font:12px sans-serif;margin-top:6px'><b>next actions</b>"
                                f"<ul style='margin:2px 0'>{upcoming or '<li><i>none (paused or ended)</i></li>'}"
                                "</ul></div>")

    def to_svg(self) -> str:
        """The view as a standalone SVG (state, recent actions, next action times)."""
        d = self.description
        if d is None:
            return ('<svg xmlns="http://www.w3.org/2000/svg" width="400" height="30"><text x="8" y="20" '
                    f'font-family="sans-serif">{escape(self.error or "not loaded")}</text></svg>')
        lines = [f"schedule {d.id} — {'paused' if d.schedule.state.paused else 'active'}"
                 + (f" ({d.schedule.state.note})" if d.schedule.state.note else ""), spec_summary(d), "recent actions:"]
        lines += [f"  {_time(a.scheduled_at)}  {a.workflow_id}" for a in reversed(d.info.recent_actions)]
        lines += ["next actions:"] + [f"  {_time(t)}" for t in d.info.next_action_times]
        height = 16 * len(lines) + 12
        body = "".join(f'<text x="8" y="{18 + 16 * i}">{escape(line)}</text>' for i, line in enumerate(lines))
        return (f'<svg xmlns="http://www.w3.org/2000/svg" class="spindle-schedule" width="720" height="{height}" '
                f'font-family="sans-serif" font-size="12"><rect width="720" height="{height}" fill="#fff"/>{body}</svg>')

    def to_html(self, path: str | os.PathLike[str], *, self_contained: bool = False) -> Path:
        """Write the view (as it is now) as an HTML page that renders offline."""
        return export_html(self, path, title=f"schedule {self.handle.id}", self_contained=self_contained)
