"""Widgets for schedules: ``ExecutionBrowser(scheduled_by=...)`` and ``ScheduleView`` (issue 17).

The schedule fires in virtual time (``WorkflowEnvironment.start_time_skipping``); the
browser's filter is the visibility query ``ScheduledById = '...'``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from waiting import until

from spindle import workflow
from spindle.client import (
    RPCError,
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleIntervalSpec,
    ScheduleSpec,
)
from spindle.testing import WorkflowEnvironment
from spindle.widgets import ExecutionBrowser, ScheduleView
from spindle.widgets._browser import scheduled_by_query
from spindle.worker import Worker

UTC = timezone.utc
T0 = datetime(2026, 12, 1, 0, 0, 30, tzinfo=UTC)


@workflow.defn
class Tick:
    @workflow.run
    async def run(self) -> str:
        return workflow.info().workflow_id


def test_scheduled_by_narrows_the_query_and_keeps_its_order_by() -> None:
    assert scheduled_by_query("", "nightly") == "ScheduledById = 'nightly'"
    assert scheduled_by_query("ExecutionStatus = 'Failed' ORDER BY StartTime DESC", "nightly") == (
        "ScheduledById = 'nightly' AND (ExecutionStatus = 'Failed') ORDER BY StartTime DESC")
    assert scheduled_by_query("a = 'x' OR b = 'y'", "o'clock") == "ScheduledById = 'o''clock' AND (a = 'x' OR b = 'y')"
    assert scheduled_by_query("WorkflowType = 'T'", None) == "WorkflowType = 'T'"
    assert scheduled_by_query("WorkflowType = 'T'", "") == "WorkflowType = 'T'"


async def _env_with_two_schedules() -> WorkflowEnvironment:
    env = await WorkflowEnvironment.start_time_skipping(start_time=T0)
    try:
        # ScheduledById is a system attribute once the server registers it; before that, register it here
        await env.client.add_search_attributes({"ScheduledById": "Keyword"})
    except RPCError:
        pass
    for sid, every in (("hourly", 1), ("two-hourly", 2)):
        await env.client.create_schedule(sid, Schedule(
            action=ScheduleActionStartWorkflow(Tick.run, id=sid, task_queue="ticks"),
            spec=ScheduleSpec(intervals=[ScheduleIntervalSpec(every=timedelta(hours=every))])))
    return env


async def _until_completed(env: WorkflowEnvironment, n: int) -> None:
    """Wait, with the worker still running, until ``n`` runs are listed as completed: a schedule's action is
    paced through the namespace's start budget, so its last run may start just as the virtual sleep ends."""
    async def listed() -> bool:
        return await env.client.count_workflows("ExecutionStatus = 'Completed'") >= n

    await until(listed, f"{n} completed runs in the listing", timeout=5.0, interval=0.02)


async def test_browser_lists_only_the_runs_of_one_schedule() -> None:
    env = await _env_with_two_schedules()
    try:
        async with Worker(env.client, task_queue="ticks", workflows=[Tick]):
            await env.sleep(timedelta(hours=4))
            await _until_completed(env, 6)
        browser = ExecutionBrowser(env.client, "ORDER BY WorkflowId", scheduled_by="hourly")
        await browser.refresh()
        assert browser.error is None, browser.error
        assert [r.id for r in browser.rows] == [f"hourly-2026-12-01T0{h}:00:00Z" for h in (1, 2, 3, 4)]
        assert browser.total == 4 and browser.status_counts["Completed"] == 4
        assert browser.effective_query == "ScheduledById = 'hourly' ORDER BY WorkflowId"
        assert "ScheduledById = 'hourly' ORDER BY WorkflowId" in browser.to_svg()

        await browser.set_scheduled_by("two-hourly")
        assert [r.id for r in browser.rows] == ["two-hourly-2026-12-01T02:00:00Z", "two-hourly-2026-12-01T04:00:00Z"]
        assert browser.schedule_box.value == "two-hourly"
        await browser.set_scheduled_by(None)
        assert browser.total == 6
        browser.close()
    finally:
        await env.shutdown()


async def test_schedule_view_shows_recent_and_next_actions_and_renders_to_html(tmp_path: Path) -> None:
    env = await _env_with_two_schedules()
    try:
        async with Worker(env.client, task_queue="ticks", workflows=[Tick]):
            await env.sleep(timedelta(hours=3))
        handle = env.client.get_schedule_handle("hourly")
        view = ScheduleView(handle)
        await view.refresh()
        assert view.error is None and view.description.info.num_actions == 3
        html = view.header.value + view.recent_view.value + view.next_view.value
        assert "active" in html and "every 1h" in html and "3 actions" in html
        recent = re.findall(r"class='spindle-recent-action' data-workflow-id='([^']+)'", view.recent_view.value)
        assert recent == [f"hourly-2026-12-01T0{h}:00:00Z" for h in (3, 2, 1)]  # latest first
        assert view.next_view.value.count("spindle-next-action") == 10
        assert "2026-12-01 04:00:00 UTC" in view.next_view.value

        await handle.pause(note="upstream outage")
        await view.refresh()
        assert "paused" in view.header.value and "upstream outage" in view.header.value
        assert "none (paused or ended)" in view.next_view.value

        svg = view.to_svg()
        assert svg.startswith("<svg") and "hourly-2026-12-01T03:00:00Z" in svg and "paused" in svg
        page = view.to_html(tmp_path / "schedule.html")
        text = page.read_text()
        assert "hourly-2026-12-01T01:00:00Z" in text and "upstream outage" in text

        await handle.delete()
        await view.refresh()
        assert view.error is not None and "no schedule 'hourly'" in view.error
        view.close()
    finally:
        await env.shutdown()


CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None)
_SCRIPT = re.compile(r"<script\b.*?</script>", re.DOTALL | re.IGNORECASE)


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium not installed (apt-get install -y chromium)")
async def test_schedule_view_page_renders_in_a_browser(tmp_path: Path) -> None:
    env = await _env_with_two_schedules()
    try:
        async with Worker(env.client, task_queue="ticks", workflows=[Tick]):
            await env.sleep(timedelta(hours=2))
        view = ScheduleView(env.client.get_schedule_handle("hourly"))
        await view.refresh()
        page = view.to_html(tmp_path / "schedule.html")
    finally:
        await env.shutdown()
    assert CHROMIUM is not None
    with tempfile.TemporaryDirectory() as profile:
        result = subprocess.run(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync",
             "--disable-background-networking", "--disable-component-update", f"--user-data-dir={profile}",
             "--virtual-time-budget=3000", "--dump-dom", page.resolve().as_uri()],
            capture_output=True, text=True, timeout=90, check=False,
            env={**os.environ, "XDG_CONFIG_HOME": f"{profile}/xdg", "XDG_CACHE_HOME": f"{profile}/xdg"})
    assert result.returncode == 0, result.stderr[-2000:]
    dom = _SCRIPT.sub("", result.stdout)  # what the widget manager built, not the embedded state
    assert "widget-html-content" in dom
    rows = re.findall(r'class="spindle-recent-action" data-workflow-id="([^"]+)"', dom)
    assert rows == ["hourly-2026-12-01T02:00:00Z", "hourly-2026-12-01T01:00:00Z"]
    assert dom.count('class="spindle-next-action"') == 10
