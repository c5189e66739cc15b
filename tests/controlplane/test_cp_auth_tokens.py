"""Task tokens with API keys on (issue 15): the issue's forged token is refused whoever sends it; rotation.

A forged or altered token gets INVALID_ARGUMENT and changes nothing, sent by a worker
of the namespace (the token is checked before its namespace is trusted) or by a
system_admin (the frontend checks it again). After a restart with a new signing key
(``auth.task_token_keys``), a token handed out before still completes its activity.
"""

from __future__ import annotations

import base64
import json

from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest

from _auth_world import World, bearer, make_world

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.api import service_pb2_grpc
from spindle.controlplane.auth import AuthSettings
from spindle.controlplane.config import ServerConfig
from spindle.controlplane.server import ControlPlane, serve
from spindle.controlplane.store.sqlite import SqliteStore

pytestmark = pytest.mark.timeout(120)

RESULT = pb.Payloads(payloads=[pb.Payload(metadata={"encoding": b"json/plain"}, data=b'"attacker"')])


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[World]:
    w = await make_world(tmp_path)
    try:
        yield w
    finally:
        await w.close()


def forged_like_the_issue(w: World) -> bytes:
    """``["a", ns_id, wid, run_id, 5, 1, ""]``: every value read from the history (event 5 schedules ``act``)."""
    return json.dumps(["a", w.ns_ids["ns-a"], "ns-a-wf", w.runs["ns-a"], 5, 1, ""], separators=(",", ":")).encode()


def tampered(token: bytes, w: World) -> dict[str, bytes]:
    version, kid, payload, mac = token.split(b".")
    body = json.loads(base64.urlsafe_b64decode(payload + b"=" * (-len(payload) % 4)))
    # the signed content is public (and names the task queue, issue 26); only the MAC is not
    assert body == json.loads(forged_like_the_issue(w)) + ["qa"]
    next_attempt = base64.urlsafe_b64encode(json.dumps(body[:5] + [2] + body[6:], separators=(",", ":")).encode()
                                            ).rstrip(b"=")
    return {
        "the issue's token": forged_like_the_issue(w),
        "the issue's values under a made-up key id": b".".join([version, b"k9", payload, mac]),
        "another attempt, old MAC": b".".join([version, kid, next_attempt, mac]),
        "the issue's values, no MAC": b".".join([version, kid, payload, b""]),
        "MAC of another token": b".".join([version, kid, payload, w.workflow_token.split(b".")[3]]),
    }


async def test_forged_and_altered_tokens_are_refused_with_keys_on_and_change_nothing(world: World) -> None:
    w = world
    before = w.snapshot()
    for who in ("a:worker", "admin"):
        for what, bad in tampered(w.activity_token, w).items():
            for rpc, req in (
                    ("RespondActivityTaskCompleted",
                     svc.RespondActivityTaskCompletedRequest(task_token=bad, result=RESULT, namespace="ns-a")),
                    ("RespondActivityTaskFailed", svc.RespondActivityTaskFailedRequest(
                        task_token=bad, failure=pb.Failure(message="x"), namespace="ns-a")),
                    ("RecordActivityTaskHeartbeat", svc.RecordActivityTaskHeartbeatRequest(task_token=bad))):
                status, detail = await w.call(rpc, req, bearer(w.keys[who]))
                assert status in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND), (who, what, rpc,
                                                                                               status, detail)
                assert "task_token" in detail, detail
                assert w.snapshot() == before, (who, what, rpc)
    # the genuine token still works for the worker that holds it
    await w.ok("RespondActivityTaskCompleted", svc.RespondActivityTaskCompletedRequest(
        task_token=w.activity_token, result=pb.Payloads(), namespace="ns-a"), who="a:worker")


async def test_after_rotating_the_signing_key_in_flight_tokens_still_verify(world: World, tmp_path: Path) -> None:
    w = world
    old_token = w.activity_token
    assert old_token.split(b".")[1] == b"1"  # signed with the store-kept key
    await w.close()
    new_key = tmp_path / "k2"
    new_key.write_bytes(b"k2-secret-" + b"x" * 32)
    cp = ControlPlane(SqliteStore(w.db), ServerConfig(num_shards=2), auth=AuthSettings(
        mode="api_keys", task_token_keys=(("k2", new_key.read_bytes()),)))
    await cp.start()
    server, port = await serve(cp, "127.0.0.1", 0)
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as ch:
            stub = service_pb2_grpc.WorkflowServiceStub(ch)
            worker = bearer(w.keys["a:worker"])
            await stub.RespondActivityTaskCompleted(svc.RespondActivityTaskCompletedRequest(
                task_token=old_token, result=pb.Payloads(), namespace="ns-a"), metadata=worker, timeout=30)
            # new tasks are signed with the new key, and verify
            await stub.StartWorkflowExecution(svc.StartWorkflowExecutionRequest(
                namespace="ns-a", workflow_id="after-rotation", workflow_type="W", task_queue="q-new",
                request_id="r-after-rotation"), metadata=bearer(w.keys["a:writer"]), timeout=30)
            task = await stub.PollWorkflowTaskQueue(svc.PollWorkflowTaskQueueRequest(
                namespace="ns-a", task_queue="q-new"), metadata=worker, timeout=30)
            assert task.task_token.split(b".")[1] == b"k2"
            await stub.RespondWorkflowTaskCompleted(svc.RespondWorkflowTaskCompletedRequest(
                task_token=task.task_token, namespace="ns-a"), metadata=worker, timeout=30)
            hist = await stub.GetWorkflowExecutionHistory(svc.GetWorkflowExecutionHistoryRequest(
                namespace="ns-a", execution=pb.WorkflowExecution(workflow_id="ns-a-wf")), metadata=worker, timeout=30)
            assert pb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED in [e.event_type for e in hist.history.events]
    finally:
        await server.stop(grace=0.5)
        await cp.stop()
