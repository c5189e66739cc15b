"""Worker interceptors, shaped as temporalio's ``temporalio.worker`` interceptors.

An :class:`Interceptor` passed to ``Worker(..., interceptors=[...])`` wraps

- each activity attempt: :meth:`Interceptor.intercept_activity` returns an
  :class:`ActivityInboundInterceptor` (``execute_activity``), whose ``init`` receives the
  :class:`ActivityOutboundInterceptor` (``info``, ``heartbeat``) it may wrap;
- each workflow run: :meth:`Interceptor.workflow_interceptor_class` returns a
  :class:`WorkflowInboundInterceptor` subclass (``execute_workflow``, ``handle_signal``,
  ``handle_query``, ``handle_update_validator``, ``handle_update_handler``), instantiated once
  per run *inside the deterministic runtime* (so it follows the workflow rules: no I/O, no
  clocks, no randomness except through ``spindle.workflow``), whose ``init`` receives the
  :class:`WorkflowOutboundInterceptor` (``info``, ``start_activity``, ``start_child_workflow``).

Every base class passes each call on to the next one unchanged: subclass and override what
you need, calling ``super()``. The first interceptor of the list is the outermost.

Headers (``headers: Mapping[str, Payload]``) travel with a workflow start, a signal, each
activity and each child: what a client interceptor puts in a start's headers is what the
workflow's ``execute_workflow`` sees, and what the workflow's outbound interceptor puts in an
activity's or child's headers is what that activity's ``execute_activity`` (or the child's
``execute_workflow``) sees. Headers go through the payload codecs like any payload.
"""

from __future__ import annotations

import dataclasses

from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import timedelta
from typing import Any

from spindle.api import messages_pb2 as pb

__all__ = [
    "Interceptor",
    "ActivityInboundInterceptor",
    "ActivityOutboundInterceptor",
    "ExecuteActivityInput",
    "WorkflowInterceptorClassInput",
    "WorkflowInboundInterceptor",
    "WorkflowOutboundInterceptor",
    "ExecuteWorkflowInput",
    "HandleSignalInput",
    "HandleQueryInput",
    "HandleUpdateInput",
    "StartActivityInput",
    "StartChildWorkflowInput",
]


# ---------------------------------------------------------------- activities


@dataclasses.dataclass
class ExecuteActivityInput:
    """One activity attempt about to run: the function, its decoded arguments, the headers."""

    fn: Callable[..., Any]
    args: Sequence[Any]
    headers: Mapping[str, pb.Payload]
    executor: Any = None


class ActivityOutboundInterceptor:
    """Calls an activity makes (``activity.info()``, ``activity.heartbeat()``); pass them on to ``next``."""

    def __init__(self, next: ActivityOutboundInterceptor) -> None:
        self.next = next

    def info(self) -> Any:
        """The running attempt's :class:`spindle.activity.Info`."""
        return self.next.info()

    def heartbeat(self, *details: Any) -> None:
        """Record a heartbeat with ``details``."""
        self.next.heartbeat(*details)


class ActivityInboundInterceptor:
    """Wraps each activity attempt the worker runs; pass calls on to ``next``."""

    def __init__(self, next: ActivityInboundInterceptor) -> None:
        self.next = next

    def init(self, outbound: ActivityOutboundInterceptor) -> None:
        """Called once per attempt before ``execute_activity``; wrap ``outbound`` and pass it on."""
        self.next.init(outbound)

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        """Run the attempt and return its result (raising what the activity raised)."""
        return await self.next.execute_activity(input)


# ---------------------------------------------------------------- workflows


@dataclasses.dataclass
class WorkflowInterceptorClassInput:
    """What :meth:`Interceptor.workflow_interceptor_class` is told (nothing yet; room to grow)."""


@dataclasses.dataclass
class ExecuteWorkflowInput:
    """A run about to start: its type, the run method (bound), decoded arguments, start headers."""

    type: str
    run_fn: Callable[..., Awaitable[Any]]
    args: Sequence[Any]
    headers: Mapping[str, pb.Payload]


@dataclasses.dataclass
class HandleSignalInput:
    """A signal delivered to a handler: its name, decoded arguments, the sender's headers."""

    signal: str
    args: Sequence[Any]
    headers: Mapping[str, pb.Payload]


@dataclasses.dataclass
class HandleQueryInput:
    """A query to answer: its id (empty: Spindle does not number queries), name, decoded arguments, headers."""

    id: str
    query: str
    args: Sequence[Any]
    headers: Mapping[str, pb.Payload]


@dataclasses.dataclass
class HandleUpdateInput:
    """An update delivered to its validator or handler: its id, name, decoded arguments, the caller's headers."""

    id: str
    update: str
    args: Sequence[Any]
    headers: Mapping[str, pb.Payload]


@dataclasses.dataclass
class StartActivityInput:
    """An activity the workflow schedules; ``headers`` may be changed (they reach the activity)."""

    activity: str
    args: Sequence[Any]
    headers: dict[str, pb.Payload]
    activity_id: str | None
    task_queue: str | None
    start_to_close_timeout: timedelta | None
    schedule_to_close_timeout: timedelta | None
    schedule_to_start_timeout: timedelta | None
    heartbeat_timeout: timedelta | None
    retry_policy: Any
    cancellation_type: Any
    result_type: Any


@dataclasses.dataclass
class StartChildWorkflowInput:
    """A child the workflow starts; ``headers`` may be changed (they reach the child's run)."""

    workflow: str
    args: Sequence[Any]
    headers: dict[str, pb.Payload]
    id: str | None
    task_queue: str | None
    parent_close_policy: Any
    execution_timeout: timedelta | None
    run_timeout: timedelta | None
    id_reuse_policy: Any
    memo: Mapping[str, Any] | None
    search_attributes: Mapping[str, Any] | None
    result_type: Any


class WorkflowOutboundInterceptor:
    """Calls a workflow makes; runs on the workflow's deterministic loop. Pass them on to ``next``."""

    def __init__(self, next: WorkflowOutboundInterceptor) -> None:
        self.next = next

    def info(self) -> Any:
        """The run's :class:`spindle.workflow.Info`."""
        return self.next.info()

    def start_activity(self, input: StartActivityInput) -> Any:
        """Schedule the activity; returns its ``ActivityHandle``."""
        return self.next.start_activity(input)

    async def start_child_workflow(self, input: StartChildWorkflowInput) -> Any:
        """Start the child; returns its ``ChildWorkflowHandle`` once it started."""
        return await self.next.start_child_workflow(input)


class WorkflowInboundInterceptor:
    """Wraps a workflow run; one instance per run, on the deterministic loop. Pass calls on to ``next``."""

    def __init__(self, next: WorkflowInboundInterceptor) -> None:
        self.next = next

    def init(self, outbound: WorkflowOutboundInterceptor) -> None:
        """Called once per run before ``execute_workflow``; wrap ``outbound`` and pass it on."""
        self.next.init(outbound)

    async def execute_workflow(self, input: ExecuteWorkflowInput) -> Any:
        """Run the workflow's run method and return its result."""
        return await self.next.execute_workflow(input)

    async def handle_signal(self, input: HandleSignalInput) -> None:
        """Run the signal's handler (called as each signal is delivered, replays included).

        A sync handler's signal runs at once, inline, as it would without interceptors, as long
        as no interceptor awaits; an interceptor that awaits makes the rest run as a task.
        """
        await self.next.handle_signal(input)

    async def handle_query(self, input: HandleQueryInput) -> Any:
        """Run the query's handler and return its result. Must not await anything that suspends
        (a query answers from the current state at once): the query then fails."""
        return await self.next.handle_query(input)

    def handle_update_validator(self, input: HandleUpdateInput) -> None:
        """Run the update's validator (if it has one); raising rejects the update."""
        self.next.handle_update_validator(input)

    async def handle_update_handler(self, input: HandleUpdateInput) -> Any:
        """Run the update's handler (after it was accepted, replays included) and return its result."""
        return await self.next.handle_update_handler(input)


class Interceptor:
    """A worker interceptor: override either method (the defaults intercept nothing)."""

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        """Wrap ``next`` (called once per activity attempt)."""
        return next

    def workflow_interceptor_class(self, input: WorkflowInterceptorClassInput
                                   ) -> type[WorkflowInboundInterceptor] | None:
        """The class whose instance wraps each workflow run (``None``: workflows are not intercepted)."""
        return None


def check_interceptors(interceptors: Sequence[Any], what: str, base: type, public: str) -> tuple[Any, ...]:
    """Return ``interceptors`` as a tuple, or raise TypeError naming the first entry that is not a ``base``
    (``public``: the name users import it by, for the message)."""
    if isinstance(interceptors, (str, bytes)) or not isinstance(interceptors, Sequence):
        raise TypeError(f"{what}: expected a list of {public}, got {interceptors!r}")
    for i, x in enumerate(interceptors):
        if not isinstance(x, base):
            raise TypeError(f"{what}[{i}]: expected a {public}, got {type(x).__name__}")
    return tuple(interceptors)
