"""Bad input over gRPC: the right status code, a message naming the field, and an unchanged store."""

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

pytestmark = pytest.mark.timeout(60)

NS = "default"
MAX_ID = 1000
LIMIT = 2 * 1024 * 1024


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    # no blob store: payloads over the 2 MiB limit are refused instead of offloaded
    s = DevServer(tmp_path_factory.mktemp("bad") / "spindle.db", "--blob-dir", "").start()
    yield s
    s.stop()


@pytest.fixture
async def stub(server: DevServer) -> AsyncIterator[Any]:
    ch, st = raw_stub(server.address)
    try:
        yield st
    finally:
        await ch.close()


def uid(p: str) -> str:
    return f"{p}-{uuid.uuid4().hex[:8]}"


def start_req(wid: str = "", **kw: Any) -> svc.StartWorkflowExecutionRequest:
    base: dict[str, Any] = dict(namespace=NS, workflow_id=wid or uid("w"), workflow_type="T", task_queue="q-bad",
                                request_id=uuid.uuid4().hex)
    base.update(kw)
    return svc.StartWorkflowExecutionRequest(**base)


async def settle(db: str) -> dict[str, int]:
    """Row counts once background writes (acks, visibility) are done."""
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


async def expect(code: grpc.StatusCode, call: Any, *needles: str) -> str:
    with pytest.raises(grpc.aio.AioRpcError) as ei:
        await call
    assert ei.value.code() == code, f"{ei.value.code()} {ei.value.details()}"
    details = ei.value.details() or ""
    for n in needles:
        assert n in details, f"{n!r} not in {details!r}"
    return details


async def poll_task(stub: Any, tq: str) -> svc.PollWorkflowTaskQueueResponse:
    t = await stub.PollWorkflowTaskQueue(svc.PollWorkflowTaskQueueRequest(namespace=NS, task_queue=tq, identity="raw"),
                                         timeout=10)
    assert t.task_token, "no workflow task within the poll"
    return t


async def complete(stub: Any, task: svc.PollWorkflowTaskQueueResponse, *commands: pb.Command) -> Any:
    return await stub.RespondWorkflowTaskCompleted(svc.RespondWorkflowTaskCompletedRequest(
        task_token=task.task_token, commands=list(commands), identity="raw", namespace=NS))


def complete_cmd() -> pb.Command:
    return pb.Command(command_type=pb.COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION,
                      complete_workflow_execution_command_attributes=pb.CompleteWorkflowExecutionCommandAttributes())


def fail_cmd() -> pb.Command:
    return pb.Command(command_type=pb.COMMAND_TYPE_FAIL_WORKFLOW_EXECUTION,
                      fail_workflow_execution_command_attributes=pb.FailWorkflowExecutionCommandAttributes(
                          failure=pb.Failure(message="no")))


async def run_to_close(stub: Any, wid: str, command: pb.Command) -> str:
    """Start ``wid`` on its own queue and close it with ``command`` through raw stubs."""
    tq = uid("tq")
    r = await stub.StartWorkflowExecution(start_req(wid, task_queue=tq))
    await complete(stub, await poll_task(stub, tq), command)
    return r.run_id


def big_payloads(n: int) -> pb.Payloads:
    return pb.Payloads(payloads=[pb.Payload(metadata={"encoding": b"binary/plain"}, data=b"x" * n)])


# ---------------------------------------------------------------------- client calls


async def test_unknown_namespace_is_not_found(server: DevServer, stub: Any) -> None:
    ex = pb.WorkflowExecution(workflow_id="w")
    async with store_unchanged(server):
        await expect(grpc.StatusCode.NOT_FOUND, stub.StartWorkflowExecution(start_req(namespace="nope")), "nope")
        await expect(grpc.StatusCode.NOT_FOUND, stub.SignalWorkflowExecution(svc.SignalWorkflowExecutionRequest(
            namespace="nope", workflow_execution=ex, signal_name="s")), "nope")
        await expect(grpc.StatusCode.NOT_FOUND, stub.DescribeWorkflowExecution(svc.DescribeWorkflowExecutionRequest(
            namespace="nope", execution=ex)), "nope")
        await expect(grpc.StatusCode.NOT_FOUND, stub.PollWorkflowTaskQueue(svc.PollWorkflowTaskQueueRequest(
            namespace="nope", task_queue="q"), timeout=5), "nope")
        await expect(grpc.StatusCode.NOT_FOUND, stub.ListWorkflowExecutions(svc.ListWorkflowExecutionsRequest(
            namespace="nope")), "nope")
        await expect(grpc.StatusCode.NOT_FOUND, stub.DescribeNamespace(svc.DescribeNamespaceRequest(name="nope")), "nope")


@pytest.mark.parametrize("field", ["workflow_id", "workflow_type", "task_queue"])
async def test_empty_required_field_is_invalid(server: DevServer, stub: Any, field: str) -> None:
    async with store_unchanged(server):
        await expect(grpc.StatusCode.INVALID_ARGUMENT, stub.StartWorkflowExecution(start_req(**{field: ""})), field)


@pytest.mark.parametrize("field", ["workflow_id", "workflow_type", "task_queue"])
async def test_oversized_ids_are_invalid(server: DevServer, stub: Any, field: str) -> None:
    async with store_unchanged(server):
        await expect(grpc.StatusCode.INVALID_ARGUMENT, stub.StartWorkflowExecution(start_req(**{field: "x" * (MAX_ID + 1)})),
                     field)
    # exactly at the limit is fine
    if field == "workflow_id":
        r = await stub.StartWorkflowExecution(start_req(**{field: "y" * MAX_ID}))
        assert r.run_id


async def test_oversized_payloads_are_resource_exhausted(server: DevServer, stub: Any) -> None:
    wid = uid("big")
    await stub.StartWorkflowExecution(start_req(wid))
    async with store_unchanged(server):
        await expect(grpc.StatusCode.RESOURCE_EXHAUSTED,
                     stub.StartWorkflowExecution(start_req(input=big_payloads(LIMIT + 1))), "input")
        await expect(grpc.StatusCode.RESOURCE_EXHAUSTED, stub.SignalWorkflowExecution(svc.SignalWorkflowExecutionRequest(
            namespace=NS, workflow_execution=pb.WorkflowExecution(workflow_id=wid), signal_name="s",
            input=big_payloads(LIMIT + 1))), "input")
    # just under the limit is accepted
    await stub.SignalWorkflowExecution(svc.SignalWorkflowExecutionRequest(
        namespace=NS, workflow_execution=pb.WorkflowExecution(workflow_id=wid), signal_name="s",
        input=big_payloads(LIMIT - 100)))


async def test_unknown_workflow_is_not_found(server: DevServer, stub: Any) -> None:
    ex = pb.WorkflowExecution(workflow_id=uid("ghost"))
    async with store_unchanged(server):
        for call in (
            stub.DescribeWorkflowExecution(svc.DescribeWorkflowExecutionRequest(namespace=NS, execution=ex)),
            stub.GetWorkflowExecutionHistory(svc.GetWorkflowExecutionHistoryRequest(namespace=NS, execution=ex)),
            stub.SignalWorkflowExecution(svc.SignalWorkflowExecutionRequest(namespace=NS, workflow_execution=ex,
                                                                            signal_name="s")),
            stub.RequestCancelWorkflowExecution(svc.RequestCancelWorkflowExecutionRequest(namespace=NS,
                                                                                          workflow_execution=ex)),
            stub.TerminateWorkflowExecution(svc.TerminateWorkflowExecutionRequest(namespace=NS, workflow_execution=ex)),
            stub.QueryWorkflow(svc.QueryWorkflowRequest(namespace=NS, execution=ex, query=pb.WorkflowQuery(query_type="q"))),
        ):
            await expect(grpc.StatusCode.NOT_FOUND, call, ex.workflow_id)
    # a known workflow id with an unknown run id
    wid = uid("known")
    await stub.StartWorkflowExecution(start_req(wid))
    async with store_unchanged(server):
        await expect(grpc.StatusCode.NOT_FOUND, stub.DescribeWorkflowExecution(svc.DescribeWorkflowExecutionRequest(
            namespace=NS, execution=pb.WorkflowExecution(workflow_id=wid, run_id=str(uuid.uuid4())))))


async def test_signal_to_closed_workflow_is_failed_precondition(server: DevServer, stub: Any) -> None:
    wid = uid("closed")
    await run_to_close(stub, wid, complete_cmd())
    before = await raw_history(stub, wid)
    async with store_unchanged(server):
        await expect(grpc.StatusCode.FAILED_PRECONDITION, stub.SignalWorkflowExecution(svc.SignalWorkflowExecutionRequest(
            namespace=NS, workflow_execution=pb.WorkflowExecution(workflow_id=wid), signal_name="s")), "closed")
        await expect(grpc.StatusCode.FAILED_PRECONDITION, stub.TerminateWorkflowExecution(
            svc.TerminateWorkflowExecutionRequest(namespace=NS, workflow_execution=pb.WorkflowExecution(workflow_id=wid))))
        await expect(grpc.StatusCode.FAILED_PRECONDITION, stub.RequestCancelWorkflowExecution(
            svc.RequestCancelWorkflowExecutionRequest(namespace=NS, workflow_execution=pb.WorkflowExecution(workflow_id=wid))))
    assert await raw_history(stub, wid) == before


# ---------------------------------------------------------------------- id reuse and conflict policies


async def test_reject_duplicate_on_existing_id(server: DevServer, stub: Any) -> None:
    wid = uid("reject")
    await run_to_close(stub, wid, complete_cmd())
    async with store_unchanged(server):
        await expect(grpc.StatusCode.ALREADY_EXISTS, stub.StartWorkflowExecution(start_req(
            wid, workflow_id_reuse_policy=pb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE)), wid)


async def test_conflict_policies_on_running_id(server: DevServer, stub: Any) -> None:
    wid = uid("running")
    first = await stub.StartWorkflowExecution(start_req(wid))
    assert first.started
    async with store_unchanged(server):
        await expect(grpc.StatusCode.ALREADY_EXISTS, stub.StartWorkflowExecution(start_req(
            wid, workflow_id_conflict_policy=pb.WORKFLOW_ID_CONFLICT_POLICY_FAIL)), wid)
        # the default conflict policy is FAIL too
        await expect(grpc.StatusCode.ALREADY_EXISTS, stub.StartWorkflowExecution(start_req(wid)), wid)
        same = await stub.StartWorkflowExecution(start_req(
            wid, workflow_id_conflict_policy=pb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING))
    assert same.run_id == first.run_id and not same.started


async def test_start_request_id_is_idempotent(server: DevServer, stub: Any) -> None:
    req = start_req(uid("idem"))
    first = await stub.StartWorkflowExecution(req)
    async with store_unchanged(server):
        again = await stub.StartWorkflowExecution(req)
    assert again.run_id == first.run_id


async def test_allow_duplicate_failed_only(server: DevServer, stub: Any) -> None:
    ok_id, failed_id = uid("succeeded"), uid("failed")
    await run_to_close(stub, ok_id, complete_cmd())
    failed_run = await run_to_close(stub, failed_id, fail_cmd())
    policy = pb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY
    async with store_unchanged(server):
        await expect(grpc.StatusCode.ALREADY_EXISTS, stub.StartWorkflowExecution(start_req(
            ok_id, workflow_id_reuse_policy=policy)), ok_id)
    again = await stub.StartWorkflowExecution(start_req(failed_id, workflow_id_reuse_policy=policy))
    assert again.started and again.run_id != failed_run
    d = await stub.DescribeWorkflowExecution(svc.DescribeWorkflowExecutionRequest(
        namespace=NS, execution=pb.WorkflowExecution(workflow_id=failed_id)))
    assert d.workflow_execution_info.execution.run_id == again.run_id
    assert d.workflow_execution_info.status == pb.WORKFLOW_EXECUTION_STATUS_RUNNING


# ---------------------------------------------------------------------- workers with raw stubs


async def test_second_completion_of_a_task_is_not_found(server: DevServer, stub: Any) -> None:
    tq, wid = uid("tq"), uid("twice")
    await stub.StartWorkflowExecution(start_req(wid, task_queue=tq))
    task = await poll_task(stub, tq)
    timer = pb.Command(command_type=pb.COMMAND_TYPE_START_TIMER,
                       start_timer_command_attributes=pb.StartTimerCommandAttributes(timer_id="t",
                                                                                     start_to_fire_timeout_ms=60_000))
    await complete(stub, task, timer)
    after_first = await raw_history(stub, wid)
    assert_gapless(after_first)
    async with store_unchanged(server):
        await expect(grpc.StatusCode.NOT_FOUND, complete(stub, task, complete_cmd()), "task_token")
        await expect(grpc.StatusCode.NOT_FOUND, stub.RespondWorkflowTaskFailed(svc.RespondWorkflowTaskFailedRequest(
            task_token=task.task_token, namespace=NS)), "task_token")
    assert await raw_history(stub, wid) == after_first


async def test_activity_without_timeout_fails_the_task_and_retries_it(server: DevServer, stub: Any) -> None:
    tq, wid = uid("tq"), uid("notimeout")
    await stub.StartWorkflowExecution(start_req(wid, task_queue=tq))
    task = await poll_task(stub, tq)
    bad = pb.Command(command_type=pb.COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK,
                     schedule_activity_task_command_attributes=pb.ScheduleActivityTaskCommandAttributes(
                         activity_id="1", activity_type="act"))
    details = await expect(grpc.StatusCode.INVALID_ARGUMENT, complete(stub, task, bad), "start_to_close_timeout",
                           "commands[0]")
    assert "schedule_to_close_timeout" in details
    events = await raw_history(stub, wid)
    assert_gapless(events)
    types = [e.event_type for e in events]
    assert types == [pb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, pb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
                     pb.EVENT_TYPE_WORKFLOW_TASK_STARTED, pb.EVENT_TYPE_WORKFLOW_TASK_FAILED,
                     pb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED]
    failed = events[3].workflow_task_failed_event_attributes
    assert failed.cause == pb.WORKFLOW_TASK_FAILED_CAUSE_BAD_COMMAND
    assert "start_to_close_timeout" in failed.failure.message
    assert events[4].workflow_task_scheduled_event_attributes.attempt == 2
    # no activity was scheduled; the retried task goes out and can complete the run
    retry = await poll_task(stub, tq)
    assert retry.attempt == 2
    await complete(stub, retry, complete_cmd())
    assert (await raw_history(stub, wid))[-1].event_type == pb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED


async def test_unknown_command_type_is_invalid(server: DevServer, stub: Any) -> None:
    tq, wid = uid("tq"), uid("unknowncmd")
    await stub.StartWorkflowExecution(start_req(wid, task_queue=tq))
    task = await poll_task(stub, tq)
    await expect(grpc.StatusCode.INVALID_ARGUMENT, complete(stub, task, pb.Command(command_type=99)), "commands[0]")
    events = await raw_history(stub, wid)
    assert events[-2].event_type == pb.EVENT_TYPE_WORKFLOW_TASK_FAILED
    assert events[-2].workflow_task_failed_event_attributes.cause == pb.WORKFLOW_TASK_FAILED_CAUSE_BAD_COMMAND
    # a command whose attributes do not match its type
    task = await poll_task(stub, tq)
    await expect(grpc.StatusCode.INVALID_ARGUMENT, complete(stub, task, pb.Command(
        command_type=pb.COMMAND_TYPE_START_TIMER,
        complete_workflow_execution_command_attributes=pb.CompleteWorkflowExecutionCommandAttributes())),
        "start_timer_command_attributes")
    # a close command that is not last
    task = await poll_task(stub, tq)
    await expect(grpc.StatusCode.INVALID_ARGUMENT, complete(stub, task, complete_cmd(), complete_cmd()), "last")
    assert_gapless(await raw_history(stub, wid))


@pytest.mark.parametrize("token", [b"", b"garbage", b'["w","x"]', b'["z","a","b","c",1,1,""]', b"\xff\xfe"])
async def test_malformed_task_token_is_invalid(server: DevServer, stub: Any, token: bytes) -> None:
    async with store_unchanged(server):
        await expect(grpc.StatusCode.INVALID_ARGUMENT, stub.RespondWorkflowTaskCompleted(
            svc.RespondWorkflowTaskCompletedRequest(task_token=token, namespace=NS)), "task_token")
        await expect(grpc.StatusCode.INVALID_ARGUMENT, stub.RespondActivityTaskCompleted(
            svc.RespondActivityTaskCompletedRequest(task_token=token, namespace=NS)), "task_token")
        await expect(grpc.StatusCode.INVALID_ARGUMENT, stub.RecordActivityTaskHeartbeat(
            svc.RecordActivityTaskHeartbeatRequest(task_token=token, namespace=NS)), "task_token")


async def test_workflow_token_used_for_an_activity_is_invalid(server: DevServer, stub: Any) -> None:
    tq, wid = uid("tq"), uid("kind")
    await stub.StartWorkflowExecution(start_req(wid, task_queue=tq))
    task = await poll_task(stub, tq)
    async with store_unchanged(server):
        await expect(grpc.StatusCode.INVALID_ARGUMENT, stub.RespondActivityTaskCompleted(
            svc.RespondActivityTaskCompletedRequest(task_token=task.task_token, namespace=NS)), "task_token")


async def test_bad_list_query_is_invalid_with_position(server: DevServer, stub: Any) -> None:
    async with store_unchanged(server):
        details = await expect(grpc.StatusCode.INVALID_ARGUMENT, stub.ListWorkflowExecutions(
            svc.ListWorkflowExecutionsRequest(namespace=NS, query="WorkflowType = ")), "query")
        assert any(w in details for w in ("column", "position", "offset", "1:")), details
        await expect(grpc.StatusCode.INVALID_ARGUMENT, stub.ListWorkflowExecutions(
            svc.ListWorkflowExecutionsRequest(namespace=NS, query="NoSuchAttribute = 'x'")), "NoSuchAttribute")
        await expect(grpc.StatusCode.INVALID_ARGUMENT, stub.CountWorkflowExecutions(
            svc.CountWorkflowExecutionsRequest(namespace=NS, query="WorkflowId = 'a' AND AND")), "query")


# ---------------------------------------------------------------------- namespaces


async def test_namespace_lifecycle_and_validation(server: DevServer, stub: Any) -> None:
    name = uid("ns")
    created = await stub.CreateNamespace(svc.CreateNamespaceRequest(
        name=name, description="d", retention_ms=86_400_000,
        search_attributes={"Customer": svc.SEARCH_ATTRIBUTE_TYPE_KEYWORD}))
    assert created.namespace_info.name == name and created.namespace_info.retention_ms == 86_400_000
    d = await stub.DescribeNamespace(svc.DescribeNamespaceRequest(name=name))
    assert d.namespace_info.description == "d"
    assert dict(d.namespace_info.search_attributes) == {"Customer": svc.SEARCH_ATTRIBUTE_TYPE_KEYWORD}
    names = [n.name for n in (await stub.ListNamespaces(svc.ListNamespacesRequest(page_size=1000))).namespaces]
    assert name in names and "default" in names
    u = await stub.UpdateNamespace(svc.UpdateNamespaceRequest(name=name, update_mask=["description"], description="e"))
    assert u.namespace_info.description == "e" and u.namespace_info.retention_ms == 86_400_000

    async with store_unchanged(server):
        await expect(grpc.StatusCode.ALREADY_EXISTS, stub.CreateNamespace(svc.CreateNamespaceRequest(name=name)), name)
        for bad in ("", "-starts-with-dash", "has space", "x" * 65, "slash/ns"):
            await expect(grpc.StatusCode.INVALID_ARGUMENT, stub.CreateNamespace(svc.CreateNamespaceRequest(name=bad)),
                         "name")
        await expect(grpc.StatusCode.INVALID_ARGUMENT, stub.CreateNamespace(svc.CreateNamespaceRequest(
            name=uid("neg"), retention_ms=-1)), "retention")
        await expect(grpc.StatusCode.INVALID_ARGUMENT, stub.UpdateNamespace(svc.UpdateNamespaceRequest(
            name=name, update_mask=["retention"], retention_ms=-5)), "retention")
        await expect(grpc.StatusCode.INVALID_ARGUMENT, stub.CreateNamespace(svc.CreateNamespaceRequest(
            name=uid("sa"), search_attributes={"X": 42})), "X")
        await expect(grpc.StatusCode.INVALID_ARGUMENT, stub.AddSearchAttributes(svc.AddSearchAttributesRequest(
            namespace=name, search_attributes={"Y": 99})), "Y")
        await expect(grpc.StatusCode.INVALID_ARGUMENT, stub.CreateNamespace(svc.CreateNamespaceRequest(
            name=uid("sa"), search_attributes={"WorkflowId": svc.SEARCH_ATTRIBUTE_TYPE_KEYWORD})), "WorkflowId")
        await expect(grpc.StatusCode.INVALID_ARGUMENT, stub.UpdateNamespace(svc.UpdateNamespaceRequest(
            name=name, update_mask=["nonsense"])), "update_mask")
        await expect(grpc.StatusCode.NOT_FOUND, stub.UpdateNamespace(svc.UpdateNamespaceRequest(
            name=uid("missing"), update_mask=["description"])))
        await expect(grpc.StatusCode.NOT_FOUND, stub.DeleteNamespace(svc.DeleteNamespaceRequest(name=uid("missing"))))

    # a running execution blocks deletion unless force
    r = await stub.StartWorkflowExecution(start_req(uid("w"), namespace=name))
    async with store_unchanged(server):
        await expect(grpc.StatusCode.FAILED_PRECONDITION, stub.DeleteNamespace(svc.DeleteNamespaceRequest(name=name)),
                     "running")
    deleted = await stub.DeleteNamespace(svc.DeleteNamespaceRequest(name=name, force=True))
    assert deleted.terminated_executions == 1
    await expect(grpc.StatusCode.NOT_FOUND, stub.DescribeNamespace(svc.DescribeNamespaceRequest(name=name)))
    names = [n.name for n in (await stub.ListNamespaces(svc.ListNamespacesRequest(page_size=1000))).namespaces]
    assert name not in names
    assert r.run_id


async def test_namespace_delete_without_executions(server: DevServer, stub: Any) -> None:
    name = uid("empty")
    await stub.CreateNamespace(svc.CreateNamespaceRequest(name=name))
    resp = await stub.DeleteNamespace(svc.DeleteNamespaceRequest(name=name))
    assert resp.terminated_executions == 0
    # the name can be registered again
    again = await stub.CreateNamespace(svc.CreateNamespaceRequest(name=name))
    assert again.namespace_info.name == name


# ---------------------------------------------------------------------- page tokens


@pytest.mark.parametrize("token", [b"zz", b"-3", b"0", b"\xff"])
async def test_malformed_page_tokens_are_invalid(server: DevServer, stub: Any, token: bytes) -> None:
    wid = uid("paged")
    await stub.StartWorkflowExecution(start_req(wid))
    async with store_unchanged(server):
        await expect(grpc.StatusCode.INVALID_ARGUMENT, stub.GetWorkflowExecutionHistory(
            svc.GetWorkflowExecutionHistoryRequest(namespace=NS, execution=pb.WorkflowExecution(workflow_id=wid),
                                                   next_page_token=token)), "next_page_token")
        if token != b"0":  # offset 0 is the first page of a list; event 0 does not exist
            await expect(grpc.StatusCode.INVALID_ARGUMENT, stub.ListNamespaces(svc.ListNamespacesRequest(
                next_page_token=token)), "next_page_token")
            await expect(grpc.StatusCode.INVALID_ARGUMENT, stub.ListWorkflowExecutions(svc.ListWorkflowExecutionsRequest(
                namespace=NS, next_page_token=token)), "next_page_token")


async def test_namespace_paging(server: DevServer, stub: Any) -> None:
    await expect(grpc.StatusCode.INVALID_ARGUMENT, stub.ListNamespaces(svc.ListNamespacesRequest(page_size=-1)),
                 "page_size")
    for _ in range(3):
        await stub.CreateNamespace(svc.CreateNamespaceRequest(name=uid("page")))
    everything = [n.name for n in (await stub.ListNamespaces(svc.ListNamespacesRequest(page_size=1000))).namespaces]
    paged: list[str] = []
    token = b""
    while True:
        resp = await stub.ListNamespaces(svc.ListNamespacesRequest(page_size=2, next_page_token=token))
        assert len(resp.namespaces) <= 2
        paged += [n.name for n in resp.namespaces]
        token = resp.next_page_token
        if not token:
            break
    assert paged == everything


async def test_history_paging(server: DevServer, stub: Any) -> None:
    tq, wid = uid("tq"), uid("hpage")
    await stub.StartWorkflowExecution(start_req(wid, task_queue=tq))
    markers = [pb.Command(command_type=pb.COMMAND_TYPE_RECORD_MARKER,
                          record_marker_command_attributes=pb.RecordMarkerCommandAttributes(marker_name=f"m{i}"))
               for i in range(7)]
    await complete(stub, await poll_task(stub, tq), *markers, complete_cmd())
    whole = await raw_history(stub, wid)
    assert len(whole) == 4 + 7 + 1
    paged: list[pb.HistoryEvent] = []
    token = b""
    while True:
        resp = await stub.GetWorkflowExecutionHistory(svc.GetWorkflowExecutionHistoryRequest(
            namespace=NS, execution=pb.WorkflowExecution(workflow_id=wid), maximum_page_size=5, next_page_token=token))
        assert len(resp.history.events) <= 5
        paged += resp.history.events
        token = resp.next_page_token
        if not token:
            break
    assert paged == whole


# ---------------------------------------------------------------------- search attributes in commands


async def test_upsert_of_unregistered_or_mistyped_search_attribute_is_a_bad_command(server: DevServer, stub: Any) -> None:
    await stub.AddSearchAttributes(svc.AddSearchAttributesRequest(
        namespace=NS, search_attributes={"Amount": svc.SEARCH_ATTRIBUTE_TYPE_INT}))
    tq, wid = uid("tq"), uid("upsert")
    await stub.StartWorkflowExecution(start_req(wid, task_queue=tq))

    def upsert(name: str, raw: bytes) -> pb.Command:
        return pb.Command(command_type=pb.COMMAND_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES,
                          upsert_workflow_search_attributes_command_attributes=(
                              pb.UpsertWorkflowSearchAttributesCommandAttributes(search_attributes=pb.SearchAttributes(
                                  indexed_fields={name: pb.Payload(metadata={"encoding": b"json/plain"}, data=raw)}))))

    for cmd, needle in ((upsert("NotRegistered", b'"x"'), "NotRegistered"), (upsert("Amount", b'"ten"'), "Amount")):
        task = await poll_task(stub, tq)
        await expect(grpc.StatusCode.INVALID_ARGUMENT, complete(stub, task, cmd), needle, "commands[0]")
        events = await raw_history(stub, wid)
        assert events[-2].workflow_task_failed_event_attributes.cause == pb.WORKFLOW_TASK_FAILED_CAUSE_BAD_COMMAND
        assert pb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES not in [e.event_type for e in events]
    task = await poll_task(stub, tq)
    await complete(stub, task, upsert("Amount", b"10"), complete_cmd())
    assert pb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES in [e.event_type for e in await raw_history(stub, wid)]
