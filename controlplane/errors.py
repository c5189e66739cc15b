"""Errors the control plane answers with; the frontend maps each to its gRPC status.

A request that raises one of these has changed nothing (the engine checks before it
writes, and a failed write is never half-applied).
"""

from __future__ import annotations

import grpc

from spindle.controlplane.api import WORKFLOW_ALREADY_STARTED_KEY as ALREADY_STARTED_KEY


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
    from spindle.controlplane.api import messages_pb2 as pb

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
        from spindle.controlplane.api import messages_pb2 as pb

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
    code = grpc.StatusCode.RESOURCE_EXHAUSTED


class DeadlineExceeded(ServiceError):
    code = grpc.StatusCode.DEADLINE_EXCEEDED


class Unavailable(ServiceError):
    code = grpc.StatusCode.UNAVAILABLE
