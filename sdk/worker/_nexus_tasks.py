"""Runs one Nexus task (start or cancel an operation) through the worker's nexusrpc service handlers.

What a task becomes (docs/NEXUS.md's handler contract):

- a start handler's return value -> ``sync_success`` with the value as one payload;
- an async start (``StartOperationResultAsync``) -> ``async_success`` with its operation token;
- ``nexusrpc.OperationError`` -> ``operation_error`` (state "failed" or "canceled"; final, never retried);
- ``nexusrpc.HandlerError`` -> a ``NexusHandlerError`` with its type and retry behaviour
  (``retryable_override`` when the handler set it, else nexusrpc's table, decided by the server);
- an input that does not decode to the operation's input type -> ``BAD_REQUEST`` (not retryable);
- any other exception -> ``INTERNAL`` (retryable), as Temporal's worker does.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading

from collections.abc import Sequence
from typing import Any

import nexusrpc
import nexusrpc.handler

from spindle.api import messages_pb2 as pb
from spindle.nexus._operation_context import Info, operation_context

_RETRY = {
    None: pb.NEXUS_HANDLER_ERROR_RETRY_BEHAVIOR_UNSPECIFIED,
    True: pb.NEXUS_HANDLER_ERROR_RETRY_BEHAVIOR_RETRYABLE,
    False: pb.NEXUS_HANDLER_ERROR_RETRY_BEHAVIOR_NON_RETRYABLE,
}


class TaskCancellation(nexusrpc.handler.OperationTaskCancellation):
    """Tells a running handler that its task (not its operation) is abandoned, e.g. at worker shutdown."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._reason: str | None = None

    def cancel(self, reason: str) -> None:
        """Mark the task cancelled with ``reason``; handlers waiting on it wake up."""
        self._reason = reason
        self._event.set()

    def is_cancelled(self) -> bool:
        return self._event.is_set()

    def cancellation_reason(self) -> str | None:
        return self._reason

    def wait_until_cancelled_sync(self, timeout: float | None = None) -> bool:
        return self._event.wait(timeout)

    async def wait_until_cancelled(self) -> None:
        while not self._event.is_set():
            await asyncio.sleep(0.05)


class _PayloadInput:
    """nexusrpc's lazy input: the task's payload, decoded to the operation's input type on demand."""

    def __init__(self, payload: pb.Payload, data_converter: Any) -> None:
        self._payload = payload
        self._data_converter = data_converter

    async def consume(self, as_type: Any = None) -> Any:
        try:
            return self._data_converter.from_payload(self._payload, as_type)
        except Exception as err:
            raise nexusrpc.HandlerError(
                f"operation input does not decode as {getattr(as_type, '__name__', as_type)}: {err}",
                type=nexusrpc.HandlerErrorType.BAD_REQUEST,
            ) from err


class NexusTaskRunner:
    """Answers Nexus tasks with the given service handlers (instances of ``@service_handler`` classes).

    ``executor`` runs ``def`` (non-async) operation handlers; without one, every handler must be
    ``async def`` (nexusrpc refuses the handlers otherwise, at construction).
    """

    def __init__(
        self,
        service_handlers: Sequence[Any],
        *,
        data_converter: Any,
        info: Info,
        client: Any,
        executor: concurrent.futures.Executor | None = None,
    ) -> None:
        self._handler = nexusrpc.handler.Handler(list(service_handlers), executor=executor)
        self._data_converter = data_converter
        self._info = info
        self._client = client

    async def run(
        self, request: pb.NexusRequest, cancellation: TaskCancellation | None = None
    ) -> pb.NexusResponse | pb.NexusHandlerError:
        """The task's answer: a ``NexusResponse`` to complete it with, or a ``NexusHandlerError`` to fail it.

        ``cancellation`` is what the handler sees as ``ctx.task_cancellation`` (a fresh one if omitted).
        """
        cancellation = cancellation or TaskCancellation()
        variant = request.WhichOneof("variant")
        try:
            with operation_context(self._info, self._client):
                if variant == "start_operation":
                    return pb.NexusResponse(start_operation=await self._start(request, cancellation))
                if variant == "cancel_operation":
                    await self._cancel(request, cancellation)
                    return pb.NexusResponse(cancel_operation=pb.NexusCancelOperationResponse())
            raise nexusrpc.HandlerError(
                f"Nexus request has no start_operation or cancel_operation (got {variant!r})",
                type=nexusrpc.HandlerErrorType.BAD_REQUEST,
            )
        except nexusrpc.HandlerError as err:
            return self._handler_error(err)
        except Exception as err:  # a bug or outage in the handler: INTERNAL, retried by the server
            return pb.NexusHandlerError(
                error_type=nexusrpc.HandlerErrorType.INTERNAL.name,
                failure=self._data_converter.to_failure(err),
                retry_behavior=pb.NEXUS_HANDLER_ERROR_RETRY_BEHAVIOR_UNSPECIFIED,
            )

    async def _start(self, request: pb.NexusRequest, cancellation: TaskCancellation) -> pb.NexusStartOperationResponse:
        start = request.start_operation
        ctx = nexusrpc.handler.StartOperationContext(
            service=start.service,
            operation=start.operation,
            headers=dict(request.header),
            task_cancellation=cancellation,
            request_id=start.request_id,
            callback_url=start.callback or None,
            callback_headers=dict(start.callback_header),
        )
        try:
            result = await self._handler.start_operation(ctx, _PayloadInput(start.payload, self._data_converter))
        except nexusrpc.OperationError as err:
            return pb.NexusStartOperationResponse(
                operation_error=pb.NexusUnsuccessfulOperationError(
                    operation_state=err.state.value, failure=self._data_converter.to_failure(err)
                )
            )
        if isinstance(result, nexusrpc.handler.StartOperationResultAsync):
            return pb.NexusStartOperationResponse(
                async_success=pb.NexusStartOperationResponse.Async(operation_token=result.token)
            )
        payload = self._data_converter.to_payload(result.value)
        return pb.NexusStartOperationResponse(sync_success=pb.NexusStartOperationResponse.Sync(payload=payload))

    async def _cancel(self, request: pb.NexusRequest, cancellation: TaskCancellation) -> None:
        cancel = request.cancel_operation
        ctx = nexusrpc.handler.CancelOperationContext(
            service=cancel.service,
            operation=cancel.operation,
            headers=dict(request.header),
            task_cancellation=cancellation,
        )
        await self._handler.cancel_operation(ctx, cancel.operation_token)

    def _handler_error(self, err: nexusrpc.HandlerError) -> pb.NexusHandlerError:
        return pb.NexusHandlerError(
            error_type=err.type.name,
            failure=self._data_converter.to_failure(err),
            retry_behavior=_RETRY[getattr(err, "retryable_override", None)],
        )
