"""Errors raised by Spindle's client, worker and workflow APIs.

Failures that cross the wire (an activity's error seen by its workflow, a workflow's
error seen by its client) are converted to and from ``spindle.v1.Failure`` by the
data converter, so a chain such as ``WorkflowFailureError -> ActivityError ->
ApplicationError`` survives the trip with its messages, types and details.
"""

from __future__ import annotations

import builtins
import enum

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover - the wire types, for annotations only
    from spindle.api import messages_pb2 as pb

__all__ = [
    "SpindleError",
    "FailureError",
    "ApplicationError",
    "ApplicationErrorCategory",
    "CancelledError",
    "TerminatedError",
    "TimeoutError",
    "TimeoutType",
    "ActivityError",
    "ChildWorkflowError",
    "NexusOperationError",
    "ServerError",
    "WorkflowFailureError",
    "WorkflowContinuedAsNewError",
    "WorkflowAlreadyStartedError",
    "WorkflowNotFoundError",
    "NamespaceNotFoundError",
    "NonDeterminismError",
    "QueryFailedError",
    "WorkflowUpdateFailedError",
    "UpdateFailedError",
    "WorkflowUpdateRPCTimeoutOrCancelledError",
    "RPCError",
    "ScheduleAlreadyRunningError",
    "WorkflowContextError",
]


class SpindleError(Exception):
    """Base class of every error Spindle raises."""


class FailureError(SpindleError):
    """An error that can travel between workers, the server and clients.

    ``message`` is the human text; ``cause`` (also ``__cause__``) is the next error of
    the chain, if any.
    """

    def __init__(self, message: str = "", *, cause: BaseException | None = None) -> None:
        super().__init__(message)
        self.message = message
        #: For an error rebuilt from a ``Failure``: the stack trace where it was raised remotely.
        self.stack_trace: str = ""
        self._cause = cause
        self._failure: pb.Failure | None = None
        if cause is not None:
            self.__cause__ = cause

    @property
    def cause(self) -> BaseException | None:
        """The error that caused this one, or ``None``."""
        return self._cause if self._cause is not None else self.__cause__

    @property
    def failure(self) -> pb.Failure | None:
        """The ``spindle.v1.Failure`` this error was rebuilt from (Temporal's ``FailureError.failure``).

        Set for errors that crossed the wire (decoded by ``DataConverter.from_failure``:
        what ``handle.result()``, an activity or a child workflow raise), with its
        ``cause`` chain; ``None`` for an error raised locally. The message is a copy:
        changing it changes nothing else.
        """
        return self._failure


class ApplicationErrorCategory(enum.IntEnum):
    """How severe an :class:`ApplicationError` is; decides how the worker reports it.

    The category travels with the failure (``ApplicationFailureInfo.category``), so
    whoever receives the error sees it too. It never changes retries.
    """

    UNSPECIFIED = 0
    """An ordinary failure: the worker logs a failed activity attempt at WARNING."""

    BENIGN = 1
    """An expected failure (e.g. polling until something is ready): the worker logs
    it at DEBUG only."""


class ApplicationError(FailureError):
    """An error raised on purpose by user code (activity or workflow).

    Raising it from a workflow fails the workflow (other exceptions fail only the
    workflow *task*, which is retried after a fix). Raising it from an activity fails
    the attempt; the attempt is retried by the activity's retry policy unless
    ``non_retryable`` is set or ``type`` is listed in the policy's
    ``non_retryable_error_types``.

    Args:
        message: what went wrong.
        *details: values (converted by the data converter) for the handler of the error.
        type: a name to match in ``non_retryable_error_types`` (default: none).
        non_retryable: do not retry this failure.
        next_retry_delay: override the retry policy's backoff for the next attempt.
        category: :attr:`ApplicationErrorCategory.BENIGN` marks an expected failure,
            which the worker logs at DEBUG instead of WARNING.

    Raises:
        ValueError: ``category`` is not an :class:`ApplicationErrorCategory` value.
    """

    def __init__(
        self,
        message: str = "",
        *details: Any,
        type: str | None = None,
        non_retryable: bool = False,
        next_retry_delay: Any = None,
        cause: BaseException | None = None,
        category: ApplicationErrorCategory = ApplicationErrorCategory.UNSPECIFIED,
    ) -> None:
        super().__init__(message, cause=cause)
        try:
            checked = ApplicationErrorCategory(category)
        except ValueError:
            names = ", ".join(f"ApplicationErrorCategory.{c.name}" for c in ApplicationErrorCategory)
            raise ValueError(f"ApplicationError category must be one of {names}, got {category!r}") from None
        self.details: Sequence[Any] = details
        self.type = type
        self.non_retryable = non_retryable
        self.next_retry_delay = next_retry_delay
        self.category = checked

    def __repr__(self) -> str:
        extra = "" if self.category is ApplicationErrorCategory.UNSPECIFIED else f", category={self.category.name}"
        return (f"ApplicationError({self.message!r}, type={self.type!r}, non_retryable={self.non_retryable}"
                f"{extra})")


class CancelledError(FailureError):
    """A workflow, activity or child workflow was cancelled."""

    def __init__(self, message: str = "cancelled", *details: Any, cause: BaseException | None = None) -> None:
        super().__init__(message, cause=cause)
        self.details: Sequence[Any] = details


class TerminatedError(FailureError):
    """A workflow was terminated (no cleanup ran). ``reason`` is the given reason."""

    def __init__(self, reason: str = "", *, cause: BaseException | None = None) -> None:
        super().__init__(reason or "terminated", cause=cause)
        self.reason = reason


class TimeoutType:
    """Names of the timeouts a :class:`TimeoutError` can carry."""

    START_TO_CLOSE = "START_TO_CLOSE"
    SCHEDULE_TO_START = "SCHEDULE_TO_START"
    SCHEDULE_TO_CLOSE = "SCHEDULE_TO_CLOSE"
    HEARTBEAT = "HEARTBEAT"
    WORKFLOW_EXECUTION = "WORKFLOW_EXECUTION"


class TimeoutError(FailureError, builtins.TimeoutError):
    """A timeout fired. Also a builtin ``TimeoutError``, so ``except TimeoutError`` catches it.

    ``timeout_type`` is one of :class:`TimeoutType`'s names;
    ``last_heartbeat_details`` holds an activity's last heartbeat details.
    """

    def __init__(
        self,
        message: str = "timed out",
        *,
        timeout_type: str | None = None,
        last_heartbeat_details: Sequence[Any] = (),
        cause: BaseException | None = None,
    ) -> None:
        FailureError.__init__(self, message, cause=cause)
        self.timeout_type = timeout_type
        self.last_heartbeat_details = last_heartbeat_details


class ActivityError(FailureError):
    """An activity failed for good (retries exhausted, non-retryable, timed out or cancelled).

    ``cause`` is the final error: an :class:`ApplicationError`, :class:`TimeoutError`
    or :class:`CancelledError`.
    """

    def __init__(
        self,
        message: str = "activity failed",
        *,
        activity_type: str = "",
        activity_id: str = "",
        scheduled_event_id: int = 0,
        retry_state: str = "",
        cause: BaseException | None = None,
    ) -> None:
        super().__init__(message, cause=cause)
        self.activity_type = activity_type
        self.activity_id = activity_id
        self.scheduled_event_id = scheduled_event_id
        self.retry_state = retry_state


class ChildWorkflowError(FailureError):
    """A child workflow failed, was cancelled, terminated or timed out; see ``cause``."""

    def __init__(
        self,
        message: str = "child workflow failed",
        *,
        namespace: str = "",
        workflow_id: str = "",
        run_id: str = "",
        workflow_type: str = "",
        cause: BaseException | None = None,
    ) -> None:
        super().__init__(message, cause=cause)
        self.namespace = namespace
        self.workflow_id = workflow_id
        self.run_id = run_id
        self.workflow_type = workflow_type


class NexusOperationError(FailureError):
    """A Nexus operation called from a workflow failed, was canceled or timed out; see ``cause``.

    Temporal's name and fields: ``endpoint``, ``service`` and ``operation`` name what was called,
    ``operation_token`` is the handler's token of an asynchronous operation (empty for a
    synchronous one) and ``scheduled_event_id`` is the caller's NexusOperationScheduled event.
    ``cause`` is the final error: an :class:`ApplicationError` the handler raised, a
    :class:`CancelledError` or a :class:`TimeoutError`.
    """

    def __init__(
        self,
        message: str = "nexus operation failed",
        *,
        scheduled_event_id: int = 0,
        endpoint: str = "",
        service: str = "",
        operation: str = "",
        operation_token: str = "",
        cause: BaseException | None = None,
    ) -> None:
        super().__init__(message, cause=cause)
        self.scheduled_event_id = scheduled_event_id
        self.endpoint = endpoint
        self.service = service
        self.operation = operation
        self.operation_token = operation_token


class ServerError(FailureError):
    """A failure produced by the control plane itself (e.g. history too large)."""

    def __init__(self, message: str = "", *, non_retryable: bool = False, cause: BaseException | None = None) -> None:
        super().__init__(message, cause=cause)
        self.non_retryable = non_retryable


class WorkflowFailureError(SpindleError):
    """``handle.result()`` of a run that failed, was cancelled, terminated or timed out.

    ``cause`` is the :class:`ApplicationError`, :class:`CancelledError`,
    :class:`TerminatedError` or :class:`TimeoutError` that closed the run.
    """

    def __init__(self, cause: BaseException, *, status: Any = None) -> None:
        super().__init__(f"workflow execution failed: {cause}")
        self.cause = cause
        self.status = status
        self.__cause__ = cause


class WorkflowContinuedAsNewError(SpindleError):
    """``handle.result(follow_runs=False)`` of a run that continued as new; ``new_run_id`` is the next run."""

    def __init__(self, new_run_id: str) -> None:
        super().__init__(f"workflow continued as new (run {new_run_id})")
        self.new_run_id = new_run_id


class RPCError(SpindleError):
    """A call to the control plane failed. ``status`` is the gRPC status code name."""

    def __init__(self, message: str, *, status: str = "UNKNOWN") -> None:
        super().__init__(message)
        self.message = message
        self.status = status


class WorkflowAlreadyStartedError(RPCError):
    """A start was refused: a run with this workflow id exists and the policies forbid another.

    Attributes:
        workflow_id: the workflow id of the refused start.
        workflow_type: the workflow type the refused start asked for.
        run_id: the existing run's id (the running run; for a refusal by the id reuse
            policy, the closed run that holds the id), as the server reports it; empty
            only if the server did not say.
    """

    def __init__(self, message: str, *, workflow_id: str = "", workflow_type: str = "", run_id: str = "") -> None:
        super().__init__(message, status="ALREADY_EXISTS")
        self.workflow_id = workflow_id
        self.workflow_type = workflow_type
        self.run_id = run_id


class WorkflowNotFoundError(RPCError):
    """No execution with that workflow id (and run id) exists in the namespace."""

    def __init__(self, message: str) -> None:
        super().__init__(message, status="NOT_FOUND")


class NamespaceNotFoundError(RPCError):
    """The namespace does not exist."""

    def __init__(self, message: str) -> None:
        super().__init__(message, status="NOT_FOUND")


class ScheduleAlreadyRunningError(RPCError):
    """``create_schedule`` was refused: a schedule with this id exists in the namespace (Temporal's name).

    Attributes:
        schedule_id: the id that is taken.
    """

    def __init__(self, message: str = "Schedule already running", *, schedule_id: str = "") -> None:
        super().__init__(message, status="ALREADY_EXISTS")
        self.schedule_id = schedule_id


class QueryFailedError(SpindleError):
    """A query named no handler of the workflow, its handler raised, or it timed out."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class WorkflowUpdateFailedError(SpindleError):
    """An update was rejected by its validator or its handler raised (Temporal's name).

    ``cause`` is the error the validator or handler raised (usually an
    :class:`ApplicationError`; a :class:`CancelledError` when the handler was
    cancelled, or a server failure when the run closed before the update completed).

    Args:
        cause: why the update failed.
        update_name: the update's name, for the message (optional).
    """

    def __init__(self, cause: BaseException, *, update_name: str | None = None) -> None:
        what = f"update {update_name!r}" if update_name else "workflow update"
        detail = cause.message if isinstance(cause, FailureError) else str(cause)
        message = f"{what} failed: {detail}" if detail else f"{what} failed"
        super().__init__(message)
        self.message = message
        self.update_name = update_name
        self.__cause__ = cause

    @property
    def cause(self) -> BaseException:
        """The error the validator or handler raised."""
        assert self.__cause__ is not None
        return self.__cause__


#: The earlier Spindle name of :class:`WorkflowUpdateFailedError` (the same class).
UpdateFailedError = WorkflowUpdateFailedError


class WorkflowUpdateRPCTimeoutOrCancelledError(RPCError):
    """Waiting for an update gave up because its ``rpc_timeout`` passed (Temporal's name).

    Only the *waiting* stopped; the update itself may still be accepted and complete
    (``handle.get_update_handle(id).result()`` asks again). ``status`` is
    ``"DEADLINE_EXCEEDED"``. (Cancelling the waiting task raises
    ``asyncio.CancelledError`` as usual, not this error.)
    """

    def __init__(self, message: str = "timeout or cancellation waiting for update", *,
                 status: str = "DEADLINE_EXCEEDED") -> None:
        super().__init__(message, status=status)


class NonDeterminismError(SpindleError):
    """Workflow code did not reproduce its recorded history on replay.

    The message names the event id, the recorded event and the command the code
    produced instead. The workflow task fails (and is retried) rather than corrupting
    the execution; fix the code (or guard the change with ``workflow.patched``).
    """

    def __init__(self, message: str, *, event_id: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.event_id = event_id


class WorkflowContextError(SpindleError, RuntimeError):
    """A workflow-only API was called outside a workflow, or a query handler tried to issue a command."""
