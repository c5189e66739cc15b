"""WorkflowIDConflictPolicy TERMINATE_EXISTING on the engine: one transaction, idempotent, signal-with-start."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from _cp_server import raw_history

from spindle import workflow
from spindle.api import messages_pb2 as pb
from spindle.client import Client, WorkflowExecutionStatus
from spindle.common import WorkflowIDConflictPolicy
from spindle.controlplane import embedded
from spindle.controlplane.store import Mutation
from spindle.exceptions import RPCError

pytestmark = pytest.mark.timeout(60)


@workflow.defn
class Waits:
    @workflow.run
    async def run(self, tag: str) -> str:
        await workflow.wait_condition(lambda: False)
        return tag

    @workflow.signal
    def ping(self, n: int) -> None:
        pass


class FailTerminateAndStart:
    """Store fault hook: the first batch holding a run's termination together with a new run fails."""

    def __init__(self) -> None:
        self.fired = 0

    def __call__(self, stage: str, batch: Sequence[Mutation]) -> None:
        if stage == "before_commit" and not self.fired and any(m.also and m.execution is not None for m in batch):
            self.fired += 1
            raise OSError("disk went away")


async def test_terminate_and_start_is_one_transaction(tmp_path: Path) -> None:
    cp = await embedded.start(str(tmp_path / "policy.db"))
    hook = FailTerminateAndStart()
    try:
        client = Client(cp.stub, namespace="default")
        first = await client.start_workflow(Waits.run, "a", id="w", task_queue="nobody")
        cp.control_plane.store.fault_hook = hook
        with pytest.raises(RPCError) as err:
            await client.start_workflow(Waits.run, "b", id="w", task_queue="nobody", request_id="req-b",
                                        id_conflict_policy=WorkflowIDConflictPolicy.TERMINATE_EXISTING)
        assert err.value.status == "UNAVAILABLE" and hook.fired == 1
        # neither happened: the first run still runs and is still the current one
        desc = await client.get_workflow_handle("w").describe()
        assert desc.run_id == first.result_run_id and desc.status is WorkflowExecutionStatus.RUNNING
        assert (await raw_history(cp.stub, "w"))[-1].event_type != pb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED
        # the client's retry (same request id) does both
        second = await client.start_workflow(Waits.run, "b", id="w", task_queue="nobody", request_id="req-b",
                                             id_conflict_policy=WorkflowIDConflictPolicy.TERMINATE_EXISTING)
        assert second.result_run_id != first.result_run_id
        old = await raw_history(cp.stub, "w", first.result_run_id)
        assert old[-1].event_type == pb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED
        assert "TERMINATE_EXISTING" in old[-1].workflow_execution_terminated_event_attributes.reason
        desc = await client.get_workflow_handle("w").describe()
        assert desc.run_id == second.result_run_id and desc.status is WorkflowExecutionStatus.RUNNING
    finally:
        cp.control_plane.store.fault_hook = None
        await cp.stop()
    # after a restart the new run is current and remembers its start request (a late retry changes nothing)
    cp = await embedded.start(str(tmp_path / "policy.db"))
    try:
        client = Client(cp.stub, namespace="default")
        again = await client.start_workflow(Waits.run, "b", id="w", task_queue="nobody", request_id="req-b",
                                            id_conflict_policy=WorkflowIDConflictPolicy.TERMINATE_EXISTING)
        assert again.result_run_id == second.result_run_id
    finally:
        await cp.stop()


async def test_signal_with_start_and_terminate_existing_signals_the_new_run(tmp_path: Path) -> None:
    cp = await embedded.start(":memory:")
    try:
        client = Client(cp.stub, namespace="default")
        first = await client.start_workflow(Waits.run, "a", id="sws", task_queue="nobody")
        second = await client.start_workflow(Waits.run, "b", id="sws", task_queue="nobody", start_signal=Waits.ping,
                                             start_signal_args=[1],
                                             id_conflict_policy=WorkflowIDConflictPolicy.TERMINATE_EXISTING)
        assert second.result_run_id != first.result_run_id
        new = await raw_history(cp.stub, "sws", second.result_run_id)
        assert pb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED in [e.event_type for e in new]
        old = await raw_history(cp.stub, "sws", first.result_run_id)
        assert old[-1].event_type == pb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED
        assert pb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED not in [e.event_type for e in old]
        # without TERMINATE_EXISTING, signal-with-start signals the running run
        third = await client.start_workflow(Waits.run, "c", id="sws", task_queue="nobody", start_signal=Waits.ping,
                                            start_signal_args=[2])
        assert third.result_run_id == second.result_run_id
    finally:
        await cp.stop()
