"""EncryptionCodec through a real client, worker and server: nothing readable is stored, nothing foreign accepted.

Before: with EncryptionCodec the failure of an activity ("card 4111-2222-3333-4444 declined")
reached the server with its message and stack trace in plaintext; a plaintext signal from
someone without the key passed through to workflow code; a ciphertext copied from one
workflow into another decrypted there.
"""

from __future__ import annotations

import os
import uuid

from collections.abc import AsyncIterator
from datetime import timedelta
from functools import partial
from pathlib import Path

import pytest

from waiting import eventually as _eventually

from spindle import activity, workflow
from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.client import Client
from spindle.converter import EncryptionCodec, WorkflowSerializationContext
from spindle.converter._payload_visitor import ENCODED_FAILURE_MESSAGE, collect_payloads, decode_message
from spindle.exceptions import ActivityError, ApplicationError, WorkflowFailureError
from spindle.worker import Worker

pytest.importorskip("cryptography")

KEY = os.urandom(32)
CARD = "4111-2222-3333-4444"
FAST = timedelta(seconds=10)
TOKENS: dict[str, tuple[bytes, str]] = {}


@activity.defn
async def hold(card: str) -> str:
    activity.heartbeat(f"holding {card}")
    return f"held {card}"


@activity.defn
async def charge(card: str) -> str:
    raise ApplicationError(f"card {card} declined", card, type="Declined", non_retryable=True)


@activity.defn
async def completes_later(key: str) -> str:
    TOKENS[key] = (activity.info().task_token, activity.info().workflow_id)
    activity.raise_complete_async()


@workflow.defn
class Receipt:
    @workflow.run
    async def run(self, text: str) -> str:
        return f"receipt for {text}"


@workflow.defn
class Checkout:
    def __init__(self) -> None:
        self.confirmed: str | None = None

    @workflow.run
    async def run(self, card: str) -> str:
        held = await workflow.execute_activity(hold, card, start_to_close_timeout=FAST)
        receipt = await workflow.execute_child_workflow(Receipt.run, held, id=workflow.info().workflow_id + "-r")
        await workflow.wait_condition(lambda: self.confirmed is not None)
        await workflow.execute_activity(charge, card, start_to_close_timeout=FAST)
        return receipt

    @workflow.signal
    def confirm(self, by: str) -> None:
        self.confirmed = by

    @workflow.query
    def status(self) -> str:
        return f"confirmed by {self.confirmed}" if self.confirmed else "waiting"


@workflow.defn
class WaitsForSignal:
    def __init__(self) -> None:
        self.value: str | None = None

    @workflow.run
    async def run(self, card: str) -> str:
        await workflow.wait_condition(lambda: self.value is not None)
        return f"{card}: {self.value}"

    @workflow.signal
    def give(self, value: str) -> None:
        self.value = value


@workflow.defn
async def completed_async() -> str:
    return await workflow.execute_activity(completes_later, "k", start_to_close_timeout=FAST)


@pytest.fixture
async def clients(tmp_path: Path) -> AsyncIterator[tuple[Client, Client]]:
    """(a client with a strict EncryptionCodec, a raw client that sees what the server stores)."""
    raw = await Client.connect("embedded:" + str(tmp_path / "s.db"))
    secure = Client(raw.stub, namespace=raw.namespace, codecs=[EncryptionCodec(KEY, strict=True)])
    try:
        yield secure, raw
    finally:
        await raw.close()


@pytest.fixture
def tq() -> str:
    return "tq-" + uuid.uuid4().hex[:8]


def worker(client: Client, tq: str) -> Worker:
    return Worker(client, task_queue=tq, workflows=[Checkout, Receipt, WaitsForSignal, completed_async],
                  activities=[hold, charge, completes_later], graceful_shutdown_timeout=timedelta(seconds=1))


async def raw_history(raw: Client, workflow_id: str) -> pb.History:
    resp = await raw.stub.GetWorkflowExecutionHistory(svc.GetWorkflowExecutionHistoryRequest(
        namespace=raw.namespace, execution=pb.WorkflowExecution(workflow_id=workflow_id)))
    return resp.history


eventually = partial(_eventually, timeout=8.0)


async def first_task_failure_message(raw: Client, secure: Client, workflow_id: str) -> str:
    """The first WorkflowTaskFailed's message: encoded on the server, read with the key."""
    async def failed() -> pb.HistoryEvent:
        events = (await raw_history(raw, workflow_id)).events
        failures = [e for e in events if e.event_type == pb.EVENT_TYPE_WORKFLOW_TASK_FAILED]
        assert failures, f"no WorkflowTaskFailed for {workflow_id}"
        return failures[0]

    event = await eventually(failed)
    assert event.workflow_task_failed_event_attributes.failure.message == ENCODED_FAILURE_MESSAGE
    await decode_message(secure.codecs, event, context=WorkflowSerializationContext(secure.namespace, workflow_id))
    return event.workflow_task_failed_event_attributes.failure.message  # type: ignore[no-any-return]


async def test_the_server_stores_no_plaintext_and_the_key_holder_reads_everything(
        clients: tuple[Client, Client], tq: str) -> None:
    secure, raw = clients
    async with worker(secure, tq):
        h = await secure.start_workflow(Checkout.run, CARD, id="checkout", task_queue=tq)
        await h.signal(Checkout.confirm, "alice")
        with pytest.raises(WorkflowFailureError) as info:
            await h.result()
        assert await h.query(Checkout.status) == "confirmed by alice"
    activity_error = info.value.cause
    assert isinstance(activity_error, ActivityError)
    assert isinstance(activity_error.cause, ApplicationError)
    assert activity_error.cause.message == f"card {CARD} declined" and activity_error.cause.details == (CARD,)
    assert "raise ApplicationError" in (activity_error.cause.stack_trace or "")
    stored = await raw_history(raw, "checkout")
    assert CARD.encode() not in stored.SerializeToString()
    assert b"raise ApplicationError" not in stored.SerializeToString()
    for e in stored.events:
        for p in collect_payloads(e):
            assert p.metadata["encoding"] == b"binary/encrypted" and p.metadata["encryption-aad"] == b"spindle/v1"
    failed = [e for e in stored.events if e.event_type == pb.EVENT_TYPE_ACTIVITY_TASK_FAILED][0]
    assert failed.activity_task_failed_event_attributes.failure.message == ENCODED_FAILURE_MESSAGE
    child = await raw_history(raw, "checkout-r")
    assert CARD.encode() not in child.SerializeToString()
    readable = await h.fetch_history()  # the key holder's view: decoded, messages back in place
    failure = readable.events_of_type("ActivityTaskFailed")[0].attributes["failure"]
    assert failure["message"] == f"card {CARD} declined"


async def test_a_ciphertext_copied_into_another_workflow_or_field_does_not_decrypt(
        clients: tuple[Client, Client], tq: str) -> None:
    secure, raw = clients
    async with worker(secure, tq):
        original = await secure.start_workflow(WaitsForSignal.run, CARD, id="original", task_queue=tq)
        started = (await raw_history(raw, "original")).events[0]
        stolen = started.workflow_execution_started_event_attributes.input
        # Someone without the key starts another workflow with the copied ciphertext as its input ...
        await raw.stub.StartWorkflowExecution(svc.StartWorkflowExecutionRequest(
            namespace=raw.namespace, workflow_id="copycat", workflow_type="WaitsForSignal", task_queue=tq,
            input=stolen, request_id=str(uuid.uuid4())))
        message = await first_task_failure_message(raw, secure, "copycat")
        assert "cannot decode the payloads of a task of workflow WaitsForSignal (id 'copycat'" in message
        assert ("cannot decrypt payload (workflow.input of workflow 'copycat' in namespace 'default') with key id "
                "'default': it was encrypted for another workflow, namespace or field") in message
        # ... or sends it to the original workflow as a signal (same workflow, another field).
        await raw.stub.SignalWorkflowExecution(svc.SignalWorkflowExecutionRequest(
            namespace=raw.namespace, workflow_execution=pb.WorkflowExecution(workflow_id="original"),
            signal_name="give", input=stolen, request_id=str(uuid.uuid4())))
        message = await first_task_failure_message(raw, secure, "original")
        assert "(signal.input of workflow 'original' in namespace 'default')" in message
        # The worker keeps serving; a genuine signal from the key holder is another story (the task retries).
        ok = await secure.start_workflow(WaitsForSignal.run, "x", id="genuine", task_queue=tq)
        await ok.signal(WaitsForSignal.give, "fine")
        assert await ok.result() == "x: fine"
        for wid in ("copycat", "original"):
            await secure.get_workflow_handle(wid).terminate("test over")
        assert original.id == "original"


async def test_a_plaintext_signal_is_refused_by_a_strict_codec(clients: tuple[Client, Client], tq: str) -> None:
    secure, raw = clients
    async with worker(secure, tq):
        h = await secure.start_workflow(WaitsForSignal.run, CARD, id="strict", task_queue=tq)
        await raw.get_workflow_handle("strict").signal("give", "forged")  # no key: a plaintext payload
        message = await first_task_failure_message(raw, secure, "strict")
        assert ("EncryptionCodec(strict=True) refuses an unencrypted payload (encoding 'json/plain') "
                "(signal.input of workflow 'strict' in namespace 'default')") in message
        ok = await secure.start_workflow(WaitsForSignal.run, "x", id="genuine", task_queue=tq)
        await ok.signal(WaitsForSignal.give, "fine")
        assert await ok.result() == "x: fine"
        await h.terminate("test over")


async def test_lenient_codec_still_reads_plaintext(tmp_path: Path, tq: str) -> None:
    raw = await Client.connect("embedded:" + str(tmp_path / "lenient.db"))
    lenient = Client(raw.stub, namespace=raw.namespace, codecs=[EncryptionCodec(KEY)])
    try:
        async with worker(lenient, tq):
            h = await raw.start_workflow(WaitsForSignal.run, "plain", id="lenient", task_queue=tq)
            await h.signal("give", "plain too")
            assert await lenient.get_workflow_handle("lenient").result() == "plain: plain too"
    finally:
        await raw.close()


async def test_async_completion_needs_the_workflow_context(clients: tuple[Client, Client], tq: str) -> None:
    secure, _ = clients
    async with worker(secure, tq):
        h = await secure.start_workflow(completed_async, id="async", task_queue=tq)

        async def token() -> tuple[bytes, str]:
            assert "k" in TOKENS
            return TOKENS["k"]

        task_token, workflow_id = await eventually(token)
        with pytest.raises(ValueError, match=r"the workflow of this activity.result is not known here.*with_context"):
            await secure.get_async_activity_handle(task_token).complete("done")
        handle = secure.get_async_activity_handle(task_token).with_context(
            WorkflowSerializationContext(secure.namespace, workflow_id))
        await handle.complete("done")
        assert await h.result() == "done"
