"""Legacy ``start_workflow(..., cron_schedule=...)`` (issue 17): one run per tick, each continuing the chain.

Virtual time on both stores (``conftest.stores``). Temporal's semantics: the first run waits
for the first tick; a run that completes or fails names the next run in its closing event,
created at once and waiting for the next tick, with the same input; terminate ends the chain.
"""

from __future__ import annotations

import asyncio

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from schedule_stores import Stores
from spindle_procs import raw_history

from spindle import workflow
from spindle.api import messages_pb2 as pb
from spindle.client import WorkflowExecutionStatus
from spindle.exceptions import ApplicationError, RPCError
from spindle.testing import Replayer
from spindle.worker import Worker

T0 = datetime(2026, 12, 1, 0, 0, 30, tzinfo=timezone.utc)
U = timezone.utc


@workflow.defn
class DailySales:
    @workflow.run
    async def run(self, region: str) -> str:
        await workflow.sleep(timedelta(minutes=5))
        if workflow.now().day == 2 and region == "flaky":
            raise ApplicationError("no data on the 2nd", non_retryable=True)
        return f"{region}@{workflow.now():%Y-%m-%dT%H:%M}"


def ms(t: datetime) -> int:
    return int(t.timestamp() * 1000)


async def chain(env: Any, wid: str) -> list[tuple[str, WorkflowExecutionStatus, int]]:
    """(run id, status, start time) of every run of ``wid``, oldest first."""
    await asyncio.sleep(0.2)
    out = []
    async for wf in env.client.list_workflows(f"WorkflowId = '{wid}'"):
        out.append((wf.run_id, wf.status, ms(wf.start_time)))
    return sorted(out, key=lambda r: r[2])


async def events(env: Any, wid: str, run_id: str) -> list[pb.HistoryEvent]:
    return await raw_history(env.client.stub, wid, run_id)


async def test_each_run_continues_at_the_next_tick_with_the_same_input(stores: Stores) -> None:
    env = await stores.open(T0)
    async with Worker(env.client, task_queue="reports", workflows=[DailySales]):
        await env.client.start_workflow(DailySales.run, "eu", id="daily", task_queue="reports",
                                        cron_schedule="0 6 * * *")
        await env.client.start_workflow(DailySales.run, "flaky", id="flaky", task_queue="reports",
                                        cron_schedule="@daily")
        await env.sleep(timedelta(days=3, hours=1))
        runs = await chain(env, "daily")
        flaky = await chain(env, "flaky")
    C, F, R = WorkflowExecutionStatus.COMPLETED, WorkflowExecutionStatus.FAILED, WorkflowExecutionStatus.RUNNING
    assert [s for _, s, _ in runs] == [C, C, C, R]
    results = []
    for i, (rid, _, _) in enumerate(runs):
        evs = await events(env, "daily", rid)
        started = evs[0].workflow_execution_started_event_attributes
        assert started.cron_schedule == "0 6 * * *"
        assert list(started.input.payloads) == list(
            (await events(env, "daily", runs[0][0]))[0].workflow_execution_started_event_attributes.input.payloads)
        if i == 0:
            # the first run waits for the first tick: its first workflow task is scheduled at 06:00
            assert started.first_workflow_task_backoff_ms == ms(datetime(2026, 12, 1, 6, tzinfo=U)) - ms(T0)
        else:
            assert started.continued_execution_run_id == runs[i - 1][0]
            assert started.first_execution_run_id == runs[0][0]
            assert started.HasField("last_completion_result")
        if i < 3:
            close = evs[-1]
            assert close.event_type == pb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED
            assert close.workflow_execution_completed_event_attributes.new_execution_run_id == runs[i + 1][0]
            results.append(close.workflow_execution_completed_event_attributes.result.payloads[0].data)
    assert results == [b'"eu@2026-12-0%dT06:05"' % d for d in (1, 2, 3)]
    # a failed run is followed by the next one too (midnight ticks: the 2nd's run fails, the 3rd's runs)
    assert [s for _, s, _ in flaky] == [F, C, C, R]
    failed = (await events(env, "flaky", flaky[0][0]))[-1]
    assert failed.workflow_execution_failed_event_attributes.new_execution_run_id == flaky[1][0]
    second = (await events(env, "flaky", flaky[1][0]))[0].workflow_execution_started_event_attributes
    assert second.continued_failure.message == "no data on the 2nd"
    # the chain's histories replay with the workflow code
    await Replayer(workflows=[DailySales]).replay_workflows(
        [await env.client.get_workflow_handle("daily", run_id=r).fetch_history() for r, _, _ in runs[:3]])


async def test_terminate_ends_the_chain(stores: Stores) -> None:
    env = await stores.open(T0)
    async with Worker(env.client, task_queue="reports", workflows=[DailySales]):
        h = await env.client.start_workflow(DailySales.run, "eu", id="daily", task_queue="reports",
                                            cron_schedule="0 6 * * *")
        await env.sleep(timedelta(days=1))
        await env.client.get_workflow_handle("daily").terminate("stop the reports")
        await env.sleep(timedelta(days=2))
        runs = await chain(env, "daily")
    assert [s for _, s, _ in runs] == [WorkflowExecutionStatus.COMPLETED, WorkflowExecutionStatus.TERMINATED]
    assert runs[0][0] == h.run_id


async def test_a_bad_cron_schedule_is_refused_naming_the_field(stores: Stores) -> None:
    env = await stores.open(T0)
    with pytest.raises(RPCError, match=r"cron_schedule: cron expression '61 \* \* \* \*': field 1 \(minute\)"):
        await env.client.start_workflow(DailySales.run, "eu", id="bad", task_queue="reports",
                                        cron_schedule="61 * * * *")
    with pytest.raises(RPCError, match="workflow_start_delay_ms: cannot be combined with cron_schedule"):
        await env.client.start_workflow(DailySales.run, "eu", id="bad", task_queue="reports",
                                        cron_schedule="@daily", start_delay=timedelta(minutes=1))
    assert await chain(env, "bad") == []
