"""Signal and cancel requests to other workflows (SIGNAL_EXTERNAL / REQUEST_CANCEL_EXTERNAL)."""

from __future__ import annotations

import asyncio

from collections.abc import Callable
from typing import Any

from spindle._workflow.statemachines._command import CommandEntry, CommandSink
from spindle.api import messages_pb2 as pb
from spindle.exceptions import ApplicationError

__all__ = ["ExternalRequestMachine"]

E = pb  # E.EVENT_TYPE_*: plain module constants (the EventType wrapper resolves attributes slowly)


class ExternalRequestMachine:
    """One signal or cancel request to another execution; ``future`` resolves to ``None``.

    It fails with :class:`~spindle.exceptions.ApplicationError` (``type`` is the server's
    cause, e.g. ``EXTERNAL_WORKFLOW_EXECUTION_NOT_FOUND``) when the request fails.
    """

    def __init__(
        self,
        sink: CommandSink,
        loop: asyncio.AbstractEventLoop,
        command: pb.Command,
        *,
        on_initiated: Callable[[int, Any], None],
        what: str,
    ) -> None:
        self.future: asyncio.Future[None] = loop.create_future()
        self.initiated_event_id = 0
        self._what = what
        self._on_initiated = on_initiated
        sink.add_command(CommandEntry(command, on_recorded=self._recorded))

    def _recorded(self, event: pb.HistoryEvent) -> None:
        self.initiated_event_id = event.event_id
        self._on_initiated(event.event_id, self)

    def handle_event(self, event: pb.HistoryEvent) -> None:
        """Apply the outcome event of the request."""
        if self.future.done():
            return
        t = event.event_type
        if t in (E.EVENT_TYPE_EXTERNAL_WORKFLOW_EXECUTION_SIGNALED,
                 E.EVENT_TYPE_EXTERNAL_WORKFLOW_EXECUTION_CANCEL_REQUESTED):
            self.future.set_result(None)
        elif t == E.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_FAILED:
            cause = event.signal_external_workflow_execution_failed_event_attributes.cause
            self.future.set_exception(ApplicationError(f"{self._what} failed: {cause}", type=cause or None))
        elif t == E.EVENT_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_FAILED:
            cause = event.request_cancel_external_workflow_execution_failed_event_attributes.cause
            self.future.set_exception(ApplicationError(f"{self._what} failed: {cause}", type=cause or None))
