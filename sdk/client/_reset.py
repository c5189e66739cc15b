"""Resetting a workflow (Temporal's ``ResetWorkflowExecution``): pick the point, ask the server.

``WorkflowHandle.reset`` is the public entry; this module holds the reset point types and
the logic that turns ``ResetType.FIRST_WORKFLOW_TASK`` / ``LAST_WORKFLOW_TASK`` into the
event id of a ``WorkflowTaskCompleted`` event (by reading the run's history, as Temporal's
CLI does). What the server does with it: docs/RESET.md.
"""

from __future__ import annotations

import enum
import uuid

from typing import Any, Protocol

from google.protobuf.message import Message

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc


class ResetClient(Protocol):
    """What reset uses of a :class:`spindle.client.Client` (which imports this module, so it is not named here)."""

    namespace: str
    identity: str

    async def _rpc(self, method: str, request: Message, *, timeout: float | None = None,
                   not_found: str = "workflow") -> Any: ...

    async def _history_page(self, execution: pb.WorkflowExecution, token: bytes = b"", *, wait: bool,
                            close_event_only: bool = False) -> svc.GetWorkflowExecutionHistoryResponse: ...


class ResetType(enum.IntEnum):
    """Where a reset without an explicit event id goes (Temporal CLI's ``--type``)."""

    FIRST_WORKFLOW_TASK = 1
    """The first completed workflow task: the run starts over (activities run again), keeping its input."""
    LAST_WORKFLOW_TASK = 2
    """The last completed workflow task: only the code after it runs again (the usual fix for a bug after it)."""


async def workflow_task_completed_ids(client: ResetClient, workflow_id: str, run_id: str) -> list[int]:
    """The ids of the ``WorkflowTaskCompleted`` events of a run, in order (reads its whole history)."""
    ids: list[int] = []
    token = b""
    execution = pb.WorkflowExecution(workflow_id=workflow_id, run_id=run_id)
    while True:
        resp = await client._history_page(execution, token, wait=False)
        ids.extend(e.event_id for e in resp.history.events if e.event_type == pb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED)
        token = resp.next_page_token
        if not token:
            return ids


async def reset_point(client: ResetClient, workflow_id: str, run_id: str, reset_type: ResetType) -> int:
    """The event id ``reset_type`` names in the run.

    Raises:
        ValueError: the run has no completed workflow task (nothing to reset to).
    """
    ids = await workflow_task_completed_ids(client, workflow_id, run_id)
    if not ids:
        raise ValueError(f"workflow {workflow_id!r} run {run_id} has no WorkflowTaskCompleted event yet: "
                         "there is no point to reset to")
    return ids[0] if ResetType(reset_type) == ResetType.FIRST_WORKFLOW_TASK else ids[-1]


async def reset_workflow(client: ResetClient, workflow_id: str, run_id: str, *, event_id: int | None,
                         reset_type: ResetType, reason: str, reapply_signals: bool,
                         request_id: str | None = None) -> str:
    """Reset the run (the current one when ``run_id`` is empty); returns the new run's id.

    ``request_id`` makes the call idempotent: a retry with the same id returns the same new run.
    """
    if event_id is not None and (isinstance(event_id, bool) or not isinstance(event_id, int) or event_id <= 0):
        raise ValueError(f"event_id must be a positive int (a WorkflowTaskCompleted event id), got {event_id!r}")
    if not run_id:
        resp = await client._rpc("DescribeWorkflowExecution", svc.DescribeWorkflowExecutionRequest(
            namespace=client.namespace, execution=pb.WorkflowExecution(workflow_id=workflow_id)))
        run_id = resp.workflow_execution_info.execution.run_id
    if event_id is None:
        event_id = await reset_point(client, workflow_id, run_id, reset_type)
    req = svc.ResetWorkflowExecutionRequest(
        namespace=client.namespace, workflow_execution=pb.WorkflowExecution(workflow_id=workflow_id, run_id=run_id),
        reason=reason, workflow_task_finish_event_id=event_id, request_id=request_id or str(uuid.uuid4()),
        reset_reapply_type=pb.RESET_REAPPLY_TYPE_SIGNAL if reapply_signals else pb.RESET_REAPPLY_TYPE_NONE,
        identity=client.identity)
    out: svc.ResetWorkflowExecutionResponse = await client._rpc("ResetWorkflowExecution", req)
    return out.run_id


__all__ = ["ResetClient", "ResetType", "reset_point", "reset_workflow", "workflow_task_completed_ids"]
