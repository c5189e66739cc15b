"""Fetching a workflow task's history: the pages it lacks, the full history a replay needs, a query's history.

A task's history may be paged (``next_page_token``) or, for a sticky task, hold only
the events after the previous task; a run that is not cached is replayed from the
full history, which is fetched (and decoded by the codecs) here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.client._retry_delay import call_with_retries
from spindle.converter._payload_codec import PayloadCodec
from spindle.converter._payload_visitor import decode_message
from spindle.converter._serialization_context import WorkflowSerializationContext

__all__ = ["WorkflowHistory"]


class WorkflowHistory:
    """Reads histories through ``stub`` in namespace ``namespace``, decoding them with ``codecs``."""

    def __init__(self, stub: Any, namespace: str, codecs: Sequence[PayloadCodec]) -> None:
        self._stub = stub
        self._ns = namespace
        self._codecs = codecs

    async def task_events(self, task: svc.PollWorkflowTaskQueueResponse) -> list[pb.HistoryEvent]:
        """The task's events, with the later pages of its history fetched."""
        events = list(task.history.events)
        token = task.next_page_token
        while token:
            resp = await self.get_page(task.workflow_execution, token)
            last = events[-1].event_id if events else 0
            events.extend(e for e in resp.history.events if e.event_id > last)
            token = resp.next_page_token
        return events

    async def full_history(self, task: svc.PollWorkflowTaskQueueResponse, events: list[pb.HistoryEvent]
                           ) -> list[pb.HistoryEvent]:
        """All events of the run up to the task's WorkflowTaskStarted, fetching what the task lacks.

        Raises:
            RuntimeError: the history has a gap or does not start with WorkflowExecutionStarted.
            grpc.aio.AioRpcError: reading the history failed.
        """
        if not events or events[0].event_id != 1:
            first = events[0].event_id if events else task.started_event_id + 1
            fetched: list[pb.HistoryEvent] = []
            token = b""
            while True:
                resp = await self.get_page(task.workflow_execution, token)
                fetched.extend(resp.history.events)
                token = resp.next_page_token
                if not token or (fetched and fetched[-1].event_id >= first - 1):
                    break
            events = [e for e in fetched if e.event_id < first] + events
        for i, e in enumerate(events):
            if e.event_id != i + 1:
                raise RuntimeError(f"history of run {task.workflow_execution.run_id} has a gap before event "
                                   f"{e.event_id} (expected {i + 1})")
        if not events or events[0].event_type != pb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
            raise RuntimeError(f"history of run {task.workflow_execution.run_id} does not start with "
                               "WorkflowExecutionStarted")
        return events

    async def whole(self, task: svc.PollWorkflowTaskQueueResponse) -> list[pb.HistoryEvent]:
        """The task's events if they start at the first one, else every event of the run, fetched."""
        events = list(task.history.events)
        if not events or events[0].event_id != 1:
            events = []
            token = b""
            while True:
                resp = await self.get_page(task.workflow_execution, token)
                events.extend(resp.history.events)
                token = resp.next_page_token
                if not token:
                    break
        return events

    async def get_page(self, execution: pb.WorkflowExecution, token: bytes
                       ) -> svc.GetWorkflowExecutionHistoryResponse:
        """One page of the run's history, decoded (a throttled read is retried)."""
        # a history read counts against the namespace's request rate: wait out a throttle (it is safe to repeat)
        resp = await call_with_retries(self._stub.GetWorkflowExecutionHistory, svc.GetWorkflowExecutionHistoryRequest(
            namespace=self._ns, execution=execution, next_page_token=token))
        if self._codecs:
            await decode_message(self._codecs, resp,
                                 context=WorkflowSerializationContext(self._ns, execution.workflow_id))
        return cast("svc.GetWorkflowExecutionHistoryResponse", resp)
