"""``spindle workflow terminate --query ...`` on a real ``start-dev``: 1,000 executions, an interrupted run
resumed, a bad query, the confirmation; and ``spindle workflow reset``."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from spindle_procs import SPINDLE, DevServer, raw_history

from spindle.api import messages_pb2 as pb
from spindle.client import Client, WorkflowExecutionStatus

pytestmark = pytest.mark.timeout(300)

N = 1000
QUERY = "WorkflowType = 'Sleeper' AND ExecutionStatus = 'Running'"


@pytest.fixture
async def dev(tmp_path: Path) -> AsyncIterator[tuple[DevServer, Client]]:
    server = DevServer(tmp_path / "batch.db").start()
    client = await Client.connect(server.address)
    try:
        yield server, client
    finally:
        await client.close()
        server.kill()


def cli(address: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SPINDLE, "workflow", *args, "--address", address], capture_output=True, text=True,
                          input=stdin, timeout=240)


async def start_many(client: Client, n: int) -> None:
    """``n`` runs of 'Sleeper' on a queue no worker polls (they stay running), started 100 at a time."""
    for base in range(0, n, 100):
        await asyncio.gather(*(client.start_workflow("Sleeper", id=f"sleeper-{i}", task_queue="nobody")
                               for i in range(base, min(n, base + 100))))


async def settle(client: Client, query: str, want: int, timeout: float = 30) -> None:
    end = time.monotonic() + timeout
    while (got := await client.count_workflows(query)) != want:
        assert time.monotonic() < end, f"{query!r}: {got}, expected {want}"
        await asyncio.sleep(0.1)


async def test_terminate_1000_by_query_interrupted_at_half_and_run_again(dev: tuple[DevServer, Client]) -> None:
    server, client = dev
    await start_many(client, N)
    await settle(client, QUERY, N)
    # a bad query: a precise error, nothing changed
    bad = cli(server.address, "terminate", "--query", "WorkflowType = ", "--reason", "x", "--yes")
    assert bad.returncode == 1 and "spindle: error:" in bad.stderr and "query" in bad.stderr, bad.stderr
    # no confirmation: nothing is done, and the count was shown
    no = cli(server.address, "terminate", "--query", QUERY, "--reason", "x", stdin="n\n")
    assert no.returncode == 2 and f"{N} execution(s) match" in no.stderr, no.stderr
    assert await client.count_workflows(QUERY) == N

    # the batch, rate-limited, killed (SIGKILL) about half-way
    proc = subprocess.Popen([SPINDLE, "workflow", "terminate", "--address", server.address, "--query", QUERY,
                             "--reason", "bad deploy", "--yes", "--rps", "200"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        end = time.monotonic() + 60
        while await client.count_workflows("ExecutionStatus = 'Terminated'") < N // 2:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < end, "the batch made no progress"
            await asyncio.sleep(0.05)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        proc.stdout.close()  # type: ignore[union-attr]
        proc.stderr.close()  # type: ignore[union-attr]
    running = await client.count_workflows(QUERY)
    assert 0 < running < N, running  # interrupted part-way

    # the same command again: no error, the rest terminated, a summary printed
    again = cli(server.address, "terminate", "--query", QUERY, "--reason", "bad deploy", "--yes")
    assert again.returncode == 0, again.stderr
    assert "terminate:" in again.stdout and "0 failed" in again.stdout, again.stdout
    await settle(client, QUERY, 0)
    await settle(client, "WorkflowType = 'Sleeper' AND ExecutionStatus = 'Terminated'", N)
    # each run terminated exactly once
    stub = client.stub
    for i in range(0, N, 37):
        events = await raw_history(stub, f"sleeper-{i}")
        terminated = [e for e in events if e.event_type == pb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED]
        assert len(terminated) == 1 and events[-1].event_type == pb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED
        assert terminated[0].workflow_execution_terminated_event_attributes.reason == "bad deploy"


async def test_python_batch_ops_summaries(dev: tuple[DevServer, Client]) -> None:
    server, client = dev
    await start_many(client, 30)
    await settle(client, QUERY, 30)
    # signal all: done; the same batch again delivers nothing twice (request ids from the batch id)
    s = await client.batch_signal(QUERY, "poke", {"n": 1}, rps=500)
    assert (s.total, len(s.done), s.skipped, s.failed) == (30, 30, [], []), s
    s2 = await client.batch_signal(QUERY, "poke", {"n": 1})
    assert s2.batch_id == s.batch_id and len(s2.done) == 30
    events = await raw_history(client.stub, "sleeper-3")  # type: ignore[attr-defined]
    assert sum(e.event_type == pb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED for e in events) == 1
    # terminate 10 of them; then cancel all that a stale listing shows: the closed ones are skipped
    handles = [client.get_workflow_handle(f"sleeper-{i}") for i in range(10)]
    for h in handles:
        await h.terminate("first")
    s3 = await client.batch_cancel("WorkflowType = 'Sleeper'", reason="stop")
    assert s3.total == 30 and len(s3.done) == 20 and len(s3.skipped) == 10 and not s3.failed, s3
    assert all("FAILED_PRECONDITION" in i.reason for i in s3.skipped)
    assert (await handles[0].describe()).status is WorkflowExecutionStatus.TERMINATED
    assert "10 skipped" in str(s3)
    # a bad query raises and changes nothing
    from spindle.exceptions import RPCError

    with pytest.raises(RPCError) as err:
        await client.batch_terminate("ExecutionStatus = ", reason="x")
    assert err.value.status == "INVALID_ARGUMENT"
    with pytest.raises(ValueError):
        await client.batch_terminate("", reason="x")
    await settle(client, QUERY, 20)
    # batch reset: nothing completed a workflow task here (no worker): each fails with the reason
    s4 = await client.batch_reset("WorkflowId = 'sleeper-20'", reason="r")
    assert len(s4.failed) == 1 and "no WorkflowTaskCompleted" in s4.failed[0].reason, s4


async def test_cli_reset_one_workflow(dev: tuple[DevServer, Client], tmp_path: Path) -> None:
    server, client = dev
    # a run whose first workflow task completed: taken by hand (no worker process needed)
    from spindle.api import service_pb2 as svc

    original = (await client.start_workflow("Waiter", id="w-reset", task_queue="hand")).result_run_id
    stub = client.stub
    task = await stub.PollWorkflowTaskQueue(svc.PollWorkflowTaskQueueRequest(
        namespace="default", task_queue="hand"))
    await stub.RespondWorkflowTaskCompleted(svc.RespondWorkflowTaskCompletedRequest(
        namespace="default", task_token=task.task_token))
    events = await raw_history(stub, "w-reset")
    completed = [e.event_id for e in events if e.event_type == pb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED]
    assert completed == [4]
    bad = cli(server.address, "reset", "--workflow-id", "w-reset", "--event-id", "3", "--reason", "x")
    assert bad.returncode == 1 and "WorkflowTaskCompleted" in bad.stderr and "4" in bad.stderr, bad.stderr
    both = cli(server.address, "reset", "--workflow-id", "w-reset", "--query", QUERY, "--reason", "x")
    assert both.returncode == 2 and "not both" in both.stderr
    neither = cli(server.address, "terminate", "--reason", "x")
    assert neither.returncode == 2 and "one of --workflow-id or --query is required" in neither.stderr
    event_and_query = cli(server.address, "reset", "--query", QUERY, "--event-id", "4", "--reason", "x", "--yes")
    assert event_and_query.returncode == 2 and "--type first|last" in event_and_query.stderr
    ok = cli(server.address, "reset", "--workflow-id", "w-reset", "--type", "first", "--reason", "try again")
    assert ok.returncode == 0, ok.stderr
    new_run = json.loads(ok.stdout)["run_id"]
    d = await client.get_workflow_handle("w-reset").describe()
    assert d.run_id == new_run and d.status is WorkflowExecutionStatus.RUNNING
    # the batch forms of signal and reset on the same workflow
    await settle(client, "WorkflowId = 'w-reset' AND ExecutionStatus = 'Running'", 1)
    sig = cli(server.address, "signal", "--query", "WorkflowId = 'w-reset' AND ExecutionStatus = 'Running'",
              "--name", "poke", "--input", '{"n": 1}', "--yes")
    assert sig.returncode == 0 and "signal: 1 matched, 1 done, 0 skipped, 0 failed" in sig.stdout, sig
    bad_input = cli(server.address, "signal", "--query", "WorkflowId = 'w-reset'", "--name", "poke", "--input", "{",
                    "--yes")
    assert bad_input.returncode == 2 and "--input" in bad_input.stderr, bad_input.stderr
    events = await raw_history(stub, "w-reset", new_run)
    assert sum(e.event_type == pb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED for e in events) == 1
    # batch reset of the (old, terminated) first run: a workflow id is reset once per batch, even when run again
    again = ["reset", "--query", "WorkflowId = 'w-reset' AND ExecutionStatus = 'Terminated'", "--type", "first",
             "--reason", "batch", "--yes"]
    await settle(client, "WorkflowId = 'w-reset' AND ExecutionStatus = 'Terminated'", 1)
    first = cli(server.address, *again)
    assert first.returncode == 0 and "reset: 1 matched, 1 done" in first.stdout, first
    after_first = (await client.get_workflow_handle("w-reset").describe()).run_id
    assert after_first != new_run
    second = cli(server.address, *again)
    assert second.returncode == 0, second.stdout
    assert (await client.get_workflow_handle("w-reset").describe()).run_id == after_first
    # a batch reset tries the other matching runs of an id when the first has no point (a run a reset
    # made copies its start time, so it may be listed first): deterministic here
    from spindle.client import ResetType
    from spindle.client._batch import BatchTarget, make_action

    act = make_action(client, "reset", reason="direct", reset_type=ResetType.FIRST_WORKFLOW_TASK)
    await act(BatchTarget("w-reset", after_first, 0, (original,)), "direct-request")
    made = (await client.get_workflow_handle("w-reset").describe()).run_id
    assert made not in (after_first, original)
    await act(BatchTarget("w-reset", made, 0, (original,)), "direct-request")  # a retry: the same run
    assert (await client.get_workflow_handle("w-reset").describe()).run_id == made
    with pytest.raises(ValueError):  # no run with a point at all
        await act(BatchTarget("w-reset", made, 0, (after_first,)), "another-request")
