"""Who may erase (issue 26): namespace admins and system admins erase; readers and up follow jobs.

Each role of the namespace (reader, worker, writer, admin), the admin of another namespace, a
system admin and a caller without a key, on each of the four erasure RPCs; a refused call changes
nothing; the audit line of an erasure names ids and reason, never the run's data.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import sys

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc


def _auth_world() -> Any:
    """tests/controlplane/_auth_world.py (servers with keys of each role), loaded by path (no sys.path change)."""
    spec = importlib.util.spec_from_file_location("auth_world_for_erasure",
                                                  Path(__file__).resolve().parents[1] / "_auth_world.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (its dataclasses look their module up)
    spec.loader.exec_module(module)
    return module


_world = _auth_world()
World, bearer, make_world = _world.World, _world.bearer, _world.make_world

OK, PD, U, NF = grpc.StatusCode.OK, grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.UNAUTHENTICATED, \
    grpc.StatusCode.NOT_FOUND
CALLERS = ("a:reader", "a:worker", "a:writer", "a:admin", "b:admin", "admin", None)
ERASERS = {"a:admin", "admin"}


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[Any]:
    w = await make_world(tmp_path)
    try:
        yield w
    finally:
        await w.close()


def state(w: Any) -> dict[str, Any]:
    """Every table's rows, but of batch_jobs only which jobs exist (an allowed job advances meanwhile)."""
    snap = w.snapshot()
    snap["batch_jobs"] = sorted((r[0], r[1]) for r in snap["batch_jobs"])
    return snap


def md(who: str | None, w: Any) -> tuple[tuple[str, str], ...]:
    return bearer(w.keys[who]) if who else ()


async def test_only_namespace_and_system_admins_erase(world: Any, caplog: pytest.LogCaptureFixture) -> None:
    w = world
    caplog.set_level(logging.INFO, logger="spindle.audit")
    for who in CALLERS:
        before = state(w)
        for rpc, req in (
                ("DeleteWorkflowExecution", svc.DeleteWorkflowExecutionRequest(
                    namespace="ns-a", workflow_execution=pb.WorkflowExecution(workflow_id="no-such-run"))),
                ("StartBatchOperation", svc.StartBatchOperationRequest(
                    namespace="ns-a", job_id=f"job-{who}", visibility_query="WorkflowId = 'no-such-run'",
                    deletion_operation=svc.BatchOperationDeletion(identity="dpo")))):
            status, detail = await w.call(rpc, req, md(who, w))
            want = OK if who in ERASERS else (U if who is None else PD)
            assert status == want, (rpc, who, status, detail)
            if want == PD:
                assert "role 'admin' on namespace 'ns-a'" in detail, detail
            if want != OK:
                assert state(w) == before, (rpc, who)
    # the run of ns-a erased by its admin: the audit line names ids and reason, not the run's input
    await w.ok("DeleteWorkflowExecution", svc.DeleteWorkflowExecutionRequest(
        namespace="ns-a", workflow_execution=pb.WorkflowExecution(workflow_id="ns-a-wf"), reason="gdpr"), "a:admin")
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == "spindle.audit"]
    erased = [x for x in lines if x["action"] == "DeleteWorkflowExecution" and x["outcome"] == "ok"
              and x["target"] == "workflow/ns-a/ns-a-wf"]
    assert len(erased) == 1 and erased[0]["details"]["reason"] == "gdpr"
    assert not any("4111" in r.getMessage() for r in caplog.records)
    # refusals are audited too (how repeated refusals are written is the audit log's business)
    assert any(x["action"] == "DeleteWorkflowExecution" and x["outcome"].startswith("PERMISSION_DENIED")
               for x in lines)


async def test_readers_and_up_follow_jobs(world: Any) -> None:
    w = world
    await w.ok("StartBatchOperation", svc.StartBatchOperationRequest(
        namespace="ns-a", job_id="job-1", visibility_query="WorkflowId = 'nothing'",
        deletion_operation=svc.BatchOperationDeletion()), "a:admin")
    for who in CALLERS:
        want = U if who is None else (PD if who == "b:admin" else OK)
        status, resp = await w.call("DescribeBatchOperation", svc.DescribeBatchOperationRequest(
            namespace="ns-a", job_id="job-1"), md(who, w))
        assert status == want, (who, status, resp)
        if status == OK:
            assert resp.job_id == "job-1"
        status, resp = await w.call("ListBatchOperations", svc.ListBatchOperationsRequest(namespace="ns-a"),
                                    md(who, w))
        assert status == want, (who, status, resp)
        if status == OK:
            assert [o.job_id for o in resp.operation_info] == ["job-1"]
    # a job of another namespace is not found through this one
    status, _ = await w.call("DescribeBatchOperation", svc.DescribeBatchOperationRequest(
        namespace="ns-b", job_id="job-1"), md("admin", w))
    assert status == NF
