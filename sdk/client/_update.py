"""Workflow updates from the client: stages, handles and waiting for outcomes.

The server has one update call, ``UpdateWorkflowExecution``, which answers with the
update's outcome (its result, or the failure of its validator or handler) and
deduplicates by update id. The stages of Temporal's API are built on it and on the
run's history, where an accepted update is recorded as
``WorkflowExecutionUpdateAccepted`` and its outcome as
``WorkflowExecutionUpdateCompleted`` (a rejected update leaves no event):

* ``COMPLETED``: send the request until the server reports the outcome (the server
  answers a long wait with DEADLINE_EXCEEDED; the same request, same update id, is
  sent again and attaches to the same update).
* ``ACCEPTED``: send the request and, at the same time, follow the run's history;
  whichever comes first wins. The outcome (a fast update, or a rejection) makes a
  handle that already knows it; the ``UpdateAccepted`` event makes a handle without
  it, and the request is withdrawn (the update goes on in the workflow).
* ``WorkflowUpdateHandle.result()`` of a handle without an outcome reads the run's
  history and waits there for the ``UpdateCompleted`` event (nothing is re-sent, so
  an update is never delivered twice).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import enum
import logging

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, cast

from spindle import exceptions as E
from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc

if TYPE_CHECKING:  # pragma: no cover
    from google.protobuf.message import Message

    from spindle.converter._data_converter import DataConverter

__all__ = ["WorkflowUpdateStage", "WorkflowUpdateHandle", "send_update"]

R = TypeVar("R")

log = logging.getLogger("spindle.client")

_ACCEPTED = pb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED
_COMPLETED = pb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED
_CLOSED_BEFORE_COMPLETION = "the workflow execution closed before the update completed"


class UpdateClient(Protocol):
    """What updates use of a :class:`spindle.client.Client` (which imports this module, so it is not named here)."""

    namespace: str
    data_converter: DataConverter

    async def _rpc(self, method: str, request: Message, *, timeout: float | None = None,
                   not_found: str = "workflow") -> Any: ...

    async def _history_page(self, execution: pb.WorkflowExecution, token: bytes = b"", *, wait: bool,
                            close_event_only: bool = False) -> svc.GetWorkflowExecutionHistoryResponse: ...

    async def _encode(self, msg: Message, workflow_id: str = "") -> None: ...

    async def _decode(self, msg: Message, workflow_id: str = "") -> None: ...


class WorkflowUpdateStage(enum.IntEnum):
    """How far an update must have come before ``start_update`` returns (Temporal's numbers).

    ``ADMITTED`` (the server has it, the workflow may not) is not supported: Spindle
    does not report that stage.
    """

    ADMITTED = 1
    ACCEPTED = 2
    COMPLETED = 3


Outcome = svc.UpdateWorkflowExecutionResponse | pb.WorkflowExecutionUpdateCompletedEventAttributes


class WorkflowUpdateHandle(Generic[R]):
    """An update of a workflow run: its id, and (awaitable) its result.

    Made by ``WorkflowHandle.start_update`` or ``get_update_handle``; do not construct
    it yourself.
    """

    def __init__(self, client: UpdateClient, id: str, workflow_id: str, *, workflow_run_id: str | None = None,
                 result_type: Any = None, name: str | None = None, outcome: Outcome | None = None) -> None:
        self._client = client
        self._id = id
        self._workflow_id = workflow_id
        self._workflow_run_id = workflow_run_id
        self._result_type = result_type
        self._name = name
        self._outcome = outcome

    @property
    def id(self) -> str:
        """The update id."""
        return self._id

    @property
    def workflow_id(self) -> str:
        """The id of the workflow the update was sent to."""
        return self._workflow_id

    @property
    def workflow_run_id(self) -> str | None:
        """The run the update was sent to (``None``: the run that was current)."""
        return self._workflow_run_id

    def __repr__(self) -> str:
        return f"WorkflowUpdateHandle(id={self._id!r}, workflow_id={self._workflow_id!r})"

    async def result(self, *, rpc_timeout: datetime.timedelta | None = None) -> R:
        """Wait for the update's outcome and return its result (decoded by the result type hint).

        Known at once for a handle made after completion; otherwise the run's history is
        read and, while the update is accepted but not completed, followed (long polls,
        no busy polling) until it completes.

        Args:
            rpc_timeout: give up waiting after this long (the update goes on).

        Raises:
            WorkflowUpdateFailedError: the validator rejected the update or its handler
                raised (``cause`` says why), or the run closed before it completed.
            WorkflowUpdateRPCTimeoutOrCancelledError: ``rpc_timeout`` passed.
            RPCError: the update was never accepted by this run (``status="NOT_FOUND"``:
                an unknown id, a rejected update, or one no worker has taken yet).
            WorkflowNotFoundError: no such execution.
        """
        if self._outcome is None:
            async with _deadline(rpc_timeout, self._id):
                self._outcome = await self._wait_in_history()
        return cast(R, self._decode(self._outcome))

    def _decode(self, outcome: Outcome) -> Any:
        conv = self._client.data_converter
        if outcome.HasField("failure"):
            raise E.WorkflowUpdateFailedError(conv.from_failure(outcome.failure), update_name=self._name)
        values = conv.from_payloads(outcome.success, [self._result_type] if self._result_type is not None else None)
        return values[0] if values else None

    async def _wait_in_history(self) -> Outcome:
        client = self._client
        run_id = self._workflow_run_id or await _current_run(client, self._workflow_id)
        execution = pb.WorkflowExecution(workflow_id=self._workflow_id, run_id=run_id)
        accepted = waiting = False
        token = b""
        while True:
            # Read what is there; once the update is known to be accepted, wait for more.
            resp = await client._history_page(execution, token, wait=waiting)
            for event in resp.history.events:
                if _is_event_of(event, _COMPLETED, self._id):
                    await client._decode(event, self._workflow_id)
                    return cast("pb.WorkflowExecutionUpdateCompletedEventAttributes", event.workflow_execution_update_completed_event_attributes)
                if _is_event_of(event, _ACCEPTED, self._id):
                    accepted = True
            if resp.next_page_token:
                token = resp.next_page_token
                continue
            # The end of the history as it is now (for a closed run: the end).
            if accepted and not waiting:
                waiting = True  # from the same place; a closed run answers at once with nothing new
                continue
            if accepted:
                # The run closed before the update completed (the server failed the update).
                failure = client.data_converter.to_failure(E.ServerError(_CLOSED_BEFORE_COMPLETION))
                return svc.UpdateWorkflowExecutionResponse(failure=failure, run_id=run_id)
            raise E.RPCError(
                f"update {self._id!r} of workflow {self._workflow_id!r} (run {run_id!r}) was not accepted: "
                "no such update id, or the validator rejected it, or no worker has taken it yet",
                status="NOT_FOUND")


def _is_event_of(event: pb.HistoryEvent, event_type: int, update_id: str) -> bool:
    if event.event_type != event_type:
        return False
    if event_type == _ACCEPTED:
        return event.workflow_execution_update_accepted_event_attributes.update_id == update_id
    return event.workflow_execution_update_completed_event_attributes.update_id == update_id


async def _current_run(client: UpdateClient, workflow_id: str) -> str:
    resp = await client._rpc("DescribeWorkflowExecution", svc.DescribeWorkflowExecutionRequest(
        namespace=client.namespace, execution=pb.WorkflowExecution(workflow_id=workflow_id)))
    return str(resp.workflow_execution_info.execution.run_id)


@contextlib.asynccontextmanager
async def _deadline(rpc_timeout: datetime.timedelta | None, update_id: str) -> AsyncIterator[None]:
    """Bound the block by ``rpc_timeout``; on expiry raise ``WorkflowUpdateRPCTimeoutOrCancelledError``."""
    if rpc_timeout is None:
        yield
        return
    scope = asyncio.timeout(rpc_timeout.total_seconds())
    try:
        async with scope:
            yield
    except TimeoutError as e:
        if not scope.expired():
            raise  # a TimeoutError of the block itself
        raise E.WorkflowUpdateRPCTimeoutOrCancelledError(
            f"update {update_id!r}: no answer within {rpc_timeout.total_seconds():g} s "
            "(the update itself may still complete)") from e


async def _send_until_outcome(client: UpdateClient, req: svc.UpdateWorkflowExecutionRequest
                              ) -> svc.UpdateWorkflowExecutionResponse:
    """Send ``req`` (already encoded) until the server answers with an outcome."""
    while True:
        try:
            resp = await client._rpc("UpdateWorkflowExecution", req)
        except E.RPCError as e:
            if e.status != "DEADLINE_EXCEEDED":
                raise
            log.warning("update %r of workflow %r: no outcome yet, still waiting (is a worker polling the "
                        "workflow's task queue?)", req.request.update_id, req.workflow_execution.workflow_id)
            continue
        await client._decode(resp, req.workflow_execution.workflow_id)
        return resp  # type: ignore[no-any-return]


async def _accepted_in_history(client: UpdateClient, workflow_id: str, run_id: str, update_id: str) -> str | None:
    """Follow the run's history until the update is accepted (returns the run id) or the run closes (None)."""
    run_id = run_id or await _current_run(client, workflow_id)
    execution = pb.WorkflowExecution(workflow_id=workflow_id, run_id=run_id)
    token = b""
    while True:
        resp = await client._history_page(execution, token, wait=True)
        for event in resp.history.events:
            if _is_event_of(event, _ACCEPTED, update_id) or _is_event_of(event, _COMPLETED, update_id):
                return run_id
        if not resp.next_page_token:
            return None
        token = resp.next_page_token


async def send_update(client: UpdateClient, req: svc.UpdateWorkflowExecutionRequest, *, stage: WorkflowUpdateStage,
                      result_type: Any, rpc_timeout: datetime.timedelta | None) -> WorkflowUpdateHandle[Any]:
    """Send the update ``req`` (payloads not yet encoded) and return its handle at ``stage``.

    Raises:
        ValueError: ``stage`` is ``ADMITTED``.
        WorkflowUpdateRPCTimeoutOrCancelledError: ``rpc_timeout`` passed first.
        RPCError, WorkflowNotFoundError: the server refused the request.
    """
    stage = WorkflowUpdateStage(stage)
    if stage is WorkflowUpdateStage.ADMITTED:
        raise ValueError("wait_for_stage: ADMITTED is not supported (use ACCEPTED or COMPLETED)")
    upd = req.request
    workflow_id = req.workflow_execution.workflow_id

    def handle(run_id: str | None, outcome: Outcome | None = None) -> WorkflowUpdateHandle[Any]:
        return WorkflowUpdateHandle(client, upd.update_id, workflow_id, workflow_run_id=run_id or None,
                                    result_type=result_type, name=upd.name or None, outcome=outcome)

    await client._encode(req)
    async with _deadline(rpc_timeout, upd.update_id):
        if stage is WorkflowUpdateStage.COMPLETED:
            resp = await _send_until_outcome(client, req)
            return handle(resp.run_id, resp)
        call = asyncio.ensure_future(_send_until_outcome(client, req))
        watch = asyncio.ensure_future(_accepted_in_history(
            client, workflow_id, req.workflow_execution.run_id, upd.update_id))
        try:
            await asyncio.wait({call, watch}, return_when=asyncio.FIRST_COMPLETED)
            accepted_run: str | None = None
            if not call.done() and watch.done() and not watch.cancelled() and watch.exception() is None:
                accepted_run = watch.result()
            if accepted_run is None:
                # the outcome came first, or the run closed (the call will answer), or the watch failed
                await asyncio.wait({call})
            else:
                call.cancel()  # accepted: stop waiting for the outcome (the update goes on in the workflow)
                await asyncio.wait({call})
        finally:
            for task in (call, watch):
                task.cancel()
                if task.done() and not task.cancelled():
                    task.exception()  # retrieved: no "never retrieved" warning
        if not call.cancelled():
            resp = call.result()  # raises the call's error
            return handle(resp.run_id, resp)
        return handle(accepted_run)
