"""How the client calls the server: the retry loop, gRPC errors -> SDK errors, long-polled history pages.

:class:`~spindle.client.Client` delegates its ``_rpc`` and ``_history_page`` here; every call the
client package makes goes through them (handles, batches, schedules, namespaces, API keys), so a
call that is safe to repeat is retried the same way wherever it is made.
"""

from __future__ import annotations

import asyncio
import datetime

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import grpc
import grpc.aio

from google.protobuf.message import Message

from spindle import exceptions as E
from spindle.api import WORKFLOW_ALREADY_STARTED_KEY
from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.client._retry_delay import throttled_wait

__all__ = ["IDEMPOTENT", "LONG_POLL_TIMEOUT", "RETRY_BUDGET", "call_rpc", "duration_ms", "history_page", "map_rpc_error",
           "time_from_ms"]

_UTC = datetime.timezone.utc
#: A long poll for a result is answered by the server within 60 s; give it headroom.
LONG_POLL_TIMEOUT = 70.0
#: How long idempotent calls keep retrying while the server is unavailable (e.g. restarting).
RETRY_BUDGET = 15.0
#: Calls that may be repeated safely: reads, and writes deduplicated by their request id.
IDEMPOTENT = frozenset({
    "GetSystemInfo", "DescribeNamespace", "ListNamespaces", "StartWorkflowExecution", "SignalWorkflowExecution",
    "SignalWithStartWorkflowExecution", "RequestCancelWorkflowExecution", "DescribeWorkflowExecution",
    "GetWorkflowExecutionHistory", "ListWorkflowExecutions", "CountWorkflowExecutions", "QueryWorkflow",
    "CreateSchedule", "DescribeSchedule", "ListSchedules",  # a create is deduplicated by its request id
})

#: ``client._rpc``'s shape: ``await rpc(method, request, timeout=..., not_found=...)``.
Rpc = Callable[..., Awaitable[Any]]


def duration_ms(d: datetime.timedelta | None) -> int:
    """A duration as the wire's whole milliseconds (``None``: 0, which the wire reads as unset)."""
    return 0 if d is None else int(d.total_seconds() * 1000)


def time_from_ms(ms: int) -> datetime.datetime | None:
    """A wire instant (Unix milliseconds; 0: unset) as an aware UTC datetime, or None."""
    return datetime.datetime.fromtimestamp(ms / 1000, _UTC) if ms else None


def _status_name(e: grpc.aio.AioRpcError) -> str:
    code = e.code()
    return code.name if code is not None else "UNKNOWN"


def map_rpc_error(e: grpc.aio.AioRpcError, *, not_found: str = "workflow", workflow_id: str = "",
                  workflow_type: str = "") -> E.RPCError:
    """Translate a gRPC error into the SDK's taxonomy.

    ``not_found`` says what a NOT_FOUND means for this call: ``"workflow"`` (a
    :class:`WorkflowNotFoundError`), or ``"rpc"`` (a plain :class:`RPCError`). A
    message that mentions a namespace gives :class:`NamespaceNotFoundError`, except with
    ``"raw"`` (``client.workflow_service``): every error is a plain :class:`RPCError`.
    An ALREADY_EXISTS that carries a refused start's details (the existing run's id, in
    the trailing metadata) gives :class:`WorkflowAlreadyStartedError` with ``run_id``
    filled; ``workflow_id`` / ``workflow_type`` are the refused start's.
    """
    msg = e.details() or _status_name(e)
    if not_found == "raw":
        return E.RPCError(msg, status=_status_name(e))
    code = e.code()
    if code == grpc.StatusCode.ALREADY_EXISTS:
        run_id = _already_started_run_id(e)
        if run_id is not None:
            return E.WorkflowAlreadyStartedError(msg, workflow_id=workflow_id, workflow_type=workflow_type,
                                                 run_id=run_id)
    if code == grpc.StatusCode.NOT_FOUND:
        if "namespace" in msg.lower():
            return E.NamespaceNotFoundError(msg)
        if not_found == "workflow":
            return E.WorkflowNotFoundError(msg)
    return E.RPCError(msg, status=_status_name(e))


def _already_started_run_id(e: grpc.aio.AioRpcError) -> str | None:
    """The existing run's id from an ALREADY_EXISTS status's details, or None when it carries none."""
    try:
        trailing = e.trailing_metadata() or ()
    except Exception:  # noqa: BLE001 - a hand-made error without metadata
        return None
    for key, value in trailing:
        if key == WORKFLOW_ALREADY_STARTED_KEY and isinstance(value, bytes):
            details = pb.WorkflowExecutionAlreadyStartedFailure()
            try:
                details.ParseFromString(value)
            except Exception:  # noqa: BLE001 - not a details message: as if absent
                return None
            return details.run_id
    return None


async def call_rpc(stub: Any, method: str, request: Message, *, timeout: float | None = None,
                   not_found: str = "workflow",
                   stop_retrying: Callable[[grpc.aio.AioRpcError], bool] | None = None,
                   retry: bool | None = None, metadata: Sequence[tuple[str, str]] = ()) -> Any:
    """Call ``stub.method``; a call that is safe to repeat is retried while the server is unavailable or throttles it.

    Starts and signals carry a request id set once per user call, so a retry after a
    reply lost in a crash is recorded once; reads are naturally repeatable. A throttled
    call (RESOURCE_EXHAUSTED with a retry delay: the namespace is over its request rate
    limit) is retried after the server's delay plus a jittered backoff. Retries stop
    after :data:`RETRY_BUDGET` seconds (or when the next wait would pass it), or at once
    when ``stop_retrying(error)`` says so, and the last error is raised. ``retry`` overrides
    whether ``method`` is retried at all (None: when it is in :data:`IDEMPOTENT`);
    ``metadata`` is sent with the call, after the client's own (its API key).

    Raises:
        RPCError: the last error, mapped by :func:`map_rpc_error` with ``not_found``.
    """
    fn = getattr(stub, method)
    retryable = method in IDEMPOTENT if retry is None else retry
    extra: dict[str, Any] = {"metadata": tuple(metadata)} if metadata else {}
    if timeout is not None:
        extra["timeout"] = timeout
    loop = asyncio.get_running_loop()
    give_up = loop.time() + RETRY_BUDGET
    delay = 0.05
    attempt = 0
    while True:
        try:
            return await fn(request, **extra)
        except grpc.aio.AioRpcError as e:
            attempt += 1
            wait = None
            if retryable and not (stop_retrying is not None and stop_retrying(e)):
                wait = delay if e.code() == grpc.StatusCode.UNAVAILABLE else throttled_wait(e, attempt)
            if wait is None or loop.time() + wait > give_up:
                raise map_rpc_error(e, not_found=not_found) from e
        await asyncio.sleep(wait)
        delay = min(delay * 2, 1.0)


async def history_page(rpc: Rpc, namespace: str, execution: pb.WorkflowExecution, token: bytes = b"", *,
                       wait: bool, close_event_only: bool = False) -> svc.GetWorkflowExecutionHistoryResponse:
    """One page of a run's history from ``token`` (payloads still encoded), read with ``rpc`` (``client._rpc``).

    With ``wait`` the server holds the call until there are events past ``token`` or the
    run closes (a long poll); a long poll that outlives its deadline is asked again from
    the same place, so callers never see DEADLINE_EXCEEDED.
    """
    req = svc.GetWorkflowExecutionHistoryRequest(namespace=namespace, execution=execution,
                                                 next_page_token=token, wait_new_event=wait,
                                                 close_event_only=close_event_only)
    while True:
        try:
            resp: svc.GetWorkflowExecutionHistoryResponse = await rpc(
                "GetWorkflowExecutionHistory", req, timeout=LONG_POLL_TIMEOUT)
            return resp
        except E.RPCError as e:
            if e.status != "DEADLINE_EXCEEDED":
                raise
