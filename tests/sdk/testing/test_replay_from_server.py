"""Replaying the histories a visibility query selects, streamed from a server.

``client.list_workflows(q).map_histories()`` (page by page, ``limit``) and
``spindle.worker.Replayer.replay_workflows`` (iterable or async iterable input,
``raise_on_replay_failure``, ``WorkflowReplayResults``), against the in-process control
plane on the real clock: runs of ``ShipmentV1`` replay with the same code and are reported as
non-deterministic by a version that inserts an activity before the first one.
"""

from __future__ import annotations

import uuid

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from replay_server_wfs import ACTIVITIES, SAMPLE_SHAPE, ShipmentNotifyFirst, ShipmentV1
from waiting import until

import spindle.testing
import spindle.worker

from spindle.client import Client, History, WorkflowHistory
from spindle.exceptions import NonDeterminismError
from spindle.testing import WorkflowEnvironment
from spindle.worker import Replayer, Worker, WorkflowReplayResult, WorkflowReplayResults

# One in-process server (and event loop) for the module's tests.
pytestmark = [pytest.mark.timeout(120), pytest.mark.asyncio(loop_scope="module")]

N_RUNS = 5


async def _listed(client: Client, query: str, n: int) -> None:
    await until(lambda: _count(client, query, n), f"{n} runs listed for {query!r}", timeout=20)


async def _count(client: Client, query: str, n: int) -> bool:
    return await client.count_workflows(query) == n


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shipped() -> AsyncIterator[tuple[Client, str, list[str]]]:
    """N_RUNS completed runs of ShipmentV1 on one task queue; yields the client, a query selecting them, their ids."""
    async with await WorkflowEnvironment.start_local() as env:
        queue = f"ship-{uuid.uuid4().hex[:8]}"
        ids = [f"ship-{queue}-{i}" for i in range(N_RUNS)]
        async with Worker(env.client, task_queue=queue, workflows=[ShipmentV1], activities=ACTIVITIES):
            for wid in ids:
                await env.client.execute_workflow(ShipmentV1.run, wid, id=wid, task_queue=queue)
        query = f"TaskQueue = '{queue}' AND WorkflowType = 'Shipment'"
        await _listed(env.client, query, N_RUNS)
        yield env.client, query, ids


async def test_one_class_under_both_names() -> None:
    assert spindle.worker.Replayer is spindle.testing.Replayer
    assert spindle.testing.ReplayResult is WorkflowReplayResult
    assert spindle.testing.ReplayReport is WorkflowReplayResults
    assert WorkflowHistory is History


async def test_map_histories_reads_one_page_at_a_time(shipped: tuple[Client, str, list[str]],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    client, query, ids = shipped
    calls: list[str] = []
    rpc = client._rpc

    async def counting(method: str, request: Any, **kwargs: Any) -> Any:
        calls.append(method)
        return await rpc(method, request, **kwargs)

    monkeypatch.setattr(client, "_rpc", counting)
    histories = client.list_workflows(query, page_size=2).map_histories()
    first = await histories.__anext__()
    assert calls.count("ListWorkflowExecutions") == 1  # one page of two rows, not all five
    assert isinstance(first, History) and first.workflow_id in ids
    rest = [h async for h in histories]
    assert calls.count("ListWorkflowExecutions") == 3  # 2 + 2 + 1 rows
    got = [first, *rest]
    assert sorted(h.workflow_id for h in got) == sorted(ids)
    assert all(h.events[0].event_type == "WorkflowExecutionStarted" for h in got)
    assert all(h.events[-1].event_type == "WorkflowExecutionCompleted" for h in got)
    assert len({h.run_id for h in got}) == N_RUNS


async def test_limit_stops_the_listing(shipped: tuple[Client, str, list[str]]) -> None:
    client, query, _ = shipped
    assert len([r async for r in client.list_workflows(query, limit=3, page_size=2)]) == 3
    assert len([h async for h in client.list_workflows(query, limit=1).map_histories()]) == 1
    assert len([r async for r in client.list_workflows(query, limit=50)]) == N_RUNS
    with pytest.raises(ValueError, match="limit"):
        client.list_workflows(query, limit=-1)


async def test_same_code_replays_every_run_from_an_async_iterable(shipped: tuple[Client, str, list[str]]) -> None:
    client, query, ids = shipped
    results = await Replayer(workflows=[ShipmentV1]).replay_workflows(
        client.list_workflows(query, page_size=2).map_histories())
    assert isinstance(results, WorkflowReplayResults)
    assert results.replay_failures == {} and results.ok
    assert sorted(r.workflow_id for r in results.results) == sorted(ids)
    assert all(r.run_id and r.replay_failure is None and r.workflow_type == "Shipment" for r in results.results)


async def test_inserted_activity_is_reported_per_run(shipped: tuple[Client, str, list[str]]) -> None:
    client, query, ids = shipped
    histories = [h async for h in client.list_workflows(query).map_histories()]
    results = await Replayer(workflows=[ShipmentNotifyFirst]).replay_workflows(histories,
                                                                              raise_on_replay_failure=False)
    assert len(results.results) == N_RUNS and not results.ok
    assert set(results.replay_failures) == {h.run_id for h in histories}
    for r, h in zip(results.results, histories):
        assert (r.workflow_id, r.run_id) == (h.workflow_id, h.run_id)
        assert isinstance(r.replay_failure, NonDeterminismError)
        assert "notify_customer" in str(r.replay_failure) and "pack" in str(r.replay_failure)
        assert r.history is h  # kept for a failure
    assert all(r.workflow_id in results.format() for r in results.results)


async def test_raise_on_replay_failure_stops_at_the_first(shipped: tuple[Client, str, list[str]]) -> None:
    client, query, _ = shipped
    pulled: list[History] = []

    async def histories() -> AsyncIterator[History]:
        async for h in client.list_workflows(query).map_histories():
            pulled.append(h)
            yield h

    with pytest.raises(NonDeterminismError, match="history event"):
        await Replayer(workflows=[ShipmentNotifyFirst]).replay_workflows(histories())
    assert len(pulled) == 1
    with pytest.raises(NonDeterminismError):
        await Replayer(workflows=[ShipmentNotifyFirst]).replay_workflow(pulled[0])
    kept = await Replayer(workflows=[ShipmentNotifyFirst]).replay_workflow(pulled[0], raise_on_replay_failure=False)
    assert isinstance(kept.replay_failure, NonDeterminismError) and kept.history is pulled[0]
    ok = await Replayer(workflows=[ShipmentV1]).replay_workflow(pulled[0])
    assert ok.replay_failure is None and ok.run_id == pulled[0].run_id


async def test_the_replay_sample_shape() -> None:
    """temporalio's replay sample: three workflow types run one after another under one workflow id, then the
    histories of every run of that id are replayed with the same definitions."""
    async with await WorkflowEnvironment.start_local() as env:
        queue, wid = f"sample-{uuid.uuid4().hex[:8]}", f"sample-{uuid.uuid4().hex[:8]}"
        async with Worker(env.client, task_queue=queue, workflows=SAMPLE_SHAPE, activities=ACTIVITIES):
            outputs = [await env.client.execute_workflow(w.run, "replayer", id=wid, task_queue=queue)
                       for w in SAMPLE_SHAPE]
        assert outputs == ["packed-replayer", "waited for replayer", "shipped-replayer"]
        query = f'WorkflowId="{wid}"'
        await _listed(env.client, query, 3)
        results = await Replayer(workflows=SAMPLE_SHAPE).replay_workflows(
            env.client.list_workflows(query).map_histories(), raise_on_replay_failure=False)
        assert results.replay_failures == {}
        assert sorted(r.workflow_type for r in results.results) == ["JustGreet", "JustWait", "WaitThenGreet"]
        assert "replay_failure=None" in repr(results)
        # without one of the definitions, its run is reported (and the others still replay)
        partial = await Replayer(workflows=SAMPLE_SHAPE[:2]).replay_workflows(
            env.client.list_workflows(query).map_histories(), raise_on_replay_failure=False)
        assert [r.workflow_type for r in partial.failures] == ["WaitThenGreet"]
        assert len(partial.results) == 3
