"""Failure conversion: exceptions <-> ``spindle.v1.Failure`` chains (Temporal's default failure converter).

Spindle errors keep their kind and fields across the wire, any other exception becomes
an application failure named after its class, and a ``cause`` chain becomes the
failure's ``cause`` chain (at most 64 deep). Details are converted with the data
converter's payload conversion (the ``converter`` argument, :class:`PayloadConversion`),
leniently: reporting or reading a failure never fails because of its details.
:class:`~spindle.converter.DataConverter` exposes this as ``to_failure`` and
``from_failure``.
"""

from __future__ import annotations

import asyncio
import datetime
import traceback

from collections.abc import Sequence
from concurrent.futures.process import _RemoteTraceback
from typing import Any, Protocol, cast

from spindle import exceptions as exc_mod
from spindle.api import messages_pb2 as pb

__all__ = ["PayloadConversion", "to_failure", "from_failure", "safe_payloads", "safe_decode"]

_FAILURE_SOURCE = "spindle-python"
_MAX_CAUSE_DEPTH = 64


class PayloadConversion(Protocol):
    """What failure conversion needs of a data converter: its payload conversion."""

    def to_payloads(self, values: Sequence[Any]) -> pb.Payloads:
        """Encode values (raises ``TypeError`` or ``ValueError`` for one that cannot be)."""

    def from_payload(self, payload: pb.Payload, type_hint: Any = None) -> Any:
        """Decode one payload (raises ``ValueError`` for one that cannot be)."""


def safe_payloads(converter: PayloadConversion, values: Sequence[Any]) -> pb.Payloads:
    """``values`` as payloads; when one cannot be converted, every value's ``repr`` instead."""
    try:
        return converter.to_payloads(values)
    except (TypeError, ValueError):
        return converter.to_payloads([repr(v) for v in values])


def safe_decode(converter: PayloadConversion, items: pb.Payloads) -> list[Any]:
    """Each payload of ``items`` decoded, or left as the raw ``Payload`` when it cannot be."""
    out: list[Any] = []
    for p in items.payloads:
        try:
            out.append(converter.from_payload(p))
        except ValueError:
            out.append(p)
    return out


def to_failure(exc: BaseException, converter: PayloadConversion) -> pb.Failure:
    """Convert an exception and its ``cause`` chain to a ``Failure``.

    Spindle errors keep their kind (application, timeout, cancelled, terminated,
    server, activity, child workflow) and fields; ``asyncio.CancelledError``
    becomes a cancelled failure; any other exception becomes an application
    failure whose ``type`` is the exception's class name. The stack trace is
    kept (for an exception raised in a process pool's child, the child's). Details that cannot be converted are replaced by their ``repr`` so
    that reporting a failure never fails.
    """
    root = pb.Failure()
    current: BaseException | None = exc
    target = root
    seen: set[int] = set()
    depth = 0
    while current is not None:
        _fill_failure(current, target, converter)
        seen.add(id(current))
        depth += 1
        nxt = _cause_of(current)
        if isinstance(nxt, _RemoteTraceback):
            # raised in a process pool's child: its traceback there is the one that matters
            target.stack_trace = str(nxt).strip().strip('"').strip() + "\n"
            break
        if nxt is None or id(nxt) in seen or depth >= _MAX_CAUSE_DEPTH:
            break
        target = target.cause
        current = nxt
    return root


def from_failure(failure: pb.Failure, converter: PayloadConversion) -> BaseException:
    """Rebuild the exception chain described by ``failure``.

    Returns an :class:`~spindle.exceptions.ApplicationError`,
    :class:`~spindle.exceptions.TimeoutError`, :class:`~spindle.exceptions.CancelledError`,
    :class:`~spindle.exceptions.TerminatedError`, :class:`~spindle.exceptions.ServerError`,
    :class:`~spindle.exceptions.ActivityError` or :class:`~spindle.exceptions.ChildWorkflowError`
    whose ``cause`` is the next failure of the chain. The remote stack trace is
    available as ``exc.stack_trace``. Never raises for a well-formed failure;
    details that cannot be decoded are left as their raw payloads.
    """
    chain: list[pb.Failure] = []
    f: pb.Failure | None = failure
    while f is not None and len(chain) < _MAX_CAUSE_DEPTH:
        chain.append(f)
        f = f.cause if f.HasField("cause") else None
    cause: BaseException | None = None
    for item in reversed(chain):
        cause = _exception_from(item, cause, converter)
    assert cause is not None
    return cause


def _fill_failure(exc: BaseException, f: pb.Failure, converter: PayloadConversion) -> None:
    E = exc_mod
    f.source = _FAILURE_SOURCE
    remote = getattr(exc, "stack_trace", None)
    if isinstance(remote, str) and remote and exc.__traceback__ is None:
        f.stack_trace = remote
    elif exc.__traceback__ is not None:
        f.stack_trace = "".join(traceback.format_tb(exc.__traceback__))
    if isinstance(exc, E.FailureError):
        f.message = exc.message
    else:
        f.message = str(exc)
    if isinstance(exc, E.ApplicationError):
        info = f.application_failure_info
        info.type = exc.type or ""
        info.non_retryable = exc.non_retryable
        if exc.details:
            info.details.CopyFrom(safe_payloads(converter, exc.details))
        delay = exc.next_retry_delay
        if isinstance(delay, datetime.timedelta):
            info.next_retry_delay_ms = int(delay.total_seconds() * 1000)
        elif isinstance(delay, (int, float)) and delay:
            info.next_retry_delay_ms = int(delay * 1000)
        info.category = int(exc.category)  # type: ignore[assignment]
    elif isinstance(exc, E.TimeoutError):
        info_t = f.timeout_failure_info
        info_t.timeout_type = _enum_value(pb.TimeoutType, "TIMEOUT_TYPE_", exc.timeout_type)
        if exc.last_heartbeat_details:
            info_t.last_heartbeat_details.CopyFrom(safe_payloads(converter, exc.last_heartbeat_details))
    elif isinstance(exc, E.CancelledError):
        f.canceled_failure_info.SetInParent()
        if exc.details:
            f.canceled_failure_info.details.CopyFrom(safe_payloads(converter, exc.details))
    elif isinstance(exc, asyncio.CancelledError):
        f.message = str(exc) or "cancelled"
        f.canceled_failure_info.SetInParent()
    elif isinstance(exc, E.TerminatedError):
        f.terminated_failure_info.reason = exc.reason
    elif isinstance(exc, E.ServerError):
        f.server_failure_info.non_retryable = exc.non_retryable
    elif isinstance(exc, E.ActivityError):
        info_a = f.activity_failure_info
        info_a.scheduled_event_id = exc.scheduled_event_id
        info_a.started_event_id = int(getattr(exc, "started_event_id", 0) or 0)
        info_a.activity_type = exc.activity_type
        info_a.activity_id = exc.activity_id
        info_a.retry_state = _enum_value(pb.RetryState, "RETRY_STATE_", exc.retry_state)
    elif isinstance(exc, E.ChildWorkflowError):
        info_c = f.child_workflow_execution_failure_info
        info_c.namespace = exc.namespace
        info_c.workflow_execution.workflow_id = exc.workflow_id
        info_c.workflow_execution.run_id = exc.run_id
        info_c.workflow_type = exc.workflow_type
        info_c.initiated_event_id = int(getattr(exc, "initiated_event_id", 0) or 0)
        info_c.started_event_id = int(getattr(exc, "started_event_id", 0) or 0)
        info_c.retry_state = _enum_value(pb.RetryState, "RETRY_STATE_", getattr(exc, "retry_state", ""))
    else:
        f.application_failure_info.type = type(exc).__name__


def _exception_from(f: pb.Failure, cause: BaseException | None, converter: PayloadConversion
                    ) -> BaseException:
    E = exc_mod
    kind = f.WhichOneof("failure_info")
    result: BaseException
    if kind == "application_failure_info" or kind is None:
        a = f.application_failure_info
        delay = datetime.timedelta(milliseconds=a.next_retry_delay_ms) if a.next_retry_delay_ms else None
        result = E.ApplicationError(
            f.message,
            *safe_decode(converter, a.details),
            type=a.type or None,
            non_retryable=a.non_retryable,
            next_retry_delay=delay,
            cause=cause,
            category=_category(a.category),
        )
    elif kind == "timeout_failure_info":
        t = f.timeout_failure_info
        tname = pb.TimeoutType.Name(t.timeout_type).removeprefix("TIMEOUT_TYPE_") if t.timeout_type else None
        result = E.TimeoutError(
            f.message,
            timeout_type=tname,
            last_heartbeat_details=safe_decode(converter, t.last_heartbeat_details),
            cause=cause,
        )
    elif kind == "canceled_failure_info":
        result = E.CancelledError(f.message or "cancelled", *safe_decode(converter, f.canceled_failure_info.details),
                                  cause=cause)
    elif kind == "terminated_failure_info":
        result = E.TerminatedError(f.terminated_failure_info.reason, cause=cause)
        if f.message:
            result.message = f.message
            result.args = (f.message,)
    elif kind == "server_failure_info":
        result = E.ServerError(f.message, non_retryable=f.server_failure_info.non_retryable, cause=cause)
    elif kind == "activity_failure_info":
        a2 = f.activity_failure_info
        result = E.ActivityError(
            f.message or "activity failed",
            activity_type=a2.activity_type,
            activity_id=a2.activity_id,
            scheduled_event_id=a2.scheduled_event_id,
            retry_state=_retry_state_name(a2.retry_state),
            cause=cause,
        )
        result.started_event_id = a2.started_event_id  # type: ignore[attr-defined]
    else:  # child_workflow_execution_failure_info
        c = f.child_workflow_execution_failure_info
        result = E.ChildWorkflowError(
            f.message or "child workflow failed",
            namespace=c.namespace,
            workflow_id=c.workflow_execution.workflow_id,
            run_id=c.workflow_execution.run_id,
            workflow_type=c.workflow_type,
            cause=cause,
        )
        result.retry_state = _retry_state_name(c.retry_state)  # type: ignore[attr-defined]
        result.initiated_event_id = c.initiated_event_id  # type: ignore[attr-defined]
        result.started_event_id = c.started_event_id  # type: ignore[attr-defined]
    result.stack_trace = f.stack_trace
    if isinstance(result, E.FailureError):
        own = pb.Failure()
        own.CopyFrom(f)
        result._failure = own
    return result


def _cause_of(exc: BaseException) -> BaseException | None:
    if isinstance(exc, exc_mod.FailureError):
        return exc.cause
    return exc.__cause__


def _enum_value(enum_type: Any, prefix: str, name: str | None) -> Any:
    """Map ``"HEARTBEAT"`` (or ``"TIMEOUT_TYPE_HEARTBEAT"``) to its proto enum number; unknown -> 0."""
    if not name:
        return 0
    key = name if name.startswith(prefix) else prefix + name
    try:
        return int(enum_type.Value(key))
    except ValueError:
        return 0


def _retry_state_name(value: int) -> str:
    if not value:
        return ""
    try:
        return cast(str, pb.RetryState.Name(value).removeprefix("RETRY_STATE_"))
    except ValueError:
        return ""


def _category(value: int) -> exc_mod.ApplicationErrorCategory:
    """The category a failure carries; one this SDK does not know (a newer sender's) reads as UNSPECIFIED."""
    try:
        return exc_mod.ApplicationErrorCategory(value)
    except ValueError:
        return exc_mod.ApplicationErrorCategory.UNSPECIFIED
