"""Retried activity attempts (issue 13): no history events, state on the execution row, history limit.

Temporal records only an activity's last attempt: a retried attempt writes nothing to the
history (so "poll by retrying an activity" does not grow it), and the attempt count and
last failure show in ``describe``'s pending activities. They live on the execution row
and must survive a restart of the control plane.
"""

from __future__ import annotations

import asyncio
import dataclasses
import uuid

from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from _cp_server import raw_history
from waiting import until

from spindle import activity, workflow
from spindle.api import messages_pb2 as pb
from spindle.client import Client, WorkflowExecutionStatus
from spindle.common import RetryPolicy
from spindle.controlplane import embedded
from spindle.controlplane.config import ServerConfig
from spindle.exceptions import ActivityError, ApplicationError, RPCError
from spindle.testing import WorkflowEnvironment
from spindle.worker import Worker

pytestmark = pytest.mark.timeout(120)


@activity.defn
async def never_ready(key: str) -> str:
    """The "poll by retrying" pattern: fails until the outside world is ready (never here)."""
    raise ApplicationError(f"{key} not ready (attempt {activity.info().attempt})", type="NotReady")


@activity.defn
async def fails_until_third(key: str) -> str:
    attempt = activity.info().attempt
    if attempt < 3:
        raise ApplicationError(f"attempt {attempt} fails", type="Flaky")
    return f"{key}@{attempt}"


@workflow.defn
class PollsByRetrying:
    @workflow.run
    async def run(self, key: str, max_attempts: int, second_backoff_s: float) -> str:
        policy = RetryPolicy(initial_interval=timedelta(milliseconds=5), backoff_coefficient=second_backoff_s / 0.005,
                             maximum_interval=timedelta(seconds=max(second_backoff_s, 0.005)),
                             maximum_attempts=max_attempts)
        act = never_ready if max_attempts == 0 else fails_until_third
        try:
            return await workflow.execute_activity(act, key, start_to_close_timeout=timedelta(seconds=30),
                                                   retry_policy=policy)
        except ActivityError as e:
            return f"gave up: {e.retry_state}"


@workflow.defn
class WaitsForever:
    @workflow.run
    async def run(self) -> None:
        await workflow.wait_condition(lambda: False)

    @workflow.signal
    def poke(self, n: int) -> None:
        pass


_until = partial(until, timeout=20.0, interval=0.02)


async def test_retried_attempts_write_no_events_and_show_in_describe() -> None:
    async with await WorkflowEnvironment.start_local() as env:
        q = "retries-" + uuid.uuid4().hex[:6]
        async with Worker(env.client, task_queue=q, workflows=[PollsByRetrying], activities=[never_ready]):
            h = await env.client.start_workflow(PollsByRetrying.run, "poll", 0, 0.005, id="poll", task_queue=q)

            async def many_attempts() -> Any:
                desc = await h.describe()
                pending = desc.pending_activities
                return desc if pending and pending[0].attempt >= 25 else None

            desc = await _until(many_attempts)
            events = await raw_history(env.client.stub, h.id)
        # scheduled, then nothing: 24 failed attempts wrote no event (they wrote 48 before)
        assert [e.event_type for e in events][-1] == pb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
        assert len(events) == 5
        assert desc.history_length == 5
        [pending] = desc.pending_activities
        assert pending.activity_type == "never_ready"
        assert isinstance(pending.last_failure, ApplicationError)
        # the attempt under way (or waiting out its backoff) and the failure of the one before it
        assert str(pending.last_failure) == f"poll not ready (attempt {pending.attempt - 1})"
        await h.terminate("done")


async def test_attempt_count_and_last_failure_survive_a_restart(tmp_path: Path) -> None:
    db = str(tmp_path / "retries.db")
    q = "restart-retries"
    cp = await embedded.start(db)
    try:
        client = Client(cp.stub, namespace="default")
        async with Worker(client, task_queue=q, workflows=[PollsByRetrying], activities=[fails_until_third]):
            # attempt 1 fails -> 5 ms backoff; attempt 2 fails -> 3 s backoff: stop in that backoff
            h = await client.start_workflow(PollsByRetrying.run, "k", 3, 3.0, id="survivor", task_queue=q)

            async def in_third_backoff() -> Any:
                pending = (await h.describe()).pending_activities
                return pending and pending[0].attempt == 3 and pending[0].state == "SCHEDULED"

            await _until(in_third_backoff)
    finally:
        await cp.stop()
    cp = await embedded.start(db)
    try:
        client = Client(cp.stub, namespace="default")
        h = client.get_workflow_handle("survivor")
        [pending] = (await h.describe()).pending_activities
        assert pending.attempt == 3 and str(pending.last_failure) == "attempt 2 fails"
        async with Worker(client, task_queue=q, workflows=[PollsByRetrying], activities=[fails_until_third]):
            assert await asyncio.wait_for(h.result(), 30) == "k@3"
        events = await raw_history(cp.stub, "survivor")
        [started] = [e.activity_task_started_event_attributes for e in events
                     if e.event_type == pb.EVENT_TYPE_ACTIVITY_TASK_STARTED]
        assert started.attempt == 3 and started.last_failure.message == "attempt 2 fails"
        assert not [e for e in events if e.event_type == pb.EVENT_TYPE_ACTIVITY_TASK_FAILED]
    finally:
        await cp.stop()


async def test_maximum_attempts_counts_attempts_that_wrote_no_events() -> None:
    async with await WorkflowEnvironment.start_local() as env:
        q = "max-" + uuid.uuid4().hex[:6]
        async with Worker(env.client, task_queue=q, workflows=[PollsByRetrying], activities=[fails_until_third]):
            assert await env.client.execute_workflow(PollsByRetrying.run, "m", 2, 0.005, id="max",
                                                     task_queue=q) == "gave up: MAXIMUM_ATTEMPTS_REACHED"
        events = await raw_history(env.client.stub, "max")
    closes = [(e.event_type, e) for e in events if e.event_type in (pb.EVENT_TYPE_ACTIVITY_TASK_STARTED,
                                                                     pb.EVENT_TYPE_ACTIVITY_TASK_FAILED)]
    assert [t for t, _ in closes] == [pb.EVENT_TYPE_ACTIVITY_TASK_STARTED, pb.EVENT_TYPE_ACTIVITY_TASK_FAILED]
    failed = closes[1][1].activity_task_failed_event_attributes
    assert (failed.attempt, failed.retry_state) == (2, pb.RETRY_STATE_MAXIMUM_ATTEMPTS_REACHED)
    assert failed.started_event_id == closes[0][1].event_id


async def test_history_limit_is_enforced_on_events_the_engine_appends() -> None:
    """Signals to a run whose workflow task nobody takes: the run fails at the limit, it does not overshoot."""
    cfg = dataclasses.replace(ServerConfig(), num_shards=1, history_max_events=20, history_warn_events=10)
    async with await WorkflowEnvironment.start_local(config=cfg) as env:
        h = await env.client.start_workflow(WaitsForever.run, id="grows", task_queue="nobody-polls")
        refused = 0
        for n in range(40):
            try:
                await h.signal(WaitsForever.poke, n)
            except RPCError:
                refused += 1
        events = await raw_history(env.client.stub, "grows")
        desc = await h.describe()
    assert desc.status is WorkflowExecutionStatus.FAILED
    assert len(events) == 21  # 20 events, then the failure that closes the run
    last = events[-1]
    assert last.event_type == pb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED
    assert "over the limit of 20" in last.workflow_execution_failed_event_attributes.failure.message
    assert refused == 40 - 18  # the run closed: later signals are refused (FAILED_PRECONDITION)
