"""The exported HTML renders in a real browser (headless Chromium), offline.

Skipped only when Chromium is not installed (CI installs it: ``apt-get install -y
chromium``). Screenshots go to ``test-artifacts/`` at the repository root.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile

from pathlib import Path

import pytest

from widget_fixtures import FIXTURES, load

from spindle import dsl
from spindle.widgets import DagView, HistoryGraph

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium not installed (apt-get install -y chromium)")
_SCRIPT = re.compile(r"<script\b.*?</script>", re.DOTALL | re.IGNORECASE)
_NODE = re.compile(r'class="spindle-node(?: selected)?" data-node-id="([^"]+)" data-status="([^"]*)"')


def _chromium(page: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    with tempfile.TemporaryDirectory() as profile:
        env = {**os.environ, "XDG_CONFIG_HOME": f"{profile}/xdg", "XDG_CACHE_HOME": f"{profile}/xdg"}
        return subprocess.run(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={profile}", "--window-size=1400,900", "--hide-scrollbars",
             "--virtual-time-budget=3000", *args, page.resolve().as_uri()],
            capture_output=True, text=True, timeout=90, env=env, check=False)


def _rendered_nodes(page: Path, screenshot: str) -> dict[str, str]:
    """The graph nodes in the DOM the browser built (widget state scripts removed), and a screenshot."""
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / screenshot
    shot.unlink(missing_ok=True)
    result = _chromium(page, "--dump-dom", f"--screenshot={shot}")
    assert result.returncode == 0, result.stderr[-2000:]
    dom = _SCRIPT.sub("", result.stdout)
    assert "widget-html-content" in dom, "the widget manager did not render the widgets"
    assert shot.exists() and shot.stat().st_size > 10_000
    return dict(_NODE.findall(dom))


def test_history_graph_page_renders(tmp_path: Path) -> None:
    graph = HistoryGraph(load("kitchen.json"))
    graph.select("activity:7")
    nodes = _rendered_nodes(graph.to_html(tmp_path / "history.html"), "history_graph.png")
    assert len(nodes) == graph.graph.number_of_nodes()
    assert nodes["activity:7"] == "completed" and nodes["activity:17"] == "failed"
    assert nodes["signal:54"] == "received" and nodes["child:40"] == "completed"
    graph.close()


def test_dag_view_page_renders(tmp_path: Path) -> None:
    view = DagView(dsl.load(FIXTURES / "dsl.yaml"), load("dsl_running.json"))
    nodes = _rendered_nodes(view.to_html(tmp_path / "dag.html"), "dag_view.png")
    assert nodes == {"extract": "done", "per_region": "done", "risky": "failed", "totals": "done", "pause": "done",
                     "approval": "running", "publish": "pending", "archive": "pending"}
    view.close()
