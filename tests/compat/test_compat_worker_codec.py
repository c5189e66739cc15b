"""Worker and codec code written for Temporal, with ``temporalio`` renamed to ``spindle``.

* the encryption sample's codec (samples-python ``encryption/codec.py``): a plain
  ``PayloadCodec`` riding on ``dataclasses.replace(converter.default(), payload_codec=...)``;
* a codec that implements ``WithSerializationContext`` and reads the
  ``WorkflowSerializationContext`` it is given (Temporal's interface and names);
* ``Worker(debug_mode=True)`` and the deadlock error Temporal users know
  ("[TMPRL1101] Potential deadlock detected").
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import threading
import uuid

from collections.abc import Iterable
from datetime import timedelta
from pathlib import Path
from typing import List

import pytest

from spindle import activity, converter, workflow
from spindle.api.common.v1 import Payload
from spindle.client import Client
from spindle.converter import PayloadCodec, SerializationContext, WithSerializationContext, WorkflowSerializationContext
from spindle.worker import Worker

AESGCM = pytest.importorskip("cryptography.hazmat.primitives.ciphers.aead").AESGCM

default_key = b"test-key-test-key-test-key-test!"
default_key_id = "test-key-id"


class EncryptionCodec(PayloadCodec):  # as in samples-python/encryption/codec.py
    def __init__(self, key_id: str = default_key_id, key: bytes = default_key) -> None:
        super().__init__()
        self.key_id = key_id
        self.encryptor = AESGCM(key)

    async def encode(self, payloads: Iterable[Payload]) -> List[Payload]:
        return [
            Payload(
                metadata={"encoding": b"binary/encrypted", "encryption-key-id": self.key_id.encode()},
                data=self.encrypt(p.SerializeToString()),
            )
            for p in payloads
        ]

    async def decode(self, payloads: Iterable[Payload]) -> List[Payload]:
        ret: List[Payload] = []
        for p in payloads:
            if p.metadata.get("encoding", b"").decode() != "binary/encrypted":
                ret.append(p)
                continue
            key_id = p.metadata.get("encryption-key-id", b"").decode()
            if key_id != self.key_id:
                raise ValueError(f"Unrecognized key ID {key_id}. Current key ID is {self.key_id}.")
            ret.append(Payload.FromString(self.decrypt(p.data)))
        return ret

    def encrypt(self, data: bytes) -> bytes:
        nonce = os.urandom(12)
        return nonce + self.encryptor.encrypt(nonce, data, None)

    def decrypt(self, data: bytes) -> bytes:
        return self.encryptor.decrypt(data[:12], data[12:], None)


class PerWorkflowTagCodec(PayloadCodec, WithSerializationContext):
    """Tags each payload with the workflow it belongs to, and checks the tag on the way back."""

    seen: List[str] = []

    def __init__(self, context: SerializationContext | None = None) -> None:
        self.context = context

    def with_context(self, context: SerializationContext) -> "PerWorkflowTagCodec":
        return PerWorkflowTagCodec(context)

    def _tag(self) -> bytes:
        assert isinstance(self.context, WorkflowSerializationContext)
        return f"{self.context.namespace}/{self.context.workflow_id}".encode()

    async def encode(self, payloads: Iterable[Payload]) -> List[Payload]:
        self.seen.append(self._tag().decode())
        return [Payload(metadata={"encoding": b"binary/tagged", "tag": self._tag()}, data=p.SerializeToString())
                for p in payloads]

    async def decode(self, payloads: Iterable[Payload]) -> List[Payload]:
        ret: List[Payload] = []
        for p in payloads:
            if p.metadata.get("encoding") != b"binary/tagged":
                ret.append(p)
                continue
            if p.metadata["tag"] != self._tag():
                raise ValueError(f"payload of {p.metadata['tag'].decode()} decoded as {self._tag().decode()}")
            ret.append(Payload.FromString(p.data))
        return ret


@dataclasses.dataclass
class ComposeGreetingInput:
    greeting: str
    name: str


@activity.defn
async def compose_greeting(input: ComposeGreetingInput) -> str:
    return f"{input.greeting}, {input.name}!"


@workflow.defn
class GreetingWorkflow:
    @workflow.run
    async def run(self, name: str) -> str:
        return await workflow.execute_activity(
            compose_greeting, ComposeGreetingInput("Hello", name), start_to_close_timeout=timedelta(seconds=10))


@workflow.defn
class ParentWorkflow:
    @workflow.run
    async def run(self, name: str) -> str:
        return await workflow.execute_child_workflow(GreetingWorkflow.run, name, id=f"{name}-child")


SPIN = threading.Event()


@workflow.defn(check_determinism=False)
class SpinningWorkflow:
    @workflow.run
    async def run(self) -> str:
        while not SPIN.is_set():
            pass
        return "done"


@pytest.fixture
def db(tmp_path: Path) -> str:
    return "embedded:" + str(tmp_path / "compat-codec.db")


@pytest.fixture
def task_queue() -> str:
    return "compat-" + uuid.uuid4().hex[:8]


async def test_the_encryption_sample_codec_rides_on_the_data_converter(db: str, task_queue: str) -> None:
    client = await Client.connect(
        db, data_converter=dataclasses.replace(converter.default(), payload_codec=EncryptionCodec()))
    try:
        async with Worker(client, task_queue=task_queue, workflows=[GreetingWorkflow],
                          activities=[compose_greeting]):
            result = await client.execute_workflow(GreetingWorkflow.run, "Temporal", id="encrypted",
                                                   task_queue=task_queue)
        assert result == "Hello, Temporal!"
        history = await Client(client.stub, namespace=client.namespace).get_workflow_handle(
            "encrypted").fetch_history()
        assert "Temporal" not in history.to_json()
    finally:
        await client.close()


async def test_a_context_aware_codec_sees_each_payloads_workflow(db: str, task_queue: str) -> None:
    PerWorkflowTagCodec.seen.clear()
    client = await Client.connect(
        db, data_converter=dataclasses.replace(converter.default(), payload_codec=PerWorkflowTagCodec()))
    try:
        async with Worker(client, task_queue=task_queue, workflows=[ParentWorkflow, GreetingWorkflow],
                          activities=[compose_greeting]):
            result = await client.execute_workflow(ParentWorkflow.run, "ctx", id="parent", task_queue=task_queue)
        assert result == "Hello, ctx!"
        assert {"default/parent", "default/ctx-child"} <= set(PerWorkflowTagCodec.seen)
    finally:
        await client.close()


async def test_deadlock_detection_as_temporal_reports_it(db: str, task_queue: str) -> None:
    SPIN.clear()
    safety = threading.Timer(20, SPIN.set)
    safety.start()
    client = await Client.connect(db)
    try:
        Worker(client, task_queue=task_queue, workflows=[SpinningWorkflow], debug_mode=True)  # accepted
        async with Worker(client, task_queue=task_queue, workflows=[SpinningWorkflow, GreetingWorkflow],
                          activities=[compose_greeting]):
            handle = await client.start_workflow(SpinningWorkflow.run, id="spinning", task_queue=task_queue)
            for _ in range(300):
                history = await handle.fetch_history()
                failed = history.events_of_type("WorkflowTaskFailed")
                if failed:
                    break
                await asyncio.sleep(0.05)
            assert failed and not SPIN.is_set()
            assert failed[0].attributes["failure"]["message"].startswith(
                "[TMPRL1101] Potential deadlock detected: workflow SpinningWorkflow")
            assert await client.execute_workflow(GreetingWorkflow.run, "still", id="other",
                                                 task_queue=task_queue) == "Hello, still!"
            SPIN.set()
            assert await handle.result() == "done"
    finally:
        safety.cancel()
        SPIN.set()
        await client.close()
