"""A reference to one workflow execution: :class:`WorkflowHandle` (Temporal's ``temporalio.client.WorkflowHandle``).

Made by ``client.start_workflow`` / ``client.get_workflow_handle``. Signals, queries and updates
go through the client's interceptor chain (whose end, ``spindle.client._impl``, makes the RPC);
results, cancellation, termination, reset, describe and history are asked of the server directly.
"""

from __future__ import annotations

import datetime
import uuid

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, Generic, Protocol, TypeVar, cast

from spindle import exceptions as E
from spindle._interceptors.client import (
    OutboundInterceptor,
    QueryWorkflowInput,
    SignalWorkflowInput,
    StartWorkflowUpdateInput,
)
from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.client._call_args import ARG_UNSET, call_args
from spindle.client._definitions import (
    QUERY_ATTR,
    SIGNAL_ATTR,
    UPDATE_ATTR,
    handler_name_and_hint,
    workflow_name_and_hint,
)
from spindle.client._erasure import DeleteClient, delete_workflow
from spindle.client._reset import ResetClient, ResetType, reset_workflow
from spindle.client._rpc import duration_ms
from spindle.client._update import UpdateClient, WorkflowUpdateHandle, WorkflowUpdateStage
from spindle.client._versioning import check_override, options_request
from spindle.client._workflow_description import WorkflowExecutionDescription, describe_execution
from spindle.common._enums import WorkflowExecutionStatus
from spindle.common._history import History, HistoryEvent
from spindle.common._versioning import VersioningOverride
from spindle.converter._data_converter import DataConverter

__all__ = ["WorkflowClient", "WorkflowHandle", "close_error", "existing_handle"]

R = TypeVar("R")
U = TypeVar("U")


class WorkflowClient(UpdateClient, ResetClient, Protocol):
    """What a handle uses of a :class:`spindle.client.Client` (which imports this module, so it is not named here)."""

    identity: str
    _outbound: OutboundInterceptor


def close_error(converter: DataConverter, event: pb.HistoryEvent) -> E.WorkflowFailureError:
    """The error ``result()`` raises for a run that closed with ``event`` other than completed or continued-as-new."""
    et = event.event_type
    cause: BaseException
    if et == pb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED:
        cause = converter.from_failure(event.workflow_execution_failed_event_attributes.failure)
        status = WorkflowExecutionStatus.FAILED
    elif et == pb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED:
        details = converter._safe_decode(event.workflow_execution_canceled_event_attributes.details)
        cause = E.CancelledError("workflow cancelled", *details)
        status = WorkflowExecutionStatus.CANCELED
    elif et == pb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED:
        cause = E.TerminatedError(event.workflow_execution_terminated_event_attributes.reason)
        status = WorkflowExecutionStatus.TERMINATED
    elif et == pb.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT:
        cause = E.TimeoutError("workflow execution timed out", timeout_type=E.TimeoutType.WORKFLOW_EXECUTION)
        status = WorkflowExecutionStatus.TIMED_OUT
    else:
        cause = E.ServerError(f"unexpected close event type {et}")
        status = None
    return E.WorkflowFailureError(cause, status=status)


class WorkflowHandle(Generic[R]):
    """A reference to a workflow execution (made by ``start_workflow`` or ``get_workflow_handle``).

    ``run_id`` is the run the handle was made for (``None`` when only the id is
    known). Signals, queries, updates, cancel, terminate and describe address the
    latest run unless the handle was created with an explicit ``run_id``;
    ``result()`` waits for the run the handle was made for and follows
    continue-as-new.
    """

    def __init__(self, client: WorkflowClient, id: str, *, run_id: str | None = None, result_run_id: str | None = None,
                 first_execution_run_id: str | None = None, result_type: Any = None, target_run: bool = True) -> None:
        self._client = client
        self.id = id
        self.run_id = run_id
        self.result_run_id = result_run_id
        self.first_execution_run_id = first_execution_run_id
        self.result_type = result_type
        self._target_run_id = (run_id or "") if target_run else ""

    @property
    def workflow_id(self) -> str:
        """Alias of ``id``."""
        return self.id

    @property
    def client(self) -> WorkflowClient:
        """The :class:`Client` this handle talks through (read-only)."""
        return self._client

    def __repr__(self) -> str:
        return f"WorkflowHandle(id={self.id!r}, run_id={self.run_id!r})"

    def _execution(self, run_id: str | None = None) -> pb.WorkflowExecution:
        return pb.WorkflowExecution(workflow_id=self.id,
                                    run_id=self._target_run_id if run_id is None else run_id)

    async def result(self, *, follow_runs: bool = True, result_type: Any = None) -> R:
        """Wait for the run to close and return its result, decoded by the result type hint.

        Long-polls the server (no busy polling). With ``follow_runs`` a run that
        continued-as-new is followed to the run that finally closes.

        Raises:
            WorkflowFailureError: the run failed (``cause`` is the ApplicationError or
                other error it failed with), was cancelled (``CancelledError``),
                terminated (``TerminatedError`` with the reason) or timed out
                (``TimeoutError``).
            WorkflowContinuedAsNewError: the run continued-as-new and ``follow_runs`` is false.
            WorkflowNotFoundError: no such execution.
        """
        client = self._client
        conv = client.data_converter
        hint = result_type if result_type is not None else self.result_type
        run_id = self.result_run_id or ""
        while True:
            resp = await client._history_page(pb.WorkflowExecution(workflow_id=self.id, run_id=run_id), wait=True,
                                              close_event_only=True)
            events = resp.history.events
            if not events:
                continue
            event = events[-1]
            await client._decode(event, self.id)
            et = event.event_type
            if et == pb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
                values = conv.from_payloads(event.workflow_execution_completed_event_attributes.result,
                                            [hint] if hint is not None else None)
                return values[0] if values else None  # type: ignore[return-value]
            if et == pb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
                new_run = event.workflow_execution_continued_as_new_event_attributes.new_execution_run_id
                if not follow_runs:
                    raise E.WorkflowContinuedAsNewError(new_run)
                run_id = new_run
                continue
            raise close_error(conv, event)

    async def signal(self, signal: Any, *positional: Any, arg: Any = ARG_UNSET, args: Sequence[Any] = ()) -> None:
        """Send a signal (a ``@workflow.signal`` method or its name) with its arguments.

        The arguments are given positionally, as ``arg=`` or as ``args=[...]`` (Temporal's keywords).

        Raises:
            WorkflowNotFoundError: no running execution with this id (and run id).
            ValueError: the arguments given in more than one form (``arg`` and ``args``: "Cannot have arg and args").
        """
        args = call_args("signal", positional, arg, args)
        name, _ = handler_name_and_hint(signal, SIGNAL_ATTR)
        await self._client._outbound.signal_workflow(SignalWorkflowInput(
            id=self.id, run_id=self._target_run_id or None, signal=name, args=args, headers={}))

    async def query(self, query: Any, *positional: Any, arg: Any = ARG_UNSET, args: Sequence[Any] = (),
                    result_type: Any = None, timeout: datetime.timedelta | None = None) -> Any:
        """Ask the workflow a question (a ``@workflow.query`` method or its name).

        The arguments are given positionally, as ``arg=`` or as ``args=[...]`` (Temporal's keywords).

        Raises:
            QueryFailedError: the workflow has no such query handler, the handler
                raised, or no worker answered in time.
            WorkflowNotFoundError: no such execution.
            ValueError: the arguments given in more than one form.
        """
        args = call_args("query", positional, arg, args)
        name, hint = handler_name_and_hint(query, QUERY_ATTR)
        return await self._client._outbound.query_workflow(QueryWorkflowInput(
            id=self.id, run_id=self._target_run_id or None, query=name, args=args, headers={}, result_type=result_type or hint,
            timeout=timeout))

    async def update(self, update: Any, *args: Any, id: str | None = None, result_type: Any = None,
                     timeout: datetime.timedelta | None = None) -> Any:
        """Run an update (a ``@workflow.update`` method or its name) and return its result.

        One call: the server waits up to ``timeout`` (default 60 s) for the outcome.
        :meth:`execute_update` (Temporal's name) waits as long as the update takes.

        Raises:
            WorkflowUpdateFailedError: the validator rejected it or the handler raised
                (``cause`` says why). (``UpdateFailedError`` is the same class.)
            WorkflowNotFoundError: no running execution.
            RPCError: ``status="DEADLINE_EXCEEDED"`` when there is no outcome within ``timeout``.
        """
        name, hint = handler_name_and_hint(update, UPDATE_ATTR)
        client = self._client
        req = svc.UpdateWorkflowExecutionRequest(
            namespace=client.namespace, workflow_execution=self._execution(),
            request=pb.UpdateRequest(update_id=id or str(uuid.uuid4()), name=name,
                                     input=client.data_converter.to_payloads(args), identity=client.identity),
            timeout_ms=duration_ms(timeout))
        await client._encode(req)
        resp = await client._rpc("UpdateWorkflowExecution", req)
        await client._decode(resp, self.id)
        if resp.WhichOneof("outcome") == "failure":
            raise E.WorkflowUpdateFailedError(client.data_converter.from_failure(resp.failure), update_name=name)
        values = client.data_converter.from_payloads(resp.success, [result_type or hint])
        return values[0] if values else None

    def _update_request(self, update: Any, positional: Sequence[Any], args: Sequence[Any], id: str | None
                        ) -> tuple[svc.UpdateWorkflowExecutionRequest, Any]:
        positional = call_args("update", positional, ARG_UNSET, args)
        name, hint = handler_name_and_hint(update, UPDATE_ATTR)
        client = self._client
        req = svc.UpdateWorkflowExecutionRequest(
            namespace=client.namespace, workflow_execution=self._execution(),
            request=pb.UpdateRequest(update_id=id or str(uuid.uuid4()), name=name,
                                     input=client.data_converter.to_payloads(list(positional)),
                                     identity=client.identity))
        return req, hint

    async def execute_update(self, update: Any, *positional: Any, arg: Any = ARG_UNSET, args: Sequence[Any] = (),
                             id: str | None = None, result_type: Any = None,
                             rpc_timeout: datetime.timedelta | None = None) -> Any:
        """Send an update and wait for its result (Temporal's ``execute_update``).

        ``update`` is a ``@workflow.update`` method or its name; its arguments are given
        positionally (``execute_update(W.set_stage, "x")``), as ``arg=`` or as ``args=[...]``. ``id``
        is the update id (default: a new UUID); the server runs an update id once, so
        sending the same id again returns the same outcome. Waits as long as the update
        takes (unless ``rpc_timeout``), logging a warning each minute without an answer.

        Raises:
            WorkflowUpdateFailedError: the validator rejected the update or its handler
                raised; ``cause`` is the error (usually an ``ApplicationError``).
            WorkflowUpdateRPCTimeoutOrCancelledError: ``rpc_timeout`` passed first.
            WorkflowNotFoundError: no such execution.
            RPCError: the server refused the request (e.g. the run is closed).
            ValueError: arguments given in more than one form (``arg`` and ``args``: "Cannot have arg and args").
        """
        h = await self.start_update(update, *positional, arg=arg, args=args, id=id, result_type=result_type,
                                    wait_for_stage=WorkflowUpdateStage.COMPLETED, rpc_timeout=rpc_timeout)
        return await h.result()

    async def start_update(self, update: Any, *positional: Any, wait_for_stage: WorkflowUpdateStage,
                           arg: Any = ARG_UNSET, args: Sequence[Any] = (), id: str | None = None, result_type: Any = None,
                           rpc_timeout: datetime.timedelta | None = None) -> WorkflowUpdateHandle[Any]:
        """Send an update and return its handle once it reached ``wait_for_stage`` (Temporal's ``start_update``).

        ``WorkflowUpdateStage.ACCEPTED``: returns when the workflow accepted the update
        (its validator passed and the acceptance is in the history) while the handler
        may still run; ``await handle.result()`` waits for the outcome. If the update
        completes or is rejected before acceptance is seen, the handle already knows
        the outcome (``result()`` returns it or raises ``WorkflowUpdateFailedError``).
        ``COMPLETED``: returns when the outcome is known. Arguments as :meth:`execute_update`.

        Raises:
            ValueError: ``wait_for_stage`` is ``ADMITTED`` (not supported), or arguments
                given in more than one form (positionally, ``arg``, ``args``).
            WorkflowUpdateRPCTimeoutOrCancelledError: ``rpc_timeout`` passed first.
            WorkflowNotFoundError: no such execution.
            RPCError: the server refused the request (e.g. the run is closed).
        """
        positional = call_args("update", positional, arg, args)
        req, hint = self._update_request(update, positional, (), id)
        return cast(WorkflowUpdateHandle[Any], await self._client._outbound.start_workflow_update(
            StartWorkflowUpdateInput(
                id=self.id, run_id=self._target_run_id or None, update_id=req.request.update_id, update=req.request.name,
                args=list(positional), headers={}, wait_for_stage=wait_for_stage,
                result_type=result_type or hint, rpc_timeout=rpc_timeout)))

    def get_update_handle(self, id: str, *, workflow_run_id: str | None = None, result_type: Any = None
                          ) -> WorkflowUpdateHandle[Any]:
        """A handle to the update ``id`` of this workflow (no RPC is made).

        ``result()`` reads the outcome from the run's history (``workflow_run_id``, else
        this handle's ``run_id``, else the current run), waiting while the update is
        accepted but not completed.
        """
        return WorkflowUpdateHandle(self._client, id, self.id, workflow_run_id=workflow_run_id or self.run_id,
                                    result_type=result_type)

    def get_update_handle_for(self, update: Callable[..., Awaitable[U]] | Callable[..., U], id: str, *,
                              workflow_run_id: str | None = None) -> WorkflowUpdateHandle[U]:
        """:meth:`get_update_handle` typed by the ``@workflow.update`` method (its return annotation decodes the result).

        Raises:
            TypeError: ``update`` is not an update method.
        """
        name, hint = handler_name_and_hint(update, UPDATE_ATTR)
        h: WorkflowUpdateHandle[U] = self.get_update_handle(id, workflow_run_id=workflow_run_id, result_type=hint)
        h._name = name
        return h

    async def cancel(self, reason: str = "") -> None:
        """Request cancellation: the workflow sees ``asyncio.CancelledError`` and may clean up.

        Raises:
            WorkflowNotFoundError: no running execution.
        """
        client = self._client
        await client._rpc("RequestCancelWorkflowExecution", svc.RequestCancelWorkflowExecutionRequest(
            namespace=client.namespace, workflow_execution=self._execution(), identity=client.identity,
            request_id=str(uuid.uuid4()), reason=reason))

    async def terminate(self, reason: str = "", *details: Any) -> None:
        """Stop the execution at once (no workflow code runs).

        Raises:
            WorkflowNotFoundError: no running execution.
        """
        client = self._client
        req = svc.TerminateWorkflowExecutionRequest(
            namespace=client.namespace, workflow_execution=self._execution(), reason=reason,
            details=client.data_converter.to_payloads(details), identity=client.identity)
        await client._encode(req)
        await client._rpc("TerminateWorkflowExecution", req)

    async def delete(self, *, reason: str) -> None:
        """Erase this run for good (without a run id: the workflow id's current run), as ``client.delete_workflow``.

        Raises:
            RPCError, ValueError: as :func:`spindle.client._erasure.delete_workflow`.
        """
        execution = self._execution()
        client = cast(DeleteClient, self._client)  # the Client, whose _rpc also takes retry= (WorkflowClient omits it)
        await delete_workflow(client, execution.workflow_id, execution.run_id or None, reason=reason)

    async def reset(self, event_id: int | None = None, *, type: ResetType = ResetType.LAST_WORKFLOW_TASK, reason: str = "",
                    reapply_signals: bool = True, request_id: str | None = None) -> str:
        """Reset the workflow to a point of this run's history; returns the new run's id.

        ``event_id`` names a ``WorkflowTaskCompleted`` event of the run (as shown by
        ``fetch_history()`` or ``spindle workflow show``); without it, ``type`` picks the
        first or (default) last completed workflow task. The new run (same workflow id)
        keeps the history up to that point and then runs the worker's current code from
        there; signals received after the point are re-applied (each once) unless
        ``reapply_signals=False``; activities after the point run again. The current run, if
        still running, ends ``TERMINATED`` with ``reason``; a closed one stays as it is.
        Safe to retry with the same ``request_id``. See docs/RESET.md.

        Raises:
            WorkflowNotFoundError: no such workflow or run.
            RPCError: ``status="INVALID_ARGUMENT"`` when the event is not a
                WorkflowTaskCompleted event of the run (the message names the allowed ids),
                or a child workflow is still pending at the point.
            ValueError: the run has no completed workflow task yet, or ``event_id`` is not positive.
        """
        return await reset_workflow(self._client, self.id, self._execution().run_id, event_id=event_id,
                                    reset_type=type,
                                    reason=reason, reapply_signals=reapply_signals, request_id=request_id)

    async def set_versioning_override(self, override: VersioningOverride | None) -> None:
        """Set where the execution's workflow tasks run, whatever its versioning behavior (None: remove the override).

        A :class:`~spindle.common.PinnedVersioningOverride` sends its next tasks to that build; an
        :class:`~spindle.common.AutoUpgradeVersioningOverride` to the deployment's current version. The change
        is recorded in the history (a ``WorkflowExecutionOptionsUpdated`` event, which replays as a no-op) and
        shows in ``describe().versioning_info.versioning_override``. Setting the same override again changes nothing.

        Raises:
            WorkflowNotFoundError: no such execution.
            RPCError: the server refused the change (e.g. ``FAILED_PRECONDITION``: the execution is closed).
            TypeError: ``override`` is neither a VersioningOverride nor None.
        """
        client = self._client
        await client._rpc("UpdateWorkflowExecutionOptions", options_request(
            client.namespace, self._execution(), check_override(override), client.identity))

    async def describe(self) -> WorkflowExecutionDescription:
        """Status, times, memo, search attributes and pending work of the run.

        Raises:
            WorkflowNotFoundError: no such execution.
        """
        client = self._client
        resp = await client._rpc("DescribeWorkflowExecution", svc.DescribeWorkflowExecutionRequest(
            namespace=client.namespace, execution=self._execution()))
        await client._decode(resp, self.id)
        return describe_execution(client.data_converter, resp.workflow_execution_info, resp)

    async def fetch_history(self) -> History:
        """The run's full event history, with payloads decoded by the codec chain.

        Raises:
            WorkflowNotFoundError: no such execution.
        """
        client = self._client
        run_id = self.run_id or ""
        if not run_id:
            run_id = (await self.describe()).run_id
        events: list[pb.HistoryEvent] = []
        token = b""
        while True:
            resp = await client._history_page(pb.WorkflowExecution(workflow_id=self.id, run_id=run_id), token,
                                              wait=False)
            await client._decode(resp, self.id)
            events.extend(resp.history.events)
            token = resp.next_page_token
            if not token:
                break
        return History.from_proto(self.id, run_id, events)

    async def watch_history(self, *, start_event_id: int = 1) -> AsyncIterator[HistoryEvent]:
        """Yield the run's history events as they are written, until the run closes.

        ``async for event in handle.watch_history(): ...`` first yields the events
        already written, then waits for new ones: each call long-polls the server
        (``GetWorkflowExecutionHistory`` with ``wait_new_event`` and the page
        token), so nothing is fetched while the run is idle. The iteration ends
        after the close event (completed, failed, cancelled, terminated, timed
        out or continued-as-new; a new run is not followed). Events before
        ``start_event_id`` are skipped. Payloads are decoded by the codec chain.
        Break out of the loop (or cancel the task) to stop watching.

        A handle without a run id watches the run that is current when the
        watch starts.

        Raises:
            WorkflowNotFoundError: no such execution.
            ValueError: ``start_event_id`` is below 1.
        """
        if start_event_id < 1:
            raise ValueError(f"start_event_id must be at least 1, got {start_event_id}")
        client = self._client
        run_id = self.run_id or ""
        if not run_id:
            run_id = (await self.describe()).run_id
        execution = pb.WorkflowExecution(workflow_id=self.id, run_id=run_id)
        token = b""
        while True:
            resp = await client._history_page(execution, token, wait=True)
            await client._decode(resp, self.id)
            for event in resp.history.events:
                if event.event_id >= start_event_id:
                    yield HistoryEvent.from_proto(event)
            if not resp.next_page_token:
                return  # the last page of a closed run
            token = resp.next_page_token


def existing_handle(client: WorkflowClient, workflow_id: str, *, run_id: str | None,
                    first_execution_run_id: str | None, result_type: Any, workflow: Any) -> WorkflowHandle[Any]:
    """See :meth:`spindle.client.Client.get_workflow_handle`: ``workflow`` supplies a missing ``result_type``.

    Raises:
        TypeError: ``workflow`` is not a workflow definition.
    """
    if result_type is None and workflow is not None:
        result_type = workflow_name_and_hint(workflow)[1]
    return WorkflowHandle(client, workflow_id, run_id=run_id, result_run_id=run_id,
                          first_execution_run_id=first_execution_run_id, result_type=result_type, target_run=True)
