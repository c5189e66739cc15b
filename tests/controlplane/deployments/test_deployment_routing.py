"""Worker build versioning on one control plane: where each workflow task goes, poll by poll.

Each test drives workers at the wire level (``_raw_worker``): a poll names its build, a
completion names the workflow's behavior, so a task that reaches the wrong build fails the
test at that poll.
"""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest

from spindle_procs import DevServer
from versioned_wire import AUTO, DEPLOYMENT, PINNED, QUEUE, Wire, complete_command, control_plane
from waiting import eventually

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.api import service_pb2_grpc
from spindle.controlplane.deployments import ramp_bucket

pytestmark = pytest.mark.timeout(90)

STATUS = svc.WorkerDeploymentVersionStatus
DRAIN = svc.VersionDrainageStatus


async def take(w: Wire, build: str | None, wid: str, *, wait: float = 3.0) -> svc.PollWorkflowTaskQueueResponse:
    t = await w.poll(build, wait=wait)
    assert t.task_token, f"no task reached build {build!r} (expected {wid}'s)"
    assert t.workflow_execution.workflow_id == wid, f"build {build!r} got {t.workflow_execution.workflow_id}, not {wid}"
    return t


async def nothing_for(w: Wire, build: str | None, wait: float = 1.0) -> None:
    t = await w.poll(build, wait=wait)
    assert not t.task_token, f"build {build!r} got a task of {t.workflow_execution.workflow_id} it must not run"


async def versions(w: Wire) -> dict[str, svc.WorkerDeploymentVersionSummary]:
    return {s.deployment_version.build_id: s for s in (await w.describe_deployment()).version_summaries}


async def drainage(w: Wire, build: str, expected: tuple[int, int, int]) -> None:
    """``build``'s (status, drainage status, open pinned executions) reach ``expected`` (visibility is written
    behind the history)."""
    async def check() -> None:
        v = (await versions(w))[build]
        assert (v.status, v.drainage_status, v.open_pinned_executions) == expected

    await eventually(check, f"drainage of {build}", timeout=10)


async def test_unversioned_workers_work_as_before_and_the_queue_is_not_versioned(tmp_path: Path) -> None:
    async with control_plane(tmp_path / "db") as (cp, w, _):
        await w.start("plain")
        t = await take(w, None, "plain")
        await w.complete(t, None, commands=[complete_command()])
        q = cp.engine.matching.queue(cp.namespaces.get("default").id, QUEUE, 0)
        assert q.route is None and not cp.engine.matching.versioned_namespaces


async def test_pinned_stays_on_its_build_and_new_runs_go_to_the_current_version(tmp_path: Path) -> None:
    async with control_plane(tmp_path / "db") as (cp, w, _):
        await nothing_for(w, "1.0", wait=0.5)  # v1's worker polls: the deployment and version become known
        await w.set_current("1.0")
        await w.start("a")
        await nothing_for(w, None, wait=0.5)  # an unversioned worker does not get it any more
        t = await take(w, "1.0", "a")
        await w.complete(t, "1.0", PINNED)
        await nothing_for(w, "2.0", wait=0.5)
        await w.set_current("2.0")
        await w.signal("a")
        await nothing_for(w, "2.0")  # pinned: never on 2.0
        t = await take(w, "1.0", "a")
        assert t.history.events[-1].workflow_task_started_event_attributes.deployment_version.build_id == "1.0"
        await w.complete(t, "1.0", PINNED)
        d = (await w.describe("a")).workflow_execution_info.versioning_info
        assert (d.behavior, d.deployment_version.build_id, d.pinned_version.build_id) == (PINNED, "1.0", "1.0")
        await w.start("b")  # new runs: the current version
        await nothing_for(w, "1.0")
        await take(w, "2.0", "b")
        # what still runs on the old build is found by query
        query = "TemporalWorkerDeploymentVersion = 'orders.1.0' AND ExecutionStatus = 'Running'"

        async def still_on_1() -> None:
            assert await w.list_ids(query) == {"a"}

        await eventually(still_on_1, "the query of what runs on 1.0", timeout=10)
        assert (await versions(w))["2.0"].status == STATUS.WORKER_DEPLOYMENT_VERSION_STATUS_CURRENT
        await drainage(w, "1.0", (STATUS.WORKER_DEPLOYMENT_VERSION_STATUS_DRAINING,
                                  DRAIN.VERSION_DRAINAGE_STATUS_DRAINING, 1))
        await w.signal("a")
        t = await take(w, "1.0", "a")
        await w.complete(t, "1.0", PINNED, commands=[complete_command()])
        await drainage(w, "1.0", (STATUS.WORKER_DEPLOYMENT_VERSION_STATUS_DRAINED,
                                  DRAIN.VERSION_DRAINAGE_STATUS_DRAINED, 0))


async def test_auto_upgrade_moves_to_the_current_version_at_its_next_task(tmp_path: Path) -> None:
    async with control_plane(tmp_path / "db") as (cp, w, _):
        await nothing_for(w, "1.0", wait=0.5)
        await nothing_for(w, "2.0", wait=0.5)
        await w.set_current("1.0")
        await w.start("u")
        t = await take(w, "1.0", "u")
        await w.complete(t, "1.0", AUTO, sticky_queue="sticky-v1")
        await w.set_current("2.0")
        await w.signal("u")
        # neither the sticky queue of the 1.0 worker holding it nor 1.0's normal queue
        await nothing_for(w, "1.0", wait=0.5)
        t = await w.poll("1.0", queue="sticky-v1", sticky=True, wait=0.5)
        assert not t.task_token, "the auto-upgrade task went to the old build's sticky queue"
        t = await take(w, "2.0", "u")
        assert t.previous_started_event_id == 0 or len(t.history.events) > 3  # full history for the new build
        await w.complete(t, "2.0", AUTO)
        d = (await w.describe("u")).workflow_execution_info.versioning_info
        assert (d.behavior, d.deployment_version.build_id, d.pinned_version.build_id) == (AUTO, "2.0", "")


async def test_a_task_queued_before_the_current_version_changes_moves_with_it(tmp_path: Path) -> None:
    async with control_plane(tmp_path / "db") as (cp, w, _):
        await nothing_for(w, "1.0", wait=0.3)
        await nothing_for(w, "2.0", wait=0.3)
        await w.set_current("1.0")
        await w.start("queued")  # nobody polls: it waits in the queue for 1.0
        await w.set_current("2.0")
        await nothing_for(w, "1.0", wait=0.5)
        await take(w, "2.0", "queued")


async def test_ramping_sends_the_share_the_rule_gives_each_workflow_id(tmp_path: Path) -> None:
    n = 1000
    # the starts come before any worker polls: admission must not hold them back for a worker
    async with control_plane(tmp_path / "db", start_admission_max_pending=2 * n) as (cp, w, _):
        await nothing_for(w, "1.0", wait=0.3)
        await nothing_for(w, "2.0", wait=0.3)
        await w.set_current("1.0")
        await w.set_ramping("2.0", 30.0)
        ids = [f"ramp-{i}" for i in range(n)]
        for wid in ids:
            await w.start(wid)
        got: dict[str, str] = {}
        for build in ("1.0", "2.0"):
            while True:
                t = await w.poll(build, wait=0.5)
                if not t.task_token:
                    break
                got[t.workflow_execution.workflow_id] = build
        assert len(got) == n, f"{n - len(got)} tasks reached no build"
        expected = {wid: ("2.0" if ramp_bucket(wid) < 30.0 else "1.0") for wid in ids}
        assert got == expected, "a task went to the build the ramp did not give its workflow id"
        share = sum(1 for b in got.values() if b == "2.0") / n
        assert 0.25 <= share <= 0.35, f"ramping share {share:.3f} for 30%"
        vs = await versions(w)
        assert vs["2.0"].status == STATUS.WORKER_DEPLOYMENT_VERSION_STATUS_RAMPING


async def test_a_versioning_override_moves_a_task_stuck_on_a_build_with_no_worker(tmp_path: Path) -> None:
    async with control_plane(tmp_path / "db") as (cp, w, _):
        await nothing_for(w, "1.0", wait=0.3)
        await nothing_for(w, "2.0", wait=0.3)
        await w.set_current("1.0")
        await w.start("stuck")
        t = await take(w, "1.0", "stuck")
        await w.complete(t, "1.0", PINNED)
        await w.set_current("2.0")
        await w.signal("stuck")  # 1.0's workers are gone: the task waits for them
        await nothing_for(w, "2.0", wait=0.5)
        r = await w.pin("stuck", "2.0")
        assert r.workflow_execution_options.versioning_override.pinned.version.build_id == "2.0"
        t = await take(w, "2.0", "stuck")
        await w.complete(t, "2.0", PINNED)
        d = (await w.describe("stuck")).workflow_execution_info.versioning_info
        assert d.versioning_override.pinned.version.build_id == "2.0" and d.pinned_version.build_id == "2.0"
        events = [e.event_type for e in t.history.events]
        assert pb.EVENT_TYPE_WORKFLOW_EXECUTION_OPTIONS_UPDATED in events
        await w.pin("stuck", None)  # removed: back to its own behavior (pinned to what it last ran on: 2.0)
        d = (await w.describe("stuck")).workflow_execution_info.versioning_info
        assert not d.HasField("versioning_override") and d.pinned_version.build_id == "2.0"


async def test_routing_changes_are_refused_with_precise_errors_and_change_nothing(tmp_path: Path) -> None:
    async with control_plane(tmp_path / "db") as (cp, w, _):
        with pytest.raises(grpc.aio.AioRpcError) as e:
            await w.set_current("9.9")
        assert e.value.code() == grpc.StatusCode.NOT_FOUND and "no worker deployment 'orders'" in (e.value.details() or "")
        await nothing_for(w, "1.0", wait=0.3)
        with pytest.raises(grpc.aio.AioRpcError) as e:
            await w.set_current("9.9")
        assert e.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "no poller of version 'orders.9.9' has been seen" in (e.value.details() or "")
        assert (await w.describe_deployment()).routing_config.current_deployment_version.build_id == ""
        with pytest.raises(grpc.aio.AioRpcError) as e:
            await w.set_ramping("1.0", 150.0)
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "percentage" in (e.value.details() or "")
        stale = (await w.stub.DescribeWorkerDeployment(svc.DescribeWorkerDeploymentRequest(
            namespace="default", deployment_name=DEPLOYMENT))).conflict_token
        r = await w.set_current("9.9", allow_no_pollers=True)  # forced
        assert r.conflict_token != stale
        with pytest.raises(grpc.aio.AioRpcError) as e:
            await w.set_current("1.0", conflict_token=stale)
        assert e.value.code() == grpc.StatusCode.FAILED_PRECONDITION and "conflict_token" in (e.value.details() or "")
        assert (await w.describe_deployment()).routing_config.current_deployment_version.build_id == "9.9"
        with pytest.raises(grpc.aio.AioRpcError) as e:
            req = svc.PollWorkflowTaskQueueRequest(namespace="default", task_queue=QUEUE)
            req.deployment_options.use_worker_versioning = True
            req.deployment_options.version.CopyFrom(pb.WorkerDeploymentVersion(deployment_name="a.b", build_id="1"))
            await w.stub.PollWorkflowTaskQueue(req, timeout=5)
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "deployment_options.version.deployment_name: must not contain '.'" in (e.value.details() or "")
        # the run's build is the server's to say: a client cannot set it (nor hide a run from a drainage count)
        start = svc.StartWorkflowExecutionRequest(namespace="default", workflow_id="liar", workflow_type="Order",
                                                  task_queue=QUEUE, request_id="liar")
        start.search_attributes.indexed_fields["TemporalWorkerDeploymentVersion"].data = b'"orders.9.9"'
        with pytest.raises(grpc.aio.AioRpcError) as e:
            await w.stub.StartWorkflowExecution(start, timeout=5)
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "'TemporalWorkerDeploymentVersion' is set by the server" in (e.value.details() or "")


async def test_a_pin_and_the_routing_survive_a_kill_9_of_the_server(tmp_path: Path) -> None:
    server = DevServer(tmp_path / "db").start()
    try:
        async with grpc.aio.insecure_channel(server.address) as ch:
            w = Wire(service_pb2_grpc.WorkflowServiceStub(ch))
            await nothing_for(w, "1.0", wait=0.3)
            await nothing_for(w, "2.0", wait=0.3)
            await w.set_current("1.0")
            await w.start("p")
            t = await take(w, "1.0", "p")
            await w.complete(t, "1.0", PINNED)
            await w.set_current("2.0")
            await w.signal("p")  # its task is queued for 1.0 when the server dies
        server.kill()
        server.start()
        async with grpc.aio.insecure_channel(server.address) as ch:
            w = Wire(service_pb2_grpc.WorkflowServiceStub(ch))
            await nothing_for(w, "2.0", wait=1.0)  # rebuilt from the store and the history: still pinned
            await take(w, "1.0", "p")
            await w.start("fresh")
            await nothing_for(w, "1.0", wait=0.5)
            await take(w, "2.0", "fresh")
    finally:
        server.stop()


async def test_rollback_runbook_a_run_reset_after_the_bad_build_is_rolled_back_runs_on_the_good_one(tmp_path: Path) -> None:
    """"Roll back the worker build; reset executions": a run started on the bad build 2.0 is pinned there and
    fails; 1.0 is made current again and the run is reset to its first workflow task: the new run is not
    pinned to 2.0 (its copied events name 2.0), so its task goes to 1.0."""
    async with control_plane(tmp_path / "db") as (cp, w, _):
        await nothing_for(w, "1.0", wait=0.3)
        await nothing_for(w, "2.0", wait=0.3)
        await w.set_current("2.0")  # the bad deploy
        run_id = await w.start("victim")
        t = await take(w, "2.0", "victim")
        await w.complete(t, "2.0", PINNED)
        await w.signal("victim")
        t = await take(w, "2.0", "victim")
        await w.stub.RespondWorkflowTaskFailed(svc.RespondWorkflowTaskFailedRequest(
            task_token=t.task_token, cause=pb.WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR,
            failure=pb.Failure(message="bad build"), identity="worker-2.0", namespace="default"), timeout=10)
        await w.set_current("1.0")  # 1. roll back the build
        first_completed = next(e.event_id for e in t.history.events
                               if e.event_type == pb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED)
        r = await w.stub.ResetWorkflowExecution(svc.ResetWorkflowExecutionRequest(  # 2. reset onto it
            namespace="default", workflow_execution=pb.WorkflowExecution(workflow_id="victim", run_id=run_id),
            reason="roll back 2.0", workflow_task_finish_event_id=first_completed, request_id="rb-1"), timeout=10)
        await nothing_for(w, "2.0", wait=1.0)
        t = await take(w, "1.0", "victim")
        assert t.workflow_execution.run_id == r.run_id
        await w.complete(t, "1.0", PINNED)
        d = (await w.describe("victim")).workflow_execution_info.versioning_info
        assert (d.deployment_version.build_id, d.pinned_version.build_id) == ("1.0", "1.0")


async def test_a_build_id_with_a_quote_is_described_not_parsed(tmp_path: Path) -> None:
    async with control_plane(tmp_path / "db") as (cp, w, _):
        await nothing_for(w, "it's 1.0", wait=0.3)
        await nothing_for(w, "2.0", wait=0.3)
        await w.set_current("2.0")  # the quoted build is counted for drainage: its id goes into a filter
        vs = await versions(w)
        assert vs["it's 1.0"].status == STATUS.WORKER_DEPLOYMENT_VERSION_STATUS_INACTIVE
