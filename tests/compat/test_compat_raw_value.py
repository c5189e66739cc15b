"""``spindle.common.RawValue`` as Temporal code uses it: a payload passed through the converter unchanged,
as a workflow argument and result and as ``workflow.execute_activity`` arguments."""

from __future__ import annotations

import uuid

from collections.abc import AsyncIterator
from datetime import timedelta

import pytest

from spindle import activity, workflow
from spindle.api import messages_pb2 as pb
from spindle.common import RawValue
from spindle.converter import DataConverter
from spindle.testing import Replayer, WorkflowEnvironment
from spindle.worker import Worker

_OPAQUE = pb.Payload(metadata={"encoding": b"binary/opaque"}, data=b"\x00\x01raw")


@activity.defn
async def inspect_raw(raw: RawValue) -> list[str]:
    return [raw.payload.metadata["encoding"].decode(), raw.payload.data.hex()]


@workflow.defn
class RawPassThrough:
    @workflow.run
    async def run(self, raw: RawValue) -> RawValue:
        seen = await workflow.execute_activity(inspect_raw, raw, start_to_close_timeout=timedelta(seconds=5))
        assert seen == ["binary/opaque", _OPAQUE.data.hex()]
        return raw


@pytest.fixture
async def env() -> AsyncIterator[WorkflowEnvironment]:
    async with await WorkflowEnvironment.start_time_skipping() as e:
        yield e


def test_converter_leaves_raw_value_as_is() -> None:
    conv = DataConverter()
    assert conv.to_payload(RawValue(_OPAQUE)) == _OPAQUE
    assert conv.from_payload(_OPAQUE, RawValue) == RawValue(_OPAQUE)
    json_payload = conv.to_payload({"a": 1})
    assert conv.from_payload(json_payload, RawValue).payload == json_payload


async def test_raw_value_through_workflow_and_activity(env: WorkflowEnvironment) -> None:
    tq = f"tq-{uuid.uuid4()}"
    async with Worker(env.client, task_queue=tq, workflows=[RawPassThrough], activities=[inspect_raw]):
        handle = await env.client.start_workflow(RawPassThrough.run, RawValue(_OPAQUE), id=f"wf-{uuid.uuid4()}",
                                                 task_queue=tq)
        result = await handle.result()  # typed RawValue by the run method's return hint
        history = await handle.fetch_history()
    assert isinstance(result, RawValue) and result.payload == _OPAQUE
    await Replayer(workflows=[RawPassThrough]).replay_workflow(history)
