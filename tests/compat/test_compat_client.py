"""Client-side code written for Temporal, with ``temporalio`` renamed to ``spindle``.

Each test reads like a Temporal sample or SDK test: ``Client.connect(**config)`` with
``target_host``, errors imported from ``spindle.client`` and ``spindle.exceptions``,
``spindle.common`` policies and typed search attributes, a codec riding on
``dataclasses.replace(converter.default(), payload_codec=...)``, updates with
``execute_update`` / ``start_update(wait_for_stage=ACCEPTED)`` / ``get_update_handle``,
and ``get_workflow_handle_for``. Everything runs against the in-process control plane.
"""

from __future__ import annotations

import asyncio
import dataclasses
import uuid

from collections.abc import AsyncIterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta
from functools import partial
from pathlib import Path

import pytest

from waiting import eventually as _eventually

from spindle import activity, converter, workflow
from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.api.common.v1 import Payload
from spindle.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowUpdateFailedError,
    WorkflowUpdateHandle,
    WorkflowUpdateStage,
)
from spindle.common import (
    RetryPolicy,
    SearchAttributeIndexedValueType,
    SearchAttributeKey,
    SearchAttributePair,
    TypedSearchAttributes,
    WorkflowIDConflictPolicy,
    WorkflowIDReusePolicy,
)
from spindle.converter import DataConverter, PayloadCodec
from spindle.exceptions import ActivityError, ApplicationError, WorkflowAlreadyStartedError
from spindle.worker import Worker

# ---------------------------------------------------------------------- code as in the samples


@dataclass
class ComposeGreetingInput:
    greeting: str
    name: str


@activity.defn
def compose_greeting(input: ComposeGreetingInput) -> str:
    return f"{input.greeting}, {input.name}!"


@activity.defn
async def refuse(name: str) -> str:
    raise ApplicationError(f"no greeting for {name}", type="Refused", non_retryable=True)


@workflow.defn
class GreetingWorkflow:
    @workflow.run
    async def run(self, name: str) -> str:
        return await workflow.execute_activity(
            compose_greeting,
            ComposeGreetingInput("Hello", name),
            start_to_close_timeout=timedelta(seconds=10),
        )


@workflow.defn
class RefusingWorkflow:
    @workflow.run
    async def run(self, name: str) -> str:
        return await workflow.execute_activity(
            refuse, name, start_to_close_timeout=timedelta(seconds=10),
            retry_policy=RetryPolicy(maximum_attempts=1),
        )


@dataclass
class Greeting:
    text: str
    count: int


@workflow.defn
class TypedResultWorkflow:
    @workflow.run
    async def run(self, name: str) -> Greeting:
        return Greeting(f"Hello, {name}!", 1)


@workflow.defn
class UpdatableWorkflow:
    """hello_update-style: updates mutate state; one waits for a signal before answering."""

    def __init__(self) -> None:
        self.greeting = "Hello"
        self.released = False
        self.finished = False

    @workflow.run
    async def run(self) -> str:
        await workflow.wait_condition(lambda: self.finished)
        return self.greeting

    @workflow.update
    async def update_greeting(self, greeting: str) -> str:
        old, self.greeting = self.greeting, greeting
        return old

    @update_greeting.validator
    def validate_greeting(self, greeting: str) -> None:
        if not greeting:
            raise ValueError("greeting must not be empty")

    @workflow.update
    async def slow_greeting(self, greeting: str) -> str:
        await workflow.wait_condition(lambda: self.released)
        if greeting == "fail":
            raise ApplicationError("slow greeting failed", type="SlowFail")
        self.greeting = greeting
        return f"set {greeting}"

    @workflow.update
    async def set_both(self, greeting: str, suffix: str) -> str:
        self.greeting = greeting + suffix
        return self.greeting

    @workflow.signal
    def release(self) -> None:
        self.released = True

    @workflow.signal
    def finish(self) -> None:
        self.finished = True


@workflow.defn
class TaggingWorkflow:
    """Upserts a keyword list the way hello_search_attributes does (a dict with a list)."""

    def __init__(self) -> None:
        self.finished = False

    @workflow.run
    async def run(self) -> None:
        workflow.upsert_search_attributes({"Tags": ["new-value", "urgent"]})
        await workflow.wait_condition(lambda: self.finished)

    @workflow.signal
    def finish(self) -> None:
        self.finished = True


class ReversingCodec(PayloadCodec):
    """A Temporal-style codec (``Payload`` from ``spindle.api.common.v1``, as the encryption sample imports it):
    wraps each serialised payload, reversed, under its own encoding."""

    ENCODING = b"binary/reversed"

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [Payload(metadata={"encoding": self.ENCODING}, data=p.SerializeToString()[::-1]) for p in payloads]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        out = []
        for p in payloads:
            if p.metadata.get("encoding") != self.ENCODING:
                out.append(p)
                continue
            out.append(Payload.FromString(p.data[::-1]))
        return out


ALL_WORKFLOWS = [GreetingWorkflow, RefusingWorkflow, TypedResultWorkflow, UpdatableWorkflow, TaggingWorkflow]

# ---------------------------------------------------------------------- fixtures


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[Client]:
    config = {"target_host": "embedded:" + str(tmp_path / "compat-client.db")}
    client = await Client.connect(**config)
    try:
        yield client
    finally:
        await client.close()


@pytest.fixture
def task_queue() -> str:
    return str(uuid.uuid4())


def new_worker(client: Client, task_queue: str) -> Worker:
    return Worker(client, task_queue=task_queue, workflows=ALL_WORKFLOWS, activities=[compose_greeting, refuse],
                  activity_executor=ThreadPoolExecutor(5))


#: Retries ``check`` until it stops failing (visibility is updated after the history).
eventually = partial(_eventually, timeout=10.0, interval=0.02)


async def raw_history(client: Client, workflow_id: str) -> list[pb.HistoryEvent]:
    """The history as the server stores it (no codec applied)."""
    resp = await client.stub.GetWorkflowExecutionHistory(svc.GetWorkflowExecutionHistoryRequest(
        namespace=client.namespace, execution=pb.WorkflowExecution(workflow_id=workflow_id)))
    return list(resp.history.events)


# ---------------------------------------------------------------------- connection and module layout


async def test_connect_with_target_host_config_runs_hello_activity(client: Client, task_queue: str) -> None:
    # the `client` fixture connected with Client.connect(**{"target_host": ...}), as every sample does
    async with new_worker(client, task_queue):
        result = await client.execute_workflow(
            GreetingWorkflow.run, "World", id="hello-activity-workflow-id", task_queue=task_queue)
    assert result == "Hello, World!"


async def test_connect_rejects_an_empty_target_host() -> None:
    with pytest.raises(ValueError, match="target_host"):
        await Client.connect(target_host="")


async def test_common_policies_are_the_ones_start_workflow_takes(client: Client, task_queue: str) -> None:
    async with new_worker(client, task_queue):
        await client.execute_workflow(GreetingWorkflow.run, "a", id="policy-wf", task_queue=task_queue)
        with pytest.raises(WorkflowAlreadyStartedError):
            await client.start_workflow(GreetingWorkflow.run, "b", id="policy-wf", task_queue=task_queue,
                                        id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE)
        first = await client.start_workflow(UpdatableWorkflow.run, id="conflict-wf", task_queue=task_queue)
        again = await client.start_workflow(UpdatableWorkflow.run, id="conflict-wf", task_queue=task_queue,
                                            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING)
        assert again.run_id == first.run_id
        await first.signal(UpdatableWorkflow.finish)
        assert await first.result() == "Hello"


# ---------------------------------------------------------------------- errors


async def test_workflow_failure_error_from_client_module_and_failure_proto(client: Client, task_queue: str) -> None:
    async with new_worker(client, task_queue):
        with pytest.raises(WorkflowFailureError) as err:
            await client.execute_workflow(RefusingWorkflow.run, "Bob", id="refusing", task_queue=task_queue)
    activity_error = err.value.cause
    assert isinstance(activity_error, ActivityError)
    app_error = activity_error.cause
    assert isinstance(app_error, ApplicationError)
    assert app_error.type == "Refused"
    # FailureError.failure: the failure proto the error was rebuilt from, cause chain included
    assert activity_error.failure is not None
    assert activity_error.failure.activity_failure_info.activity_type == "refuse"
    assert activity_error.failure.cause.message == "no greeting for Bob"
    assert app_error.failure is not None
    assert app_error.failure.application_failure_info.type == "Refused"
    assert app_error.failure.application_failure_info.non_retryable
    # an error raised here, not decoded from a failure, has none
    assert ApplicationError("local").failure is None


# ---------------------------------------------------------------------- data converter with a codec


async def test_payload_codec_on_the_data_converter_is_applied(tmp_path: Path, task_queue: str) -> None:
    data_converter = dataclasses.replace(converter.default(), payload_codec=ReversingCodec())
    assert isinstance(data_converter, DataConverter)
    target = "embedded:" + str(tmp_path / "codec.db")
    client = await Client.connect(target, data_converter=data_converter)
    try:
        async with new_worker(client, task_queue):
            result = await client.execute_workflow(GreetingWorkflow.run, "Codec", id="codec-wf",
                                                   task_queue=task_queue)
        assert result == "Hello, Codec!"
        # the server stored only encoded bytes
        events = await raw_history(client, "codec-wf")
        started = events[0].workflow_execution_started_event_attributes
        assert started.input.payloads[0].metadata["encoding"] == ReversingCodec.ENCODING
        completed = events[-1].workflow_execution_completed_event_attributes
        assert completed.result.payloads[0].metadata["encoding"] == ReversingCodec.ENCODING
        # ... and the client decodes them
        history = await client.get_workflow_handle("codec-wf").fetch_history()
        decoded = history.to_proto_events()[0].workflow_execution_started_event_attributes.input.payloads[0]
        assert decoded.metadata["encoding"] == b"json/plain"
        # a client without the codec cannot read the result
        plain = Client(client.stub, namespace=client.namespace)
        with pytest.raises(ValueError, match="unknown payload encoding"):
            await plain.get_workflow_handle("codec-wf").result()
    finally:
        await client.close()


async def test_codecs_argument_and_payload_codec_both_apply(tmp_path: Path, task_queue: str) -> None:
    from spindle.converter import ZlibCodec

    data_converter = dataclasses.replace(converter.default(), payload_codec=ReversingCodec())
    client = await Client.connect("embedded:" + str(tmp_path / "both.db"), data_converter=data_converter,
                                  codecs=[ZlibCodec(min_size=0)])
    try:
        async with new_worker(client, task_queue):
            assert await client.execute_workflow(GreetingWorkflow.run, "Zed", id="both-wf",
                                                 task_queue=task_queue) == "Hello, Zed!"
        events = await raw_history(client, "both-wf")
        outer = events[0].workflow_execution_started_event_attributes.input.payloads[0]
        # codecs= run first, then the converter's codec: the outermost encoding is the converter's
        assert outer.metadata["encoding"] == ReversingCodec.ENCODING
        inner = pb.Payload.FromString(outer.data[::-1])
        assert inner.metadata["encoding"] == b"binary/zlib"
    finally:
        await client.close()


# ---------------------------------------------------------------------- updates


async def test_execute_update_and_update_failed_error(client: Client, task_queue: str) -> None:
    async with new_worker(client, task_queue):
        handle = await client.start_workflow(UpdatableWorkflow.run, id="hello-update", task_queue=task_queue)
        assert await handle.execute_update(UpdatableWorkflow.update_greeting, "Ciao") == "Hello"
        assert await handle.execute_update("update_greeting", args=["Hola"]) == "Ciao"
        assert await handle.execute_update(UpdatableWorkflow.set_both, args=["Hi", "!"]) == "Hi!"

        # rejected by the validator
        with pytest.raises(WorkflowUpdateFailedError) as err:
            await handle.execute_update(UpdatableWorkflow.update_greeting, "")
        assert isinstance(err.value.cause, ApplicationError)
        assert "greeting must not be empty" in err.value.cause.message

        # failed by the handler
        await handle.signal(UpdatableWorkflow.release)
        with pytest.raises(WorkflowUpdateFailedError) as err:
            await handle.execute_update(UpdatableWorkflow.slow_greeting, "fail")
        assert isinstance(err.value.cause, ApplicationError)
        assert err.value.cause.type == "SlowFail"

        await handle.signal(UpdatableWorkflow.finish)
        assert await handle.result() == "Hi!"


async def test_start_update_accepted_returns_before_the_handler_finishes(client: Client, task_queue: str) -> None:
    async with new_worker(client, task_queue):
        handle = await client.start_workflow(UpdatableWorkflow.run, id="accepted-wf", task_queue=task_queue)
        update_handle = await handle.start_update(
            UpdatableWorkflow.slow_greeting, "Bonjour", wait_for_stage=WorkflowUpdateStage.ACCEPTED)
        assert isinstance(update_handle, WorkflowUpdateHandle)
        assert update_handle.workflow_id == "accepted-wf"
        assert update_handle.id
        # accepted (recorded in the history) but not completed: the handler waits for the signal
        events = await raw_history(client, "accepted-wf")
        types = [e.event_type for e in events]
        assert pb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED in types
        assert pb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED not in types
        waiting = asyncio.ensure_future(update_handle.result())
        await asyncio.sleep(0.2)
        assert not waiting.done()

        await handle.signal(UpdatableWorkflow.release)
        assert await waiting == "set Bonjour"
        # the result is kept: asking again makes no call
        assert await update_handle.result() == "set Bonjour"

        # another handle to the same update, typed by the update method
        again = client.get_workflow_handle("accepted-wf").get_update_handle_for(
            UpdatableWorkflow.slow_greeting, update_handle.id)
        assert await again.result() == "set Bonjour"

        await handle.signal(UpdatableWorkflow.finish)
        assert await handle.result() == "Bonjour"


async def test_start_update_accepted_then_handler_fails(client: Client, task_queue: str) -> None:
    async with new_worker(client, task_queue):
        handle = await client.start_workflow(UpdatableWorkflow.run, id="accepted-fail", task_queue=task_queue)
        update_handle = await handle.start_update(
            UpdatableWorkflow.slow_greeting, "fail", id="my-update-id",
            wait_for_stage=WorkflowUpdateStage.ACCEPTED)
        assert update_handle.id == "my-update-id"
        other = handle.get_update_handle("my-update-id")
        await handle.signal(UpdatableWorkflow.release)
        for h in (update_handle, other):
            with pytest.raises(WorkflowUpdateFailedError) as err:
                await h.result()
            assert isinstance(err.value.cause, ApplicationError)
            assert err.value.cause.message == "slow greeting failed"
        await handle.signal(UpdatableWorkflow.finish)
        await handle.result()


async def test_start_update_rejected_by_validator_raises_on_result(client: Client, task_queue: str) -> None:
    async with new_worker(client, task_queue):
        handle = await client.start_workflow(UpdatableWorkflow.run, id="rejected-wf", task_queue=task_queue)
        update_handle = await handle.start_update(
            UpdatableWorkflow.update_greeting, "", wait_for_stage=WorkflowUpdateStage.ACCEPTED)
        with pytest.raises(WorkflowUpdateFailedError) as err:
            await update_handle.result()
        assert "greeting must not be empty" in str(err.value.cause)
        # a rejected update is not recorded
        types = [e.event_type for e in await raw_history(client, "rejected-wf")]
        assert pb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED not in types
        await handle.signal(UpdatableWorkflow.finish)
        await handle.result()


async def test_start_update_completed_stage(client: Client, task_queue: str) -> None:
    async with new_worker(client, task_queue):
        handle = await client.start_workflow(UpdatableWorkflow.run, id="completed-wf", task_queue=task_queue)
        update_handle = await handle.start_update(
            UpdatableWorkflow.update_greeting, "Hej", wait_for_stage=WorkflowUpdateStage.COMPLETED)
        assert await update_handle.result() == "Hello"
        await handle.signal(UpdatableWorkflow.finish)
        assert await handle.result() == "Hej"


# ---------------------------------------------------------------------- typed handles


async def test_get_workflow_handle_for_decodes_the_result_type(client: Client, task_queue: str) -> None:
    async with new_worker(client, task_queue):
        await client.start_workflow(TypedResultWorkflow.run, "Ann", id="typed-wf", task_queue=task_queue)
        handle: WorkflowHandle[Greeting] = client.get_workflow_handle_for(TypedResultWorkflow.run, "typed-wf")
        assert await handle.result() == Greeting("Hello, Ann!", 1)
        # an untyped handle gets plain JSON
        assert await client.get_workflow_handle("typed-wf").result() == {"text": "Hello, Ann!", "count": 1}
        assert (await handle.describe()).status == WorkflowExecutionStatus.COMPLETED


# ---------------------------------------------------------------------- KeywordList search attributes


async def test_keyword_list_search_attributes(client: Client, task_queue: str) -> None:
    tags = SearchAttributeKey.for_keyword_list("Tags")
    await client.add_search_attributes({tags.name: SearchAttributeIndexedValueType.KEYWORD_LIST})
    assert (await client.describe_namespace()).search_attributes["Tags"] == "KeywordList"
    async with new_worker(client, task_queue):
        handle = await client.start_workflow(
            TaggingWorkflow.run, id="tagging-wf", task_queue=task_queue,
            search_attributes=TypedSearchAttributes([SearchAttributePair(tags, ["old-value"])]),
        )
        # the run upserts a new list; read it back typed and untyped, and query by one element
        async def upserted() -> None:
            desc = await handle.describe()
            assert desc.search_attributes["Tags"] == ["new-value", "urgent"]
            assert desc.typed_search_attributes[tags] == ["new-value", "urgent"]
            assert [wf.id async for wf in client.list_workflows("Tags = 'urgent'")] == ["tagging-wf"]
            assert [wf.id async for wf in client.list_workflows("Tags = 'old-value'")] == []

        await eventually(upserted)
        await handle.signal(TaggingWorkflow.finish)
        await handle.result()


async def test_typed_search_attribute_of_the_wrong_type_is_refused_before_sending(client: Client,
                                                                                  task_queue: str) -> None:
    tags = SearchAttributeKey.for_keyword_list("Tags")
    await client.add_search_attributes({"Tags": "KeywordList"})
    with pytest.raises(TypeError, match="'Tags' is KeywordList"):
        await client.start_workflow(TaggingWorkflow.run, id="bad-tags", task_queue=task_queue,
                                    search_attributes=TypedSearchAttributes([SearchAttributePair(tags, "one")]))
    assert await client.count_workflows() == 0
