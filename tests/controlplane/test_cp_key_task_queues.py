"""Worker keys confined to task queues (issue 26, finding 4).

A key's worker grant may name task queues. Then its polls, its answers to tasks (the
queue is the one signed into the task token) and its workflow-task commands that put work
on a queue stay on those queues (and their sticky queues ``<queue>/sticky/...``);
anything else is PERMISSION_DENIED naming the key, the queue and the allowed queues, and
changes nothing. A worker key without a list works on every queue, as before.
"""

from __future__ import annotations

import asyncio
import uuid

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import grpc
import pytest

from spindle import activity, workflow
from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.api import service_pb2_grpc
from spindle.client import Client
from spindle.controlplane.auth import AuthSettings, Role
from spindle.controlplane.config import ServerConfig
from spindle.controlplane.history._tokens import QUERY, TaskToken
from spindle.controlplane.server import ControlPlane, serve
from spindle.controlplane.store.sqlite import SqliteStore
from spindle.worker import Worker

pytestmark = pytest.mark.timeout(90)
HOUR_MS = 3_600_000
DENIED = grpc.StatusCode.PERMISSION_DENIED


def bearer(secret: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {secret}"),)


@dataclass
class World:
    cp: ControlPlane
    server: Any
    channel: Any
    stub: Any
    server_port: int
    keys: dict[str, str] = field(default_factory=dict)
    ids: dict[str, str] = field(default_factory=dict)

    async def call(self, rpc: str, req: Any, who: str, timeout: float = 10) -> tuple[grpc.StatusCode, Any]:
        try:
            return grpc.StatusCode.OK, await getattr(self.stub, rpc)(req, metadata=bearer(self.keys[who]),
                                                                     timeout=timeout)
        except grpc.aio.AioRpcError as e:
            return e.code(), e.details() or ""

    async def ok(self, rpc: str, req: Any, who: str = "root", timeout: float = 10) -> Any:
        status, resp = await self.call(rpc, req, who, timeout)
        assert status == grpc.StatusCode.OK, (rpc, who, status, resp)
        return resp

    async def denied(self, rpc: str, req: Any, who: str, queue: str) -> str:
        status, details = await self.call(rpc, req, who)
        assert status == DENIED, (rpc, status, details)
        assert self.ids[who] in details and repr(queue) in details and "confined to task queues qa" in details, details
        return str(details)

    async def start(self, queue: str) -> str:
        wid = f"{queue}-{uuid.uuid4().hex[:6]}"
        await self.ok("StartWorkflowExecution", svc.StartWorkflowExecutionRequest(
            namespace="ns-a", workflow_id=wid, workflow_type="W", task_queue=queue, task_timeout_ms=HOUR_MS,
            request_id=uuid.uuid4().hex))
        return wid

    async def history_length(self, wid: str) -> int:
        resp = await self.ok("GetWorkflowExecutionHistory", svc.GetWorkflowExecutionHistoryRequest(
            namespace="ns-a", execution=pb.WorkflowExecution(workflow_id=wid)))
        return len(resp.history.events)


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[World]:
    cp = ControlPlane(SqliteStore(str(tmp_path / "keys.db")), ServerConfig(num_shards=2),
                      auth=AuthSettings(mode="api_keys"))
    await cp.start()
    server, port = await serve(cp, "127.0.0.1", 0)
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    w = World(cp, server, channel, service_pb2_grpc.WorkflowServiceStub(channel), port)
    row, w.keys["root"] = await cp.api_keys.create("root", {}, system_admin=True)
    w.ids["root"] = row.key_id
    await w.ok("CreateNamespace", svc.CreateNamespaceRequest(name="ns-a"))
    await w.ok("CreateNamespace", svc.CreateNamespaceRequest(name="ns-b"))
    for label, queues in (("qa only", {"ns-a": ["qa"]}), ("free", None)):
        resp = await w.ok("CreateApiKey", svc.CreateApiKeyRequest(
            name=label, grants={"ns-a": "worker"},
            task_queues={ns: svc.ApiKeyTaskQueues(names=q) for ns, q in (queues or {}).items()}))
        w.keys[label], w.ids[label] = resp.secret, resp.key.id
    try:
        yield w
    finally:
        await channel.close()
        await server.stop(grace=0.5)
        await cp.stop()


def wf_poll(queue: str, sticky: bool = False) -> svc.PollWorkflowTaskQueueRequest:
    return svc.PollWorkflowTaskQueueRequest(namespace="ns-a", task_queue=queue, identity="t", sticky=sticky)


def act_poll(queue: str) -> svc.PollActivityTaskQueueRequest:
    return svc.PollActivityTaskQueueRequest(namespace="ns-a", task_queue=queue, identity="t")


def schedule(queue: str = "", activity_id: str = "act") -> pb.Command:
    return pb.Command(command_type=pb.COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK,
                      schedule_activity_task_command_attributes=pb.ScheduleActivityTaskCommandAttributes(
                          activity_id=activity_id, activity_type="A", task_queue=queue,
                          start_to_close_timeout_ms=HOUR_MS, schedule_to_close_timeout_ms=HOUR_MS))


def complete(token: bytes, *commands: pb.Command, sticky: str = "") -> svc.RespondWorkflowTaskCompletedRequest:
    req = svc.RespondWorkflowTaskCompletedRequest(task_token=token, commands=list(commands), namespace="ns-a")
    if sticky:
        req.sticky_attributes.CopyFrom(svc.StickyExecutionAttributes(worker_task_queue=sticky,
                                                                     schedule_to_start_timeout_ms=HOUR_MS))
    return req


async def test_a_confined_key_cannot_poll_or_answer_another_queue_and_an_unconfined_one_can(world: World) -> None:
    w = world
    wid_b = await w.start("qb")
    # polls of another queue: refused before anything is handed out
    await w.denied("PollWorkflowTaskQueue", wf_poll("qb"), "qa only", "qb")
    await w.denied("PollActivityTaskQueue", act_poll("qb"), "qa only", "qb")
    await w.denied("PollWorkflowTaskQueue", wf_poll("qb/sticky/w1", sticky=True), "qa only", "qb/sticky/w1")
    await w.denied("PollWorkflowTaskQueue", wf_poll("qa/sticky/w1"), "qa only", "qa/sticky/w1")  # not sticky: exact
    # the unconfined worker key polls qb (as before) and hands its task token around
    task = await w.ok("PollWorkflowTaskQueue", wf_poll("qb"), "free", timeout=30)
    assert task.workflow_execution.workflow_id == wid_b
    before = await w.history_length(wid_b)
    await w.denied("RespondWorkflowTaskCompleted", complete(task.task_token), "qa only", "qb")
    await w.denied("RespondWorkflowTaskFailed", svc.RespondWorkflowTaskFailedRequest(
        task_token=task.task_token, namespace="ns-a"), "qa only", "qb")
    assert await w.history_length(wid_b) == before  # nothing happened to the run
    await w.ok("RespondWorkflowTaskCompleted", complete(task.task_token, schedule("qb")), "free")
    act = await w.ok("PollActivityTaskQueue", act_poll("qb"), "free", timeout=30)
    before = await w.history_length(wid_b)
    for rpc, req in (
            ("RecordActivityTaskHeartbeat", svc.RecordActivityTaskHeartbeatRequest(task_token=act.task_token)),
            ("RespondActivityTaskCompleted", svc.RespondActivityTaskCompletedRequest(task_token=act.task_token)),
            ("RespondActivityTaskFailed", svc.RespondActivityTaskFailedRequest(task_token=act.task_token)),
            ("RespondActivityTaskCanceled", svc.RespondActivityTaskCanceledRequest(task_token=act.task_token))):
        await w.denied(rpc, req, "qa only", "qb")
    assert await w.history_length(wid_b) == before
    await w.ok("RespondActivityTaskCompleted", svc.RespondActivityTaskCompletedRequest(task_token=act.task_token),
               "free")
    # a query task of a run on qb (the token signed as the server signs it)
    ns_id = (await w.ok("DescribeNamespace", svc.DescribeNamespaceRequest(name="ns-a"))).namespace_info.id
    query = w.cp.engine.tokens.encode(TaskToken(QUERY, ns_id, wid_b, "", 0, 0, "q1", "qb"))
    await w.denied("RespondQueryTaskCompleted", svc.RespondQueryTaskCompletedRequest(task_token=query), "qa only", "qb")


async def test_a_confined_key_works_its_queue_and_sticky_queue_but_cannot_send_work_elsewhere(world: World) -> None:
    w = world
    wid = await w.start("qa")
    task = await w.ok("PollWorkflowTaskQueue", wf_poll("qa"), "qa only", timeout=30)
    assert task.workflow_execution.workflow_id == wid
    child = pb.Command(command_type=pb.COMMAND_TYPE_START_CHILD_WORKFLOW_EXECUTION,
                       start_child_workflow_execution_command_attributes=pb.StartChildWorkflowExecutionCommandAttributes(
                           workflow_id=f"{wid}-child", workflow_type="Other", task_queue="qb"))
    can = pb.Command(command_type=pb.COMMAND_TYPE_CONTINUE_AS_NEW_WORKFLOW_EXECUTION,
                     continue_as_new_workflow_execution_command_attributes=pb.ContinueAsNewWorkflowExecutionCommandAttributes(
                         task_queue="qb"))
    before = await w.history_length(wid)
    for cmd in (schedule("qb"), child, can):
        await w.denied("RespondWorkflowTaskCompleted", complete(task.task_token, cmd), "qa only", "qb")
    await w.denied("RespondWorkflowTaskCompleted", complete(task.task_token, sticky="qb/sticky/w1"), "qa only",
                   "qb/sticky/w1")
    assert await w.history_length(wid) == before
    # its own queue (named or left empty) and its own sticky queue: fine
    await w.ok("RespondWorkflowTaskCompleted", complete(task.task_token, schedule("qa", "a1"), schedule("", "a2"),
                                                        sticky="qa/sticky/w1"), "qa only")
    seen = set()
    for _ in range(2):
        act = await w.ok("PollActivityTaskQueue", act_poll("qa"), "qa only", timeout=30)
        seen.add(act.activity_id)
        await w.ok("RecordActivityTaskHeartbeat", svc.RecordActivityTaskHeartbeatRequest(task_token=act.task_token),
                   "qa only")
        await w.denied("RespondActivityTaskCompleted", svc.RespondActivityTaskCompletedRequest(
            task_token=act.task_token, sticky_task_queue="qb/sticky/w1"), "qa only", "qb/sticky/w1")
        await w.ok("RespondActivityTaskCompleted", svc.RespondActivityTaskCompletedRequest(task_token=act.task_token),
                   "qa only")
    assert seen == {"a1", "a2"}
    sticky = await w.ok("PollWorkflowTaskQueue", wf_poll("qa/sticky/w1", sticky=True), "qa only", timeout=30)
    assert sticky.workflow_execution.workflow_id == wid  # the run's next task came to its sticky queue
    await w.ok("RespondWorkflowTaskCompleted", complete(sticky.task_token, pb.Command(
        command_type=pb.COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION,
        complete_workflow_execution_command_attributes=pb.CompleteWorkflowExecutionCommandAttributes())), "qa only")
    # a token from before tokens carried a task queue: refused for a confined key
    ns_id = (await w.ok("DescribeNamespace", svc.DescribeNamespaceRequest(name="ns-a"))).namespace_info.id
    old = w.cp.engine.tokens.encode(TaskToken(QUERY, ns_id, wid, "", 0, 0, "q1"))
    status, details = await w.call("RespondQueryTaskCompleted", svc.RespondQueryTaskCompletedRequest(task_token=old),
                                   "qa only")
    assert status == DENIED and "names no task queue" in details, details


async def test_bad_task_queue_lists_are_refused_and_nothing_is_created(world: World) -> None:
    w = world
    before = len((await w.ok("ListApiKeys", svc.ListApiKeysRequest())).keys)
    cases = {
        "a writer grant": ({"ns-a": "writer"}, {"ns-a": ["q"]}, "task_queues['ns-a']", "role 'writer'"),
        "no grant there": ({"ns-a": "worker"}, {"ns-b": ["q"]}, "task_queues['ns-b']", "no grant"),
        "an empty name": ({"ns-a": "worker"}, {"ns-a": [""]}, "task_queues['ns-a'].names[0]", "required"),
        "a control char": ({"ns-a": "worker"}, {"ns-a": ["ok", "b\x01d"]}, "task_queues['ns-a'].names[1]",
                           "control character"),
        "a long name": ({"ns-a": "worker"}, {"ns-a": ["q" * 1001]}, "names[0]", "over the limit of 1000"),
        "too many": ({"ns-a": "worker"}, {"ns-a": [f"q{i}" for i in range(101)]}, "task_queues['ns-a']",
                     "at most 100"),
        "no queue": ({"ns-a": "worker"}, {"ns-a": []}, "task_queues['ns-a']", "at least one"),
    }
    for what, (grants, queues, field_, why) in cases.items():
        status, details = await w.call("CreateApiKey", svc.CreateApiKeyRequest(
            name=what, grants=grants, task_queues={ns: svc.ApiKeyTaskQueues(names=q) for ns, q in queues.items()}),
            "root")
        assert status == grpc.StatusCode.INVALID_ARGUMENT and field_ in details and why in details, (what, details)
    status, details = await w.call("CreateApiKey", svc.CreateApiKeyRequest(
        name="admin", system_admin=True, grants={"ns-a": "worker"},
        task_queues={"ns-a": svc.ApiKeyTaskQueues(names=["q"])}), "root")
    assert status == grpc.StatusCode.INVALID_ARGUMENT and "system_admin" in details, details
    assert len((await w.ok("ListApiKeys", svc.ListApiKeysRequest())).keys) == before


async def test_task_queues_read_back_and_who_may_create_a_confined_key(world: World) -> None:
    w = world
    listed = {k.id: k for k in (await w.ok("ListApiKeys", svc.ListApiKeysRequest())).keys}
    assert {ns: list(q.names) for ns, q in listed[w.ids["qa only"]].task_queues.items()} == {"ns-a": ["qa"]}
    assert dict(listed[w.ids["free"]].task_queues) == {}
    row, w.keys["a admin"] = await w.cp.api_keys.create("a admin", {"ns-a": Role.ADMIN})
    req = svc.CreateApiKeyRequest(name="by a admin", grants={"ns-a": "worker"},
                                  task_queues={"ns-a": svc.ApiKeyTaskQueues(names=["q2", "q1", "q1"])})
    made = await w.ok("CreateApiKey", req, "a admin")
    assert list(made.key.task_queues["ns-a"].names) == ["q1", "q2"]  # sorted, each once
    for who in ("qa only", "free"):  # a worker key creates no keys, confined or not
        status, details = await w.call("CreateApiKey", req, who)
        assert status == DENIED, (who, details)
    status, details = await w.call("CreateApiKey", svc.CreateApiKeyRequest(
        name="b", grants={"ns-b": "worker"}, task_queues={"ns-b": svc.ApiKeyTaskQueues(names=["q"])}), "a admin")
    assert status == DENIED and "ns-b" in details, details


@workflow.defn
class TwoSteps:
    def __init__(self) -> None:
        self.go = False

    @workflow.run
    async def run(self, name: str) -> str:
        first = await workflow.execute_activity(greet, name, start_to_close_timeout=timedelta(seconds=30))
        await workflow.wait_condition(lambda: self.go)  # the next task goes to the worker's sticky queue
        second = await workflow.execute_activity(greet, first, start_to_close_timeout=timedelta(seconds=30))
        return second

    @workflow.signal
    def proceed(self) -> None:
        self.go = True


@activity.defn
async def greet(name: str) -> str:
    return f"hello {name}"


async def test_the_sdk_worker_runs_on_a_confined_key_sticky_queue_included(world: World) -> None:
    w = world
    address = f"127.0.0.1:{w.server_port}"
    async with await Client.connect(address, namespace="ns-a", api_key=w.keys["qa only"]) as worker_client, \
            await Client.connect(address, namespace="ns-a", api_key=w.keys["root"]) as client:
        async with Worker(worker_client, task_queue="qa", workflows=[TwoSteps], activities=[greet]):
            handle = await client.start_workflow(TwoSteps.run, "ann", id="sdk-confined", task_queue="qa")
            await asyncio.sleep(0.5)
            await handle.signal(TwoSteps.proceed)
            assert await asyncio.wait_for(handle.result(), 30) == "hello hello ann"
    history = await w.ok("GetWorkflowExecutionHistory", svc.GetWorkflowExecutionHistoryRequest(
        namespace="ns-a", execution=pb.WorkflowExecution(workflow_id="sdk-confined")))
    completed = [e for e in history.history.events if e.event_type == pb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED]
    assert len(completed) >= 3
