"""The client's versioning calls against a fake stub: describe's versioning_info, overrides one by one and in batch."""

from __future__ import annotations

from typing import Any

import pytest

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.client import Client, WorkflowExecutionVersioningInfo
from spindle.common import (
    AutoUpgradeVersioningOverride,
    PinnedVersioningOverride,
    VersioningBehavior,
    WorkerDeploymentVersion,
)

V1 = WorkerDeploymentVersion("my-deployment", "1.0")


class _Stub:
    def __init__(self, describe: svc.DescribeWorkflowExecutionResponse | None = None,
                 listed: list[tuple[str, str]] = ()) -> None:  # type: ignore[assignment]
        self.calls: list[tuple[str, Any]] = []
        self.describe = describe or svc.DescribeWorkflowExecutionResponse()
        self.listed = listed

    async def UpdateWorkflowExecutionOptions(self, req: Any, **_: Any) -> Any:
        self.calls.append(("UpdateWorkflowExecutionOptions", req))
        return svc.UpdateWorkflowExecutionOptionsResponse(workflow_execution_options=req.workflow_execution_options)

    async def DescribeWorkflowExecution(self, req: Any, **_: Any) -> Any:
        self.calls.append(("DescribeWorkflowExecution", req))
        return self.describe

    async def ListWorkflowExecutions(self, req: Any, **_: Any) -> Any:
        self.calls.append(("ListWorkflowExecutions", req))
        return svc.ListWorkflowExecutionsResponse(executions=[
            svc.WorkflowExecutionInfo(execution=pb.WorkflowExecution(workflow_id=w, run_id=r)) for w, r in self.listed])


async def test_set_versioning_override_sends_update_options_with_the_mask() -> None:
    stub = _Stub()
    handle = Client(stub, identity="ops").get_workflow_handle("wf", run_id="r1")
    await handle.set_versioning_override(PinnedVersioningOverride(V1))
    await handle.set_versioning_override(AutoUpgradeVersioningOverride())
    await handle.set_versioning_override(None)
    pinned, auto, unset = (req for _, req in stub.calls)
    for req in (pinned, auto, unset):
        assert list(req.update_mask.paths) == ["versioning_override"]
        assert req.workflow_execution == pb.WorkflowExecution(workflow_id="wf", run_id="r1")
        assert req.namespace == "default" and req.identity == "ops"
    assert pinned.workflow_execution_options.versioning_override.pinned.version == pb.WorkerDeploymentVersion(
        deployment_name="my-deployment", build_id="1.0")
    assert auto.workflow_execution_options.versioning_override.auto_upgrade
    assert unset.HasField("workflow_execution_options")
    assert not unset.workflow_execution_options.HasField("versioning_override")
    with pytest.raises(TypeError, match="PinnedVersioningOverride"):
        await handle.set_versioning_override(V1)  # type: ignore[arg-type]


async def test_describe_reads_the_versioning_info() -> None:
    resp = svc.DescribeWorkflowExecutionResponse()
    info = resp.workflow_execution_info
    info.execution.workflow_id, info.execution.run_id = "wf", "r1"
    info.status = pb.WORKFLOW_EXECUTION_STATUS_RUNNING
    info.versioning_info.behavior = pb.VERSIONING_BEHAVIOR_PINNED
    info.versioning_info.deployment_version.CopyFrom(V1._to_proto())
    info.versioning_info.versioning_override.CopyFrom(AutoUpgradeVersioningOverride()._to_proto())
    desc = await Client(_Stub(resp)).get_workflow_handle("wf").describe()
    assert desc.versioning_info == WorkflowExecutionVersioningInfo(
        behavior=VersioningBehavior.PINNED, deployment_version=V1,
        versioning_override=AutoUpgradeVersioningOverride(), pinned_version=None)

    resp.workflow_execution_info.ClearField("versioning_info")
    assert (await Client(_Stub(resp)).get_workflow_handle("wf").describe()).versioning_info is None


async def test_batch_sets_the_override_on_every_match() -> None:
    stub = _Stub(listed=[("a", "ra"), ("b", "rb")])
    summary = await Client(stub).batch_set_versioning_override("WorkflowType = 'Pinned'",
                                                               PinnedVersioningOverride(V1))
    assert summary.operation == "set_versioning_override" and len(summary.done) == 2 and not summary.failed
    sent = {(r.workflow_execution.workflow_id, r.workflow_execution.run_id): r
            for n, r in stub.calls if n == "UpdateWorkflowExecutionOptions"}
    assert set(sent) == {("a", "ra"), ("b", "rb")}
    assert all(r.workflow_execution_options.versioning_override.pinned.version.build_id == "1.0"
               for r in sent.values())
    unset = await Client(stub).batch_set_versioning_override("WorkflowType = 'Pinned'", None)
    assert unset.batch_id != summary.batch_id  # another override is another batch
    with pytest.raises(TypeError):
        await Client(stub).batch_set_versioning_override("WorkflowType = 'Pinned'", "pinned")  # type: ignore[arg-type]
