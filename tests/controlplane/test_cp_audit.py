"""Security issue 26, finding 7: the audit log has no gaps, carries no payloads, and a flood of denials cannot flood it.

Every call that ends or repairs a run, changes a schedule or a deployment's routing writes one
``spindle.audit`` line naming who, what and the outcome; UNAUTHENTICATED and PERMISSION_DENIED
calls of any RPC are audited too, aggregated per principal (or address) per window.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import uuid

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from _auth_world import World, bearer, make_world

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.controlplane.auth import _audit, _rpc_policy
from spindle.controlplane.auth._audit import OVERFLOW, DenialAudit

SECRET = "SECRET-PAYLOAD-7f3a"


def secret_payloads() -> pb.Payloads:
    return pb.Payloads(payloads=[pb.Payload(metadata={"encoding": b"json/plain"}, data=f'"{SECRET}"'.encode())])


def audit_lines(caplog: pytest.LogCaptureFixture) -> list[dict[str, Any]]:
    return [json.loads(r.getMessage()) for r in caplog.records if r.name == "spindle.audit"]


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[World]:
    w = await make_world(tmp_path)
    try:
        yield w
    finally:
        await w.close()


def schedule() -> pb.Schedule:
    return pb.Schedule(spec=pb.ScheduleSpec(cron_expressions=["0 0 1 1 *"]), action=pb.ScheduleActionStartWorkflow(
        workflow_id="yearly", workflow_type="W", task_queue="qb", input=secret_payloads(),
        memo=pb.Memo(fields={"m": secret_payloads().payloads[0]})))


async def test_each_newly_audited_action_writes_one_line_with_ids_and_no_payload(
        world: World, caplog: pytest.LogCaptureFixture) -> None:
    w = world
    caplog.set_level("INFO", logger="spindle.audit")
    admin = f"key:{w.key_ids['admin']} (admin)"
    wf_b = pb.WorkflowExecution(workflow_id="ns-b-wf")
    wf_a = pb.WorkflowExecution(workflow_id="ns-a-wf")
    calls: list[tuple[str, Any, str]] = [
        ("CreateSchedule", svc.CreateScheduleRequest(namespace="ns-b", schedule_id="s1", schedule=schedule(),
                                                     request_id=uuid.uuid4().hex), "schedule/ns-b/s1"),
        ("UpdateSchedule", svc.UpdateScheduleRequest(namespace="ns-b", schedule_id="s1", schedule=schedule()),
         "schedule/ns-b/s1"),
        ("PatchSchedule", svc.PatchScheduleRequest(namespace="ns-b", schedule_id="s1", patch=svc.SchedulePatch(
            backfill_request=[svc.ScheduleBackfillRequest(start_time_ms=1, end_time_ms=2)])), "schedule/ns-b/s1"),
        ("DeleteSchedule", svc.DeleteScheduleRequest(namespace="ns-b", schedule_id="s1"), "schedule/ns-b/s1"),
        ("RequestCancelWorkflowExecution", svc.RequestCancelWorkflowExecutionRequest(
            namespace="ns-b", workflow_execution=wf_b, reason="cancel-why"), "workflow/ns-b/ns-b-wf"),
        ("TerminateWorkflowExecution", svc.TerminateWorkflowExecutionRequest(
            namespace="ns-b", workflow_execution=wf_b, reason="terminate-why", details=secret_payloads()),
         "workflow/ns-b/ns-b-wf"),
        ("ResetWorkflowExecution", svc.ResetWorkflowExecutionRequest(
            namespace="ns-a", workflow_execution=wf_a, reason="reset-why", workflow_task_finish_event_id=4,
            request_id=uuid.uuid4().hex), "workflow/ns-a/ns-a-wf"),
        ("UpdateWorkflowExecutionOptions", svc.UpdateWorkflowExecutionOptionsRequest(
            namespace="ns-a", workflow_execution=wf_a, update_mask={"paths": ["versioning_override"]}),
         "workflow/ns-a/ns-a-wf"),
        ("SetWorkerDeploymentCurrentVersion", svc.SetWorkerDeploymentCurrentVersionRequest(
            namespace="ns-a", deployment_name="orders", build_id="v1"), "deployment/ns-a/orders"),
        ("SetWorkerDeploymentRampingVersion", svc.SetWorkerDeploymentRampingVersionRequest(
            namespace="ns-a", deployment_name="orders", build_id="v2", percentage=10), "deployment/ns-a/orders"),
    ]
    outcomes = {}
    for rpc, req, target in calls:
        caplog.clear()
        status, _ = await w.call(rpc, req, bearer(w.keys["admin"]))
        lines = audit_lines(caplog)
        assert [(x["action"], x["target"], x["principal"]) for x in lines] == [(rpc, target, admin)], (rpc, lines)
        outcome = lines[0]["outcome"]
        assert (outcome == "ok") == (status.name == "OK") and outcome.startswith("ok" if outcome == "ok" else status.name)
        outcomes[rpc] = (outcome, lines[0]["details"])
        assert SECRET not in caplog.text and SECRET.encode().hex() not in caplog.text
    # ids, reasons and the reset point are there; the payloads are named as omitted, never written
    assert outcomes["TerminateWorkflowExecution"][0] == "ok"
    term = outcomes["TerminateWorkflowExecution"][1]
    assert term["reason"] == "terminate-why" and term["workflow_execution"]["workflow_id"] == "ns-b-wf"
    assert term["omitted"] == ["details"] and "details" not in {k for k in term if k != "omitted"}
    assert outcomes["RequestCancelWorkflowExecution"][1]["reason"] == "cancel-why"
    assert outcomes["ResetWorkflowExecution"][1]["workflow_task_finish_event_id"] == "4"
    assert outcomes["ResetWorkflowExecution"][1]["reason"] == "reset-why"
    created = outcomes["CreateSchedule"]
    assert created[0] == "ok" and sorted(created[1]["omitted"]) == ["schedule.action.input", "schedule.action.memo"]
    assert outcomes["PatchSchedule"][0] == "ok"
    assert outcomes["PatchSchedule"][1]["patch"]["backfill_request"][0]["end_time_ms"] == "2"
    # a signal carries data, not an operator's decision: it is not audited (see docs/SECURITY.md)
    caplog.clear()
    await w.ok("SignalWorkflowExecution", svc.SignalWorkflowExecutionRequest(
        namespace="ns-a", workflow_execution=wf_a, signal_name="go", input=secret_payloads(),
        request_id=uuid.uuid4().hex))
    assert audit_lines(caplog) == []


async def test_any_rpc_whose_rule_says_audit_is_audited(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    """The mechanism, not a list: flag an RPC in the policy (as a new RPC would be) and its calls are audited."""
    rule = _rpc_policy.POLICY["DescribeNamespace"]
    monkeypatch.setitem(_rpc_policy.POLICY, "DescribeNamespace",
                        dataclasses.replace(rule, audit=True, target=lambda r: f"namespace/{r.name}"))
    w = await make_world(tmp_path)
    try:
        caplog.set_level("INFO", logger="spindle.audit")
        caplog.clear()
        await w.ok("DescribeNamespace", svc.DescribeNamespaceRequest(name="ns-b"), "b:writer")
        assert [(x["action"], x["target"], x["outcome"]) for x in audit_lines(caplog)] == [
            ("DescribeNamespace", "namespace/ns-b", "ok")]
    finally:
        await w.close()
    with pytest.raises(ValueError, match="needs a target"):
        _rpc_policy.Rule(_rpc_policy.Scope.NAMESPACE, audit=True)


async def test_a_thousand_denials_of_one_key_make_two_lines_with_the_count(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(_audit, "DENIAL_WINDOW", 3.0)
    w = await make_world(tmp_path)
    try:
        caplog.set_level("INFO", logger="spindle.audit")
        caplog.clear()
        term = svc.TerminateWorkflowExecutionRequest(namespace="ns-a", reason="x", details=secret_payloads(),
                                                     workflow_execution=pb.WorkflowExecution(workflow_id="ns-a-wf"))
        reader = bearer(w.keys["a:reader"])
        wrong = bearer(w.keys["a:reader"][:-4] + "AAAA")
        results = await asyncio.gather(*[w.call("TerminateWorkflowExecution", term, reader) for _ in range(1000)],
                                       *[w.call("StartWorkflowExecution", svc.StartWorkflowExecutionRequest(
                                           namespace="ns-a"), wrong) for _ in range(300)])
        assert {s.name for s, _ in results[:1000]} == {"PERMISSION_DENIED"}
        assert {s.name for s, _ in results[1000:]} == {"UNAUTHENTICATED"}
        loop = asyncio.get_running_loop()
        end = loop.time() + 15
        while len(audit_lines(caplog)) < 4 and loop.time() < end:
            await asyncio.sleep(0.2)
        await asyncio.sleep(0.5)
        lines = audit_lines(caplog)
        reader_name = f"key:{w.key_ids['a:reader']} (a:reader)"
        mine = [x for x in lines if x["principal"] == reader_name]
        anon = [x for x in lines if x["principal"] == "unauthenticated"]
        assert len(mine) == 2 and len(anon) == 2, lines
        first, summary = mine
        assert first["action"] == "TerminateWorkflowExecution" and first["outcome"].startswith("PERMISSION_DENIED")
        assert first["target"] == "workflow/ns-a/ns-a-wf" and first["details"]["reason"] == "x"
        assert summary["action"] == "denials" and summary["details"] == {
            "count": 999, "actions": {"TerminateWorkflowExecution": 999}}
        assert summary["outcome"] == f"999 more denials of {reader_name} in the last 3 s"
        assert anon[0]["outcome"].startswith("UNAUTHENTICATED") and anon[0]["address"].startswith("ipv4:127.0.0.1")
        assert anon[1]["details"]["count"] == 299
        assert anon[1]["outcome"] == f"299 more denials of unauthenticated ({anon[0]['address']}) in the last 3 s"
        assert SECRET not in caplog.text and w.keys["a:reader"] not in caplog.text
    finally:
        await w.close()


def test_denials_past_the_tracked_cap_share_one_count_and_a_late_denial_closes_its_window(
        caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    d = DenialAudit(window=60, max_tracked=10, clock=lambda: now[0])
    caplog.set_level("INFO", logger="spindle.audit")
    for i in range(500):
        d.denied(f"k{i}", f"key {i}", "StartWorkflowExecution", "namespace/a", "PERMISSION_DENIED: no")
    assert d.tracked() == 11  # ten deniers and the overflow count
    lines = audit_lines(caplog)
    assert len(lines) == 11 and lines[-1]["principal"] == OVERFLOW
    caplog.clear()
    now[0] = 61.0  # no event loop here: the window closes at the next denial after it
    d.denied("k0", "key 0", "StartWorkflowExecution", "namespace/a", "PERMISSION_DENIED: no")
    d.flush()
    lines = audit_lines(caplog)
    assert [x["action"] for x in lines] == ["StartWorkflowExecution", "denials"]
    assert lines[1]["principal"] == OVERFLOW and lines[1]["details"]["count"] == 489
    assert d.tracked() == 0
