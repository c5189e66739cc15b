"""examples/notebooks/tour.ipynb runs headlessly (nbclient): against the embedded control plane, and against a
server that requires API keys (SPINDLE_ADDRESS / SPINDLE_API_KEY, as a platform team would give them) and serves
metrics (SPINDLE_METRICS_URL: the tour's metrics cell scrapes them and draws the backlog and RPC latency)."""

from __future__ import annotations

import json

from pathlib import Path

import nbformat
import pytest

from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parents[2] / "examples" / "notebooks" / "tour.ipynb"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


@pytest.mark.timeout(120)
def test_tour_notebook_executes_and_stores_widget_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("SPINDLE_ADDRESS", "SPINDLE_API_KEY", "SPINDLE_METRICS_URL"):
        monkeypatch.delenv(var, raising=False)
    nb = _run_tour(tmp_path)
    assert "metrics from nowhere (embedded control plane)" in _text(nb)
    assert "no metrics endpoint" in json.dumps(nb.metadata.widgets[WIDGET_STATE]["state"])


@pytest.mark.timeout(180)
def test_tour_notebook_runs_against_a_server_that_requires_api_keys(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from spindle_procs import AuthDevServer

    with AuthDevServer(tmp_path / "auth.db", "--metrics-port", "0") as server:
        assert server.metrics_url, "start-dev --metrics-port did not say where its metrics are"
        monkeypatch.setenv("SPINDLE_ADDRESS", server.address)  # the kernel inherits the environment
        monkeypatch.setenv("SPINDLE_API_KEY", server.key)
        monkeypatch.setenv("SPINDLE_METRICS_URL", server.metrics_url)
        nb = _run_tour(tmp_path)
        assert f"metrics from {server.metrics_url}" in _text(nb)
        state = json.dumps(nb.metadata.widgets[WIDGET_STATE]["state"])
        # the metrics cell drew the two orders waiting on the unpolled queue, and the p99 of the RPCs made
        assert "default/tour-unpolled (workflow)" in state and "2 tasks" in state, state[-3000:]
        assert "RPC latency p99 by method" in state and "StartWorkflowExecution" in state
        monkeypatch.delenv("SPINDLE_API_KEY")
        nb = nbformat.read(NOTEBOOK, as_version=4)
        nb.cells = nb.cells[:2]  # connect, then define: without the key the first call is refused
        nb.cells.append(nbformat.v4.new_code_cell("await client.count_workflows()"))
        with pytest.raises(Exception) as refused:
            NotebookClient(nb, timeout=60, kernel_name="python3",
                           resources={"metadata": {"path": str(tmp_path)}}).execute()
        assert "UNAUTHENTICATED" in str(refused.value)


def _text(nb: nbformat.NotebookNode) -> str:
    return "".join(o.get("text", "") for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs
                   if o.output_type == "stream")


def _run_tour(tmp_path: Path) -> nbformat.NotebookNode:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=60, kernel_name="python3", store_widget_state=True,
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]
    errors = [o for o in outputs if o.output_type == "error"]
    assert not errors, [f"{o.ename}: {o.evalue}" for o in errors]
    views = [o for o in outputs if WIDGET_VIEW in o.get("data", {})]
    assert len(views) >= 4  # the live graph, the browser, the bare DAG, the DAG with states
    state = nb.metadata.widgets[WIDGET_STATE]["state"]
    for view in views:
        assert view.data[WIDGET_VIEW]["model_id"] in state
    dump = json.dumps(state)
    assert 'data-node-id=\\"close\\"' in dump and "spindle-graph" in dump  # the graph SVG was synced
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "invalid query at position 15" in text
    assert "{'reserve_all': 'done', 'wait': 'done', 'cheap': 'skipped', 'done': 'done'}" in text
    return nb
