"""Signed task tokens (issue 15): a forged or altered token is refused and changes nothing.

Before signing, a token was the JSON list ``[kind, namespace id, workflow id, run id,
scheduled event id, attempt, nonce]``: every value is visible in the history, so anyone
could complete an activity no worker had polled. The attack of the issue is replayed
here, byte for byte, against ``spindle server start-dev``.
"""

from __future__ import annotations

import base64
import json
import uuid

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from _cp_server import DevServer, raw_history, type_names

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.api import service_pb2_grpc
from spindle.controlplane.history._tokens import ACTIVITY, BadTokenError, TaskToken, TaskTokens
from spindle.controlplane.store import ServerSecret
from spindle.controlplane.store.sqlite import SqliteStore

pytestmark = pytest.mark.timeout(120)

Q = "tokens-q"  # workflow-task tests; activity tests use a queue per run


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    srv = DevServer(tmp_path_factory.mktemp("tokens") / "t.db").start()
    yield srv
    srv.stop()


@pytest.fixture
async def stub(server: DevServer) -> AsyncIterator[Any]:
    async with grpc.aio.insecure_channel(server.address) as ch:
        yield service_pb2_grpc.WorkflowServiceStub(ch)


async def schedule_activity(stub: Any) -> tuple[str, str, str]:
    """Start a run whose first workflow task schedules activity ``act`` (event 5) on a new task queue.

    Returns (workflow id, run id, task queue).
    """
    wid = f"tok-{uuid.uuid4().hex[:8]}"
    Q = f"q-{wid}"
    run = await stub.StartWorkflowExecution(svc.StartWorkflowExecutionRequest(
        namespace="default", workflow_id=wid, workflow_type="W", task_queue=Q, request_id=uuid.uuid4().hex))
    task = await stub.PollWorkflowTaskQueue(svc.PollWorkflowTaskQueueRequest(namespace="default", task_queue=Q),
                                            timeout=30)
    assert task.workflow_execution.workflow_id == wid
    cmd = pb.Command(command_type=pb.COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK,
                     schedule_activity_task_command_attributes=pb.ScheduleActivityTaskCommandAttributes(
                         activity_id="act", activity_type="Charge", task_queue=Q, start_to_close_timeout_ms=60_000))
    await stub.RespondWorkflowTaskCompleted(svc.RespondWorkflowTaskCompletedRequest(
        task_token=task.task_token, commands=[cmd], namespace="default"))
    return wid, run.run_id, Q


def attackers_result() -> pb.Payloads:
    return pb.Payloads(payloads=[pb.Payload(metadata={"encoding": b"json/plain"}, data=b'"attacker"')])


async def test_the_forged_activity_token_of_the_issue_is_refused_and_changes_nothing(stub: Any) -> None:
    wid, run_id, Q = await schedule_activity(stub)
    ns_id = (await stub.DescribeNamespace(svc.DescribeNamespaceRequest(name="default"))).namespace_info.id
    before = await raw_history(stub, wid)
    assert type_names(before)[-1] == "EVENT_TYPE_ACTIVITY_TASK_SCHEDULED" and before[-1].event_id == 5
    forged = json.dumps(["a", ns_id, wid, run_id, 5, 1, ""], separators=(",", ":")).encode()  # the old format
    for call, req in (
            ("RespondActivityTaskCompleted", svc.RespondActivityTaskCompletedRequest(
                task_token=forged, result=attackers_result(), namespace="default")),
            ("RespondActivityTaskFailed", svc.RespondActivityTaskFailedRequest(
                task_token=forged, failure=pb.Failure(message="x"), namespace="default")),
            ("RespondActivityTaskCanceled", svc.RespondActivityTaskCanceledRequest(task_token=forged, namespace="default")),
            ("RecordActivityTaskHeartbeat", svc.RecordActivityTaskHeartbeatRequest(task_token=forged, namespace="default"))):
        with pytest.raises(grpc.aio.AioRpcError) as e:
            await getattr(stub, call)(req)
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT, call
        assert "task_token" in (e.value.details() or "")
    assert await raw_history(stub, wid) == before
    # the activity is still there for a real worker, which completes it normally
    task = await stub.PollActivityTaskQueue(svc.PollActivityTaskQueueRequest(namespace="default", task_queue=Q),
                                            timeout=30)
    assert task.activity_id == "act" and task.workflow_execution.workflow_id == wid
    assert task.task_token != forged and not task.task_token.startswith(b"[")
    await stub.RespondActivityTaskCompleted(svc.RespondActivityTaskCompletedRequest(
        task_token=task.task_token, result=pb.Payloads(), namespace="default"))
    assert type_names(await raw_history(stub, wid))[-3:] == [
        "EVENT_TYPE_ACTIVITY_TASK_STARTED", "EVENT_TYPE_ACTIVITY_TASK_COMPLETED", "EVENT_TYPE_WORKFLOW_TASK_SCHEDULED"]


def altered(token: bytes) -> list[tuple[str, bytes]]:
    """Ways to tamper with a real token: each must be refused."""
    version, kid, payload, mac = token.split(b".")
    body = json.loads(base64.urlsafe_b64decode(payload + b"=" * (-len(payload) % 4)))
    body[5] += 1  # another attempt
    other = base64.urlsafe_b64encode(json.dumps(body, separators=(",", ":")).encode()).rstrip(b"=")
    # another first character of the MAC (never the same one: a MAC starting with "A" once made this a no-op)
    flipped = (b"B" if mac[:1] == b"A" else b"A") + mac[1:]
    return [("payload changed, old MAC", b".".join([version, kid, other, mac])),
            ("MAC changed", b".".join([version, kid, payload, flipped])),
            ("unknown key id", b".".join([version, b"nokey", payload, mac])),
            ("MAC cut off", b".".join([version, kid, payload])),
            ("empty", b""),
            ("garbage", b"\x00\xff" * 20)]


async def test_an_altered_activity_token_is_refused_and_changes_nothing(stub: Any) -> None:
    wid, _, Q = await schedule_activity(stub)
    task = await stub.PollActivityTaskQueue(svc.PollActivityTaskQueueRequest(namespace="default", task_queue=Q),
                                            timeout=30)
    assert task.workflow_execution.workflow_id == wid
    before = await raw_history(stub, wid)
    for what, bad in altered(bytes(task.task_token)):
        with pytest.raises(grpc.aio.AioRpcError) as e:
            await stub.RespondActivityTaskCompleted(svc.RespondActivityTaskCompletedRequest(
                task_token=bad, result=attackers_result(), namespace="default"))
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT, what
    assert await raw_history(stub, wid) == before
    await stub.RespondActivityTaskCompleted(svc.RespondActivityTaskCompletedRequest(
        task_token=task.task_token, result=pb.Payloads(), namespace="default"))
    with pytest.raises(grpc.aio.AioRpcError) as e:  # the genuine token, now stale
        await stub.RespondActivityTaskCompleted(svc.RespondActivityTaskCompletedRequest(
            task_token=task.task_token, result=attackers_result(), namespace="default"))
    assert e.value.code() == grpc.StatusCode.NOT_FOUND


async def test_forged_and_altered_workflow_and_query_tokens_are_refused(stub: Any) -> None:
    wid = f"tok-wf-{uuid.uuid4().hex[:8]}"
    await stub.StartWorkflowExecution(svc.StartWorkflowExecutionRequest(
        namespace="default", workflow_id=wid, workflow_type="W", task_queue=Q + "-wf", request_id=uuid.uuid4().hex))
    task = await stub.PollWorkflowTaskQueue(svc.PollWorkflowTaskQueueRequest(namespace="default", task_queue=Q + "-wf"),
                                            timeout=30)
    ns_id = (await stub.DescribeNamespace(svc.DescribeNamespaceRequest(name="default"))).namespace_info.id
    run_id = task.workflow_execution.run_id
    before = await raw_history(stub, wid)
    complete = pb.Command(command_type=pb.COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION,
                          complete_workflow_execution_command_attributes=pb.CompleteWorkflowExecutionCommandAttributes())
    forged = [json.dumps(["w", ns_id, wid, run_id, 2, 1, ""]).encode(),
              json.dumps(["q", ns_id, wid, run_id, 0, 0, "query-id"]).encode(),
              *[bad for _, bad in altered(bytes(task.task_token))]]
    for bad in forged:
        for call, req in (
                ("RespondWorkflowTaskCompleted", svc.RespondWorkflowTaskCompletedRequest(
                    task_token=bad, commands=[complete], namespace="default")),
                ("RespondWorkflowTaskFailed", svc.RespondWorkflowTaskFailedRequest(task_token=bad, namespace="default")),
                ("RespondQueryTaskCompleted", svc.RespondQueryTaskCompletedRequest(
                    task_token=bad, query_result=attackers_result(), namespace="default"))):
            with pytest.raises(grpc.aio.AioRpcError) as e:
                await getattr(stub, call)(req)
            assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT, (call, bad)
    assert await raw_history(stub, wid) == before
    # a genuine workflow-task token is not accepted as an activity token either
    with pytest.raises(grpc.aio.AioRpcError) as e:
        await stub.RespondActivityTaskCompleted(svc.RespondActivityTaskCompletedRequest(
            task_token=task.task_token, result=attackers_result(), namespace="default"))
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    await stub.RespondWorkflowTaskCompleted(svc.RespondWorkflowTaskCompletedRequest(
        task_token=task.task_token, commands=[complete], namespace="default"))
    assert type_names(await raw_history(stub, wid))[-1] == "EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED"


async def test_a_token_handed_out_before_a_restart_still_completes_its_activity(server: DevServer) -> None:
    """The signing key lives in the store: tokens outlive the process that signed them."""
    async with grpc.aio.insecure_channel(server.address) as ch:
        stub = service_pb2_grpc.WorkflowServiceStub(ch)
        wid, _, Q = await schedule_activity(stub)
        task = await stub.PollActivityTaskQueue(svc.PollActivityTaskQueueRequest(namespace="default", task_queue=Q),
                                                timeout=30)
        assert task.workflow_execution.workflow_id == wid
    server.stop()
    server.start()
    async with grpc.aio.insecure_channel(server.address) as ch:
        stub = service_pb2_grpc.WorkflowServiceStub(ch)
        await stub.RespondActivityTaskCompleted(svc.RespondActivityTaskCompletedRequest(
            task_token=task.task_token, result=pb.Payloads(), namespace="default"), timeout=30)
        assert "EVENT_TYPE_ACTIVITY_TASK_COMPLETED" in type_names(await raw_history(stub, wid))


# ---------------------------------------------------------------------- keys and rotation (unit)

TOK = TaskToken(ACTIVITY, "ns-id", "wf", "run", 5, 1)


async def test_members_of_one_store_share_the_key_and_verify_each_others_tokens(tmp_path: Path) -> None:
    store = SqliteStore(str(tmp_path / "k.db"))
    await store.open(1)
    try:
        a, b = TaskTokens(), TaskTokens()
        await a.load(store)
        await b.load(store)
        assert b.verify(a.encode(TOK)) == TOK and a.verify(b.encode(TOK)) == TOK
        assert [s.name for s in await store.list_server_secrets()] == ["task_token_key/1"]
        assert len((await store.list_server_secrets())[0].value) == 32
        lone = TaskTokens()  # never loaded: its own random key
        with pytest.raises(BadTokenError, match="key this server does not have"):
            lone.verify(a.encode(TOK))
    finally:
        await store.close()


async def test_rotation_new_key_signs_old_keys_keep_verifying(tmp_path: Path) -> None:
    store = SqliteStore(str(tmp_path / "r.db"))
    await store.open(1)
    try:
        before = TaskTokens()
        await before.load(store)
        old_token = before.encode(TOK)
        assert old_token.split(b".")[1] == b"1"

        rotated = TaskTokens()  # step 1: a configured key signs, the store key still verifies
        rotated.configure([("k2", b"n" * 32)])
        await rotated.load(store)
        new_token = rotated.encode(TOK)
        assert new_token.split(b".")[1] == b"k2"
        assert rotated.verify(old_token) == TOK and rotated.verify(new_token) == TOK
        assert rotated.key_ids == ["k2", "1"]

        retired = TaskTokens()  # step 2, after the longest task timeout: the store key is retired
        retired.configure([("k2", b"n" * 32)], use_store_key=False)
        await retired.load(store)
        assert retired.verify(new_token) == TOK
        with pytest.raises(BadTokenError):
            retired.verify(old_token)

        # a newer store-kept key signs when none is configured
        await store.add_server_secret(ServerSecret("task_token_key/2", b"s" * 32, 2**50))
        later = TaskTokens()
        await later.load(store)
        assert later.encode(TOK).split(b".")[1] == b"2" and later.verify(old_token) == TOK
    finally:
        await store.close()


def test_bad_key_configuration_is_refused_with_a_precise_message() -> None:
    t = TaskTokens()
    with pytest.raises(ValueError, match="key id 'a.b'"):
        t.configure([("a.b", b"x" * 32)])
    with pytest.raises(ValueError, match="at least 16 bytes"):
        t.configure([("k", b"short")])
    with pytest.raises(ValueError, match="given twice"):
        t.configure([("k", b"x" * 32), ("k", b"y" * 32)])
    with pytest.raises(ValueError, match="no signing key"):
        t.configure([], use_store_key=False)
