"""The client's erasure calls (issue 26): delete_workflow, count_erasure, start_erasure, ErasureJob, list_batch_operations.

Unit tests against a scripted stub check the requests the client sends and what it makes of the answers;
the end-to-end tests at the bottom run them against an in-process control plane.
"""

from __future__ import annotations

import asyncio
import uuid

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from spindle.api import service_pb2 as svc
from spindle.client import BatchOperationDescription, BatchOperationState, Client, ErasureCount, ErasureJob
from spindle.exceptions import RPCError


class Stub:
    """Answers the erasure RPCs from a script and records every request."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.describes: list[svc.DescribeBatchOperationResponse] = []
        self.groups: list[tuple[str, int]] = []
        self.fail_with: grpc.StatusCode | None = None

    def __getattr__(self, name: str) -> Any:
        async def call(req: Any, **_: Any) -> Any:
            self.calls.append((name, req))
            if self.fail_with is not None:
                raise grpc.aio.AioRpcError(self.fail_with, grpc.aio.Metadata(), grpc.aio.Metadata(), details="no")
            if name == "DescribeBatchOperation":
                return self.describes.pop(0) if len(self.describes) > 1 else self.describes[0]
            if name == "ListBatchOperations":
                return svc.ListBatchOperationsResponse(operation_info=self.describes)
            if name == "CountWorkflowExecutions":
                return svc.CountWorkflowExecutionsResponse(
                    count=sum(n for _, n in self.groups),
                    groups=[svc.CountGroup(group_values=[v], count=n)
                            for v, n in self.groups])
            return getattr(svc, f"{name}Response")()

        return call

    def of(self, name: str) -> list[Any]:
        return [r for n, r in self.calls if n == name]


def progress(state: int, total: int, done: int, **kw: Any) -> svc.DescribeBatchOperationResponse:
    return svc.DescribeBatchOperationResponse(
        operation_type=svc.BATCH_OPERATION_TYPE_DELETE, job_id="j1", state=state,  # type: ignore[arg-type]
        start_time_ms=1_700_000_000_000, total_operation_count=total, complete_operation_count=done, **kw)


@pytest.fixture
def stub() -> Stub:
    return Stub()


@pytest.fixture
def client(stub: Stub) -> Client:
    return Client(stub, namespace="ns1", identity="dpo@host")


async def test_delete_workflow_sends_temporals_request(client: Client, stub: Stub) -> None:
    await client.delete_workflow("wf-1", reason="gdpr request 7")
    await client.delete_workflow("wf-1", "run-2", reason="gdpr request 7")
    first, second = stub.of("DeleteWorkflowExecution")
    assert (first.namespace, first.workflow_execution.workflow_id, first.workflow_execution.run_id) == ("ns1", "wf-1", "")
    assert (first.reason, first.identity) == ("gdpr request 7", "dpo@host")
    assert second.workflow_execution.run_id == "run-2"
    # the handle's form: its run id (none: the current run)
    await client.get_workflow_handle("wf-2", run_id="r9").delete(reason="x")
    await client.get_workflow_handle("wf-3").delete(reason="x")
    third, fourth = stub.of("DeleteWorkflowExecution")[2:]
    assert (third.workflow_execution.workflow_id, third.workflow_execution.run_id) == ("wf-2", "r9")
    assert (fourth.workflow_execution.workflow_id, fourth.workflow_execution.run_id) == ("wf-3", "")


async def test_bad_arguments_send_nothing(client: Client, stub: Stub) -> None:
    with pytest.raises(ValueError, match="reason"):
        await client.delete_workflow("wf-1", reason=" ")
    with pytest.raises(ValueError, match="workflow_id"):
        await client.delete_workflow("", reason="x")
    with pytest.raises(ValueError, match="query"):
        await client.start_erasure("  ", reason="x")
    with pytest.raises(ValueError, match="reason"):
        await client.start_erasure("CustomerId = 'c'", reason="")
    with pytest.raises(ValueError, match="job_id"):
        await client.start_erasure("CustomerId = 'c'", reason="x", job_id=" ")
    with pytest.raises(ValueError, match="query"):
        await client.count_erasure("")
    assert stub.calls == []


async def test_refusals_are_rpc_errors_with_the_status(client: Client, stub: Stub) -> None:
    stub.fail_with = grpc.StatusCode.PERMISSION_DENIED
    with pytest.raises(RPCError) as e:
        await client.delete_workflow("wf-1", reason="x")
    assert e.value.status == "PERMISSION_DENIED"
    with pytest.raises(RPCError) as e:
        await client.start_erasure("CustomerId = 'c'", reason="x")
    assert e.value.status == "PERMISSION_DENIED"
    stub.fail_with = grpc.StatusCode.NOT_FOUND
    with pytest.raises(RPCError) as e:
        await ErasureJob(client, "nope").describe()
    assert type(e.value) is RPCError and e.value.status == "NOT_FOUND"  # a job, not a workflow


async def test_count_erasure_is_one_count_by_status(client: Client, stub: Stub) -> None:
    stub.groups = [("Running", 3), ("Completed", 40)]
    assert await client.count_erasure("CustomerId = 'c-42'") == ErasureCount("CustomerId = 'c-42'", 43, 3)
    (req,) = stub.of("CountWorkflowExecutions")
    assert req.query == "CustomerId = 'c-42' GROUP BY ExecutionStatus"
    assert not stub.of("StartBatchOperation") and not stub.of("DeleteWorkflowExecution")  # a dry run changes nothing


async def test_start_erasure_and_follow_the_job(client: Client, stub: Stub) -> None:
    job = await client.start_erasure("CustomerId = 'c-42'", reason="gdpr 7")
    (req,) = stub.of("StartBatchOperation")
    assert req.job_id == job.job_id and req.job_id.startswith("erasure-")
    uuid.UUID(req.job_id.removeprefix("erasure-"))
    assert (req.namespace, req.visibility_query, req.reason) == ("ns1", "CustomerId = 'c-42'", "gdpr 7")
    assert req.HasField("deletion_operation") and req.deletion_operation.identity == "dpo@host"
    named = await client.start_erasure("CustomerId = 'c-42'", reason="gdpr 7", job_id="gdpr-7")
    assert named.job_id == "gdpr-7" == stub.of("StartBatchOperation")[1].job_id

    stub.describes = [progress(svc.BATCH_OPERATION_STATE_RUNNING, 5, 1),
                      progress(svc.BATCH_OPERATION_STATE_RUNNING, 9, 6, terminated_count=2),
                      progress(svc.BATCH_OPERATION_STATE_COMPLETED, 10, 10, terminated_count=2, archived_count=1,
                               close_time_ms=1_700_000_005_000)]
    seen: list[BatchOperationDescription] = []
    final = await job.wait(poll_interval=0.01, on_progress=seen.append)
    assert [(d.total, d.completed) for d in seen] == [(5, 1), (9, 6), (10, 10)]
    assert final.done and final.state is BatchOperationState.COMPLETED and final.operation_type == "DELETE"
    assert (final.terminated, final.archived) == (2, 1)
    assert final.close_time is not None and (final.close_time - final.start_time).total_seconds() == 5  # type: ignore[operator]
    assert all(r.job_id == job.job_id for r in stub.of("DescribeBatchOperation"))

    stub.describes = [progress(svc.BATCH_OPERATION_STATE_RUNNING, 5, 1)]
    with pytest.raises(TimeoutError, match="goes on in the server"):
        await job.wait(poll_interval=0.01, timeout=0.05)
    with pytest.raises(ValueError, match="poll_interval"):
        await job.wait(poll_interval=0)
    listed = await client.list_batch_operations()
    assert [d.job_id for d in listed] == ["j1"] and not listed[0].done and listed[0].close_time is None


def test_the_raw_service_has_the_erasure_rpcs(client: Client) -> None:
    for name in ("delete_workflow_execution", "start_batch_operation", "describe_batch_operation",
                 "list_batch_operations"):
        assert callable(getattr(client.workflow_service, name))


# ---------------------------------------------------------------------------------------------- end to end
@pytest.fixture
async def live(tmp_path: Path) -> AsyncIterator[Client]:
    from spindle.controlplane.config import ServerConfig
    from spindle.controlplane.server import ControlPlane, serve
    from spindle.controlplane.store.sqlite import SqliteStore

    cp = ControlPlane(SqliteStore(str(tmp_path / "e.db")), ServerConfig(num_shards=2),
                      default_search_attributes={"CustomerId": svc.SEARCH_ATTRIBUTE_TYPE_KEYWORD})
    await cp.start()
    server, port = await serve(cp, "127.0.0.1", 0)
    client = await Client.connect(f"127.0.0.1:{port}")
    try:
        yield client
    finally:
        await client.close()
        await server.stop(0)
        await cp.stop()


async def settle(client: Client, query: str, want: int, timeout: float = 10) -> None:
    end = asyncio.get_running_loop().time() + timeout
    while (got := await client.count_workflows(query)) != want:
        assert asyncio.get_running_loop().time() < end, f"{query!r}: {got}, expected {want}"
        await asyncio.sleep(0.05)


async def test_end_to_end_delete_dry_run_and_job(live: Client) -> None:
    client = live
    for i in range(3):
        await client.start_workflow("Order", id=f"c42-{i}", task_queue="nobody",
                                    search_attributes={"CustomerId": "c-42"})
    await client.start_workflow("Order", id="c7", task_queue="nobody", search_attributes={"CustomerId": "c-7"})
    await client.start_workflow("Order", id="solo", task_queue="nobody", search_attributes={"CustomerId": "c-1"})
    await settle(client, "", 5)

    # one run: gone from everywhere; doing it again is OK
    await client.delete_workflow("solo", reason="gdpr 1")
    await client.delete_workflow("solo", reason="gdpr 1")
    await settle(client, "CustomerId = 'c-1'", 0)

    # the dry run counts and changes nothing
    assert await client.count_erasure("CustomerId = 'c-42'") == ErasureCount("CustomerId = 'c-42'", 3, 3)
    assert await client.count_workflows("CustomerId = 'c-42'") == 3

    job = await client.start_erasure("CustomerId = 'c-42'", reason="gdpr 2", job_id="gdpr-2")
    final = await job.wait(poll_interval=0.1, timeout=30)
    assert final.state is BatchOperationState.COMPLETED, final
    assert (final.total, final.completed, final.terminated, final.failed) == (3, 3, 3, 0)
    assert final.query == "CustomerId = 'c-42'" and final.reason == "gdpr 2"
    await settle(client, "CustomerId = 'c-42'", 0)
    assert await client.count_workflows("") == 1  # c-7 untouched
    # the same job again: accepted, nothing new; another request under its id: ALREADY_EXISTS
    assert (await client.start_erasure("CustomerId = 'c-42'", reason="gdpr 2", job_id="gdpr-2")).job_id == "gdpr-2"
    with pytest.raises(RPCError) as e:
        await client.start_erasure("CustomerId = 'c-7'", reason="gdpr 2", job_id="gdpr-2")
    assert e.value.status == "ALREADY_EXISTS"
    assert [d.job_id for d in await client.list_batch_operations()] == ["gdpr-2"]
    with pytest.raises(RPCError) as e:
        await client.start_erasure("CustomerId = ", reason="x")
    assert e.value.status == "INVALID_ARGUMENT"
