"""Issue 16, request validation: the exact inputs of the issue, each answered INVALID_ARGUMENT naming the field.

For each: the precise status and message, nothing written to the store (row counts unchanged),
no stuck workflow (the workflow task a bad command reached fails with BAD_COMMAND and the
retried task completes the run) and the server still serving (a fresh workflow completes).
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid

from collections.abc import AsyncIterator, Iterator
from typing import Any

import grpc
import pytest

from _cp_server import DevServer, assert_gapless, db_counts, raw_history, raw_stub

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc

pytestmark = pytest.mark.timeout(120)

NS = "default"
I64_MAX = 2**63 - 1
MB = 1_000_000


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    s = DevServer(tmp_path_factory.mktemp("validate") / "spindle.db").start()
    yield s
    s.stop()


@pytest.fixture
async def stub(server: DevServer) -> AsyncIterator[Any]:
    ch, st = raw_stub(server.address)
    try:
        yield st
    finally:
        await ch.close()


@pytest.fixture
async def channel(server: DevServer) -> AsyncIterator[grpc.aio.Channel]:
    ch = grpc.aio.insecure_channel(server.address)
    try:
        yield ch
    finally:
        await ch.close()


def uid(p: str) -> str:
    return f"{p}-{uuid.uuid4().hex[:8]}"


def start_req(wid: str = "", **kw: Any) -> svc.StartWorkflowExecutionRequest:
    base: dict[str, Any] = dict(namespace=NS, workflow_id=wid or uid("w"), workflow_type="T", task_queue=uid("q"),
                                request_id=uuid.uuid4().hex)
    base.update(kw)
    return svc.StartWorkflowExecutionRequest(**base)


async def settle(db: str) -> dict[str, int]:
    prev = db_counts(db)
    for _ in range(40):
        await asyncio.sleep(0.1)
        cur = db_counts(db)
        if cur == prev:
            return cur
        prev = cur
    return prev


@contextlib.asynccontextmanager
async def store_unchanged(server: DevServer) -> AsyncIterator[None]:
    before = await settle(server.db)
    yield
    after = await settle(server.db)
    assert after == before, f"store changed: {before} -> {after}"


async def expect_invalid(call: Any, *needles: str) -> str:
    with pytest.raises(grpc.aio.AioRpcError) as ei:
        await call
    assert ei.value.code() == grpc.StatusCode.INVALID_ARGUMENT, f"{ei.value.code()} {ei.value.details()}"
    details = ei.value.details() or ""
    for n in needles:
        assert n in details, f"{n!r} not in {details!r}"
    return details


async def poll_task(stub: Any, tq: str) -> svc.PollWorkflowTaskQueueResponse:
    t = await stub.PollWorkflowTaskQueue(svc.PollWorkflowTaskQueueRequest(namespace=NS, task_queue=tq, identity="raw"),
                                         timeout=10)
    assert t.task_token, "no workflow task within the poll"
    return t


def complete(stub: Any, task: svc.PollWorkflowTaskQueueResponse, *commands: pb.Command, **kw: Any) -> Any:
    return stub.RespondWorkflowTaskCompleted(svc.RespondWorkflowTaskCompletedRequest(
        task_token=task.task_token, commands=list(commands), identity=kw.pop("identity", "raw"), namespace=NS, **kw))


def complete_cmd() -> pb.Command:
    return pb.Command(command_type=pb.COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION,
                      complete_workflow_execution_command_attributes=pb.CompleteWorkflowExecutionCommandAttributes())


async def assert_serving(stub: Any) -> None:
    """A fresh workflow runs to completion: the server is not wedged."""
    req = start_req()
    await stub.StartWorkflowExecution(req, timeout=10)
    await complete(stub, await poll_task(stub, req.task_queue), complete_cmd())
    events = await raw_history(stub, req.workflow_id)
    assert events[-1].event_type == pb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED


# ---------------------------------------------------------------------- numbers on client requests


@pytest.mark.parametrize("field,value", [
    ("execution_timeout_ms", I64_MAX), ("run_timeout_ms", I64_MAX), ("task_timeout_ms", I64_MAX),
    ("workflow_start_delay_ms", I64_MAX), ("task_timeout_ms", 2**62), ("execution_timeout_ms", -1),
])
async def test_out_of_range_start_timeouts_are_invalid(server: DevServer, stub: Any, field: str, value: int) -> None:
    # before: INTERNAL "ValueError: Value out of range" or UNAVAILABLE "Python int too large to convert to SQLite
    # INTEGER" (a retryable code for a permanent error); task_timeout 2**62 was accepted
    req = start_req(**{field: value})
    async with store_unchanged(server):
        await expect_invalid(stub.StartWorkflowExecution(req), f"{field}: ")
        await expect_invalid(stub.SignalWithStartWorkflowExecution(svc.SignalWithStartWorkflowExecutionRequest(
            start=req, signal_name="s")), f"start.{field}: ")
    with pytest.raises(grpc.aio.AioRpcError) as ei:
        await stub.DescribeWorkflowExecution(svc.DescribeWorkflowExecutionRequest(
            namespace=NS, execution=pb.WorkflowExecution(workflow_id=req.workflow_id)))
    assert ei.value.code() == grpc.StatusCode.NOT_FOUND
    await assert_serving(stub)


async def test_workflow_task_timeout_is_clamped_to_two_minutes(server: DevServer, stub: Any) -> None:
    """Within range but over Temporal's maximum: clamped (a worker dying with the task delays the run 2 min at most)."""
    req = start_req(task_timeout_ms=3_600_000)
    await stub.StartWorkflowExecution(req)
    events = await raw_history(stub, req.workflow_id)
    assert events[0].workflow_execution_started_event_attributes.task_timeout_ms == 120_000
    assert events[1].workflow_task_scheduled_event_attributes.start_to_close_timeout_ms == 120_000
    # continue-as-new asking for an hour is clamped too
    task = await poll_task(stub, req.task_queue)
    await complete(stub, task, pb.Command(
        command_type=pb.COMMAND_TYPE_CONTINUE_AS_NEW_WORKFLOW_EXECUTION,
        continue_as_new_workflow_execution_command_attributes=pb.ContinueAsNewWorkflowExecutionCommandAttributes(
            workflow_type="T", task_queue=req.task_queue, task_timeout_ms=3_600_000)))
    new = await raw_history(stub, req.workflow_id)
    assert new[0].workflow_execution_started_event_attributes.task_timeout_ms == 120_000
    await complete(stub, await poll_task(stub, req.task_queue), complete_cmd())


@pytest.mark.parametrize("rpc,req,field", [
    ("QueryWorkflow", svc.QueryWorkflowRequest(namespace=NS, execution=pb.WorkflowExecution(workflow_id="w"),
                                                query=pb.WorkflowQuery(query_type="q"), timeout_ms=I64_MAX), "timeout_ms"),
    ("UpdateWorkflowExecution", svc.UpdateWorkflowExecutionRequest(
        namespace=NS, workflow_execution=pb.WorkflowExecution(workflow_id="w"),
        request=pb.UpdateRequest(name="u"), timeout_ms=I64_MAX), "timeout_ms"),
    ("CreateNamespace", svc.CreateNamespaceRequest(name="ns-huge-retention", retention_ms=I64_MAX), "retention_ms"),
    ("CreateNamespace", svc.CreateNamespaceRequest(name="ns-inf-rps", rps_limit=float("inf")), "rps_limit"),
    ("UpdateNamespace", svc.UpdateNamespaceRequest(name=NS, update_mask=["retention"], retention_ms=I64_MAX),
     "retention_ms"),
    ("CreateApiKey", svc.CreateApiKeyRequest(name="k", ttl_ms=I64_MAX, system_admin=True), "ttl_ms"),
    ("ListNamespaces", svc.ListNamespacesRequest(page_size=2**31 - 1), "page_size"),
    ("ListWorkflowExecutions", svc.ListWorkflowExecutionsRequest(namespace=NS, page_size=-1), "page_size"),
    ("GetWorkflowExecutionHistory", svc.GetWorkflowExecutionHistoryRequest(
        namespace=NS, execution=pb.WorkflowExecution(workflow_id="w"), maximum_page_size=-5), "maximum_page_size"),
    ("PollActivityTaskQueue", svc.PollActivityTaskQueueRequest(namespace=NS, task_queue="q", max_tasks_per_second=float("nan")),
     "max_tasks_per_second"),
    ("PollActivityTaskQueue", svc.PollActivityTaskQueueRequest(namespace=NS, task_queue="q", max_tasks_per_second=-1.0),
     "max_tasks_per_second"),
    ("StartWorkflowExecution", start_req(workflow_id_reuse_policy=99), "workflow_id_reuse_policy"),
    ("RespondWorkflowTaskFailed", svc.RespondWorkflowTaskFailedRequest(task_token=b"x", cause=12345), "cause"),
    ("RespondActivityTaskFailed", svc.RespondActivityTaskFailedRequest(
        task_token=b"x", failure=pb.Failure(message="m", application_failure_info=pb.ApplicationFailureInfo(
            next_retry_delay_ms=I64_MAX))), "failure.application_failure_info.next_retry_delay_ms"),
])
async def test_out_of_range_numbers_are_invalid(server: DevServer, stub: Any, rpc: str, req: Any, field: str) -> None:
    async with store_unchanged(server):
        await expect_invalid(getattr(stub, rpc)(req), f"{field}: ")
    await assert_serving(stub)


# ---------------------------------------------------------------------- text: lengths and control characters


@pytest.mark.parametrize("rpc,req,field", [
    ("StartWorkflowExecution", start_req(identity="x" * MB), "identity"),
    ("StartWorkflowExecution", start_req(workflow_id="a\x00b"), "workflow_id"),
    ("StartWorkflowExecution", start_req(workflow_type="T\n"), "workflow_type"),
    ("StartWorkflowExecution", start_req(task_queue="q\x1b[31m"), "task_queue"),
    ("StartWorkflowExecution", start_req(request_id="r\x00"), "request_id"),
    ("SignalWorkflowExecution", svc.SignalWorkflowExecutionRequest(
        namespace=NS, workflow_execution=pb.WorkflowExecution(workflow_id="w"), signal_name="s\x00"), "signal_name"),
    ("SignalWorkflowExecution", svc.SignalWorkflowExecutionRequest(
        namespace=NS, workflow_execution=pb.WorkflowExecution(workflow_id="w"), signal_name="s", identity="i" * MB),
     "identity"),
    ("QueryWorkflow", svc.QueryWorkflowRequest(namespace=NS, execution=pb.WorkflowExecution(workflow_id="w"),
                                                query=pb.WorkflowQuery(query_type="q\x7f")), "query.query_type"),
    ("UpdateWorkflowExecution", svc.UpdateWorkflowExecutionRequest(
        namespace=NS, workflow_execution=pb.WorkflowExecution(workflow_id="w"),
        request=pb.UpdateRequest(name="u", update_id="\x00")), "request.update_id"),
    ("TerminateWorkflowExecution", svc.TerminateWorkflowExecutionRequest(
        namespace=NS, workflow_execution=pb.WorkflowExecution(workflow_id="w"), reason="r" * MB), "reason"),
    ("RequestCancelWorkflowExecution", svc.RequestCancelWorkflowExecutionRequest(
        namespace=NS, workflow_execution=pb.WorkflowExecution(workflow_id="w", run_id="\x00")),
     "workflow_execution.run_id"),
    ("PollWorkflowTaskQueue", svc.PollWorkflowTaskQueueRequest(namespace=NS, task_queue="q", identity="p" * MB),
     "identity"),
    ("RespondActivityTaskCompleted", svc.RespondActivityTaskCompletedRequest(task_token=b"x", identity="\x00"),
     "identity"),
    ("CreateNamespace", svc.CreateNamespaceRequest(name="ns-sa", search_attributes={"Key\x00": svc.SEARCH_ATTRIBUTE_TYPE_KEYWORD}),
     "search_attributes key"),
    ("CreateNamespace", svc.CreateNamespaceRequest(name="ns-desc", description="d" * MB), "description"),
    ("StartWorkflowExecution", start_req(search_attributes=pb.SearchAttributes(
        indexed_fields={"k\x00": pb.Payload(data=b'"v"')})), "search_attributes.indexed_fields key"),
    ("ListWorkflowExecutions", svc.ListWorkflowExecutionsRequest(namespace=NS, query="x" * MB), "query"),
])
async def test_bad_text_is_invalid(server: DevServer, stub: Any, rpc: str, req: Any, field: str) -> None:
    # before: a 1 MB identity was stored in history and a NUL byte in a workflow id accepted
    async with store_unchanged(server):
        details = await expect_invalid(getattr(stub, rpc)(req), f"{field}")
    assert "over the limit" in details or "control character" in details, details
    assert len(details) < 2100  # the offending value is not echoed back whole
    await assert_serving(stub)


async def test_identity_of_a_task_completion_is_refused_before_anything_is_written(server: DevServer, stub: Any) -> None:
    req = start_req()
    await stub.StartWorkflowExecution(req)
    task = await poll_task(stub, req.task_queue)
    before = await raw_history(stub, req.workflow_id)
    await expect_invalid(complete(stub, task, complete_cmd(), identity="x" * MB), "identity: 1000000 characters")
    await expect_invalid(stub.RespondWorkflowTaskFailed(svc.RespondWorkflowTaskFailedRequest(
        task_token=task.task_token, namespace=NS, identity="x" * MB)), "identity")
    assert await raw_history(stub, req.workflow_id) == before
    await complete(stub, task, complete_cmd())  # the same task, answered properly, completes the run
    assert (await raw_history(stub, req.workflow_id))[-1].event_type == pb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED


# ---------------------------------------------------------------------- workflow-task commands


def child_cmd(**kw: Any) -> pb.Command:
    return pb.Command(command_type=pb.COMMAND_TYPE_START_CHILD_WORKFLOW_EXECUTION,
                      start_child_workflow_execution_command_attributes=pb.StartChildWorkflowExecutionCommandAttributes(
                          workflow_id=kw.pop("workflow_id", uid("child")), workflow_type="C", **kw))


def timer_cmd(ms: int) -> pb.Command:
    return pb.Command(command_type=pb.COMMAND_TYPE_START_TIMER,
                      start_timer_command_attributes=pb.StartTimerCommandAttributes(timer_id="t", start_to_fire_timeout_ms=ms))


def activity_cmd(**kw: Any) -> pb.Command:
    base: dict[str, Any] = dict(activity_id="a1", activity_type="A", task_queue="aq", start_to_close_timeout_ms=10_000)
    base.update(kw)
    return pb.Command(command_type=pb.COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK,
                      schedule_activity_task_command_attributes=pb.ScheduleActivityTaskCommandAttributes(**base))


@pytest.mark.parametrize("command,field", [
    (child_cmd(execution_timeout_ms=I64_MAX), "commands[0].execution_timeout_ms"),
    (child_cmd(task_timeout_ms=2**62), "commands[0].task_timeout_ms"),
    (child_cmd(workflow_id="c\x00"), "commands[0].workflow_id"),
    (child_cmd(parent_close_policy=77), "commands[0].parent_close_policy"),
    (timer_cmd(I64_MAX), "commands[0].start_to_fire_timeout_ms"),
    (activity_cmd(heartbeat_timeout_ms=I64_MAX), "commands[0].heartbeat_timeout_ms"),
    (activity_cmd(schedule_to_close_timeout_ms=I64_MAX), "commands[0].schedule_to_close_timeout_ms"),
    (activity_cmd(activity_type="A\x00"), "commands[0].activity_type"),
    (activity_cmd(retry_policy=pb.RetryPolicy(backoff_coefficient=0.5)), "commands[0].retry_policy.backoff_coefficient"),
    (activity_cmd(retry_policy=pb.RetryPolicy(backoff_coefficient=float("inf"))),
     "commands[0].retry_policy.backoff_coefficient"),
    (activity_cmd(retry_policy=pb.RetryPolicy(maximum_attempts=-1)), "commands[0].retry_policy.maximum_attempts"),
    (activity_cmd(retry_policy=pb.RetryPolicy(initial_interval_ms=I64_MAX)),
     "commands[0].retry_policy.initial_interval_ms"),
    (activity_cmd(retry_policy=pb.RetryPolicy(initial_interval_ms=5000, maximum_interval_ms=1000)),
     "commands[0].retry_policy.maximum_interval_ms"),
    (pb.Command(command_type=pb.COMMAND_TYPE_CONTINUE_AS_NEW_WORKFLOW_EXECUTION,
                continue_as_new_workflow_execution_command_attributes=pb.ContinueAsNewWorkflowExecutionCommandAttributes(
                    workflow_type="T", backoff_start_interval_ms=I64_MAX)),
     "commands[0].backoff_start_interval_ms"),
    (pb.Command(command_type=pb.COMMAND_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION,
                signal_external_workflow_execution_command_attributes=pb.SignalExternalWorkflowExecutionCommandAttributes(
                    execution=pb.WorkflowExecution(workflow_id="x"), signal_name="s\x00")), "commands[0].signal_name"),
    (pb.Command(command_type=pb.COMMAND_TYPE_RECORD_MARKER,
                record_marker_command_attributes=pb.RecordMarkerCommandAttributes(marker_name="m" * 1001)),
     "commands[0].marker_name"),
])
async def test_bad_command_fails_the_task_and_the_run_goes_on(server: DevServer, stub: Any, command: pb.Command,
                                                              field: str) -> None:
    """As Temporal's BadStartChildExecutionAttributes etc.: the task fails (BAD_COMMAND), nothing of it is applied.

    Before: a child's execution_timeout of 2**63-1 was accepted, then a ValueError in a
    background task and the child never started; a timer of 2**63-1 failed in the store.
    """
    req = start_req()
    await stub.StartWorkflowExecution(req)
    task = await poll_task(stub, req.task_queue)
    details = await expect_invalid(complete(stub, task, command), f"{field}: ")
    events = await raw_history(stub, req.workflow_id)
    assert_gapless(events)
    assert [e.event_type for e in events] == [
        pb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, pb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
        pb.EVENT_TYPE_WORKFLOW_TASK_STARTED, pb.EVENT_TYPE_WORKFLOW_TASK_FAILED, pb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED]
    failed = events[3].workflow_task_failed_event_attributes
    assert failed.cause == pb.WORKFLOW_TASK_FAILED_CAUSE_BAD_COMMAND
    assert failed.failure.message == details
    if command.HasField("start_child_workflow_execution_command_attributes"):
        with pytest.raises(grpc.aio.AioRpcError) as ei:  # no child was started
            await stub.DescribeWorkflowExecution(svc.DescribeWorkflowExecutionRequest(
                namespace=NS, execution=pb.WorkflowExecution(
                    workflow_id=command.start_child_workflow_execution_command_attributes.workflow_id)))
        assert ei.value.code() in (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.INVALID_ARGUMENT)
    # not stuck: the retried task completes the run
    retry = await poll_task(stub, req.task_queue)
    assert retry.attempt == 2
    await complete(stub, retry, complete_cmd())
    assert (await raw_history(stub, req.workflow_id))[-1].event_type == pb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED


async def test_sticky_schedule_to_start_out_of_range_is_invalid(server: DevServer, stub: Any) -> None:
    req = start_req()
    await stub.StartWorkflowExecution(req)
    task = await poll_task(stub, req.task_queue)
    before = await raw_history(stub, req.workflow_id)
    await expect_invalid(complete(stub, task, complete_cmd(), sticky_attributes=svc.StickyExecutionAttributes(
        worker_task_queue="sticky", schedule_to_start_timeout_ms=I64_MAX)), "sticky_attributes.schedule_to_start_timeout_ms")
    assert await raw_history(stub, req.workflow_id) == before
    await complete(stub, task, complete_cmd())


# ---------------------------------------------------------------------- malformed messages and tokens


def _varint(n: int) -> bytes:
    out = b""
    while True:
        b, n = n & 0x7F, n >> 7
        out += bytes([b | 0x80]) if n else bytes([b])
        if not n:
            return out


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field (wire type 2)."""
    return _varint((number << 3) | 2) + _varint(len(payload)) + payload


async def raw_call(channel: grpc.aio.Channel, rpc: str, data: bytes) -> Any:
    method = channel.unary_unary(f"/spindle.v1.WorkflowService/{rpc}", request_serializer=lambda b: b,
                                 response_deserializer=lambda b: b)
    return await method(data, timeout=10)


def _deep_failure(levels: int) -> bytes:
    cause = b""
    for _ in range(levels):
        cause = _field(pb.Failure.DESCRIPTOR.fields_by_name["cause"].number, cause)
    return cause


async def test_malformed_requests_are_invalid_and_name_the_field(server: DevServer, stub: Any,
                                                                 channel: grpc.aio.Channel) -> None:
    """Before: ``UNKNOWN "Unexpected <class 'DecodeError'>"`` for invalid UTF-8 and over-deep messages."""
    good = start_req().SerializeToString()
    wid_field = svc.StartWorkflowExecutionRequest.DESCRIPTOR.fields_by_name["workflow_id"].number
    identity_field = svc.StartWorkflowExecutionRequest.DESCRIPTOR.fields_by_name["identity"].number
    failure_field = svc.RespondWorkflowTaskFailedRequest.DESCRIPTOR.fields_by_name["failure"].number
    async with store_unchanged(server):
        await expect_invalid(raw_call(channel, "StartWorkflowExecution", good + _field(identity_field, b"\xff\xfe")),
                             "identity: not valid UTF-8")
        await expect_invalid(raw_call(channel, "StartWorkflowExecution", good + _field(wid_field, b"w\xc3")),
                             "workflow_id: not valid UTF-8", "StartWorkflowExecutionRequest")
        # a Failure nested 150 levels (protobuf's limit is 100)
        await expect_invalid(raw_call(channel, "RespondWorkflowTaskFailed", _field(failure_field, _deep_failure(150))),
                             "failure.cause (x", "nested deeper than 100 levels")
        # commands[0].fail_workflow_execution_command_attributes.failure nested too deep
        cmd_attr = pb.Command.DESCRIPTOR.fields_by_name["fail_workflow_execution_command_attributes"].number
        deep_cmd = _field(svc.RespondWorkflowTaskCompletedRequest.DESCRIPTOR.fields_by_name["commands"].number,
                          _field(cmd_attr, _field(1, _deep_failure(120))))
        await expect_invalid(raw_call(channel, "RespondWorkflowTaskCompleted", deep_cmd),
                             "commands.fail_workflow_execution_command_attributes.failure.cause (x")
        # a length that runs past the end
        await expect_invalid(raw_call(channel, "StartWorkflowExecution", good + bytes([(wid_field << 3) | 2, 50]) + b"ab"),
                             "workflow_id: truncated")
    await assert_serving(stub)
    log = server.log()
    assert "Unexpected" not in log and "DecodeError" not in log, log[-3000:]


@pytest.mark.parametrize("token", [str(10**30).encode(), str(2**63).encode(), b"9" * 5000])
async def test_huge_page_tokens_are_invalid(server: DevServer, stub: Any, token: bytes) -> None:
    # before: INTERNAL "OverflowError: Python int too large to convert to SQLite INTEGER"
    async with store_unchanged(server):
        await expect_invalid(stub.ListWorkflowExecutions(svc.ListWorkflowExecutionsRequest(
            namespace=NS, next_page_token=token)), "next_page_token")
        await expect_invalid(stub.ListNamespaces(svc.ListNamespacesRequest(next_page_token=token)), "next_page_token")
        await expect_invalid(stub.GetWorkflowExecutionHistory(svc.GetWorkflowExecutionHistoryRequest(
            namespace=NS, execution=pb.WorkflowExecution(workflow_id="w"), next_page_token=token)), "next_page_token")
    await assert_serving(stub)


@pytest.mark.parametrize("query", [
    "WorkflowId = 'a' AND HistoryLength > " + "9" * 5000,
    "HistoryLength > " + "9" * 5000,
    "StartTime > " + "1" * 5000,
    "ExecutionDuration > '" + "9" * 5000 + "'",
])
async def test_huge_numbers_in_list_queries_are_invalid(server: DevServer, stub: Any, query: str) -> None:
    # before: INTERNAL "ValueError: Exceeds the limit (4300 digits) for integer string conversion"
    async with store_unchanged(server):
        await expect_invalid(stub.ListWorkflowExecutions(svc.ListWorkflowExecutionsRequest(namespace=NS, query=query)),
                             "query: ")
        await expect_invalid(stub.CountWorkflowExecutions(svc.CountWorkflowExecutionsRequest(namespace=NS, query=query)),
                             "query: ")
    await assert_serving(stub)


async def test_the_embedded_stub_applies_the_same_rules() -> None:
    """The in-process stub calls the frontend directly (no gRPC parsing): the field rules still hold."""
    from spindle.controlplane import embedded

    cp = await embedded.start(":memory:")
    try:
        for req, needle in [(start_req(workflow_id="a\x00b"), "workflow_id: control character U+0000"),
                            (start_req(task_timeout_ms=2**62), "task_timeout_ms: 4611686018427387904 ms is over"),
                            (start_req(identity="x" * MB), "identity: 1000000 characters")]:
            await expect_invalid(cp.stub.StartWorkflowExecution(req), needle)
        with pytest.raises(grpc.aio.AioRpcError) as ei:
            await cp.stub.DescribeWorkflowExecution(svc.DescribeWorkflowExecutionRequest(
                namespace=NS, execution=pb.WorkflowExecution(workflow_id="a\x00b")))
        assert ei.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    finally:
        await cp.stop()
