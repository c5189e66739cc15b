"""HistoryGraph and ExecutionBrowser as widgets: detail panel, export, browsing a live namespace."""

from __future__ import annotations

import asyncio
import html

from pathlib import Path

import widget_workflows as ww

from widget_fixtures import QUEUE

from spindle.client import Client, History
from spindle.widgets import ExecutionBrowser, HistoryGraph
from spindle.widgets._browser import split_query
from spindle.widgets._export import EMBED_NAME


def test_detail_panel_truncates_and_shows_full_text(kitchen: History) -> None:
    graph = HistoryGraph(kitchen, text_limit=20)
    graph.select("activity:17")
    assert "CardDeclined: card …" in graph.detail.value and "truncated" in graph.detail.value
    graph.full_text.value = True
    full = html.unescape(graph.detail.value)
    assert "CardDeclined: card declined" in full and '{"code": 402}' in full
    assert 'class="spindle-node selected" data-node-id="activity:17"' in graph.graph_view.value
    graph.select("child:40")
    assert graph.child_button.disabled is False
    graph.select("timer:35")
    assert graph.child_button.disabled is True
    graph.close()


def test_export_html_offline(kitchen: History, tmp_path: Path) -> None:
    graph = HistoryGraph(kitchen)
    page = graph.to_html(tmp_path / "out" / "kitchen.html")
    text = page.read_text()
    assert f'src="{EMBED_NAME}"' in text and "application/vnd.jupyter.widget-state+json" in text
    assert (page.parent / EMBED_NAME).stat().st_size > 1_000_000
    single = graph.to_html(tmp_path / "single.html", self_contained=True).read_text()
    assert 'src="data:text/javascript;base64,' in single
    assert graph.to_svg("timeline").startswith("<svg")
    graph.close()


def test_split_query() -> None:
    assert split_query("WorkflowType = 'a' ORDER BY StartTime") == ("WorkflowType = 'a'", "ORDER BY StartTime")
    assert split_query("WorkflowId = 'order by x'") == ("WorkflowId = 'order by x'", "")
    assert split_query("ExecutionStatus = 'Running' group by ExecutionStatus")[1] == "group by ExecutionStatus"


async def _run_some(client: Client) -> None:
    for i in range(3):
        await client.execute_workflow(ww.Child.run, i, id=f"child-{i}", task_queue=QUEUE)
    doomed = await client.start_workflow(ww.Doomed.run, id="doomed", task_queue=QUEUE)
    try:
        await doomed.result()
    except Exception:  # noqa: BLE001 - meant to fail
        pass
    await client.start_workflow(ww.Waiter.run, id="waiter", task_queue=QUEUE)
    for _ in range(250):  # visibility is written asynchronously
        if (await client.count_workflows("ExecutionStatus != 'Running'") == 4
                and await client.count_workflows("ExecutionStatus = 'Running'") == 1):
            return
        await asyncio.sleep(0.02)
    raise AssertionError("visibility did not catch up")


async def test_execution_browser(client: Client) -> None:
    await _run_some(client)
    browser = ExecutionBrowser(client, page_size=2)
    await browser.refresh()
    assert browser.total == 5
    assert browser.status_counts["Completed"] == 3
    assert browser.status_counts["Failed"] == 1 and browser.status_counts["Running"] == 1
    assert len(browser.rows) == 2 and browser.page == 0
    await browser.goto(2)
    assert browser.page == 2 and len(browser.rows) == 1
    await browser.goto(9)
    assert browser.page == 2  # clamped
    await browser.set_query("WorkflowType = 'Child' ORDER BY WorkflowId")
    assert browser.total == 3 and browser.status_counts == {**dict.fromkeys(browser.status_counts, 0),
                                                            "Completed": 3}
    assert [r.id for r in browser.rows] == ["child-0", "child-1"]
    svg = browser.to_svg()
    assert 'data-workflow-id="child-0"' in svg

    graph = browser.open_row(1)
    await graph.refresh()
    assert graph.model.workflow_id == "child-1" and graph.status == "completed"
    assert browser.detail.children[1] is graph

    await browser.set_query("WorkflowType = ")
    assert browser.error_position == 15
    assert "expected a value" in (browser.error or "")
    assert "\n" + " " * 15 + "^" in browser.error_view.value
    assert browser.table.children == ()
    browser.close()


async def test_browser_filter_box_schedules_without_blocking(client: Client) -> None:
    await _run_some(client)
    browser = ExecutionBrowser(client)
    browser.query_box.value = "ExecutionStatus = 'Running'"  # a kernel callback: scheduled, never awaited
    for _ in range(100):
        if browser.total == 1 and browser.rows:
            break
        await asyncio.sleep(0.02)
    assert browser.total == 1 and browser.rows[0].id == "waiter"
    browser.close()
