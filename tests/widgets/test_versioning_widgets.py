"""Worker build versioning in the widgets: the build each workflow task ran on (history graph node, tooltip, detail,
an exported page in headless Chromium) and the build column of the execution browser.

The versioned run is made at the wire level on an embedded control plane: a worker of deployment
``orders`` build ``1.0`` polls (the server learns the version), the build becomes current, and
that worker runs the run's two workflow tasks declaring PINNED. An unversioned run (and the
recorded ``kitchen`` history) show nothing new.
"""

from __future__ import annotations

import asyncio
import datetime
import os
import re
import shutil
import subprocess
import tempfile

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.client import Client, History
from spindle.exceptions import RPCError
from spindle.widgets import ExecutionBrowser, HistoryGraph
from spindle.widgets._graph_model import build_graph
from spindle.widgets._history_render import node_shape, node_tooltip

pytestmark = pytest.mark.timeout(120)

QUEUE = "orders-q"
CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None)


def _options() -> pb.WorkerDeploymentOptions:
    return pb.WorkerDeploymentOptions(version=pb.WorkerDeploymentVersion(deployment_name="orders", build_id="1.0"),
                                      use_worker_versioning=True)


async def _poll(client: Client, wait: float) -> svc.PollWorkflowTaskQueueResponse:
    req = svc.PollWorkflowTaskQueueRequest(namespace=client.namespace, task_queue=QUEUE, identity="worker-1.0")
    req.deployment_options.CopyFrom(_options())
    try:
        resp: svc.PollWorkflowTaskQueueResponse = await client.workflow_service.poll_workflow_task_queue(
            req, timeout=datetime.timedelta(seconds=wait))
        return resp
    except RPCError as e:
        if e.status != "DEADLINE_EXCEEDED":
            raise
        return svc.PollWorkflowTaskQueueResponse()


async def _run_task(client: Client, workflow_id: str, *, close: bool) -> None:
    task = await _poll(client, 5.0)
    assert task.workflow_execution.workflow_id == workflow_id
    commands = [pb.Command(command_type=pb.COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION,
                           complete_workflow_execution_command_attributes=pb.CompleteWorkflowExecutionCommandAttributes(
                           ))] if close else []
    req = svc.RespondWorkflowTaskCompletedRequest(task_token=task.task_token, identity="worker-1.0",
                                                  namespace=client.namespace, commands=commands,
                                                  versioning_behavior=pb.VERSIONING_BEHAVIOR_PINNED)
    req.deployment_options.CopyFrom(_options())
    await client.workflow_service.respond_workflow_task_completed(req)


@pytest.fixture
async def versioned(tmp_path: Path) -> AsyncIterator[Client]:
    """An embedded client with run ``v-1`` (two workflow tasks on orders.1.0, completed) and ``plain-1`` (unversioned,
    never picked up)."""
    client = await Client.connect("embedded:" + str(tmp_path / "v.db"))
    try:
        assert not (await _poll(client, 0.3)).task_token  # the worker of 1.0 polls: the version becomes known
        await client.workflow_service.set_worker_deployment_current_version(svc.SetWorkerDeploymentCurrentVersionRequest(
            namespace=client.namespace, deployment_name="orders", build_id="1.0", identity="test"))
        await client.start_workflow("Order", id="v-1", task_queue=QUEUE)
        await _run_task(client, "v-1", close=False)
        await client.get_workflow_handle("v-1").signal("go")
        await _run_task(client, "v-1", close=True)
        await client.start_workflow("Plain", id="plain-1", task_queue="plain-q")
        for _ in range(250):  # visibility is written behind the history
            if await client.count_workflows("TemporalWorkerDeploymentVersion = 'orders.1.0'") == 1 \
                    and await client.count_workflows("WorkflowId = 'plain-1'") == 1:
                break
            await asyncio.sleep(0.02)
        yield client
    finally:
        await client.close()


async def _history(client: Client, workflow_id: str) -> History:
    return await client.get_workflow_handle(workflow_id).fetch_history()


async def test_workflow_task_nodes_carry_the_build_they_ran_on(versioned: Client, kitchen: History) -> None:
    builder = build_graph(await _history(versioned, "v-1"))
    tasks = [n for n in builder.nodes() if n.kind == "workflow_task"]
    assert len(tasks) == 2
    for node in tasks:
        assert (node.details["build"], node.details["versioning_behavior"]) == ("orders.1.0", "pinned")
        assert node_shape(node).sublabel == "completed · orders.1.0"
        assert "build orders.1.0 (pinned)" in node_tooltip(node).splitlines()

    plain = build_graph(kitchen)  # recorded before versioning: unversioned workers
    for node in plain.nodes():
        assert "build" not in node.details and "versioning_behavior" not in node.details
        assert "orders" not in node_shape(node).sublabel and "build " not in node_tooltip(node)


async def test_the_browser_has_a_build_column_only_for_pages_with_versioned_runs(versioned: Client) -> None:
    browser = ExecutionBrowser(versioned, "WorkflowId IN ('v-1', 'plain-1') ORDER BY WorkflowId DESC")
    await browser.refresh()
    assert [r.id for r in browser.rows] == ["v-1", "plain-1"] and browser.shows_builds
    header, versioned_row, plain_row = browser.table.children
    assert ">build</div>" in header.value
    assert "<span class='spindle-build'>orders.1.0</span>" in versioned_row.children[0].value
    assert "<span class='spindle-build'></span>" in plain_row.children[0].value
    svg = browser.to_svg()
    assert re.search(r'data-workflow-id="v-1">.*class="spindle-build">orders\.1\.0</text>', svg)

    await browser.set_query("WorkflowId = 'plain-1'")  # unversioned only: the table as before
    assert [r.id for r in browser.rows] == ["plain-1"] and not browser.shows_builds
    assert "build" not in browser.table.children[0].value and "spindle-build" not in browser.to_svg()
    browser.close()


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium not installed (apt-get install -y chromium)")
async def test_the_exported_graph_shows_the_build_in_a_browser(versioned: Client, tmp_path: Path) -> None:
    graph = HistoryGraph(await _history(versioned, "v-1"))
    graph.select("wft:2")  # the detail panel shows the selected task's facts
    page = graph.to_html(tmp_path / "versioned.html")
    graph.close()
    assert CHROMIUM is not None
    with tempfile.TemporaryDirectory() as profile:
        env = {**os.environ, "XDG_CONFIG_HOME": f"{profile}/xdg", "XDG_CACHE_HOME": f"{profile}/xdg"}
        result = subprocess.run(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync",
             "--disable-background-networking", "--disable-component-update", f"--user-data-dir={profile}",
             "--virtual-time-budget=3000", "--dump-dom", page.resolve().as_uri()],
            capture_output=True, text=True, timeout=90, env=env, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    dom = re.sub(r"<script\b.*?</script>", "", result.stdout, flags=re.DOTALL | re.IGNORECASE)
    assert "widget-html-content" in dom, "the widget manager did not render the widgets"
    nodes = re.findall(r'<g class="spindle-node[^"]*" data-node-id="(wft:\d+)".*?</g>', dom, re.DOTALL)
    assert len(nodes) == 2
    for node_id in nodes:
        drawn = re.search(rf'data-node-id="{node_id}".*?</g>', dom, re.DOTALL)
        assert drawn is not None
        # a workflow task is drawn as a dot: its build is in the tooltip
        assert re.search(r"<title>[^<]*\nbuild orders\.1\.0 \(pinned\)\n[^<]*</title>", drawn.group(0)), drawn.group(0)
    detail = re.search(r"<div class=\"spindle-detail\">.*?</table>", dom, re.DOTALL)
    assert detail is not None and re.search(r">build</td><td[^>]*>orders\.1\.0</td>", detail.group(0)), dom[-3000:]
