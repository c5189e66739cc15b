"""NexusTaskRunner: how a Nexus task's handler outcome becomes the worker's answer (no server needed)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses

import nexusrpc
import nexusrpc.handler
import pytest

from spindle import nexus
from spindle.api import messages_pb2 as pb
from spindle.converter import DataConverter
from spindle.worker._nexus_tasks import NexusTaskRunner

CONVERTER = DataConverter()


@dataclasses.dataclass
class Greeting:
    name: str


@nexusrpc.service
class GreetingService:
    hello: nexusrpc.Operation[Greeting, str]
    hello_blocking: nexusrpc.Operation[Greeting, str]
    refuse: nexusrpc.Operation[Greeting, str]
    boom: nexusrpc.Operation[Greeting, str]
    failed_op: nexusrpc.Operation[Greeting, str]
    long_running: nexusrpc.Operation[Greeting, str]


seen: list[tuple[str, str]] = []


class _LongRunning(nexusrpc.handler.OperationHandler[Greeting, str]):
    async def start(
        self, ctx: nexusrpc.handler.StartOperationContext, input: Greeting
    ) -> nexusrpc.handler.StartOperationResultAsync:
        return nexusrpc.handler.StartOperationResultAsync(f"token-{input.name}-{ctx.request_id}")

    async def cancel(self, ctx: nexusrpc.handler.CancelOperationContext, token: str) -> None:
        seen.append(("cancel", token))


@nexusrpc.handler.service_handler(service=GreetingService)
class GreetingHandler:
    @nexusrpc.handler.sync_operation
    async def hello(self, ctx: nexusrpc.handler.StartOperationContext, input: Greeting) -> str:
        seen.append(("hello", nexus.info().task_queue))
        return f"hello {input.name} ({ctx.headers.get('h', '')})"

    @nexusrpc.handler.sync_operation
    def hello_blocking(self, ctx: nexusrpc.handler.StartOperationContext, input: Greeting) -> str:
        return f"blocking hello {input.name}"

    @nexusrpc.handler.sync_operation
    async def refuse(self, ctx: nexusrpc.handler.StartOperationContext, input: Greeting) -> str:
        raise nexusrpc.HandlerError("who are you", type=nexusrpc.HandlerErrorType.UNAUTHORIZED)

    @nexusrpc.handler.sync_operation
    async def boom(self, ctx: nexusrpc.handler.StartOperationContext, input: Greeting) -> str:
        raise KeyError("oops")

    @nexusrpc.handler.sync_operation
    async def failed_op(self, ctx: nexusrpc.handler.StartOperationContext, input: Greeting) -> str:
        raise nexusrpc.OperationError("no greeting today", state=nexusrpc.OperationErrorState.FAILED)

    @nexusrpc.handler.operation_handler
    def long_running(self) -> nexusrpc.handler.OperationHandler[Greeting, str]:
        return _LongRunning()


def _runner(executor: concurrent.futures.Executor | None = None) -> NexusTaskRunner:
    return NexusTaskRunner(
        [GreetingHandler()],
        data_converter=CONVERTER,
        info=nexus.Info(task_queue="tq-nexus", namespace="ns"),
        client=object(),
        executor=executor,
    )


def _start(operation: str, value: object = Greeting("ann"), **header: str) -> pb.NexusRequest:
    return pb.NexusRequest(
        header=header,
        start_operation=pb.NexusStartOperationRequest(
            service="GreetingService", operation=operation, request_id="req-1", payload=CONVERTER.to_payload(value)
        ),
    )


def _run(request: pb.NexusRequest, runner: NexusTaskRunner | None = None) -> pb.NexusResponse | pb.NexusHandlerError:
    return asyncio.run((runner or _runner(concurrent.futures.ThreadPoolExecutor(1))).run(request))


def test_sync_operation_answers_its_value_as_one_payload_with_the_handler_context() -> None:
    seen.clear()
    answer = _run(_start("hello", h="x"))
    assert isinstance(answer, pb.NexusResponse)
    payload = answer.start_operation.sync_success.payload
    assert CONVERTER.from_payload(payload, str) == "hello ann (x)"
    assert seen == [("hello", "tq-nexus")]


def test_a_def_sync_operation_runs_on_the_executor() -> None:
    answer = _run(_start("hello_blocking"))
    assert isinstance(answer, pb.NexusResponse)
    assert CONVERTER.from_payload(answer.start_operation.sync_success.payload, str) == "blocking hello ann"


def test_def_operations_without_an_executor_are_refused_at_construction() -> None:
    with pytest.raises(RuntimeError):
        _runner(executor=None)


def test_handler_error_keeps_its_type_and_leaves_retry_to_the_type_table() -> None:
    answer = _run(_start("refuse"))
    assert isinstance(answer, pb.NexusHandlerError)
    assert answer.error_type == "UNAUTHORIZED"
    assert answer.retry_behavior == pb.NEXUS_HANDLER_ERROR_RETRY_BEHAVIOR_UNSPECIFIED
    assert "who are you" in answer.failure.message


def test_any_other_exception_is_an_internal_retryable_handler_error() -> None:
    answer = _run(_start("boom"))
    assert isinstance(answer, pb.NexusHandlerError)
    assert answer.error_type == "INTERNAL"
    assert "oops" in answer.failure.message


def test_operation_error_is_a_final_failed_operation_not_a_handler_error() -> None:
    answer = _run(_start("failed_op"))
    assert isinstance(answer, pb.NexusResponse)
    error = answer.start_operation.operation_error
    assert error.operation_state == "failed"
    assert "no greeting today" in error.failure.message


def test_input_that_does_not_decode_is_bad_request() -> None:
    answer = _run(_start("hello", value=[1, 2, 3]))
    assert isinstance(answer, pb.NexusHandlerError)
    assert answer.error_type == "BAD_REQUEST"


def test_unknown_operation_is_a_not_found_handler_error() -> None:
    answer = _run(_start("no_such_op"))
    assert isinstance(answer, pb.NexusHandlerError)
    assert answer.error_type == "NOT_FOUND"


def test_async_start_answers_its_token_and_cancel_reaches_the_handler() -> None:
    seen.clear()
    runner = _runner(concurrent.futures.ThreadPoolExecutor(1))
    answer = _run(_start("long_running"), runner)
    assert isinstance(answer, pb.NexusResponse)
    assert answer.start_operation.async_success.operation_token == "token-ann-req-1"
    cancel = pb.NexusRequest(
        cancel_operation=pb.NexusCancelOperationRequest(
            service="GreetingService", operation="long_running", operation_token="token-ann-req-1"
        )
    )
    answer = _run(cancel, runner)
    assert isinstance(answer, pb.NexusResponse) and answer.HasField("cancel_operation")
    assert seen == [("cancel", "token-ann-req-1")]


def test_a_request_with_neither_start_nor_cancel_is_bad_request() -> None:
    answer = _run(pb.NexusRequest())
    assert isinstance(answer, pb.NexusHandlerError)
    assert answer.error_type == "BAD_REQUEST"
