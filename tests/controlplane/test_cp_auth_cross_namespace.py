"""A namespace is a tenant boundary (issue 15): a writer of ns-a can do nothing in ns-b.

Through the SDK (as a user of team A would try it) and through the one indirect path:
a workflow task of ns-a whose commands act on ns-b (signal, cancel, start a child).
The key that completes the task must hold ``writer`` on the other namespace, as a
client call would need; otherwise PERMISSION_DENIED and nothing changes.
"""

from __future__ import annotations

import datetime
import uuid

from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest

from _auth_world import HOUR_MS, QA, World, bearer, make_world

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.client import Client
from spindle.controlplane.auth import Role
from spindle.exceptions import RPCError

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[World]:
    w = await make_world(tmp_path)
    try:
        yield w
    finally:
        await w.close()


async def test_a_writer_of_a_cannot_list_read_signal_or_terminate_anything_in_b(world: World) -> None:
    w = world
    before = w.snapshot()
    async with await Client.connect(w.address, namespace="ns-b", api_key=w.keys["a:writer"]) as c:
        handle = c.get_workflow_handle("ns-b-wf")
        attempts = {
            "list": lambda: _drain(c.list_workflows()),
            "list page": lambda: c.list_workflows_page(),
            "count": lambda: c.count_workflows(),
            "describe": handle.describe,
            "history": handle.fetch_history,
            "query": lambda: handle.query("state", timeout=datetime.timedelta(seconds=1)),
            "signal": lambda: handle.signal("go"),
            "terminate": lambda: handle.terminate("mine now"),
            "cancel": handle.cancel,
            "start": lambda: c.start_workflow("W", id=f"x-{uuid.uuid4().hex[:6]}", task_queue="qb"),
            "describe namespace": lambda: c.describe_namespace("ns-b"),
            "add search attributes": lambda: c.add_search_attributes({"Evil": "Keyword"}),
            "delete namespace": lambda: c.delete_namespace("ns-b", force=True),
        }
        for what, attempt in attempts.items():
            with pytest.raises(RPCError) as e:
                await attempt()
            assert e.value.status == "PERMISSION_DENIED", (what, e.value)
            assert "namespace 'ns-b'" in e.value.message and "has no grant on it" in e.value.message, (what, e.value)
        # what it may list is narrowed to its own namespace
        assert [n.name for n in await c.list_namespaces()] == ["ns-a"]
    assert w.snapshot() == before
    # its own namespace works, and shows none of B's runs
    async with await Client.connect(w.address, namespace="ns-a", api_key=w.keys["a:writer"]) as c:
        assert [r.id async for r in c.list_workflows()] == ["ns-a-wf"]
        assert (await c.get_workflow_handle("ns-a-wf").describe()).id == "ns-a-wf"


async def _drain(it: AsyncIterator[object]) -> list[object]:
    return [x async for x in it]


def cross_namespace_commands(target_run: str) -> dict[str, pb.Command]:
    b_wf = pb.WorkflowExecution(workflow_id="ns-b-wf", run_id=target_run)
    return {
        "signal external": pb.Command(
            command_type=pb.COMMAND_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION,
            signal_external_workflow_execution_command_attributes=pb.SignalExternalWorkflowExecutionCommandAttributes(
                namespace="ns-b", execution=b_wf, signal_name="evil")),
        "cancel external": pb.Command(
            command_type=pb.COMMAND_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION,
            request_cancel_external_workflow_execution_command_attributes=(
                pb.RequestCancelExternalWorkflowExecutionCommandAttributes(namespace="ns-b", workflow_id="ns-b-wf"))),
        "child": pb.Command(
            command_type=pb.COMMAND_TYPE_START_CHILD_WORKFLOW_EXECUTION,
            start_child_workflow_execution_command_attributes=pb.StartChildWorkflowExecutionCommandAttributes(
                namespace="ns-b", workflow_id="evil-child", workflow_type="W", task_queue="qb",
                task_timeout_ms=HOUR_MS)),
    }


async def test_a_workflow_of_a_cannot_act_on_b_unless_its_worker_key_may(world: World) -> None:
    w = world
    before = w.snapshot()
    for what, cmd in cross_namespace_commands(w.runs["ns-b"]).items():
        for who in ("a:worker", "a:admin"):  # every role on ns-a, none on ns-b
            status, detail = await w.call("RespondWorkflowTaskCompleted", svc.RespondWorkflowTaskCompletedRequest(
                task_token=w.workflow_token, namespace="ns-a", commands=[cmd]), bearer(w.keys[who]))
            assert status == grpc.StatusCode.PERMISSION_DENIED, (what, who, status, detail)
            assert "role 'writer' on namespace 'ns-b'" in detail, detail
            assert w.snapshot() == before, (what, who)
    # a worker key that is also a writer of ns-b may: the signal reaches B's run
    row, secret = await w.cp.api_keys.create("a-worker-b-writer", {"ns-a": Role.WORKER, "ns-b": Role.WRITER})
    cmd = cross_namespace_commands(w.runs["ns-b"])["signal external"]
    await w.stub.RespondWorkflowTaskCompleted(svc.RespondWorkflowTaskCompletedRequest(
        task_token=w.workflow_token, namespace="ns-a", commands=[cmd]), metadata=bearer(secret), timeout=30)
    await w.settle()
    hist = await w.ok("GetWorkflowExecutionHistory", svc.GetWorkflowExecutionHistoryRequest(
        namespace="ns-b", execution=pb.WorkflowExecution(workflow_id="ns-b-wf")))
    assert pb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED in [e.event_type for e in hist.history.events]


async def test_commands_in_the_workflows_own_namespace_need_nothing_more(world: World) -> None:
    w = world  # children in ns-a (named or left empty) are the worker's own business
    cmds = [pb.Command(
        command_type=pb.COMMAND_TYPE_START_CHILD_WORKFLOW_EXECUTION,
        start_child_workflow_execution_command_attributes=pb.StartChildWorkflowExecutionCommandAttributes(
            namespace=ns, workflow_id=f"child-{ns or 'same'}", workflow_type="W", task_queue=QA))
        for ns in ("ns-a", "")]
    status, detail = await w.call("RespondWorkflowTaskCompleted", svc.RespondWorkflowTaskCompletedRequest(
        task_token=w.workflow_token, namespace="ns-a", commands=cmds), bearer(w.keys["a:worker"]))
    assert status == grpc.StatusCode.OK, detail
