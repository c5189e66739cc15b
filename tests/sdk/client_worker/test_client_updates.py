"""Update stages and handles from the client, edge cases; raw descriptions; the codec chain.

Through the embedded control plane on a SQLite file, with a real worker.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import uuid

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest

from spindle import converter, workflow
from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.client import (
    Client,
    PendingActivityState,
    WorkflowExecutionStatus,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
    WorkflowUpdateStage,
)
from spindle.client._raw_description import raw_description
from spindle.converter import ZlibCodec
from spindle.exceptions import ApplicationError, RPCError, ServerError, UpdateFailedError
from spindle.worker import Worker


@workflow.defn
class Gate:
    def __init__(self) -> None:
        self.open = False
        self.done = False

    @workflow.run
    async def run(self) -> str:
        await workflow.wait_condition(lambda: self.done)
        return "closed"

    @workflow.update
    async def pass_gate(self, who: str) -> str:
        await workflow.wait_condition(lambda: self.open)
        return f"{who} passed"

    @workflow.update
    def check(self, n: int) -> int:
        if n < 0:
            raise ApplicationError("negative", type="Negative")
        return n

    @workflow.signal
    def open_gate(self) -> None:
        self.open = True

    @workflow.signal
    def finish(self) -> None:
        self.done = True


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[Client]:
    c = await Client.connect(target_host="embedded:" + str(tmp_path / "u.db"))
    try:
        yield c
    finally:
        await c.close()


@pytest.fixture
def tq() -> str:
    return "tq-" + uuid.uuid4().hex[:8]


async def test_admitted_stage_and_mixed_arguments_are_refused_before_sending(client: Client, tq: str) -> None:
    handle = client.get_workflow_handle("nobody")  # no such workflow: nothing may be sent
    with pytest.raises(ValueError, match="ADMITTED is not supported"):
        await handle.start_update(Gate.check, 1, wait_for_stage=WorkflowUpdateStage.ADMITTED)
    with pytest.raises(ValueError, match="either positionally or as args"):
        await handle.execute_update(Gate.check, 1, args=[2])
    with pytest.raises(TypeError, match="args must be a sequence"):
        await handle.execute_update(Gate.check, args="1")  # type: ignore[arg-type]


async def test_update_of_a_missing_workflow(client: Client) -> None:
    from spindle.exceptions import WorkflowNotFoundError

    with pytest.raises(WorkflowNotFoundError):
        await client.get_workflow_handle("missing").execute_update(Gate.check, 1)
    with pytest.raises(WorkflowNotFoundError):
        await client.get_workflow_handle("missing").start_update(
            Gate.check, 1, wait_for_stage=WorkflowUpdateStage.ACCEPTED)


async def test_rpc_timeout_without_a_worker(client: Client, tq: str) -> None:
    handle = await client.start_workflow(Gate.run, id="no-worker", task_queue=tq)
    with pytest.raises(WorkflowUpdateRPCTimeoutOrCancelledError) as err:
        await handle.execute_update(Gate.check, 1, rpc_timeout=timedelta(milliseconds=300))
    assert err.value.status == "DEADLINE_EXCEEDED"
    assert isinstance(err.value, RPCError)
    with pytest.raises(WorkflowUpdateRPCTimeoutOrCancelledError):
        await handle.start_update(Gate.check, 1, wait_for_stage=WorkflowUpdateStage.ACCEPTED,
                                  rpc_timeout=timedelta(milliseconds=300))
    await handle.terminate("test over")


async def test_execute_update_outlives_the_servers_update_timeout(tmp_path: Path, tq: str,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    from spindle.controlplane import embedded
    from spindle.controlplane.config import ServerConfig

    # the server answers an update that has no outcome after 0.2 s; execute_update asks again
    cp = await embedded.start(str(tmp_path / "short.db"), config=dataclasses.replace(ServerConfig(),
                                                                                     update_timeout=0.2))
    client = Client(cp.stub)
    try:
        handle = await client.start_workflow(Gate.run, id="slow", task_queue=tq)
        waiting = asyncio.ensure_future(handle.execute_update(Gate.pass_gate, "ann", id="u1"))
        with caplog.at_level(logging.WARNING, logger="spindle.client"):
            async with Worker(client, task_queue=tq, workflows=[Gate]):
                # wait until the server has answered "no outcome" at least once
                for _ in range(1000):
                    if "no outcome yet, still waiting" in caplog.text:
                        break
                    await asyncio.sleep(0.01)
                assert not waiting.done()
                await handle.signal(Gate.open_gate)
                assert await waiting == "ann passed"
                await handle.signal(Gate.finish)
                await handle.result()
        assert "no outcome yet, still waiting" in caplog.text
        # one update id, one update: accepted and completed once
        events = (await client.stub.GetWorkflowExecutionHistory(svc.GetWorkflowExecutionHistoryRequest(
            namespace="default", execution=pb.WorkflowExecution(workflow_id="slow")))).history.events
        types = [e.event_type for e in events]
        assert types.count(pb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED) == 1
        assert types.count(pb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED) == 1
    finally:
        await cp.stop()


async def test_update_handle_of_an_unknown_id_is_not_found(client: Client, tq: str) -> None:
    async with Worker(client, task_queue=tq, workflows=[Gate]):
        handle = await client.start_workflow(Gate.run, id="gate-1", task_queue=tq)
        assert await handle.execute_update(Gate.check, 1) == 1
        with pytest.raises(RPCError) as err:
            await handle.get_update_handle("no-such-update").result()
        assert err.value.status == "NOT_FOUND"
        assert "'no-such-update'" in err.value.message
        # a rejected or failed update by id: the outcome is in the history
        with pytest.raises(WorkflowUpdateFailedError):
            await handle.execute_update(Gate.check, -1, id="neg")
        with pytest.raises(WorkflowUpdateFailedError) as failed:
            await handle.get_update_handle("neg").result()
        assert isinstance(failed.value.cause, ApplicationError) and failed.value.cause.type == "Negative"
        assert UpdateFailedError is WorkflowUpdateFailedError
        await handle.signal(Gate.finish)
        await handle.result()


async def test_run_closing_before_an_accepted_update_completes(client: Client, tq: str) -> None:
    async with Worker(client, task_queue=tq, workflows=[Gate]):
        handle = await client.start_workflow(Gate.run, id="gate-2", task_queue=tq)
        accepted = await handle.start_update(Gate.pass_gate, "bob", id="stuck",
                                             wait_for_stage=WorkflowUpdateStage.ACCEPTED)
        later = handle.get_update_handle("stuck")
        waiting = asyncio.ensure_future(accepted.result())
        await handle.terminate("closing")
        for outcome in (await asyncio.wait_for(asyncio.gather(waiting, later.result(), return_exceptions=True), 10)):
            assert isinstance(outcome, WorkflowUpdateFailedError)
            assert isinstance(outcome.cause, ServerError)
            assert "closed before the update completed" in str(outcome.cause)


async def test_accepted_update_result_via_get_update_handle_with_run_id(client: Client, tq: str) -> None:
    async with Worker(client, task_queue=tq, workflows=[Gate]):
        handle = await client.start_workflow(Gate.run, id="gate-3", task_queue=tq)
        accepted = await handle.start_update(Gate.pass_gate, "cy", wait_for_stage=WorkflowUpdateStage.ACCEPTED)
        assert accepted.workflow_run_id == handle.run_id
        by_run = client.get_workflow_handle("gate-3").get_update_handle(accepted.id, workflow_run_id=handle.run_id,
                                                                       result_type=str)
        await handle.signal(Gate.open_gate)
        assert await by_run.result() == "cy passed"
        await handle.signal(Gate.finish)
        await handle.result()


async def test_raw_description_from_a_spindle_response() -> None:
    resp = svc.DescribeWorkflowExecutionResponse(
        workflow_execution_info=svc.WorkflowExecutionInfo(
            execution=pb.WorkflowExecution(workflow_id="w", run_id="r"), workflow_type="Order", task_queue="q",
            status=pb.WORKFLOW_EXECUTION_STATUS_RUNNING, start_time_ms=1_700_000_000_000, history_length=9,
            parent_execution=pb.WorkflowExecution(workflow_id="p", run_id="pr")),
        pending_activities=[svc.PendingActivityInfo(activity_id="3", activity_type="charge", state="STARTED",
                                                    attempt=2, scheduled_event_id=5,
                                                    last_started_time_ms=1_700_000_001_000)],
        pending_children=[svc.PendingChildInfo(workflow_id="c", run_id="cr", workflow_type="Child",
                                               initiated_event_id=7)],
        pending_workflow_task=True, run_timeout_ms=60_000)
    raw = raw_description(resp)
    info = raw.workflow_execution_info
    assert (info.execution.workflow_id, info.execution.run_id, info.type.name) == ("w", "r", "Order")
    assert info.status is WorkflowExecutionStatus.RUNNING
    assert info.start_time.ToMilliseconds() == 1_700_000_000_000 and info.close_time.ToMilliseconds() == 0
    assert info.parent_execution is not None and info.parent_execution.workflow_id == "p"
    act = raw.pending_activities[0]
    assert (act.activity_id, act.activity_type.name, act.state, act.attempt) == \
        ("3", "charge", PendingActivityState.STARTED, 2)
    assert act.last_started_time.ToMilliseconds() == 1_700_000_001_000 and act.last_failure is None
    child = raw.pending_children[0]
    assert (child.workflow_id, child.run_id, child.workflow_type_name, child.initiated_id) == ("c", "cr", "Child", 7)
    assert raw.execution_config.workflow_run_timeout.ToTimedelta() == timedelta(seconds=60)
    assert raw.execution_config.task_queue.name == "q"
    assert raw.pending_workflow_task is True


async def test_list_rows_have_raw_info_but_no_raw_description(client: Client, tq: str) -> None:
    await client.start_workflow(Gate.run, id="listed", task_queue=tq)

    async def row() -> object:
        rows = [r async for r in client.list_workflows("WorkflowId = 'listed'")]
        return rows[0] if rows else None

    found = None
    for _ in range(200):
        found = await row()
        if found is not None:
            break
        await asyncio.sleep(0.02)
    assert found is not None
    assert found.raw_info.execution.workflow_id == "listed"  # type: ignore[attr-defined]
    assert found.raw_info.type.name == "Gate"  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="only available on handle.describe"):
        found.raw_description  # type: ignore[attr-defined]  # noqa: B018 - the attribute read is what must raise
    await client.get_workflow_handle("listed").terminate()


def test_codec_chain_is_codecs_then_the_converters_codec() -> None:
    first, second = ZlibCodec(), ZlibCodec(level=1)
    c = Client(object(), data_converter=dataclasses.replace(converter.default(), payload_codec=second),
               codecs=[first])
    assert c.codecs == (first, second)
    assert Client(object(), codecs=[first]).codecs == (first,)
