"""Client additions the widgets needed: ``handle.client``, ``watch_history``,
``count_workflows_by``, ``list_workflows_page`` and DSL starts that carry the DAG."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import uuid

from collections.abc import AsyncIterator
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from waiting import until

from spindle import activity, dsl, workflow
from spindle.client import Client, HistoryEvent
from spindle.converter import ZlibCodec
from spindle.exceptions import ApplicationError, RPCError, WorkflowFailureError, WorkflowNotFoundError
from spindle.worker import Worker

ROOT = Path(__file__).resolve().parents[3]
FAST = timedelta(seconds=10)


@activity.defn
async def double(n: int) -> int:
    return n * 2


@workflow.defn
class Gate:
    """Runs an activity, waits for ``go``, runs another, then returns."""

    def __init__(self) -> None:
        self.go: int | None = None

    @workflow.run
    async def run(self, n: int) -> int:
        first = await workflow.execute_activity(double, n, start_to_close_timeout=FAST)
        await workflow.wait_condition(lambda: self.go is not None)
        assert self.go is not None
        return await workflow.execute_activity(double, first + self.go, start_to_close_timeout=FAST)

    @workflow.signal
    def open(self, value: int) -> None:
        self.go = value


@workflow.defn
async def quick(n: int) -> int:
    if n < 0:
        raise ApplicationError("negative", non_retryable=True)
    return n


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[Client]:
    c = await Client.connect("embedded:" + str(tmp_path / "additions.db"))
    try:
        yield c
    finally:
        await c.close()


def _queue() -> str:
    return f"add-{uuid.uuid4().hex[:8]}"


class _Counting:
    """Counts the client's RPCs by method name."""

    def __init__(self, client: Client) -> None:
        self.calls: dict[str, int] = {}
        original = client._rpc

        async def rpc(method: str, request: Any, **kwargs: Any) -> Any:
            self.calls[method] = self.calls.get(method, 0) + 1
            return await original(method, request, **kwargs)

        client._rpc = rpc  # type: ignore[method-assign]


async def _visible(client: Client, query: str, count: int) -> None:
    """Visibility is written after the history: wait until ``count`` rows match."""
    deadline = asyncio.get_running_loop().time() + 10
    while await client.count_workflows(query) != count:
        assert asyncio.get_running_loop().time() < deadline, f"visibility never showed {count} for {query!r}"
        await asyncio.sleep(0.05)


_until = partial(until, timeout=10.0, interval=0.01)


# ------------------------------------------------------------------ handle.client


async def test_handle_exposes_its_client_read_only(client: Client) -> None:
    queue = _queue()
    async with Worker(client, task_queue=queue, workflows=[quick]):
        handle = await client.start_workflow(quick, 1, id="q-client", task_queue=queue)
        assert handle.client is client
        assert client.get_workflow_handle("q-client").client is client
        with pytest.raises(AttributeError):
            handle.client = client  # type: ignore[misc]
        assert await handle.result() == 1


# ------------------------------------------------------------------ watch_history


async def test_watch_history_long_polls_and_ends_when_the_run_closes(client: Client) -> None:
    queue = _queue()
    counter = _Counting(client)
    seen: list[HistoryEvent] = []
    async with Worker(client, task_queue=queue, workflows=[Gate], activities=[double]):
        handle = await client.start_workflow(Gate.run, 3, id="gate-watch", task_queue=queue)

        async def consume() -> None:
            async for event in handle.watch_history():
                seen.append(event)

        watcher = asyncio.create_task(consume())
        await _until(lambda: any(e.event_type == "ActivityTaskCompleted" for e in seen)
                     and seen[-1].event_type == "WorkflowTaskCompleted")
        before = counter.calls.get("GetWorkflowExecutionHistory", 0)
        await asyncio.sleep(0.6)  # the run is idle, waiting for the signal: the watch waits on the server
        assert counter.calls.get("GetWorkflowExecutionHistory", 0) - before <= 1
        assert not watcher.done()

        await handle.signal(Gate.open, 1)
        assert await handle.result() == 14
        await asyncio.wait_for(watcher, 10)  # ends by itself after the close event
    assert seen[-1].event_type == "WorkflowExecutionCompleted"
    assert [e.event_id for e in seen] == list(range(1, len(seen) + 1))
    full = await handle.fetch_history()
    assert [e.to_dict() for e in seen] == [e.to_dict() for e in full.events]
    assert any(e.event_type == "WorkflowExecutionSignaled" for e in seen)


async def test_watch_history_of_a_closed_run_and_from_an_event_id(client: Client) -> None:
    queue = _queue()
    async with Worker(client, task_queue=queue, workflows=[quick]):
        handle = await client.start_workflow(quick, 5, id="q-closed", task_queue=queue)
        await handle.result()
    all_events = [e async for e in handle.watch_history()]
    assert all_events[-1].event_type == "WorkflowExecutionCompleted"
    tail = [e async for e in client.get_workflow_handle("q-closed").watch_history(start_event_id=3)]
    assert [e.event_id for e in tail] == [e.event_id for e in all_events[2:]]
    with pytest.raises(ValueError):
        [e async for e in handle.watch_history(start_event_id=0)]
    with pytest.raises(WorkflowNotFoundError):
        [e async for e in client.get_workflow_handle("nobody").watch_history()]


async def test_watch_history_decodes_payloads_with_the_codecs(tmp_path: Path) -> None:
    c = await Client.connect("embedded:" + str(tmp_path / "codec.db"), codecs=[ZlibCodec()])
    try:
        queue = _queue()
        async with Worker(c, task_queue=queue, workflows=[quick]):
            handle = await c.start_workflow(quick, 7, id="q-codec", task_queue=queue)
            await handle.result()
        events = [e async for e in handle.watch_history()]
        assert [e.to_dict() for e in events] == [e.to_dict() for e in (await handle.fetch_history()).events]
    finally:
        await c.close()


# ------------------------------------------------------------------ count_workflows_by / list_workflows_page


async def _statuses(client: Client, queue: str) -> None:
    for i in range(3):
        await (await client.start_workflow(quick, i, id=f"ok-{i}", task_queue=queue)).result()
    bad = await client.start_workflow(quick, -1, id="bad-0", task_queue=queue)
    with pytest.raises(WorkflowFailureError):
        await bad.result()
    await client.start_workflow(Gate.run, 1, id="open-0", task_queue=queue)
    await _visible(client, "ExecutionStatus != 'Running'", 4)
    await _visible(client, "ExecutionStatus = 'Running'", 1)


async def test_count_workflows_by_status_in_one_call(client: Client) -> None:
    queue = _queue()
    async with Worker(client, task_queue=queue, workflows=[quick, Gate], activities=[double]):
        await _statuses(client, queue)
        counter = _Counting(client)
        counts = await client.count_workflows_by()
        assert counts == {"Completed": 3, "Failed": 1, "Running": 1}
        assert counter.calls == {"CountWorkflowExecutions": 1}
        assert sum(counts.values()) == await client.count_workflows()
        assert await client.count_workflows_by("WorkflowType = 'quick'") == {"Completed": 3, "Failed": 1}
        assert await client.count_workflows_by("WorkflowType = 'quick' ORDER BY StartTime DESC") == {
            "Completed": 3, "Failed": 1}
        assert await client.count_workflows_by("WorkflowType = 'nothing'") == {}
        assert await client.count_workflows_by("", group_by=["ExecutionStatus"]) == {
            ("Completed",): 3, ("Failed",): 1, ("Running",): 1}
        assert await client.count_workflows("GROUP BY ExecutionStatus") == 5  # the pinned int form
        with pytest.raises(RPCError) as bad:
            await client.count_workflows_by("WorkflowType = ")
        assert bad.value.status == "INVALID_ARGUMENT"
        with pytest.raises(ValueError):
            await client.count_workflows_by("", group_by=[])
        await client.get_workflow_handle("open-0").terminate("done")


async def test_list_workflows_page_by_page(client: Client) -> None:
    queue = _queue()
    async with Worker(client, task_queue=queue, workflows=[quick]):
        for i in range(5):
            await (await client.start_workflow(quick, i, id=f"page-{i}", task_queue=queue)).result()
    await _visible(client, "WorkflowType = 'quick'", 5)
    query = "WorkflowType = 'quick' ORDER BY WorkflowId"
    pages: list[list[str]] = []
    token: bytes | None = None
    while True:
        rows, token = await client.list_workflows_page(query, page_size=2, next_page_token=token)
        pages.append([r.id for r in rows])
        if token is None:
            break
    assert pages == [["page-0", "page-1"], ["page-2", "page-3"], ["page-4"]]
    rows, token = await client.list_workflows_page(query, page_size=5)
    assert len(rows) == 5 and token is not None  # a full page: the server cannot know it was the last
    assert await client.list_workflows_page(query, page_size=5, next_page_token=token) == ([], None)
    # a token stays valid: page 2 again
    _, second = await client.list_workflows_page(query, page_size=2)
    again, _ = await client.list_workflows_page(query, page_size=2, next_page_token=second)
    assert [r.id for r in again] == ["page-2", "page-3"]
    assert [r.id async for r in client.list_workflows(query, page_size=2)] == [f"page-{i}" for i in range(5)]
    with pytest.raises(RPCError):
        await client.list_workflows_page(query, next_page_token=b"not a token")


# ------------------------------------------------------------------ DSL starts carry the DAG

_DSL = textwrap.dedent("""\
    name: doubler
    inputs:
      n: {type: integer, required: true}
    steps:
      - id: twice
        activity: double
        args: ["${{ inputs.n }}"]
    outputs:
      value: "${{ steps.twice.result }}"
    """)


async def _started_input(handle: Any) -> Any:
    history = await handle.fetch_history()
    started = history.to_proto_events()[0].workflow_execution_started_event_attributes
    (value,) = handle.client.data_converter.from_payloads(started.input)
    return value


async def test_start_workflow_with_a_dsl_workflow_sends_the_dag(client: Client) -> None:
    wf = dsl.load_text(_DSL, file="doubler.yaml")
    queue = _queue()
    async with Worker(client, task_queue=queue, workflows=[wf], activities=[double]):
        pinned = await client.start_workflow(wf, {"n": 4}, id="dsl-pinned", task_queue=queue)
        assert await pinned.result() == {"value": 8}
        assert await _started_input(pinned) == wf.start_input({"n": 4})
        history = await pinned.fetch_history()
        assert not [e for e in history.events if e.attributes.get("marker_name") == "SideEffect"]

        by_definition = await client.start_workflow(wf.definition, {"n": 1}, id="dsl-defn", task_queue=queue)
        assert await by_definition.result() == {"value": 2}
        assert await _started_input(by_definition) == wf.start_input({"n": 1})

        already = await client.start_workflow(wf, wf.start_input({"n": 2}), id="dsl-already", task_queue=queue)
        assert await already.result() == {"value": 4}
        assert await _started_input(already) == wf.start_input({"n": 2})  # not wrapped twice

        assert await client.execute_workflow(wf, {"n": 3}, id="dsl-exec", task_queue=queue) == {"value": 6}

        bare = await client.start_workflow(wf.name, {"n": 5}, id="dsl-bare", task_queue=queue)
        assert await bare.result() == {"value": 10}  # by type name: bare inputs, DAG pinned by a marker
        assert await _started_input(bare) == {"n": 5}
        markers = [e for e in (await bare.fetch_history()).events if e.attributes.get("marker_name") == "SideEffect"]
        assert len(markers) == 1

    with pytest.raises(dsl.DslError, match="input 'n'"):
        await client.start_workflow(wf, {"n": "four"}, id="dsl-bad", task_queue=queue)
    with pytest.raises(TypeError):
        await client.start_workflow(wf, {"n": 1}, {"n": 2}, id="dsl-two", task_queue=queue)
    await _visible(client, "WorkflowType = 'doubler'", 5)
    assert await client.count_workflows("WorkflowId = 'dsl-bad' OR WorkflowId = 'dsl-two'") == 0


def test_the_client_does_not_import_the_dsl() -> None:
    code = "import sys, spindle.client._client, spindle.client; assert 'spindle.dsl' not in sys.modules, sorted(sys.modules)"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


# ------------------------------------------------------------------ workflow.record_marker


@workflow.defn(name="marked")
async def marked(n: int) -> str:
    workflow.record_marker("Progress", {"at": n, "note": "half way"})
    try:
        workflow.record_marker("SideEffect", {})
    except ValueError as error:
        refused = str(error)
    await workflow.execute_activity(double, n, start_to_close_timeout=FAST)
    workflow.record_marker("Progress", {"at": n * 2})
    return refused


@workflow.defn(name="marked")
async def marked_renamed(n: int) -> str:
    workflow.record_marker("Progres", {"at": n})
    await workflow.execute_activity(double, n, start_to_close_timeout=FAST)
    workflow.record_marker("Progress", {"at": n * 2})
    return ""


@workflow.defn(name="marked")
async def marked_without(n: int) -> str:
    await workflow.execute_activity(double, n, start_to_close_timeout=FAST)
    return ""


async def test_record_marker_writes_a_named_marker_that_replay_checks(client: Client) -> None:
    from spindle.exceptions import NonDeterminismError
    from spindle.testing import Replayer

    queue = _queue()
    async with Worker(client, task_queue=queue, workflows=[marked], activities=[double]):
        handle = await client.start_workflow(marked, 3, id="marked-1", task_queue=queue)
        refused = await handle.result()
    assert "SideEffect" in refused
    history = await handle.fetch_history()
    markers = [e for e in history.events if e.event_type == "MarkerRecorded"]
    assert [m.attributes["marker_name"] for m in markers] == ["Progress", "Progress"]
    wire = markers[0].to_proto().marker_recorded_event_attributes.details
    assert {k: client.data_converter.from_payloads(wire[k])[0] for k in wire} == {"at": 3, "note": "half way"}

    await Replayer(workflows=[marked]).replay_workflow(history)
    with pytest.raises(NonDeterminismError, match="Progres"):
        await Replayer(workflows=[marked_renamed]).replay_workflow(history)
    with pytest.raises(NonDeterminismError):
        await Replayer(workflows=[marked_without]).replay_workflow(history)
