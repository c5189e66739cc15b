"""Every RPC of the wire API against every caller that must be refused (issue 15; docs/SECURITY.md).

The RPCs come from the service descriptor: a new RPC fails ``test_every_rpc_of_the_service_is_in_the_matrix``
until it is given a request and the role it needs here (and a rule in ``auth._rpc_policy``).

Callers: none (no credentials), wrong keys (unknown id, right id with a wrong secret,
malformed, another scheme), an expired key, a revoked key (both system_admin: nothing
about them may still work), the admin of another namespace, and every role of the
target namespace that lacks the permission. Each gets the status docs/SECURITY.md gives
(UNAUTHENTICATED / PERMISSION_DENIED) and the store is unchanged, row for row.
``test_with_the_role_it_needs_the_call_goes_through`` sends the same requests with the
smallest sufficient key: they pass the check, and those that write change the store
(so "unchanged" above is not vacuous).
"""

from __future__ import annotations

import uuid

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import grpc
import pytest

from _auth_world import QA, World, bearer, make_world
from google.protobuf import field_mask_pb2

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.controlplane.auth import SERVICE_RPCS

pytestmark = pytest.mark.timeout(180)

U, PD, OK = grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.OK

#: What each RPC needs on its namespace (ns-a), from docs/SECURITY.md. ``public``: no credentials
#: needed; ``any``: any valid key (the answer is narrowed to the caller's namespaces); ``key_admin``:
#: system_admin or a namespace admin (for keys on its namespaces); ``system_admin``.
NEEDS: dict[str, str] = {
    "GetSystemInfo": "public",
    "CreateNamespace": "system_admin",
    "DescribeNamespace": "reader",
    "ListNamespaces": "any",
    "UpdateNamespace": "admin",
    "DeleteNamespace": "admin",
    "AddSearchAttributes": "admin",
    "StartWorkflowExecution": "writer",
    "SignalWorkflowExecution": "writer",
    "SignalWithStartWorkflowExecution": "writer",
    "QueryWorkflow": "reader",
    "UpdateWorkflowExecution": "writer",
    "RequestCancelWorkflowExecution": "writer",
    "TerminateWorkflowExecution": "writer",
    "ResetWorkflowExecution": "writer",
    "DescribeWorkflowExecution": "reader",
    "GetWorkflowExecutionHistory": "reader",
    "ListWorkflowExecutions": "reader",
    "CountWorkflowExecutions": "reader",
    "PollWorkflowTaskQueue": "worker",
    "RespondWorkflowTaskCompleted": "worker",
    "RespondWorkflowTaskFailed": "worker",
    "RespondQueryTaskCompleted": "worker",
    "PollActivityTaskQueue": "worker",
    "RespondActivityTaskCompleted": "worker",
    "RespondActivityTaskFailed": "worker",
    "RespondActivityTaskCanceled": "worker",
    "RecordActivityTaskHeartbeat": "worker",
    "CreateApiKey": "key_admin",
    "ListApiKeys": "key_admin",
    "RevokeApiKey": "key_admin",
    "CreateSchedule": "writer",
    "DescribeSchedule": "reader",
    "UpdateSchedule": "writer",
    "PatchSchedule": "writer",
    "DeleteSchedule": "writer",
    "ListSchedules": "reader",
    # worker deployments: routing and overrides decide which code runs, so they are the namespace admin's
    "DescribeWorkerDeployment": "reader",
    "ListWorkerDeployments": "reader",
    "SetWorkerDeploymentCurrentVersion": "admin",
    "SetWorkerDeploymentRampingVersion": "admin",
    "UpdateWorkflowExecutionOptions": "admin",
    # erasure (issue 26): the namespace admin's; readers may watch the jobs
    "DeleteWorkflowExecution": "admin",
    "StartBatchOperation": "admin",
    "DescribeBatchOperation": "reader",
    "ListBatchOperations": "reader",
    # Nexus (issue 30): the target namespace's admin manages its endpoints; anyone authenticated looks
    "CreateNexusEndpoint": "admin",
    "GetNexusEndpoint": "any",
    "ListNexusEndpoints": "any",
    "UpdateNexusEndpoint": "admin",
    "DeleteNexusEndpoint": "admin",
    "PollNexusTaskQueue": "worker",
    "RespondNexusTaskCompleted": "worker",
    "RespondNexusTaskFailed": "worker",
}

#: The ns-a roles that lack what each kind of RPC needs (roles are sets: a writer cannot poll).
TOO_LOW: dict[str, tuple[str, ...]] = {
    "public": (), "any": (), "reader": (),
    "worker": ("reader", "writer"),
    "writer": ("reader", "worker"),
    "admin": ("reader", "worker", "writer"),
    "key_admin": ("reader", "worker", "writer"),
    "system_admin": ("reader", "worker", "writer", "admin"),
}

#: The smallest key that may make each kind of call.
ENOUGH: dict[str, str] = {"public": "a:reader", "any": "a:reader", "reader": "a:reader", "worker": "a:worker",
                          "writer": "a:writer", "admin": "a:admin", "key_admin": "a:admin", "system_admin": "admin"}

#: Calls that write when they go through (checked by the positive test).
WRITES = {"CreateNamespace", "UpdateNamespace", "DeleteNamespace", "AddSearchAttributes", "StartWorkflowExecution",
          "SignalWorkflowExecution", "SignalWithStartWorkflowExecution", "RequestCancelWorkflowExecution",
          "TerminateWorkflowExecution", "RespondWorkflowTaskCompleted", "RespondWorkflowTaskFailed",
          "RespondActivityTaskCompleted", "RespondActivityTaskFailed", "CreateApiKey", "RevokeApiKey",
          "CreateSchedule", "UpdateSchedule", "PatchSchedule", "DeleteSchedule", "SetWorkerDeploymentCurrentVersion",
          "SetWorkerDeploymentRampingVersion", "UpdateWorkflowExecutionOptions", "DeleteWorkflowExecution",
          "StartBatchOperation", "CreateNexusEndpoint", "UpdateNexusEndpoint", "DeleteNexusEndpoint"}

A_WF = pb.WorkflowExecution(workflow_id="ns-a-wf")
#: A Nexus endpoint whose operations would run on ns-a's task queue.
A_ENDPOINT = pb.EndpointSpec(name="evil_endpoint", target=pb.EndpointTarget(
    worker=pb.EndpointTarget.Worker(namespace="ns-a", task_queue=QA)))


def payloads(text: str) -> pb.Payloads:
    return pb.Payloads(payloads=[pb.Payload(metadata={"encoding": b"json/plain"}, data=f'"{text}"'.encode())])


def requests(w: World) -> dict[str, Callable[[], Any]]:
    """A request for every RPC, aimed at ns-a (the victim): each would change or reveal something there."""
    start = svc.StartWorkflowExecutionRequest(namespace="ns-a", workflow_id=f"evil-{uuid.uuid4().hex[:6]}",
                                              workflow_type="W", task_queue=QA, request_id=uuid.uuid4().hex,
                                              input=payloads("x" * 1000))
    evil_schedule = pb.Schedule(spec=pb.ScheduleSpec(cron_expressions=["* * * * *"]),
                                action=pb.ScheduleActionStartWorkflow(workflow_id="evil", workflow_type="W", task_queue=QA,
                                                                      input=payloads("evil")))
    return {
        "GetSystemInfo": lambda: svc.GetSystemInfoRequest(),
        "CreateNamespace": lambda: svc.CreateNamespaceRequest(name="evil-ns"),
        "DescribeNamespace": lambda: svc.DescribeNamespaceRequest(name="ns-a"),
        "ListNamespaces": lambda: svc.ListNamespacesRequest(),
        "UpdateNamespace": lambda: svc.UpdateNamespaceRequest(
            name="ns-a", update_mask=["retention", "archival_uri"], retention_ms=1, archival_uri=f"file://{Path(w.db).parent}/archive/evil"),
        "DeleteNamespace": lambda: svc.DeleteNamespaceRequest(name="ns-a", force=True),
        "AddSearchAttributes": lambda: svc.AddSearchAttributesRequest(
            namespace="ns-a", search_attributes={"EvilKeyword": svc.SEARCH_ATTRIBUTE_TYPE_KEYWORD}),
        "StartWorkflowExecution": lambda: start,
        "SignalWorkflowExecution": lambda: svc.SignalWorkflowExecutionRequest(
            namespace="ns-a", workflow_execution=A_WF, signal_name="evil", input=payloads("evil"),
            request_id=uuid.uuid4().hex),
        "SignalWithStartWorkflowExecution": lambda: svc.SignalWithStartWorkflowExecutionRequest(
            start=svc.StartWorkflowExecutionRequest(namespace="ns-a", workflow_id="ns-a-wf", workflow_type="W",
                                                    task_queue=QA, request_id=uuid.uuid4().hex),
            signal_name="evil"),
        "QueryWorkflow": lambda: svc.QueryWorkflowRequest(
            namespace="ns-a", execution=A_WF, query=pb.WorkflowQuery(query_type="state"), timeout_ms=300),
        "UpdateWorkflowExecution": lambda: svc.UpdateWorkflowExecutionRequest(
            namespace="ns-a", workflow_execution=A_WF,
            request=pb.UpdateRequest(update_id="u1", name="evil"), timeout_ms=300),
        "RequestCancelWorkflowExecution": lambda: svc.RequestCancelWorkflowExecutionRequest(
            namespace="ns-a", workflow_execution=A_WF, request_id=uuid.uuid4().hex),
        "TerminateWorkflowExecution": lambda: svc.TerminateWorkflowExecutionRequest(
            namespace="ns-a", workflow_execution=A_WF, reason="evil"),
        "ResetWorkflowExecution": lambda: svc.ResetWorkflowExecutionRequest(
            namespace="ns-a", workflow_execution=A_WF, reason="evil", workflow_task_finish_event_id=4,
            request_id=uuid.uuid4().hex),
        "DescribeWorkflowExecution": lambda: svc.DescribeWorkflowExecutionRequest(namespace="ns-a", execution=A_WF),
        "GetWorkflowExecutionHistory": lambda: svc.GetWorkflowExecutionHistoryRequest(namespace="ns-a", execution=A_WF),
        "ListWorkflowExecutions": lambda: svc.ListWorkflowExecutionsRequest(namespace="ns-a"),
        "CountWorkflowExecutions": lambda: svc.CountWorkflowExecutionsRequest(namespace="ns-a"),
        "PollWorkflowTaskQueue": lambda: svc.PollWorkflowTaskQueueRequest(namespace="ns-a", task_queue=QA),
        "RespondWorkflowTaskCompleted": lambda: svc.RespondWorkflowTaskCompletedRequest(
            task_token=w.workflow_token, namespace="ns-a", commands=[pb.Command(
                command_type=pb.COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION,
                complete_workflow_execution_command_attributes=pb.CompleteWorkflowExecutionCommandAttributes(
                    result=payloads("evil")))]),
        "RespondWorkflowTaskFailed": lambda: svc.RespondWorkflowTaskFailedRequest(
            task_token=w.workflow_token, namespace="ns-a", failure=pb.Failure(message="evil")),
        "RespondQueryTaskCompleted": lambda: svc.RespondQueryTaskCompletedRequest(
            task_token=w.query_token, namespace="ns-a", query_result=payloads("evil")),
        "PollActivityTaskQueue": lambda: svc.PollActivityTaskQueueRequest(namespace="ns-a", task_queue=QA),
        "RespondActivityTaskCompleted": lambda: svc.RespondActivityTaskCompletedRequest(
            task_token=w.activity_token, namespace="ns-a", result=payloads("attacker")),
        "RespondActivityTaskFailed": lambda: svc.RespondActivityTaskFailedRequest(
            task_token=w.activity_token, namespace="ns-a", failure=pb.Failure(message="evil")),
        "RespondActivityTaskCanceled": lambda: svc.RespondActivityTaskCanceledRequest(
            task_token=w.activity_token, namespace="ns-a"),
        "RecordActivityTaskHeartbeat": lambda: svc.RecordActivityTaskHeartbeatRequest(
            task_token=w.activity_token, namespace="ns-a", details=payloads("evil")),
        "CreateApiKey": lambda: svc.CreateApiKeyRequest(name="evil", grants={"ns-a": "admin"}),
        "ListApiKeys": lambda: svc.ListApiKeysRequest(),
        "RevokeApiKey": lambda: svc.RevokeApiKeyRequest(id=w.key_ids["a:reader"]),
        "CreateSchedule": lambda: svc.CreateScheduleRequest(namespace="ns-a", schedule_id=f"evil-{uuid.uuid4().hex[:6]}",
                                                            schedule=evil_schedule),
        "DescribeSchedule": lambda: svc.DescribeScheduleRequest(namespace="ns-a", schedule_id="ns-a-sched"),
        "UpdateSchedule": lambda: svc.UpdateScheduleRequest(namespace="ns-a", schedule_id="ns-a-sched",
                                                            schedule=evil_schedule),
        "PatchSchedule": lambda: svc.PatchScheduleRequest(namespace="ns-a", schedule_id="ns-a-sched",
                                                          patch=svc.SchedulePatch(pause="evil")),
        "DeleteSchedule": lambda: svc.DeleteScheduleRequest(namespace="ns-a", schedule_id="ns-a-sched"),
        "ListSchedules": lambda: svc.ListSchedulesRequest(namespace="ns-a"),
        "DescribeWorkerDeployment": lambda: svc.DescribeWorkerDeploymentRequest(namespace="ns-a",
                                                                              deployment_name="orders"),
        "ListWorkerDeployments": lambda: svc.ListWorkerDeploymentsRequest(namespace="ns-a"),
        "SetWorkerDeploymentCurrentVersion": lambda: svc.SetWorkerDeploymentCurrentVersionRequest(
            namespace="ns-a", deployment_name="orders", build_id="evil", allow_no_pollers=True),
        "SetWorkerDeploymentRampingVersion": lambda: svc.SetWorkerDeploymentRampingVersionRequest(
            namespace="ns-a", deployment_name="orders", build_id="evil", percentage=50, allow_no_pollers=True),
        "UpdateWorkflowExecutionOptions": lambda: svc.UpdateWorkflowExecutionOptionsRequest(
            namespace="ns-a", workflow_execution=A_WF, update_mask=field_mask_pb2.FieldMask(paths=["versioning_override"]),
            workflow_execution_options=svc.WorkflowExecutionOptions(versioning_override=pb.VersioningOverride(
                pinned=pb.VersioningOverride.PinnedOverride(version=pb.WorkerDeploymentVersion(
                    deployment_name="orders", build_id="evil"))))),
        "DeleteWorkflowExecution": lambda: svc.DeleteWorkflowExecutionRequest(namespace="ns-a", workflow_execution=A_WF,
                                                                              reason="evil"),
        "StartBatchOperation": lambda: svc.StartBatchOperationRequest(
            namespace="ns-a", job_id=f"evil-{uuid.uuid4().hex[:6]}", visibility_query="WorkflowId = 'ns-a-wf'",
            reason="evil", deletion_operation=svc.BatchOperationDeletion(identity="evil")),
        "DescribeBatchOperation": lambda: svc.DescribeBatchOperationRequest(namespace="ns-a", job_id="a-job"),
        "ListBatchOperations": lambda: svc.ListBatchOperationsRequest(namespace="ns-a"),
        "CreateNexusEndpoint": lambda: svc.CreateNexusEndpointRequest(spec=A_ENDPOINT),
        "GetNexusEndpoint": lambda: svc.GetNexusEndpointRequest(id=w.endpoint_id),
        "ListNexusEndpoints": lambda: svc.ListNexusEndpointsRequest(),
        "UpdateNexusEndpoint": lambda: svc.UpdateNexusEndpointRequest(id=w.endpoint_id, version=1, spec=A_ENDPOINT),
        "DeleteNexusEndpoint": lambda: svc.DeleteNexusEndpointRequest(id=w.endpoint_id, version=1),
        "PollNexusTaskQueue": lambda: svc.PollNexusTaskQueueRequest(namespace="ns-a", task_queue=QA),
        "RespondNexusTaskCompleted": lambda: svc.RespondNexusTaskCompletedRequest(
            task_token=w.nexus_token, namespace="ns-a", response=pb.NexusResponse(
                start_operation=pb.NexusStartOperationResponse(sync_success=pb.NexusStartOperationResponse.Sync(
                    payload=payloads("evil").payloads[0])))),
        "RespondNexusTaskFailed": lambda: svc.RespondNexusTaskFailedRequest(
            task_token=w.nexus_token, namespace="ns-a", error=pb.NexusHandlerError(error_type="INTERNAL")),
    }


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[World]:
    w = await make_world(tmp_path)
    try:
        yield w
    finally:
        await w.close()


def wrong_credentials(w: World) -> dict[str, tuple[tuple[str, str], ...]]:
    good = w.keys["a:admin"]
    prefix, key_id, random = good.split("_", 2)
    wrong_random = ("A" if random[0] != "A" else "B") + random[1:]
    return {
        "right id, wrong secret": bearer(f"{prefix}_{key_id}_{wrong_random}"),
        "unknown id": bearer(f"{prefix}_{'0' * 16}_{random}"),
        "malformed": bearer("spk_not-a-key"),
        "not a bearer token": (("authorization", f"Basic {good}"),),
        "empty bearer": (("authorization", "Bearer "),),
    }


def test_every_rpc_of_the_service_is_in_the_matrix() -> None:
    names = [m.name for m in svc.DESCRIPTOR.services_by_name["WorkflowService"].methods]
    assert tuple(names) == SERVICE_RPCS
    assert sorted(NEEDS) == sorted(names), "give every RPC its role here (docs/SECURITY.md)"


@pytest.mark.parametrize("rpc", SERVICE_RPCS)
async def test_callers_without_the_right_get_the_documented_status_and_change_nothing(world: World, rpc: str) -> None:
    w = world
    need = NEEDS[rpc]
    make = requests(w)[rpc]
    before = w.snapshot()
    outcomes: list[tuple[str, grpc.StatusCode, Any]] = []

    async def expect(caller: str, metadata: tuple[tuple[str, str], ...], want: grpc.StatusCode) -> Any:
        status, resp = await w.call(rpc, make(), metadata)
        outcomes.append((caller, status, resp))
        assert status == want, f"{rpc} by {caller}: {status} {resp!r}, expected {want}"
        assert w.snapshot() == before, f"{rpc} by {caller} changed the store"
        return resp

    # no credentials
    resp = await expect("no credentials", (), OK if need == "public" else U)
    if need == "public":  # an anonymous caller learns the version, nothing about the deployment
        assert resp == svc.GetSystemInfoResponse(server_version=resp.server_version) and resp.server_version
    else:
        assert "no credentials" in resp
    # credentials that are not valid are refused even where none are needed
    for what, md in wrong_credentials(w).items():
        await expect(what, md, U)
    for label in ("expired", "revoked"):
        detail = await expect(label, bearer(w.keys[label]), U)
        assert label in detail and w.key_ids[label] in detail
    # the admin of another namespace
    if need in ("public", "any"):
        resp = await expect("admin of ns-b", bearer(w.keys["b:admin"]), OK)
        if rpc == "ListNamespaces":
            assert [n.name for n in resp.namespaces] == ["ns-b"]
    elif rpc == "ListApiKeys":  # allowed, but shows only the keys of its own namespaces
        resp = await expect("admin of ns-b", bearer(w.keys["b:admin"]), OK)
        assert {k.id for k in resp.keys} == {w.key_ids["b:admin"], w.key_ids["b:writer"]}
    else:
        detail = await expect("admin of ns-b", bearer(w.keys["b:admin"]), PD)
        if rpc != "RevokeApiKey" and need != "system_admin":  # (a revoke does not reveal the key's grants)
            assert "'ns-a'" in detail, detail
    # the roles of ns-a that are too low
    for role in TOO_LOW[need]:
        detail = await expect(f"{role} of ns-a", bearer(w.keys[f"a:{role}"]), PD)
        if need in ("reader", "worker", "writer", "admin"):
            assert f"role '{need}' on namespace 'ns-a'" in detail, detail
            assert f"role '{role}' there" in detail, detail
    # refusals say nothing about whether the target exists: the same words for a missing workflow
    assert w.snapshot() == before


@pytest.mark.parametrize("rpc", SERVICE_RPCS)
async def test_with_the_role_it_needs_the_call_goes_through(world: World, rpc: str) -> None:
    w = world
    need = NEEDS[rpc]
    before = w.snapshot()
    status, resp = await w.call(rpc, requests(w)[rpc](), bearer(w.keys[ENOUGH[need]]), timeout=3)
    assert status not in (U, PD), (rpc, status, resp)
    if rpc in WRITES:
        assert status == OK, (rpc, status, resp)
        assert w.snapshot() != before, f"{rpc} went through but wrote nothing: the refusals above prove nothing"


async def test_a_denial_does_not_tell_whether_the_workflow_exists(world: World) -> None:
    w = world
    answers = set()
    for wid in ("ns-a-wf", "no-such-workflow"):
        for rpc, req in (("TerminateWorkflowExecution", svc.TerminateWorkflowExecutionRequest(
                namespace="ns-a", workflow_execution=pb.WorkflowExecution(workflow_id=wid))),
                ("DescribeWorkflowExecution", svc.DescribeWorkflowExecutionRequest(
                    namespace="ns-a", execution=pb.WorkflowExecution(workflow_id=wid)))):
            for who in ("b:admin", "a:reader"):
                if who == "a:reader" and rpc == "DescribeWorkflowExecution":
                    continue
                status, detail = await w.call(rpc, req, bearer(w.keys[who]))
                answers.add((rpc, who, status, detail))
            status, detail = await w.call(rpc, req, ())
            answers.add((rpc, "none", status, detail))
    # the same answer for an existing and a missing workflow
    assert len(answers) == 5, answers
    # the same for a namespace that does not exist (namespace admin of ns-b asks about ns-zzz)
    status, detail = await w.call("DescribeNamespace", svc.DescribeNamespaceRequest(name="ns-zzz"),
                                  bearer(w.keys["b:admin"]))
    assert status == PD and "'ns-zzz'" in detail


async def test_admin_actions_are_audited_allowed_or_refused(world: World, caplog: pytest.LogCaptureFixture) -> None:
    import json

    w = world
    caplog.set_level("INFO", logger="spindle.audit")
    req = requests(w)["UpdateNamespace"]
    await w.call("UpdateNamespace", req(), bearer(w.keys["b:admin"]))
    await w.call("UpdateNamespace", req(), ())
    await w.call("UpdateNamespace", svc.UpdateNamespaceRequest(name="ns-a", update_mask=["description"],
                                                               description="ours"), bearer(w.keys["a:admin"]))
    await w.call("DescribeNamespace", svc.DescribeNamespaceRequest(name="ns-a"), bearer(w.keys["a:admin"]))  # not admin
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == "spindle.audit"]
    assert [(x["action"], x["target"], x["principal"], x["outcome"].split(":")[0]) for x in lines] == [
        ("UpdateNamespace", "namespace/ns-a", f"key:{w.key_ids['b:admin']} (b:admin)", "PERMISSION_DENIED"),
        ("UpdateNamespace", "namespace/ns-a", "unauthenticated", "UNAUTHENTICATED"),
        ("UpdateNamespace", "namespace/ns-a", f"key:{w.key_ids['a:admin']} (a:admin)", "ok"),
    ]
    assert lines[0]["details"]["archival_uri"].endswith("/archive/evil")
