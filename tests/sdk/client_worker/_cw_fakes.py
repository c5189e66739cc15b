"""Fakes for worker unit tests (imported by name; keep the module name unique): a scriptable WorkflowService stub and a recording WorkflowInstance."""

from __future__ import annotations

import asyncio
import collections

from collections.abc import Callable, Sequence
from typing import Any

import grpc
import grpc.aio

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.converter._data_converter import DataConverter


class FakeRpcError(grpc.aio.AioRpcError):
    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(code, grpc.aio.Metadata(), grpc.aio.Metadata(), details=details)


class FakeStub:
    """Long polls read from per-queue asyncio queues; responses are recorded (and scriptable)."""

    def __init__(self) -> None:
        self.wf_queues: dict[str, asyncio.Queue[svc.PollWorkflowTaskQueueResponse]] = collections.defaultdict(
            asyncio.Queue)
        self.act_queues: dict[str, asyncio.Queue[svc.PollActivityTaskQueueResponse]] = collections.defaultdict(
            asyncio.Queue)
        self.calls: list[tuple[str, Any]] = []
        self.histories: dict[str, list[pb.HistoryEvent]] = {}
        self.wft_completed_responses: list[svc.RespondWorkflowTaskCompletedResponse] = []
        self.activity_completed_responses: list[svc.RespondActivityTaskCompletedResponse] = []
        self.heartbeat_response: Callable[[], svc.RecordActivityTaskHeartbeatResponse] = (
            svc.RecordActivityTaskHeartbeatResponse)
        self.event = asyncio.Event()

    def _record(self, name: str, req: Any) -> None:
        self.calls.append((name, req))
        self.event.set()

    def of(self, name: str) -> list[Any]:
        return [r for n, r in self.calls if n == name]

    async def wait_for(self, name: str, count: int = 1, timeout: float = 5.0) -> list[Any]:
        async def _wait() -> list[Any]:
            while len(self.of(name)) < count:
                self.event.clear()
                await self.event.wait()
            return self.of(name)

        return await asyncio.wait_for(_wait(), timeout)

    async def PollWorkflowTaskQueue(self, req: svc.PollWorkflowTaskQueueRequest, **_: Any
                                    ) -> svc.PollWorkflowTaskQueueResponse:
        return await self.wf_queues[req.task_queue].get()

    async def PollActivityTaskQueue(self, req: svc.PollActivityTaskQueueRequest, **_: Any
                                    ) -> svc.PollActivityTaskQueueResponse:
        return await self.act_queues[req.task_queue].get()

    async def RespondWorkflowTaskCompleted(self, req: Any, **_: Any) -> svc.RespondWorkflowTaskCompletedResponse:
        self._record("RespondWorkflowTaskCompleted", req)
        if self.wft_completed_responses:
            return self.wft_completed_responses.pop(0)
        return svc.RespondWorkflowTaskCompletedResponse()

    async def RespondWorkflowTaskFailed(self, req: Any, **_: Any) -> svc.RespondWorkflowTaskFailedResponse:
        self._record("RespondWorkflowTaskFailed", req)
        return svc.RespondWorkflowTaskFailedResponse()

    async def RespondQueryTaskCompleted(self, req: Any, **_: Any) -> svc.RespondQueryTaskCompletedResponse:
        self._record("RespondQueryTaskCompleted", req)
        return svc.RespondQueryTaskCompletedResponse()

    async def GetWorkflowExecutionHistory(self, req: Any, **_: Any) -> svc.GetWorkflowExecutionHistoryResponse:
        self._record("GetWorkflowExecutionHistory", req)
        events = self.histories.get(req.execution.run_id)
        if events is None:
            raise FakeRpcError(grpc.StatusCode.NOT_FOUND, "workflow execution not found")
        return svc.GetWorkflowExecutionHistoryResponse(history=pb.History(events=events))

    async def RespondActivityTaskCompleted(self, req: Any, **_: Any) -> svc.RespondActivityTaskCompletedResponse:
        self._record("RespondActivityTaskCompleted", req)
        if self.activity_completed_responses:
            return self.activity_completed_responses.pop(0)
        return svc.RespondActivityTaskCompletedResponse()

    async def RespondActivityTaskFailed(self, req: Any, **_: Any) -> svc.RespondActivityTaskFailedResponse:
        self._record("RespondActivityTaskFailed", req)
        return svc.RespondActivityTaskFailedResponse()

    async def RespondActivityTaskCanceled(self, req: Any, **_: Any) -> svc.RespondActivityTaskCanceledResponse:
        self._record("RespondActivityTaskCanceled", req)
        return svc.RespondActivityTaskCanceledResponse()

    async def RecordActivityTaskHeartbeat(self, req: Any, **_: Any) -> svc.RecordActivityTaskHeartbeatResponse:
        self._record("RecordActivityTaskHeartbeat", req)
        return self.heartbeat_response()


class FakeClient:
    def __init__(self, stub: FakeStub) -> None:
        self._stub = stub
        self.namespace = "default"
        self.data_converter = DataConverter.default
        self.codecs: tuple[Any, ...] = ()
        self.identity = "test-worker"


class RecordingInstance:
    """Stands in for the runtime's WorkflowInstance: records activations, returns scripted commands."""

    created: list[RecordingInstance] = []
    script: Callable[[RecordingInstance, list[pb.HistoryEvent]], list[pb.Command]] = staticmethod(
        lambda inst, events: [])  # type: ignore[assignment]

    def __init__(self, defn: Any, *, converter: Any, namespace: str, workflow_id: str, run_id: str,
                 task_queue: str) -> None:
        self.defn = defn
        self.run_id = run_id
        self.task_queue = task_queue
        self.activations: list[list[int]] = []
        self.closed = False
        RecordingInstance.created.append(self)

    def activate(self, new_events: Sequence[pb.HistoryEvent], *, updates: Sequence[pb.UpdateRequest],
                 started_event_id: int) -> list[pb.Command]:
        assert new_events[-1].event_id == started_event_id
        self.activations.append([e.event_id for e in new_events])
        return RecordingInstance.script(self, list(new_events))

    def query(self, q: pb.WorkflowQuery) -> pb.Payloads:
        if q.query_type != "status":
            raise KeyError(f"no query handler {q.query_type!r}")
        return DataConverter.default.to_payloads([f"activations={len(self.activations)}"])

    def close(self) -> None:
        self.closed = True
