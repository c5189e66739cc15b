"""Reporting what an activity attempt did: heartbeats, and its completion, failure or cancellation.

Each report is encoded by the codec chain (bound to the attempt's workflow, which the
attempt registers in :attr:`OutcomeReporter.payload_contexts`) and sent with the
attempt's task token. An outcome is re-sent while the server is unavailable or
throttles it, for up to ``RESPOND_RETRY_BUDGET`` seconds; a completion that makes a
workflow task for this worker's sticky queue returns it, and it is handed to the
workflow half (``on_workflow_task``).
"""

from __future__ import annotations

import logging

from collections.abc import Callable, Sequence
from typing import Any

import grpc
import grpc.aio

from spindle._activity.context import ActivityContext
from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.client._retry_delay import call_with_retries
from spindle.converter._payload_codec import PayloadCodec
from spindle.converter._payload_visitor import encode_message
from spindle.converter._serialization_context import WorkflowSerializationContext
from spindle.exceptions import ApplicationError

__all__ = ["RESPOND_RETRY_BUDGET", "OutcomeReporter"]

log = logging.getLogger("spindle.worker")
#: Seconds an activity attempt's outcome keeps being re-sent while the server is unavailable or throttles it.
RESPOND_RETRY_BUDGET = 30.0


class OutcomeReporter:
    """Sends the heartbeats and outcomes of a worker's activity attempts.

    Args:
        stub: the client's stub.
        namespace: the worker's namespace.
        identity: names the worker in histories.
        converter: the data converter (for a failure's exception).
        codecs: the client's codec chain (encodes what is sent).
        sticky_queue: this worker's sticky workflow queue (a completion may return a task for it).
        on_workflow_task: called with a workflow task returned by a completion, or ``None``.
    """

    def __init__(self, stub: Any, namespace: str, identity: str, converter: Any, codecs: Sequence[PayloadCodec],
                 sticky_queue: str,
                 on_workflow_task: Callable[[svc.PollWorkflowTaskQueueResponse], None] | None) -> None:
        self._stub = stub
        self._ns = namespace
        self._identity = identity
        self._conv = converter
        self._codecs = codecs
        self._sticky_queue = sticky_queue
        self._on_workflow_task = on_workflow_task
        #: The workflow each running attempt belongs to, by task token (what codecs bind payloads to).
        self.payload_contexts: dict[bytes, WorkflowSerializationContext] = {}

    async def heartbeat(self, token: bytes, details: pb.Payloads, ctx: ActivityContext) -> None:
        """Record a heartbeat; the server's answer may cancel ``ctx`` (never raises for the server's answer)."""
        req = svc.RecordActivityTaskHeartbeatRequest(task_token=token, details=details, identity=self._identity,
                                                     namespace=self._ns)
        try:
            if self._codecs:
                await encode_message(self._codecs, req, context=self.payload_contexts.get(token))
            resp = await self._stub.RecordActivityTaskHeartbeat(req)
        except ValueError as e:  # a codec refused the details: the heartbeat is not sent
            log.warning("heartbeat not sent: the codec chain cannot encode its details: %s", e)
            return
        except grpc.aio.AioRpcError as e:
            if e.code() == grpc.StatusCode.NOT_FOUND:
                ctx.request_cancel("not_found")
            else:
                log.warning("heartbeat failed: %s %s", e.code(), e.details())
            return
        if resp.cancel_requested:
            ctx.request_cancel("cancel_requested")

    async def _respond(self, method: str, req: Any) -> None:
        if self._codecs:
            try:
                await encode_message(self._codecs, req, context=self.payload_contexts.get(req.task_token))
            except Exception as e:  # noqa: BLE001 - a codec refused the result or failure
                if method == "RespondActivityTaskFailed" and req.failure.application_failure_info.type == \
                        "PayloadEncodeError":
                    log.error("%s: cannot encode even the failure report: %s: %s", method, type(e).__name__, e)
                    return
                log.warning("%s: the codec chain cannot encode its payloads: %s: %s", method, type(e).__name__, e)
                await self.fail(req.task_token, ApplicationError(
                    f"the payloads of {method} cannot be encoded by the codec chain: {type(e).__name__}: {e}",
                    type="PayloadEncodeError"), None)
                return
        try:
            # Retried while the server is unavailable or throttles it: the outcome of an attempt that
            # took minutes must not be dropped because a cluster shard was moving for a few seconds.
            # A repeat is harmless (the server accepts one outcome per attempt; later ones get NOT_FOUND).
            resp = await call_with_retries(getattr(self._stub, method), req, budget=RESPOND_RETRY_BUDGET,
                                           retry_unavailable=True)
        except grpc.aio.AioRpcError as e:
            if e.code() == grpc.StatusCode.NOT_FOUND:
                log.debug("%s: attempt no longer current: %s", method, e.details())
            else:
                log.warning("%s failed: %s %s", method, e.code(), e.details())
            return
        wft = getattr(resp, "workflow_task", None)
        if wft is not None and wft.task_token and self._on_workflow_task is not None:
            self._on_workflow_task(wft)

    async def complete(self, token: bytes, result: pb.Payloads) -> None:
        """Complete the attempt with ``result`` (a result the codecs refuse fails it instead)."""
        await self._respond("RespondActivityTaskCompleted", svc.RespondActivityTaskCompletedRequest(
            task_token=token, result=result, identity=self._identity, namespace=self._ns,
            sticky_task_queue=self._sticky_queue))

    async def fail(self, token: bytes, error: BaseException, last_details: pb.Payloads | None) -> None:
        """Fail the attempt with ``error`` and its last heartbeat details (the server decides whether to retry)."""
        req = svc.RespondActivityTaskFailedRequest(
            task_token=token, failure=self._conv.to_failure(error), identity=self._identity, namespace=self._ns,
            sticky_task_queue=self._sticky_queue)
        if last_details is not None:
            req.last_heartbeat_details.CopyFrom(last_details)
        await self._respond("RespondActivityTaskFailed", req)

    async def canceled(self, token: bytes, last_details: pb.Payloads | None) -> None:
        """Report the attempt cancelled as requested, with its last heartbeat details."""
        req = svc.RespondActivityTaskCanceledRequest(task_token=token, identity=self._identity, namespace=self._ns,
                                                     sticky_task_queue=self._sticky_queue)
        if last_details is not None:
            req.details.CopyFrom(last_details)
        await self._respond("RespondActivityTaskCanceled", req)
