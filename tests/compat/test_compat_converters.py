"""Payload converters written for Temporal, with ``temporalio`` renamed to ``spindle``.

What the custom_converter sample does: an ``EncodingPayloadConverter`` for a type the
default JSON does not know, put in front of the defaults in a
``CompositePayloadConverter``, installed with
``dataclasses.replace(DataConverter.default, payload_converter_class=...)``; the
workflow's argument and result go through it, and the history replays with the same
converter. The default converter keeps writing the bytes it always wrote.
"""

from __future__ import annotations

import dataclasses
import json
import uuid

from pathlib import Path
from typing import Any, Optional, Type

import pytest

from spindle import workflow
from spindle.api.common.v1 import Payload
from spindle.client import Client
from spindle.converter import (
    AdvancedJSONEncoder,
    BinaryNullPayloadConverter,
    BinaryPlainPayloadConverter,
    BinaryProtoPayloadConverter,
    CompositePayloadConverter,
    DataConverter,
    DefaultPayloadConverter,
    EncodingPayloadConverter,
    JSONPlainPayloadConverter,
    JSONProtoPayloadConverter,
    JSONTypeConverter,
    PayloadConverter,
    value_to_type,
)
from spindle.worker import Replayer, Worker


class GreetingInput:
    def __init__(self, name: str) -> None:
        self.name = name


class GreetingOutput:
    def __init__(self, result: str) -> None:
        self.result = result


class GreetingEncodingPayloadConverter(EncodingPayloadConverter):
    @property
    def encoding(self) -> str:
        return "text/my-greeting-encoding"

    def to_payload(self, value: Any) -> Optional[Payload]:
        if isinstance(value, GreetingInput):
            return Payload(metadata={"encoding": self.encoding.encode(), "is_input": b"true"},
                           data=value.name.encode())
        if isinstance(value, GreetingOutput):
            return Payload(metadata={"encoding": self.encoding.encode()}, data=value.result.encode())
        return None

    def from_payload(self, payload: Payload, type_hint: Optional[Type] = None) -> Any:
        if payload.metadata.get("is_input") == b"true":
            assert type_hint is None or type_hint is GreetingInput
            return GreetingInput(payload.data.decode())
        return GreetingOutput(payload.data.decode())


class GreetingPayloadConverter(CompositePayloadConverter):
    def __init__(self) -> None:
        super().__init__(GreetingEncodingPayloadConverter(),
                         *DefaultPayloadConverter.default_encoding_payload_converters)


greeting_data_converter = dataclasses.replace(DataConverter.default, payload_converter_class=GreetingPayloadConverter)


@workflow.defn
class GreetingWorkflow:
    @workflow.run
    async def run(self, input: GreetingInput) -> GreetingOutput:
        return GreetingOutput(f"Hello, {input.name}")


@pytest.fixture
def db(tmp_path: Path) -> str:
    return "embedded:" + str(tmp_path / "compat-converters.db")


async def test_the_custom_converter_sample_round_trips_and_replays(db: str) -> None:
    queue = "conv-" + uuid.uuid4().hex[:8]
    client = await Client.connect(db, data_converter=greeting_data_converter)
    try:
        async with Worker(client, task_queue=queue, workflows=[GreetingWorkflow]):
            result = await client.execute_workflow(GreetingWorkflow.run, GreetingInput("Temporal"),
                                                   id="greeting", task_queue=queue)
        assert isinstance(result, GreetingOutput) and result.result == "Hello, Temporal"
        history = await client.get_workflow_handle("greeting").fetch_history()
        started = history.events[0].to_proto().workflow_execution_started_event_attributes
        assert started.input.payloads[0].metadata["encoding"] == b"text/my-greeting-encoding"
        assert started.input.payloads[0].data == b"Temporal"
        await Replayer(workflows=[GreetingWorkflow], data_converter=greeting_data_converter).replay_workflow(history)
    finally:
        await client.close()


def test_the_default_converter_is_temporals_shape_and_writes_the_old_bytes() -> None:
    conv = DataConverter.default
    assert conv.payload_converter_class is DefaultPayloadConverter
    assert isinstance(conv.payload_converter, DefaultPayloadConverter)
    assert [type(c) for c in DefaultPayloadConverter.default_encoding_payload_converters] == [
        BinaryNullPayloadConverter, BinaryPlainPayloadConverter, JSONProtoPayloadConverter,
        BinaryProtoPayloadConverter, JSONPlainPayloadConverter]

    @dataclasses.dataclass
    class Point:
        x: int
        label: str

    values = [None, b"\x00raw", 3, "é", {"b": 1, "a": [1.5, True]}, Point(1, "p")]
    pc = conv.payload_converter.to_payloads(values)
    # byte for byte what DataConverter has always written (the bytes stored in old histories)
    assert [p.SerializeToString(deterministic=True) for p in pc] == [
        conv.to_payload(v).SerializeToString(deterministic=True) for v in values]
    assert pc[4].data == b'{"b":1,"a":[1.5,true]}' and pc[3].data == '"é"'.encode()
    assert conv.payload_converter.from_payloads(pc, [None, bytes, int, str, dict, Point]) == values


def test_payload_converter_errors_are_temporals() -> None:
    pc = CompositePayloadConverter(BinaryNullPayloadConverter())
    with pytest.raises(RuntimeError, match="Value at index 1 of type int has no known converter"):
        pc.to_payloads([None, 1])
    with pytest.raises(KeyError, match="Unknown payload encoding json/plain"):
        pc.from_payloads([Payload(metadata={"encoding": b"json/plain"}, data=b"1")])
    with pytest.raises(RuntimeError, match="index 0 with encoding json/plain could not be converted"):
        DefaultPayloadConverter().from_payloads([Payload(metadata={"encoding": b"json/plain"}, data=b"{")])
    with pytest.raises(TypeError, match="EncodingPayloadConverter"):
        CompositePayloadConverter(object())
    with pytest.raises(TypeError, match="payload_converter_class"):
        DataConverter(payload_converter_class=dict)
    # a custom converter's failure reaches Spindle's callers as the ValueError/TypeError they expect
    with pytest.raises(ValueError, match="could not be converted"):
        greeting_data_converter.from_payload(Payload(metadata={"encoding": b"json/plain"}, data=b"{"))
    with pytest.raises(TypeError, match="no known converter"):
        dataclasses.replace(DataConverter.default,
                            payload_converter_class=_NullOnly).to_payload(1)


class _NullOnly(CompositePayloadConverter):
    def __init__(self) -> None:
        super().__init__(BinaryNullPayloadConverter())


def test_protobuf_messages_round_trip_as_json_and_binary() -> None:
    msg = Payload(metadata={"k": b"v"}, data=b"d")
    p = DefaultPayloadConverter().to_payload(msg)
    assert p.metadata["encoding"] == b"json/protobuf" and p.metadata["messageType"] == b"spindle.v1.Payload"
    assert DefaultPayloadConverter().from_payload(p) == msg
    b = BinaryProtoPayloadConverter().to_payload(msg)
    assert b is not None and DefaultPayloadConverter().from_payload(b) == msg
    assert BinaryProtoPayloadConverter().to_payload("not a message") is None


class Money:
    def __init__(self, cents: int) -> None:
        self.cents = cents


class MoneyEncoder(AdvancedJSONEncoder):
    def default(self, o: Any) -> Any:
        if isinstance(o, Money):
            return {"cents": o.cents}
        return super().default(o)


class MoneyTypeConverter(JSONTypeConverter):
    def to_typed_value(self, hint: Any, value: Any) -> Any:
        if hint is Money:
            return Money(value["cents"])
        return JSONTypeConverter.Unhandled


def test_json_plain_with_an_encoder_and_custom_type_converters() -> None:
    json_conv = JSONPlainPayloadConverter(encoder=MoneyEncoder, custom_type_converters=[MoneyTypeConverter()])
    p = json_conv.to_payload({"z": Money(5), "a": uuid.UUID(int=1)})
    assert p is not None
    assert json.loads(p.data) == {"a": str(uuid.UUID(int=1)), "z": {"cents": 5}}
    assert p.data.startswith(b'{"a"')  # Temporal's sort_keys
    out = json_conv.from_payload(json_conv.to_payload(Money(7)), Money)
    assert isinstance(out, Money) and out.cents == 7
    assert value_to_type(list[int], [1, 2]) == [1, 2]
    with pytest.raises(TypeError, match="does not fit"):
        value_to_type(int, "x")


def test_payload_converter_base_gives_single_value_helpers() -> None:
    class Upper(PayloadConverter):
        def to_payloads(self, values: Any) -> list[Payload]:
            return [Payload(data=str(v).upper().encode()) for v in values]

        def from_payloads(self, payloads: Any, type_hints: Any = None) -> list[Any]:
            return [p.data.decode() for p in payloads]

    assert Upper().to_payload("a").data == b"A" and Upper().from_payload(Payload(data=b"x")) == "x"
