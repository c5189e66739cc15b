"""Child workflow: START_CHILD_WORKFLOW_EXECUTION, its start and result events."""

from __future__ import annotations

import asyncio

from collections.abc import Callable
from typing import Any, Generic, TypeVar

from spindle._workflow.statemachines._command import CommandEntry, CommandSink
from spindle.api import messages_pb2 as pb
from spindle.exceptions import (
    ApplicationError,
    CancelledError,
    ChildWorkflowError,
    TerminatedError,
    TimeoutError,
    TimeoutType,
)

__all__ = ["ChildWorkflowHandle", "ChildWorkflowMachine"]

T = TypeVar("T")
E = pb  # E.EVENT_TYPE_*: plain module constants (the EventType wrapper resolves attributes slowly)


class ChildWorkflowHandle(asyncio.Future, Generic[T]):
    """Handle of a started child workflow: await it for the child's result.

    Awaiting raises :class:`~spindle.exceptions.ChildWorkflowError` (``.cause`` is the
    child's ``ApplicationError``, ``CancelledError``, ``TerminatedError`` or
    ``TimeoutError``). ``cancel()`` asks the server to cancel the child and returns
    ``False``: the handle resolves when the child reports its cancellation.
    """

    def __init__(self, *, loop: asyncio.AbstractEventLoop, machine: ChildWorkflowMachine) -> None:
        super().__init__(loop=loop)
        self._machine = machine

    @property
    def id(self) -> str:
        """The child's workflow id."""
        return self._machine.workflow_id

    @property
    def run_id(self) -> str:
        """The child's run id ('' until it started)."""
        return self._machine.run_id

    async def signal(self, signal: Any, *args: Any) -> None:
        """Send a signal to the child (by name or decorated signal method).

        Raises:
            ApplicationError: the server could not deliver the signal.
        """
        await self._machine.signal(signal, args)

    def cancel(self, msg: Any = None) -> bool:
        """Request the child's cancellation. Returns ``False`` (see the class docs)."""
        if not self.done():
            self._machine.request_cancel()
        return False


class ChildWorkflowMachine:
    """Drives one child workflow; ``started`` resolves when the child has started."""

    def __init__(
        self,
        sink: CommandSink,
        loop: asyncio.AbstractEventLoop,
        attrs: pb.StartChildWorkflowExecutionCommandAttributes,
        *,
        decode_result: Callable[[pb.Payloads], Any],
        decode_failure: Callable[[pb.Failure], BaseException],
        on_initiated: Callable[[int, Any], None],
        send_signal: Callable[[ChildWorkflowMachine, Any, tuple[Any, ...]], asyncio.Future[None]],
        send_cancel: Callable[[ChildWorkflowMachine], object],
    ) -> None:
        self._sink = sink
        self.workflow_id = attrs.workflow_id
        self.workflow_type = attrs.workflow_type
        self.namespace = attrs.namespace
        self.run_id = ""
        self.initiated_event_id = 0
        self._decode_result = decode_result
        self._decode_failure = decode_failure
        self._on_initiated = on_initiated
        self._send_signal = send_signal
        self._send_cancel = send_cancel
        self._cancel_sent = False
        self.started: asyncio.Future[None] = loop.create_future()
        self.handle: ChildWorkflowHandle[Any] = ChildWorkflowHandle(loop=loop, machine=self)
        self._entry = CommandEntry(
            pb.Command(command_type=pb.COMMAND_TYPE_START_CHILD_WORKFLOW_EXECUTION,
                       start_child_workflow_execution_command_attributes=attrs),
            on_recorded=self._recorded,
        )
        sink.add_command(self._entry)

    def _recorded(self, event: pb.HistoryEvent) -> None:
        self.initiated_event_id = event.event_id
        self._on_initiated(event.event_id, self)

    def _error(self, message: str, cause: BaseException) -> ChildWorkflowError:
        return ChildWorkflowError(message, namespace=self.namespace, workflow_id=self.workflow_id, run_id=self.run_id,
                                  workflow_type=self.workflow_type, cause=cause)

    def _fail_both(self, err: BaseException) -> None:
        if not self.started.done():
            self.started.set_exception(err)
            self.started.exception()  # mark retrieved: the result handle reports it too
        if not self.handle.done():
            self.handle.set_exception(err)

    async def signal(self, signal: Any, args: tuple[Any, ...]) -> None:
        """Signal the child (after it started)."""
        await self._send_signal(self, signal, args)

    def request_cancel(self) -> None:
        """Drop the unsent start command, or request the child's cancellation once."""
        if self.handle.done() or self._cancel_sent:
            return
        if self._sink.unsend(self._entry):
            self._fail_both(self._error(f"child workflow {self.workflow_id!r} was cancelled before it started",
                                        CancelledError("child workflow cancelled")))
            return
        self._cancel_sent = True
        self._send_cancel(self)

    def handle_event(self, event: pb.HistoryEvent) -> None:
        """Apply a start or result event of this child."""
        t = event.event_type
        label = f"child workflow {self.workflow_type!r} (id {self.workflow_id!r})"
        if t == E.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_FAILED:
            cause = event.start_child_workflow_execution_failed_event_attributes.cause
            self._fail_both(self._error(f"{label} could not start: {cause}",
                                        ApplicationError(f"child workflow start failed: {cause}", type=cause or None)))
        elif t == E.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED:
            self.run_id = event.child_workflow_execution_started_event_attributes.workflow_execution.run_id
            if not self.started.done():
                self.started.set_result(None)
        elif self.handle.done():
            return
        elif t == E.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED:
            try:
                self.handle.set_result(self._decode_result(event.child_workflow_execution_completed_event_attributes.result))
            except Exception as e:
                self.handle.set_exception(e)
        elif t == E.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_FAILED:
            failure = self._decode_failure(event.child_workflow_execution_failed_event_attributes.failure)
            self.handle.set_exception(self._error(f"{label} failed: {failure}", failure))
        elif t == E.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_CANCELED:
            self.handle.set_exception(self._error(f"{label} was cancelled", CancelledError("child workflow cancelled")))
        elif t == E.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_TIMED_OUT:
            self.handle.set_exception(self._error(
                f"{label} timed out", TimeoutError("child workflow timed out", timeout_type=TimeoutType.WORKFLOW_EXECUTION)))
        elif t == E.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_TERMINATED:
            reason = event.child_workflow_execution_terminated_event_attributes.reason
            self.handle.set_exception(self._error(f"{label} was terminated", TerminatedError(reason)))
