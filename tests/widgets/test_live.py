"""Live updates: a widget follows a running execution and gains nodes in place."""

from __future__ import annotations

import asyncio
import os
import tempfile
import time

from functools import partial

import widget_workflows as ww

from waiting import until
from widget_fixtures import QUEUE

from spindle.client import Client
from spindle.widgets import DagView, HistoryGraph, background
from spindle.worker import Worker

_until = partial(until, timeout=10.0, interval=0.02)


async def test_history_graph_follows_a_running_execution(client: Client) -> None:
    handle = await client.start_workflow(ww.Waiter.run, id="waiter-live", task_queue=QUEUE)
    graph = HistoryGraph(handle, client=client, poll_interval=(0.05, 0.2))
    model = graph.model
    await _until(lambda: any(n.kind == "activity" and n.status == "completed" for n in model.nodes()))
    assert graph.live and graph.status == "running"
    assert not [n for n in model.nodes() if n.kind == "signal"]

    await handle.signal(ww.Waiter.step, 5)
    await _until(lambda: len([n for n in model.nodes() if n.kind == "activity" and n.final]) == 2)
    signal = next(n for n in model.nodes() if n.kind == "signal")
    assert signal.input == [5] and graph.graph.has_edge(signal.id, next(iter(graph.graph.successors(signal.id))))
    assert graph.model is model  # the same widget and model, updated in place
    assert 'data-node-id="' + signal.id + '"' in graph.graph_view.value

    await handle.signal(ww.Waiter.step, 0)
    await _until(lambda: graph.status == "completed")
    await _until(lambda: not graph.live)
    polls = graph._feed.polls if graph._feed else 0
    await asyncio.sleep(0.3)
    assert (graph._feed.polls if graph._feed else 0) == polls  # stopped polling once closed
    assert "close" in graph.graph
    graph.close()


async def test_closing_the_widget_stops_polling(client: Client) -> None:
    handle = await client.start_workflow(ww.Waiter.run, id="waiter-close", task_queue=QUEUE)
    graph = HistoryGraph(handle, poll_interval=(0.05, 0.1))
    await _until(lambda: graph.model.last_event_id > 0)
    feed = graph._feed
    assert feed is not None
    graph.close()
    polls = feed.polls
    await asyncio.sleep(0.3)
    assert feed.polls == polls and not graph.live
    await handle.terminate("done")


async def test_dag_view_follows_a_running_dsl_execution(client: Client) -> None:
    handle = await client.start_workflow("sales_report", {"date": "2024-05-01"}, id="sales-live", task_queue=QUEUE)
    view = DagView(ww.DSL_YAML, handle, poll_interval=(0.05, 0.2))
    await _until(lambda: view.states.get("approval") is not None and view.states["approval"].status == "running")
    assert view.states["publish"].status == "pending"
    await handle.signal("approve", "yes")
    await _until(lambda: view.states["publish"].status == "done" and view.model is not None
                 and view.model.status == "completed")
    assert view.states["archive"].status == "skipped"
    view.close()


def test_blocking_code_with_the_background_loop() -> None:
    """Plain (synchronous) Python: the client lives on the background loop; the caller never blocks it."""
    loop = background()
    with tempfile.TemporaryDirectory() as directory:
        client = loop.run(Client.connect("embedded:" + os.path.join(directory, "bg.db")))
        worker = Worker(client, task_queue=QUEUE, workflows=ww.WORKFLOWS, activities=ww.ACTIVITIES)
        running = loop.submit(worker.run())
        try:
            handle = loop.run(client.start_workflow(ww.Waiter.run, id="waiter-bg", task_queue=QUEUE))
            graph = HistoryGraph(handle, poll_interval=(0.05, 0.2))  # no loop in this thread: uses the background one
            deadline = time.monotonic() + 10
            while not any(n.kind == "activity" and n.final for n in graph.model.nodes()):
                assert time.monotonic() < deadline
                time.sleep(0.02)
            loop.run(handle.signal(ww.Waiter.step, 0))
            while graph.status != "completed":
                assert time.monotonic() < deadline
                time.sleep(0.02)
            assert any(n.kind == "signal" for n in graph.model.nodes())
            graph.close()
        finally:
            loop.run(worker.shutdown()) if hasattr(worker, "shutdown") else running.cancel()
            try:
                running.result(10)
            except BaseException:  # noqa: BLE001 - cancelled on shutdown
                pass
            loop.run(client.close())
