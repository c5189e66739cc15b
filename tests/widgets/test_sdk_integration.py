"""The widgets on the SDK's public additions: watch_history (no polling), handle.client,
count_workflows_by / list_workflows_page, DslStep markers and spindle.dsl.from_json."""

from __future__ import annotations

import asyncio

from functools import partial
from pathlib import Path
from typing import Any

import widget_workflows as ww

from waiting import until
from widget_fixtures import QUEUE

from spindle import dsl, workflow
from spindle.client import Client, History
from spindle.converter import DataConverter
from spindle.widgets import DagView, ExecutionBrowser, HistoryGraph
from spindle.worker import Worker

DSL_FIXTURES = Path(__file__).resolve().parents[1] / "sdk" / "dsl" / "fixtures"


_until = partial(until, timeout=10.0, interval=0.02)


class _Counting:
    """Counts the client's RPCs by method name."""

    def __init__(self, client: Client) -> None:
        self.calls: dict[str, int] = {}
        self._client = client
        self._original = client._rpc

        async def rpc(method: str, request: Any, **kwargs: Any) -> Any:
            self.calls[method] = self.calls.get(method, 0) + 1
            return await self._original(method, request, **kwargs)

        client._rpc = rpc  # type: ignore[method-assign]

    def restore(self) -> None:
        self._client._rpc = self._original  # type: ignore[method-assign]


# ------------------------------------------------------------------ live mode: watch_history


async def test_live_graph_waits_on_the_server_instead_of_polling(client: Client) -> None:
    handle = await client.start_workflow(ww.Waiter.run, id="waiter-watch", task_queue=QUEUE)
    counter = _Counting(client)
    try:
        graph = HistoryGraph(handle, poll_interval=(0.01, 0.02))  # polling at this rate would show at once
        await _until(lambda: any(n.kind == "activity" and n.final for n in graph.model.nodes()))
        await asyncio.sleep(0.2)
        feed = graph._feed
        assert feed is not None
        before, rpcs = feed.polls, counter.calls.get("GetWorkflowExecutionHistory", 0)
        await asyncio.sleep(0.5)  # the run waits for a signal: nothing to read, nothing read
        assert feed.polls == before
        assert counter.calls.get("GetWorkflowExecutionHistory", 0) - rpcs <= 1
        assert graph.live

        await handle.signal(ww.Waiter.step, 0)
        await _until(lambda: graph.status == "completed" and not graph.live)
        assert "close" in graph.graph
        assert counter.calls.get("DescribeWorkflowExecution", 0) == 0  # the handle knew its run
        full = await handle.fetch_history()
        assert graph.model.last_event_id == full.events[-1].event_id
        graph.close()
    finally:
        counter.restore()


async def test_a_handle_without_a_run_id_is_pinned_to_the_current_run(client: Client) -> None:
    started = await client.start_workflow(ww.Waiter.run, id="waiter-by-id", task_queue=QUEUE)
    graph = HistoryGraph(client.get_workflow_handle("waiter-by-id"))
    await _until(lambda: graph.model.run_id == started.run_id and graph.model.last_event_id > 0)
    await started.terminate("done")
    await _until(lambda: graph.status == "terminated" and not graph.live)
    graph.close()


class _FetchOnly:
    """A handle-like object with only ``fetch_history`` (the fallback: polling)."""

    def __init__(self, handle: Any) -> None:
        self.id, self.run_id, self._handle = handle.id, handle.run_id, handle

    async def fetch_history(self) -> History:
        return await self._handle.fetch_history()


async def test_handle_like_objects_without_watch_history_are_polled(client: Client) -> None:
    handle = await client.start_workflow(ww.Waiter.run, id="waiter-poll", task_queue=QUEUE)
    graph = HistoryGraph(_FetchOnly(handle), poll_interval=(0.02, 0.05))
    await _until(lambda: graph.model.last_event_id > 0)
    feed = graph._feed
    assert feed is not None
    polls = feed.polls
    await asyncio.sleep(0.3)
    assert feed.polls > polls  # polling, with backoff
    await handle.signal(ww.Waiter.step, 0)
    await _until(lambda: graph.status == "completed" and not graph.live)
    graph.close()


# ------------------------------------------------------------------ handle.client for children


@workflow.defn
class Parent:
    """Runs one ``Child``."""

    @workflow.run
    async def run(self) -> int:
        return await workflow.execute_child_workflow(ww.Child.run, 1, id="parent-child")


async def test_history_graph_opens_children_through_handle_client(client: Client) -> None:
    async with Worker(client, task_queue="widgets-parent", workflows=[Parent, ww.Child], activities=ww.ACTIVITIES):
        handle = await client.start_workflow(Parent.run, id="parent", task_queue="widgets-parent")
        assert await handle.result() == 2
    graph = HistoryGraph(handle, live=False)  # no client=: the handle's own
    await graph.refresh()
    child_node = next(n for n in graph.model.nodes() if n.kind == "child")
    child = graph.expand_child(child_node.id)
    await child.refresh()
    assert child.model.workflow_id == "parent-child" and child.status == "completed"
    graph.close()


# ------------------------------------------------------------------ ExecutionBrowser


async def test_browser_counts_in_one_call_and_pages_with_tokens(client: Client) -> None:
    for i in range(5):
        await client.execute_workflow(ww.Child.run, i, id=f"paged-{i}", task_queue=QUEUE)
    for _ in range(250):  # visibility is written asynchronously
        if await client.count_workflows("WorkflowType = 'Child' AND ExecutionStatus = 'Completed'") == 5:
            break
        await asyncio.sleep(0.02)
    counter = _Counting(client)
    try:
        browser = ExecutionBrowser(client, "WorkflowType = 'Child' ORDER BY WorkflowId", page_size=2)
        await browser.refresh()
        assert counter.calls.get("CountWorkflowExecutions") == 1
        assert browser.total == 5 and browser.status_counts["Completed"] == 5
        assert [r.id for r in browser.rows] == ["paged-0", "paged-1"]
        assert not browser.next_button.disabled

        counter.calls.clear()
        await browser.goto(2)
        assert [r.id for r in browser.rows] == ["paged-4"] and browser.page == 2
        assert counter.calls == {"ListWorkflowExecutions": 2}  # page 1 for its token, then page 2
        assert browser.next_button.disabled

        counter.calls.clear()
        await browser.goto(1)  # its token is known: one read, nothing before it
        assert [r.id for r in browser.rows] == ["paged-2", "paged-3"]
        assert counter.calls == {"ListWorkflowExecutions": 1}

        await browser.set_query("WorkflowType = 'Child' ORDER BY WorkflowId LIMIT")
        assert browser.error is not None and browser.table.children == ()
        browser.close()
    finally:
        counter.restore()


async def test_browser_pages_when_the_last_page_is_full(client: Client) -> None:
    for i in range(4):
        await client.execute_workflow(ww.Child.run, i, id=f"full-{i}", task_queue=QUEUE)
    for _ in range(250):
        if await client.count_workflows("WorkflowType = 'Child' AND ExecutionStatus = 'Completed'") == 4:
            break
        await asyncio.sleep(0.02)
    browser = ExecutionBrowser(client, "WorkflowType = 'Child' ORDER BY WorkflowId", page_size=2)
    await browser.refresh()
    await browser.goto(1)
    assert [r.id for r in browser.rows] == ["full-2", "full-3"]
    await browser.goto(2)  # the token of page 2 leads to an empty page: stay on page 1
    assert browser.page == 1 and [r.id for r in browser.rows] == ["full-2", "full-3"]
    assert browser.next_button.disabled
    browser.close()


# ------------------------------------------------------------------ DagView: exact states from DslStep markers


def _states(view: DagView) -> dict[str, str]:
    return {step: state.status for step, state in view.states.items()}


def _every_kind() -> History:
    return History.from_json((DSL_FIXTURES / "markers_every_kind_bare.json").read_text())


def test_exact_states_of_every_step_kind() -> None:
    view = DagView(None, _every_kind())  # the DAG is read from the run, rebuilt with spindle.dsl.from_json
    assert isinstance(view.workflow, dsl.DslWorkflow) and view.workflow.name == "every_kind"
    assert _states(view) == {
        "first": "done", "fan": "done", "child": "done", "nap": "done", "calc": "done",
        "calc_skipped": "skipped", "after_skip": "skipped", "guard": "skipped", "approve": "done",
        "too_late": "failed", "risky": "failed", "join": "done"}
    assert view.states["calc_skipped"].note == "its when condition was false"  # a set step with a when
    assert view.states["after_skip"].note == "its trigger rule said no"
    assert "timed out" in view.states["too_late"].note
    assert "handled by on_failure" in view.states["risky"].note
    nap = view.states["nap"]
    assert any(n.startswith("timer:") for n in nap.nodes) and any(n.startswith("marker:") for n in nap.nodes)
    view.close()


def test_exact_states_while_running() -> None:
    history = _every_kind()
    events = history.events
    def step_marker(event: Any) -> tuple[Any, Any]:
        if event.event_type != "MarkerRecorded" or event.attributes.get("marker_name") != "DslStep":
            return None, None
        details = event.to_proto().marker_recorded_event_attributes.details
        return tuple(DataConverter.default.from_payloads(details[k])[0] for k in ("step", "status"))

    marker = next(e for e in events if step_marker(e) == ("nap", "started"))
    cut = next(e.event_id for e in events if e.event_id > marker.event_id and e.event_type != "MarkerRecorded"
               and e.event_type != "TimerStarted")  # the end of that workflow task's commands
    running = History(history.workflow_id, history.run_id, [e for e in events if e.event_id < cut])
    view = DagView(dsl.load(DSL_FIXTURES / "every_kind.yaml"), running)
    states = _states(view)
    assert states["nap"] == "running" and states["approve"] == "pending" and states["join"] == "pending"
    assert states["calc"] == "done" and states["calc_skipped"] == "skipped" and states["guard"] == "skipped"
    assert states["first"] == "done" and states["fan"] == "done"
    view.close()


def test_exact_states_of_a_failed_run() -> None:
    history = History.from_json((DSL_FIXTURES / "markers_saga.json").read_text())
    view = DagView(dsl.load(DSL_FIXTURES / "saga.yaml"), history)
    assert _states(view) == {"reserve": "done", "charge": "done", "ship": "failed"}
    assert "out of stock" in view.states["ship"].note
    view.close()


def test_dag_view_accepts_the_compiled_dag() -> None:
    wf = dsl.load(DSL_FIXTURES / "every_kind.yaml")
    view = DagView(wf.dag_json)
    assert view.workflow is not None and view.workflow.dag_json == wf.dag_json
    assert set(view.graph) == {step.id for step in wf.dag.steps}
    view.close()


async def test_retries_of_a_history_that_records_only_the_final_attempt(client: Client) -> None:
    """The server records only an activity's final attempt (its ActivityTaskStarted carries the attempt
    number and the previous failure): the graph still counts every attempt and shows the last failure."""
    import uuid

    from spindle.widgets._graph_model import build_graph
    from spindle.widgets._history_render import describe_node

    handle = await client.start_workflow(ww.Kitchen.run, "o-retry", id=f"kitchen-{uuid.uuid4().hex[:8]}",
                                         task_queue=QUEUE)
    await handle.signal(ww.Kitchen.approve, "ann")
    await handle.result()
    history = await handle.fetch_history()
    flaky_events = [e for e in history.events if e.event_type.startswith("ActivityTask")
                    and e.attributes.get("activity_type") == "flaky"]
    started = [e for e in history.events if e.event_type == "ActivityTaskStarted" and e.attributes.get("attempt") == 3]
    assert len(started) == 1 and not [e for e in history.events if e.event_type == "ActivityTaskFailed"
                                      and e.attributes.get("retry_state") == "RETRY_STATE_IN_PROGRESS"], flaky_events
    graph = build_graph(history)
    flaky = next(n for n in graph.nodes() if n.kind == "activity" and n.label == "flaky")
    assert (flaky.attempt_count, flaky.retries, flaky.status) == (3, 2, "completed")
    assert [a.number for a in flaky.attempts] == [2, 3]
    assert "transient failure on attempt 2" in str(flaky.attempts[0].failure)
    html = describe_node(flaky, limit=0)
    assert "attempts (3, 2 retries)" in html and "transient failure on attempt 2" in html
