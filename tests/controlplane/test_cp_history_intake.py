"""Issue 16, histories: limits on every append (events and bytes, buffered signals included), pages cut by
bytes so every accepted history reads back, and failure chains capped at intake so nothing stored is unreadable."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import subprocess

from pathlib import Path
from typing import Any

import grpc
import pytest

from spindle_procs import SPINDLE, DevServer, raw_history

from spindle import workflow
from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.client import Client, WorkflowExecutionStatus
from spindle.controlplane.config import ServerConfig
from spindle.controlplane.frontend._payload_intake import MAX_FAILURE_DEPTH, cap_failure_depth
from spindle.exceptions import RPCError
from spindle.testing import WorkflowEnvironment
from spindle.worker import Worker

pytestmark = pytest.mark.timeout(180)


def cfg(**kw: Any) -> ServerConfig:
    return dataclasses.replace(ServerConfig(), num_shards=1, **kw)


@workflow.defn
class Collect:
    """Completes once it has ``n`` signals; returns their total length."""

    def __init__(self) -> None:
        self.got: list[str] = []

    @workflow.signal
    async def add(self, text: str) -> None:
        self.got.append(text)

    @workflow.run
    async def run(self, n: int) -> int:
        await workflow.wait_condition(lambda: len(self.got) >= n)
        return sum(len(t) for t in self.got)


@workflow.defn
class Quick:
    @workflow.run
    async def run(self) -> str:
        return "ok"


def payload(text: str) -> pb.Payloads:
    return pb.Payloads(payloads=[pb.Payload(metadata={"encoding": b"json/plain"}, data=json.dumps(text).encode())])


async def start_raw(stub: Any, wid: str, queue: str, n: int = 10**6) -> None:
    await stub.StartWorkflowExecution(svc.StartWorkflowExecutionRequest(
        namespace="default", workflow_id=wid, workflow_type="Collect", task_queue=queue, input=payload_int(n)))


def payload_int(n: int) -> pb.Payloads:
    return pb.Payloads(payloads=[pb.Payload(metadata={"encoding": b"json/plain"}, data=str(n).encode())])


async def signal_raw(stub: Any, wid: str, text: str) -> grpc.StatusCode | None:
    try:
        await stub.SignalWorkflowExecution(svc.SignalWorkflowExecutionRequest(
            namespace="default", workflow_execution=pb.WorkflowExecution(workflow_id=wid), signal_name="add",
            input=payload(text)))
        return None
    except grpc.aio.AioRpcError as e:
        return e.code()


async def poll_and_hold(stub: Any, queue: str) -> svc.PollWorkflowTaskQueueResponse:
    """A worker that takes the workflow task and never answers (signals are now buffered behind it)."""
    resp = await stub.PollWorkflowTaskQueue(svc.PollWorkflowTaskQueueRequest(namespace="default", task_queue=queue,
                                                                            identity="silent"))
    assert resp.task_token
    return resp


async def a_good_workflow_completes(env: WorkflowEnvironment) -> None:
    async with Worker(env.client, task_queue="good", workflows=[Quick]):
        assert await env.client.execute_workflow(Quick.run, id="good", task_queue="good") == "ok"


# ---------------------------------------------------------------------------------------------- 4. limits
async def test_signals_buffered_behind_a_running_task_count_towards_the_event_limit() -> None:
    """The issue's 60,000 signals (scaled down: a limit of 60 events): signals arriving while a worker held the task
    were buffered and never checked. Now the run fails at the limit and later signals are refused."""
    async with await WorkflowEnvironment.start_local(config=cfg(history_max_events=60, history_warn_events=30)) as env:
        stub = env.client.stub
        await start_raw(stub, "flood", "held")
        await poll_and_hold(stub, "held")
        codes = [await signal_raw(stub, "flood", f"s{i}") for i in range(100)]
        accepted = codes.count(None)
        assert accepted < 100 and set(codes) == {None, grpc.StatusCode.FAILED_PRECONDITION}
        assert codes[accepted:] == [grpc.StatusCode.FAILED_PRECONDITION] * (100 - accepted)  # all after the close
        events = await raw_history(stub, "flood")
        assert len(events) <= 60 + 2  # the limit, the last write, the closing failure
        last = events[-1]
        assert last.event_type == pb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED
        msg = last.workflow_execution_failed_event_attributes.failure.message
        assert "over the limit of 60" in msg and "history_max_events" in msg
        assert (await env.client.get_workflow_handle("flood").describe()).status is WorkflowExecutionStatus.FAILED
        await a_good_workflow_completes(env)


@pytest.mark.parametrize("held", [False, True])
async def test_history_byte_limit_is_checked_on_every_append(held: bool) -> None:
    """The issue's 1,200 signals of 250 KB, scaled down: 100 KB signals against a 1 MB history limit, with the
    workflow task waiting in its queue (events written at once) or held by a silent worker (events buffered)."""
    limit = 1_000_000
    async with await WorkflowEnvironment.start_local(config=cfg(history_max_bytes=limit)) as env:
        stub = env.client.stub
        await start_raw(stub, "big", "held" if held else "nobody-polls")
        if held:
            await poll_and_hold(stub, "held")
        codes = [await signal_raw(stub, "big", "x" * 100_000) for _ in range(20)]
        accepted = codes.count(None)
        assert 8 <= accepted <= 11, codes
        assert codes[accepted:] == [grpc.StatusCode.FAILED_PRECONDITION] * (20 - accepted)
        events = await raw_history(stub, "big")
        size = sum(e.ByteSize() for e in events)
        assert size <= limit + 2 * 101_000  # one write over the limit, and the closing failure
        failure = events[-1].workflow_execution_failed_event_attributes.failure
        assert events[-1].event_type == pb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED
        assert f"over the limit of {limit} bytes (history_max_bytes)" in failure.message
        await a_good_workflow_completes(env)


# ---------------------------------------------------------------------------------------------- 5. pages
async def test_history_pages_and_workflow_tasks_are_cut_by_bytes() -> None:
    """40 signals of 100 KB with a 300 KB page budget: every page (and every workflow task) stays under the
    budget plus one event, the worker replays the whole history from pages (no cache), fetch_history reads it."""
    budget, n, size = 300_000, 40, 100_000
    async with await WorkflowEnvironment.start_local(config=cfg(history_page_max_bytes=budget)) as env:
        stub = env.client.stub
        h = await env.client.start_workflow(Collect.run, n, id="pages", task_queue="pq")
        for i in range(n):
            await h.signal(Collect.add, str(i % 10) * size)
        # raw pages: each under the budget (+ one event), at least one event each, gapless
        token, ids, pages = b"", [], 0
        while True:
            resp = await stub.GetWorkflowExecutionHistory(svc.GetWorkflowExecutionHistoryRequest(
                namespace="default", execution=pb.WorkflowExecution(workflow_id="pages"), next_page_token=token))
            if not resp.history.events:
                break
            pages += 1
            assert resp.history.ByteSize() <= budget + size + 1000
            ids += [e.event_id for e in resp.history.events]
            token = resp.next_page_token
            if not token:
                break
        assert ids == list(range(1, len(ids) + 1)) and len(ids) >= n + 2 and pages >= 10
        # a workflow task poll is cut too (its newest events); the worker fetches the rest page by page
        first = await stub.PollWorkflowTaskQueue(svc.PollWorkflowTaskQueueRequest(namespace="default",
                                                                                 task_queue="pq", identity="peek"))
        assert first.task_token and first.history.ByteSize() <= budget + size + 1000
        assert first.history.events[-1].event_type == pb.EVENT_TYPE_WORKFLOW_TASK_STARTED
        assert first.history.events[0].event_id > 1
        await stub.RespondWorkflowTaskFailed(svc.RespondWorkflowTaskFailedRequest(
            task_token=first.task_token, cause=pb.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND,
            failure=pb.Failure(message="peeked")))
        async with Worker(env.client, task_queue="pq", workflows=[Collect], max_cached_workflows=0):
            assert await h.result() == n * size
        history = await h.fetch_history()
        assert len(history.events_of_type("WorkflowExecutionSignaled")) == n


def test_workflow_show_reads_a_history_larger_than_a_message(tmp_path: Path) -> None:
    """Over gRPC with the server's defaults (4 MiB pages, a blob store): 80 signals of 1 MB are offloaded, so the
    history stays small in the store but expands to 80 MB, over the 64 MiB message limit for one page of 1,000
    events (RESOURCE_EXHAUSTED for good before). fetch_history, `spindle workflow show` and a worker read it."""
    n, size = 80, 1_000_000
    server = DevServer(tmp_path / "dev.db").start()

    async def main() -> None:
        client = await Client.connect(server.address, namespace="default")
        try:
            h = await client.start_workflow(Collect.run, n, id="huge", task_queue="hq")
            text = "z" * size
            for _ in range(n):
                await h.signal(Collect.add, text)
            async with Worker(client, task_queue="hq", workflows=[Collect], max_cached_workflows=0):
                assert await h.result() == n * size
            history = await h.fetch_history()
            assert len(history.events_of_type("WorkflowExecutionSignaled")) == n
        finally:
            await client.close()

    try:
        asyncio.run(main())
        out = subprocess.run([SPINDLE, "workflow", "show", "--address", server.address, "--workflow-id", "huge",
                              "--output", "json"], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr[-2000:]
        assert out.stdout.count("WorkflowExecutionSignaled") >= n
    finally:
        server.stop()


# ---------------------------------------------------------------------------------------------- 6. nesting
def deep_failure(depth: int) -> pb.Failure:
    f = pb.Failure(message=f"level {depth}")
    for i in range(depth - 1, 0, -1):
        f = pb.Failure(message=f"level {i}", cause=f)
    return f


def chain(f: pb.Failure) -> list[pb.Failure]:
    out = [f]
    while out[-1].HasField("cause"):
        out.append(out[-1].cause)
    return out


async def test_a_97_deep_failure_in_respond_workflow_task_failed_is_truncated_and_the_run_goes_on() -> None:
    """The issue's input: a Failure nested 97 deep (parse limit 100) was stored; every response holding it went over
    the limit, the SDK failed with AttributeError, the workflow was stuck. Now the chain is cut at intake."""
    async with await WorkflowEnvironment.start_local(config=cfg()) as env:
        stub = env.client.stub
        h = await env.client.start_workflow(Quick.run, id="deep", task_queue="dq")
        task = await stub.PollWorkflowTaskQueue(svc.PollWorkflowTaskQueueRequest(namespace="default", task_queue="dq",
                                                                                identity="evil"))
        await stub.RespondWorkflowTaskFailed(svc.RespondWorkflowTaskFailedRequest(
            task_token=task.task_token, cause=pb.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND,
            failure=deep_failure(97)))
        events = await raw_history(stub, "deep")  # reads back (each message parses)
        failed = [e for e in events if e.event_type == pb.EVENT_TYPE_WORKFLOW_TASK_FAILED][0]
        kept = chain(failed.workflow_task_failed_event_attributes.failure)
        assert len(kept) == MAX_FAILURE_DEPTH
        assert [f.message for f in kept[:-1]] == [f"level {i}" for i in range(1, MAX_FAILURE_DEPTH)]
        assert "66 more cause(s) dropped" in kept[-1].message and kept[-1].source == "server"
        async with Worker(env.client, task_queue="dq", workflows=[Quick]):
            assert await h.result() == "ok"  # not stuck: the next task replays the history with the failure
        assert len((await h.fetch_history()).events) > len(events)


async def test_a_deep_failure_completing_a_workflow_reads_back() -> None:
    """FAIL_WORKFLOW_EXECUTION with a 97-deep failure: stored truncated, the result and the history read back."""
    async with await WorkflowEnvironment.start_local(config=cfg()) as env:
        stub = env.client.stub
        h = await env.client.start_workflow(Quick.run, id="deep-fail", task_queue="dq2")
        task = await stub.PollWorkflowTaskQueue(svc.PollWorkflowTaskQueueRequest(namespace="default",
                                                                                task_queue="dq2", identity="evil"))
        cmd = pb.Command(command_type=pb.COMMAND_TYPE_FAIL_WORKFLOW_EXECUTION)
        cmd.fail_workflow_execution_command_attributes.failure.CopyFrom(deep_failure(97))
        await stub.RespondWorkflowTaskCompleted(svc.RespondWorkflowTaskCompletedRequest(
            task_token=task.task_token, commands=[cmd]))
        with pytest.raises(Exception) as e:
            await h.result()
        assert "level 1" in str(e.value) or "level 1" in repr(e.value.__cause__)
        events = await raw_history(stub, "deep-fail")
        assert len(chain(events[-1].workflow_execution_failed_event_attributes.failure)) == MAX_FAILURE_DEPTH
        await a_good_workflow_completes(env)


def _failure_paths(d: Any, seen: frozenset[str] = frozenset()) -> list[list[Any]]:
    """Every path of field descriptors from message type ``d`` to a Failure (not through another Failure)."""
    out = []
    for fd in d.fields:
        mt = fd.message_type
        if mt is None or mt.GetOptions().map_entry or mt.full_name in seen:
            continue
        if mt.full_name == pb.Failure.DESCRIPTOR.full_name:
            out.append([fd])
            continue
        out += [[fd, *p] for p in _failure_paths(mt, seen | {d.full_name})]
    return out


def test_every_failure_a_request_can_carry_is_capped() -> None:
    """Activity failures, workflow failure commands, update rejections, ...: every Failure position of every request."""
    from spindle.controlplane.frontend.service import RPC_NAMES

    service = svc.DESCRIPTOR.services_by_name["WorkflowService"]
    positions: set[str] = set()
    for rpc in RPC_NAMES:
        req_type = getattr(svc, service.methods_by_name[rpc].input_type.name)
        for path in _failure_paths(req_type.DESCRIPTOR):
            req = req_type()
            msg = req
            for fd in path[:-1]:
                msg = getattr(msg, fd.name).add() if fd.is_repeated else getattr(msg, fd.name)
            last = path[-1]
            target = getattr(msg, last.name).add() if last.is_repeated else getattr(msg, last.name)
            target.CopyFrom(deep_failure(97))
            original = req_type()
            original.CopyFrom(req)
            capped = cap_failure_depth(req)
            assert req == original  # the caller's message is not changed
            capped.SerializeToString()
            assert max(len(chain(f)) for f in _all_failures(capped)) == MAX_FAILURE_DEPTH, (rpc, path)
            positions.add(f"{rpc}:{'.'.join(fd.name for fd in path)}")
    assert {"RespondWorkflowTaskFailed:failure", "RespondActivityTaskFailed:failure",
            "RespondWorkflowTaskCompleted:commands.fail_workflow_execution_command_attributes.failure",
            "RespondWorkflowTaskCompleted:commands.reject_update_command_attributes.failure",
            "RespondWorkflowTaskCompleted:commands.complete_update_command_attributes.failure"} <= positions
    ok = svc.RespondWorkflowTaskFailedRequest(failure=deep_failure(MAX_FAILURE_DEPTH))
    assert cap_failure_depth(ok) is ok  # within the limit: untouched, not copied


def _all_failures(msg: Any) -> list[pb.Failure]:
    from spindle.controlplane.frontend._payload_intake import _top_failures

    return _top_failures(msg)


async def test_signal_flood_error_message_names_the_limit() -> None:
    """What the caller of a refused signal sees once the run closed at its limit."""
    async with await WorkflowEnvironment.start_local(config=cfg(history_max_events=10, history_warn_events=5)) as env:
        h = await env.client.start_workflow(Collect.run, 100, id="small", task_queue="nobody")
        refused: list[RPCError] = []
        for i in range(20):
            try:
                await h.signal(Collect.add, str(i))
            except RPCError as e:
                refused.append(e)
        assert refused and all(e.status == "FAILED_PRECONDITION" for e in refused)
        assert (await h.describe()).status is WorkflowExecutionStatus.FAILED
