"""A workflow task that cannot be processed fails once per attempt, visibly, and never wedges the worker.

Each case: the history gets ``WorkflowTaskFailed`` with a precise message (read by a client
without codecs, as the server stores it), the server's retries of the poisoned task back
off instead of looping, and a good workflow started afterwards completes on the same worker.

Before: a payload the codec chain refused (on decode of the task, or on encode of the
completion) and an exception whose details could not be converted escaped the worker's
task handler: the task was never answered and sat until its start-to-close timeout, with
nothing in the history saying why; a ``MemoryError`` failed the task with an empty message.
"""

from __future__ import annotations

import asyncio
import dataclasses
import uuid

from collections.abc import AsyncIterator, Sequence
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from waiting import eventually as _eventually

from spindle import workflow
from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.client import Client, History
from spindle.converter import PayloadCodec
from spindle.exceptions import ApplicationError, QueryFailedError, WorkflowFailureError
from spindle.worker import Worker


class PickyCodec(PayloadCodec):
    """Refuses to decode payloads containing b"poison" and to encode ones containing b"unencodable"."""

    async def encode(self, payloads: Sequence[pb.Payload]) -> list[pb.Payload]:
        for p in payloads:
            if b"unencodable" in p.data:
                raise ValueError("PickyCodec cannot encode this payload")
        return list(payloads)

    async def decode(self, payloads: Sequence[pb.Payload]) -> list[pb.Payload]:
        for p in payloads:
            if b"poison" in p.data:
                raise ValueError("PickyCodec cannot decode this payload")
        return list(payloads)


class BadStr(Exception):
    def __str__(self) -> str:
        raise RuntimeError("__str__ is broken")


@workflow.defn
async def takes(value: str) -> str:
    return value


@dataclasses.dataclass
class Order:
    id: str
    amount: int


@workflow.defn
async def typed(order: Order) -> int:
    return order.amount


@workflow.defn
async def returns_unencodable() -> str:
    return "unencodable"


@workflow.defn(check_determinism=False)
async def returns_function() -> Any:
    return len


@workflow.defn
async def exhausts_memory() -> None:
    bytearray(1 << 60)


@workflow.defn
async def recurses() -> None:
    def down(n: int) -> int:
        return down(n + 1)

    down(0)


@workflow.defn
async def raises_bad_str() -> None:
    raise BadStr()


@workflow.defn
class Waits:
    def __init__(self) -> None:
        self.done = False

    @workflow.run
    async def run(self) -> str:
        await workflow.wait_condition(lambda: self.done)
        return "finished"

    @workflow.signal
    def finish(self) -> None:
        self.done = True

    @workflow.query
    def echo(self, value: str) -> str:
        return value


WORKFLOWS = [Waits, typed, takes, returns_unencodable, returns_function, exhausts_memory, recurses, raises_bad_str]


@pytest.fixture
async def clients(tmp_path: Path) -> AsyncIterator[tuple[Client, Client]]:
    """(a client with PickyCodec for the worker and starts, a raw client that reads what the server stores)."""
    raw = await Client.connect("embedded:" + str(tmp_path / "s.db"))
    picky = Client(raw.stub, namespace=raw.namespace, codecs=[PickyCodec()])
    try:
        yield picky, raw
    finally:
        await raw.close()


@pytest.fixture
def tq() -> str:
    return "tq-" + uuid.uuid4().hex[:8]


def worker(client: Client, tq: str) -> Worker:
    return Worker(client, task_queue=tq, workflows=WORKFLOWS, graceful_shutdown_timeout=timedelta(seconds=1))


eventually = partial(_eventually, timeout=8.0)


async def task_failures(raw: Client, workflow_id: str) -> list[dict[str, Any]]:
    async def failed() -> list[dict[str, Any]]:
        hist: History = await raw.get_workflow_handle(workflow_id).fetch_history()
        failures = [e.attributes for e in hist.events_of_type("WorkflowTaskFailed")]
        assert failures, f"no WorkflowTaskFailed for {workflow_id} (the task was not answered)"
        assert not hist.events_of_type("WorkflowTaskTimedOut"), "the task timed out instead of failing"
        return failures

    return await eventually(failed)  # type: ignore[no-any-return]


async def assert_poisoned_then_serving(picky: Client, raw: Client, tq: str, workflow_id: str,
                                       message: str) -> dict[str, Any]:
    """The first failure carries ``message``; retries back off; a good workflow completes meanwhile."""
    failures = await task_failures(raw, workflow_id)
    first = failures[0]
    assert first["cause"] == "WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_WORKER_UNHANDLED_FAILURE"
    assert message in first["failure"]["message"], first["failure"]["message"]
    good_id = f"good-after-{workflow_id}"
    assert await picky.execute_workflow(takes, "fine", id=good_id, task_queue=tq) == "fine"
    await asyncio.sleep(2.0)
    attempts = len(await task_failures(raw, workflow_id))
    # The server schedules retries with backoff (0 s, 1 s, 2 s, ...): a handful, never a tight loop.
    assert 1 <= attempts <= 6, attempts
    desc = await raw.get_workflow_handle(workflow_id).describe()
    assert desc.status is not None and desc.status.name == "RUNNING"
    await raw.get_workflow_handle(workflow_id).terminate("test over")
    return first  # type: ignore[no-any-return]


async def test_input_the_codec_refuses_fails_the_task_with_the_codec_error(clients: tuple[Client, Client],
                                                                           tq: str) -> None:
    picky, raw = clients
    async with worker(picky, tq):
        await raw.start_workflow(takes, "poison", id="poisoned-input", task_queue=tq)
        first = await assert_poisoned_then_serving(
            picky, raw, tq, "poisoned-input",
            "cannot decode the payloads of a task of workflow takes (id 'poisoned-input', run ")
        assert "ValueError: PickyCodec cannot decode this payload" in first["failure"]["message"]
        assert first["failure"]["application_failure_info"]["type"] == "PayloadDecodeError"


async def test_query_whose_arguments_the_codec_refuses_fails_at_once(clients: tuple[Client, Client], tq: str) -> None:
    picky, raw = clients
    async with worker(picky, tq):
        h = await picky.start_workflow(Waits.run, id="queried", task_queue=tq)
        assert await h.query(Waits.echo, "fine") == "fine"
        raw_handle = raw.get_workflow_handle("queried")
        with pytest.raises(QueryFailedError, match=r"cannot decode the payloads of a task of workflow Waits "
                                                   r"\(id 'queried'.*PickyCodec cannot decode this payload"):
            await asyncio.wait_for(raw_handle.query("echo", "poison"), timeout=5)
        assert await h.query(Waits.echo, "still answering") == "still answering"
        await h.signal(Waits.finish)
        assert await h.result() == "finished"


async def test_result_the_codec_refuses_to_encode_fails_the_task(clients: tuple[Client, Client], tq: str) -> None:
    picky, raw = clients
    async with worker(picky, tq):
        await picky.start_workflow(returns_unencodable, id="unencodable", task_queue=tq)
        first = await assert_poisoned_then_serving(
            picky, raw, tq, "unencodable",
            "the payloads of the workflow task's commands cannot be encoded by the codec chain: "
            "ValueError: PickyCodec cannot encode this payload")
        assert first["failure"]["application_failure_info"]["type"] == "PayloadEncodeError"


async def test_result_the_converter_cannot_serialize_fails_the_task(clients: tuple[Client, Client], tq: str) -> None:
    picky, raw = clients
    async with worker(picky, tq):
        await picky.start_workflow(returns_function, id="function-result", task_queue=tq)
        first = await assert_poisoned_then_serving(
            picky, raw, tq, "function-result", "cannot convert a value of type builtin_function_or_method")
        assert first["failure"]["application_failure_info"]["type"] == "TypeError"


async def test_memory_error_fails_the_task_with_a_message(clients: tuple[Client, Client], tq: str) -> None:
    picky, raw = clients
    async with worker(picky, tq):
        await picky.start_workflow(exhausts_memory, id="memory", task_queue=tq)
        first = await assert_poisoned_then_serving(picky, raw, tq, "memory", "MemoryError")
        assert first["failure"]["application_failure_info"]["type"] == "MemoryError"
        assert "bytearray(1 << 60)" in first["failure"]["stack_trace"]


async def test_recursion_error_fails_the_task_with_a_bounded_stack(clients: tuple[Client, Client], tq: str) -> None:
    picky, raw = clients
    async with worker(picky, tq):
        await picky.start_workflow(recurses, id="recursion", task_queue=tq)
        first = await assert_poisoned_then_serving(picky, raw, tq, "recursion", "maximum recursion depth exceeded")
        assert len(first["failure"]["stack_trace"]) <= 32 * 1024 + 10


async def test_an_error_whose_details_cannot_be_converted_still_fails_the_task(clients: tuple[Client, Client],
                                                                                tq: str) -> None:
    picky, raw = clients
    async with worker(picky, tq):
        await picky.start_workflow(raises_bad_str, id="bad-str", task_queue=tq)
        await assert_poisoned_then_serving(picky, raw, tq, "bad-str",
                                           "BadStr (its details cannot be converted: RuntimeError)")


DEEP = pb.Payload(metadata={"encoding": b"json/plain"}, data=b"[" * 100_000 + b"]" * 100_000)


@pytest.mark.parametrize("bad_input", [{"id": "o-1", "amount": "lots"}, "not an order", DEEP],
                         ids=["wrong-field-type", "wrong-shape", "nested-too-deep"])
async def test_input_the_converter_cannot_decode_fails_the_workflow_once(clients: tuple[Client, Client], tq: str,
                                                                         bad_input: Any) -> None:
    """The input of a run never changes, so no retry can help: the run fails, non-retryable, naming the
    parameter (a codec error, which a key or configuration fix can cure, fails the task instead: above).
    ``nested-too-deep`` makes the JSON parser itself raise RecursionError."""
    picky, raw = clients
    async with worker(picky, tq):
        payloads = pb.Payloads(payloads=[bad_input if isinstance(bad_input, pb.Payload) else
                                         raw.data_converter.to_payload(bad_input)])
        await raw.stub.StartWorkflowExecution(svc.StartWorkflowExecutionRequest(
            namespace=raw.namespace, workflow_id="bad-input", workflow_type="typed", task_queue=tq,
            input=payloads, request_id=str(uuid.uuid4())))
        h = raw.get_workflow_handle("bad-input")
        with pytest.raises(WorkflowFailureError) as info:
            await h.result()
        cause = info.value.cause
        assert isinstance(cause, ApplicationError) and cause.type == "InvalidArgument" and cause.non_retryable
        assert "workflow 'typed': argument 1 for parameter 'order' cannot be decoded" in cause.message
        assert not (await h.fetch_history()).events_of_type("WorkflowTaskFailed")
        assert await picky.execute_workflow(takes, "fine", id="good", task_queue=tq) == "fine"
