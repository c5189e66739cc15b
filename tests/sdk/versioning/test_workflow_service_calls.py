"""``client.workflow_service``: one async method per RPC, through the client's call path (issue 25)."""

from __future__ import annotations

import datetime
import re

from typing import Any

import grpc
import pytest

import spindle.api.deployment.v1 as depv1
import spindle.api.enums.v1 as enumsv1
import spindle.api.workflow.v1 as wfv1
import spindle.api.workflowservice.v1 as wsv1

from spindle.api import service_pb2 as svc
from spindle.client import Client
from spindle.exceptions import NamespaceNotFoundError, RPCError
from spindle.service import WorkflowService

SERVICE = svc.DESCRIPTOR.services_by_name["WorkflowService"]


def _error(code: grpc.StatusCode, details: str) -> grpc.aio.AioRpcError:
    return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), grpc.aio.Metadata(), details=details)


class _Stub:
    """Answers every RPC with its response type (or raises the queued errors first); records the calls."""

    def __init__(self, errors: list[grpc.aio.AioRpcError] | None = None) -> None:
        self.errors = list(errors or [])
        self.calls: list[tuple[str, Any, dict[str, Any]]] = []

    def __getattr__(self, name: str) -> Any:
        async def call(request: Any, **kwargs: Any) -> Any:
            self.calls.append((name, request, kwargs))
            if self.errors:
                raise self.errors.pop(0)
            return getattr(svc, SERVICE.methods_by_name[name].output_type.name)()

        return call


def test_every_rpc_has_a_snake_case_method() -> None:
    for rpc in SERVICE.methods:
        name = re.sub(r"(?<!^)(?=[A-Z])", "_", rpc.name).lower()
        assert callable(getattr(WorkflowService, name)), name
    assert WorkflowService.describe_worker_deployment.__name__ == "describe_worker_deployment"
    assert hasattr(WorkflowService, "set_worker_deployment_current_version")
    assert hasattr(WorkflowService, "list_workflow_executions")
    assert hasattr(WorkflowService, "update_workflow_execution_options")


async def test_a_call_sends_the_request_and_returns_the_response() -> None:
    stub = _Stub()
    client = Client(stub, namespace="ns")
    assert isinstance(client.workflow_service, WorkflowService)
    req = wsv1.DescribeWorkerDeploymentRequest(namespace="ns", deployment_name="d")
    resp = await client.workflow_service.describe_worker_deployment(req)
    assert isinstance(resp, wsv1.DescribeWorkerDeploymentResponse)
    assert stub.calls == [("DescribeWorkerDeployment", req, {})]  # no metadata, no deadline: nothing extra


async def test_metadata_and_timeout_travel_with_the_call() -> None:
    stub = _Stub()
    client = Client(stub)
    await client.workflow_service.set_worker_deployment_current_version(
        wsv1.SetWorkerDeploymentCurrentVersionRequest(namespace="default", deployment_name="d", build_id="1.0"),
        metadata={"x-trace": "1"}, timeout=datetime.timedelta(seconds=3))
    (_, _, kwargs), = stub.calls
    assert kwargs == {"metadata": (("x-trace", "1"),), "timeout": 3.0}


async def test_errors_are_plain_rpc_errors_and_retry_is_opt_in() -> None:
    unavailable = _error(grpc.StatusCode.UNAVAILABLE, "restarting")
    stub = _Stub([unavailable])
    client = Client(stub)
    req = wsv1.ListWorkflowExecutionsRequest(namespace="default")
    with pytest.raises(RPCError) as info:
        await client.workflow_service.list_workflow_executions(req)  # retry=False: one attempt
    assert info.value.status == "UNAVAILABLE" and len(stub.calls) == 1

    stub = _Stub([unavailable, unavailable])
    client = Client(stub)
    assert isinstance(await client.workflow_service.list_workflow_executions(req, retry=True),
                      wsv1.ListWorkflowExecutionsResponse)
    assert len(stub.calls) == 3

    # A NOT_FOUND whose message mentions a namespace is not taken for a missing namespace here.
    stub = _Stub([_error(grpc.StatusCode.NOT_FOUND, "no worker deployment 'd' in this namespace")])
    with pytest.raises(RPCError) as info:
        await Client(stub).workflow_service.describe_worker_deployment(wsv1.DescribeWorkerDeploymentRequest())
    assert type(info.value) is RPCError and not isinstance(info.value, NamespaceNotFoundError)
    assert info.value.status == "NOT_FOUND"


async def test_a_request_of_another_rpc_is_refused() -> None:
    with pytest.raises(TypeError, match="describe_worker_deployment: expected a DescribeWorkerDeploymentRequest"):
        await Client(_Stub()).workflow_service.describe_worker_deployment(wsv1.ListWorkerDeploymentsRequest())


def test_workflowservice_alias_exports_every_request_and_response() -> None:
    expected = {n for rpc in SERVICE.methods for n in (rpc.input_type.name, rpc.output_type.name)}
    assert set(wsv1.__all__) == expected
    for name in expected:
        assert getattr(wsv1, name) is getattr(svc, name)


def test_alias_modules_export_temporal_names() -> None:
    for name in ("WorkerDeploymentVersion", "WorkerDeploymentOptions", "RoutingConfig", "WorkerDeploymentInfo",
                 "WorkerDeploymentVersionSummary", "WorkerDeploymentSummary"):
        assert name in depv1.__all__ and getattr(depv1, name).DESCRIPTOR.name == name
    for name in ("VersioningOverride", "WorkflowExecutionOptions", "WorkflowExecutionVersioningInfo",
                 "WorkflowExecutionInfo"):
        assert name in wfv1.__all__ and getattr(wfv1, name).DESCRIPTOR.name == name
    assert enumsv1.VersioningBehavior.Value("VERSIONING_BEHAVIOR_PINNED") == 1
    assert enumsv1.EventType.Name(43) == "EVENT_TYPE_WORKFLOW_EXECUTION_OPTIONS_UPDATED"
    assert enumsv1.WorkflowExecutionStatus.Value("WORKFLOW_EXECUTION_STATUS_RUNNING") == 1
    for name in ("VersionDrainageStatus", "WorkerDeploymentVersionStatus"):
        assert name in enumsv1.__all__
    resp = wsv1.DescribeWorkerDeploymentResponse()
    summary = resp.worker_deployment_info.version_summaries.add()
    summary.deployment_version.deployment_name, summary.deployment_version.build_id = "my-deployment", "1.0"
    assert resp.worker_deployment_info.version_summaries[0].deployment_version.build_id == "1.0"
