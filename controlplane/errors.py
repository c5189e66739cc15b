"""Errors the control plane answers with; the frontend maps each to its gRPC status.

A request that raises one of these has changed nothing (the engine checks before it
writes, and a failed write is never half-applied).
"""

from __future__ import annotations

import math

import grpc

from spindle.api import RETRY_AFTER_KEY
from spindle.api import WORKFLOW_ALREADY_STARTED_KEY as ALREADY_STARTED_KEY


class ServiceError(Exception):
    """An error with a gRPC status code and a message that names the offending field."""

    code: grpc.StatusCode = grpc.StatusCode.INTERNAL

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def trailing_metadata(self) -> tuple[tuple[str, str | bytes], ...]:
        """Structured details sent with the status (gRPC trailing metadata); none by default."""
        return ()


def already_started_details(trailing: object) -> tuple[str, str] | None:
    """(run_id, start_request_id) from a status's trailing metadata, or None when it has none."""
    from spindle.api import messages_pb2 as pb

    for key, value in trailing or ():  # type: ignore[attr-defined]
        if key == ALREADY_STARTED_KEY and isinstance(value, bytes):
            details = pb.WorkflowExecutionAlreadyStartedFailure()
            try:
                details.ParseFromString(value)
            except Exception:  # noqa: BLE001 - not ours: ignore it
                return None
            return details.run_id, details.start_request_id
    return None


class InvalidArgument(ServiceError):
    code = grpc.StatusCode.INVALID_ARGUMENT


class NotFound(ServiceError):
    code = grpc.StatusCode.NOT_FOUND


class AlreadyExists(ServiceError):
    """ALREADY_EXISTS. With ``run_id`` (a start refused by the workflow id policies) the status carries
    a ``WorkflowExecutionAlreadyStartedFailure`` in its trailing metadata (``ALREADY_STARTED_KEY``)."""

    code = grpc.StatusCode.ALREADY_EXISTS

    def __init__(self, message: str, *, run_id: str = "", start_request_id: str = "") -> None:
        super().__init__(message)
        self.run_id = run_id
        self.start_request_id = start_request_id

    def trailing_metadata(self) -> tuple[tuple[str, str | bytes], ...]:
        if not self.run_id:
            return ()
        from spindle.api import messages_pb2 as pb

        details = pb.WorkflowExecutionAlreadyStartedFailure(run_id=self.run_id, start_request_id=self.start_request_id)
        return ((ALREADY_STARTED_KEY, details.SerializeToString()),)


class Unauthenticated(ServiceError):
    """UNAUTHENTICATED: no credentials, or credentials this server does not accept (docs/SECURITY.md)."""

    code = grpc.StatusCode.UNAUTHENTICATED


class PermissionDenied(ServiceError):
    """PERMISSION_DENIED: a known principal without the role the call needs; the message names role and namespace."""

    code = grpc.StatusCode.PERMISSION_DENIED


class FailedPrecondition(ServiceError):
    code = grpc.StatusCode.FAILED_PRECONDITION


class ResourceExhausted(ServiceError):
    """RESOURCE_EXHAUSTED. With ``retry_after`` (seconds: the call would pass after that long) the
    status carries the delay twice: as a ``google.rpc.RetryInfo`` in the standard rich status
    details (``grpc-status-details-bin``, read with ``grpc_status.rpc_status``) and in plain
    trailing metadata (``RETRY_AFTER_KEY``, milliseconds). Without it, retrying will not help."""

    code = grpc.StatusCode.RESOURCE_EXHAUSTED

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after

    def trailing_metadata(self) -> tuple[tuple[str, str | bytes], ...]:
        if self.retry_after is None:
            return ()
        return retry_after_metadata(self.code, self.message, self.retry_after)


def retry_after_metadata(code: grpc.StatusCode, message: str, seconds: float) -> tuple[tuple[str, str | bytes], ...]:
    """Trailing metadata saying "retry after ``seconds``" for a status ``code`` with ``message``."""
    from google.protobuf import any_pb2, duration_pb2
    from google.rpc import error_details_pb2, status_pb2
    from grpc_status import rpc_status

    ms = max(1, math.ceil(seconds * 1000))
    info = error_details_pb2.RetryInfo(retry_delay=duration_pb2.Duration(seconds=ms // 1000, nanos=ms % 1000 * 1_000_000))
    detail = any_pb2.Any()
    detail.Pack(info)
    status = status_pb2.Status(code=code.value[0], message=message, details=[detail])
    rich = tuple(rpc_status.to_status(status).trailing_metadata)
    return (*rich, (RETRY_AFTER_KEY, str(ms)))


def retry_after_details(trailing: object) -> float | None:
    """The retry delay (seconds) a status's trailing metadata carries, or None when it has none."""
    for key, value in trailing or ():  # type: ignore[attr-defined]
        if key == RETRY_AFTER_KEY:
            try:
                return int(value) / 1000.0
            except (TypeError, ValueError):
                return None
    return None


class DeadlineExceeded(ServiceError):
    code = grpc.StatusCode.DEADLINE_EXCEEDED


class Unavailable(ServiceError):
    code = grpc.StatusCode.UNAVAILABLE


class ShardNotOwned(Unavailable):
    """This process does not own the workflow's shard (never did, no longer does, or has not opened it yet).

    Nothing was loaded or written; the call is safe to retry at the shard's owner (a cluster
    member's router does so). Background work of a shard that moved stops on it quietly: the
    lease manager reports the loss once per shard.
    """
