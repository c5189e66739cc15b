"""NexusWorker against a fake WorkflowService stub: polls, answers each task, frees its slot, stops."""

from __future__ import annotations

import asyncio
import dataclasses

from typing import Any

import nexusrpc
import nexusrpc.handler

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.converter import DataConverter
from spindle.worker._nexus_worker import NexusWorker

CONVERTER = DataConverter()


@nexusrpc.service
class EchoService:
    echo: nexusrpc.Operation[str, str]
    refuse: nexusrpc.Operation[str, str]


@nexusrpc.handler.service_handler(service=EchoService)
class EchoHandler:
    @nexusrpc.handler.sync_operation
    async def echo(self, ctx: nexusrpc.handler.StartOperationContext, input: str) -> str:
        return input.upper()

    @nexusrpc.handler.sync_operation
    async def refuse(self, ctx: nexusrpc.handler.StartOperationContext, input: str) -> str:
        raise nexusrpc.HandlerError("no", type=nexusrpc.HandlerErrorType.BAD_REQUEST, retryable_override=True)


class FakeStub:
    def __init__(self, tasks: list[svc.PollNexusTaskQueueResponse]) -> None:
        self.tasks = tasks
        self.polls: list[svc.PollNexusTaskQueueRequest] = []
        self.completed: list[svc.RespondNexusTaskCompletedRequest] = []
        self.failed: list[svc.RespondNexusTaskFailedRequest] = []

    async def PollNexusTaskQueue(self, req: svc.PollNexusTaskQueueRequest) -> svc.PollNexusTaskQueueResponse:
        self.polls.append(req)
        if self.tasks:
            return self.tasks.pop(0)
        await asyncio.sleep(0.01)
        return svc.PollNexusTaskQueueResponse()  # the long poll expired

    async def RespondNexusTaskCompleted(self, req: svc.RespondNexusTaskCompletedRequest) -> None:
        self.completed.append(req)

    async def RespondNexusTaskFailed(self, req: svc.RespondNexusTaskFailedRequest) -> None:
        self.failed.append(req)


@dataclasses.dataclass
class FakeClient:
    _stub: Any
    namespace: str = "ns-h"
    data_converter: DataConverter = CONVERTER


def _task(token: bytes, operation: str, value: str) -> svc.PollNexusTaskQueueResponse:
    return svc.PollNexusTaskQueueResponse(
        task_token=token,
        request=pb.NexusRequest(
            start_operation=pb.NexusStartOperationRequest(
                service="EchoService", operation=operation, request_id="r", payload=CONVERTER.to_payload(value)
            )
        ),
    )


def test_worker_polls_its_queue_answers_each_task_and_frees_the_slots() -> None:
    stub = FakeStub([_task(b"t1", "echo", "hi"), _task(b"t2", "refuse", "x")])
    worker = NexusWorker(FakeClient(stub), "tq-h", [EchoHandler()], max_concurrent=2, identity="me", pollers=1)

    async def run() -> None:
        worker.start()
        for _ in range(200):
            if stub.completed and stub.failed:
                break
            await asyncio.sleep(0.01)
        await worker.stop_polling()
        await worker.drain(1.0)

    asyncio.run(run())
    assert stub.polls[0].namespace == "ns-h" and stub.polls[0].task_queue == "tq-h" and stub.polls[0].identity == "me"
    [done] = stub.completed
    assert done.task_token == b"t1" and done.namespace == "ns-h"
    assert CONVERTER.from_payload(done.response.start_operation.sync_success.payload, str) == "HI"
    [failed] = stub.failed
    assert failed.task_token == b"t2"
    assert failed.error.error_type == "BAD_REQUEST"
    assert failed.error.retry_behavior == pb.NEXUS_HANDLER_ERROR_RETRY_BEHAVIOR_RETRYABLE
    assert worker.slots.free == 2


def test_a_worker_with_only_nexus_service_handlers_serves_them_until_shutdown() -> None:
    from spindle.worker import Worker

    stub = FakeStub([_task(b"t1", "echo", "via worker")])
    client = FakeClient(stub)
    client.identity = "w@host"  # type: ignore[attr-defined]

    async def run() -> None:
        async with Worker(client, task_queue="tq-w", nexus_service_handlers=[EchoHandler()]):
            for _ in range(200):
                if stub.completed:
                    break
                await asyncio.sleep(0.01)

    asyncio.run(run())
    [done] = stub.completed
    assert CONVERTER.from_payload(done.response.start_operation.sync_success.payload, str) == "VIA WORKER"
    assert stub.polls[0].task_queue == "tq-w" and stub.polls[0].identity == "w@host"


def test_a_server_answering_nexus_polls_at_once_is_not_polled_in_a_busy_loop() -> None:
    class InstantEmpty(FakeStub):
        async def PollNexusTaskQueue(self, req: svc.PollNexusTaskQueueRequest) -> svc.PollNexusTaskQueueResponse:
            self.polls.append(req)
            return svc.PollNexusTaskQueueResponse()

    stub = InstantEmpty([])
    worker = NexusWorker(FakeClient(stub), "tq-h", [EchoHandler()], max_concurrent=2, identity="me", pollers=2)

    async def run() -> None:
        worker.start()
        await asyncio.sleep(0.3)
        await worker.stop_polling()

    asyncio.run(run())
    assert len(stub.polls) == 2  # one per poller, each then waits out MIN_EMPTY_POLL_SECONDS
