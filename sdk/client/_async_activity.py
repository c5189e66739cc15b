"""Completing an activity from outside its function: :class:`AsyncActivityHandle` (Temporal's name).

``client.get_async_activity_handle(task_token)`` makes one for an activity that called
``activity.raise_complete_async()``; its calls report the attempt's outcome or a heartbeat.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from google.protobuf.message import Message

from spindle import exceptions as E
from spindle.api import service_pb2 as svc
from spindle.converter._data_converter import DataConverter
from spindle.converter._serialization_context import SerializationContext, WorkflowSerializationContext

__all__ = ["ActivityClient", "AsyncActivityHandle"]


class ActivityClient(Protocol):
    """What the handle uses of a :class:`spindle.client.Client` (which imports this module, so it is not named here)."""

    namespace: str
    identity: str
    data_converter: DataConverter

    async def _rpc(self, method: str, request: Message, *, timeout: float | None = None,
                   not_found: str = "workflow") -> Any: ...

    async def _encode(self, msg: Message, workflow_id: str = "",
                      context: WorkflowSerializationContext | None = None) -> None: ...


class AsyncActivityHandle:
    """Completes an activity attempt from outside the activity function.

    Made by ``client.get_async_activity_handle(task_token)`` for an activity that
    called ``activity.raise_complete_async()``. A stale token (the attempt timed
    out, or was already completed) raises :class:`RPCError` with ``status="NOT_FOUND"``.

    A task token does not say which workflow the activity belongs to: with a codec that
    binds payloads to their workflow (``EncryptionCodec``), give it with
    :meth:`with_context` (the activity can pass on ``activity.info().workflow_id``).
    """

    def __init__(self, client: ActivityClient, task_token: bytes,
                 context: WorkflowSerializationContext | None = None) -> None:
        self._client = client
        self.task_token = task_token
        self._context = context

    def with_context(self, context: SerializationContext) -> AsyncActivityHandle:
        """This handle, encoding its payloads for ``context`` (a :class:`WorkflowSerializationContext`
        naming the activity's namespace and workflow id), as Temporal's ``with_context``.

        Raises:
            TypeError: ``context`` is not a ``WorkflowSerializationContext``.
        """
        if not isinstance(context, WorkflowSerializationContext):
            raise TypeError(f"AsyncActivityHandle.with_context takes a WorkflowSerializationContext, "
                            f"got {type(context).__name__}")
        return AsyncActivityHandle(self._client, self.task_token, context)

    async def complete(self, result: Any = None) -> None:
        """Complete the attempt with ``result``."""
        c = self._client
        req = svc.RespondActivityTaskCompletedRequest(
            task_token=self.task_token, result=c.data_converter.to_payloads([result]), identity=c.identity,
            namespace=c.namespace)
        await c._encode(req, context=self._context)
        await c._rpc("RespondActivityTaskCompleted", req, not_found="rpc")

    async def fail(self, error: BaseException, *, last_heartbeat_details: Sequence[Any] = ()) -> None:
        """Fail the attempt with ``error`` (retried per the activity's retry policy)."""
        c = self._client
        req = svc.RespondActivityTaskFailedRequest(
            task_token=self.task_token, failure=c.data_converter.to_failure(error), identity=c.identity,
            namespace=c.namespace)
        if last_heartbeat_details:
            req.last_heartbeat_details.CopyFrom(c.data_converter.to_payloads(last_heartbeat_details))
        await c._encode(req, context=self._context)
        await c._rpc("RespondActivityTaskFailed", req, not_found="rpc")

    async def report_cancellation(self, *details: Any) -> None:
        """Report that the attempt stopped because cancellation was requested."""
        c = self._client
        req = svc.RespondActivityTaskCanceledRequest(
            task_token=self.task_token, details=c.data_converter.to_payloads(details), identity=c.identity,
            namespace=c.namespace)
        await c._encode(req, context=self._context)
        await c._rpc("RespondActivityTaskCanceled", req, not_found="rpc")

    async def heartbeat(self, *details: Any) -> None:
        """Record a heartbeat.

        Raises:
            CancelledError: the workflow requested cancellation of this activity
                (stop and call :meth:`report_cancellation`).
        """
        c = self._client
        req = svc.RecordActivityTaskHeartbeatRequest(
            task_token=self.task_token, details=c.data_converter.to_payloads(details), identity=c.identity,
            namespace=c.namespace)
        await c._encode(req, context=self._context)
        resp = await c._rpc("RecordActivityTaskHeartbeat", req, not_found="rpc")
        if resp.cancel_requested:
            raise E.CancelledError("activity cancellation requested")
