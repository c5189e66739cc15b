"""The pydantic_converter sample's shape, with ``temporalio`` renamed to ``spindle``.

Pydantic v2 models (with an IP address and a datetime) go through a workflow and an
activity as ``List[MyPydanticModel]`` and come back as models; the history replays
with the same converter; without pydantic the import says what to install.
"""

from __future__ import annotations

import subprocess
import sys
import uuid

from datetime import datetime, timedelta, timezone
from ipaddress import IPv4Address
from pathlib import Path
from typing import List

import pytest

pydantic = pytest.importorskip("pydantic", minversion="2")

from pydantic import BaseModel  # noqa: E402

from spindle import activity, workflow  # noqa: E402
from spindle.client import Client  # noqa: E402
from spindle.contrib.pydantic import (  # noqa: E402
    PydanticJSONPlainPayloadConverter,
    PydanticPayloadConverter,
    pydantic_data_converter,
)
from spindle.worker import Replayer, Worker  # noqa: E402


class MyPydanticModel(BaseModel):
    some_ip: IPv4Address
    some_date: datetime


@activity.defn
async def echo_models(models: List[MyPydanticModel]) -> List[MyPydanticModel]:
    assert all(isinstance(m, MyPydanticModel) for m in models)
    return models


@workflow.defn
class PydanticWorkflow:
    @workflow.run
    async def run(self, models: List[MyPydanticModel]) -> List[MyPydanticModel]:
        assert all(isinstance(m.some_ip, IPv4Address) for m in models)
        return await workflow.execute_activity(echo_models, models, start_to_close_timeout=timedelta(seconds=10))


async def test_pydantic_models_round_trip_through_a_workflow_and_replay(tmp_path: Path) -> None:
    queue = "pyd-" + uuid.uuid4().hex[:8]
    models = [MyPydanticModel(some_ip=IPv4Address("127.0.0.1"), some_date=datetime(2000, 1, 2, 3, 4, 5, tzinfo=timezone.utc)),
              MyPydanticModel(some_ip=IPv4Address("10.0.0.1"), some_date=datetime(2001, 1, 1, tzinfo=timezone.utc))]
    client = await Client.connect("embedded:" + str(tmp_path / "pyd.db"), data_converter=pydantic_data_converter)
    try:
        async with Worker(client, task_queue=queue, workflows=[PydanticWorkflow], activities=[echo_models]):
            result = await client.execute_workflow(PydanticWorkflow.run, models, id="pyd", task_queue=queue)
        assert result == models and all(isinstance(m, MyPydanticModel) for m in result)
        history = await client.get_workflow_handle("pyd").fetch_history()
        await Replayer(workflows=[PydanticWorkflow], data_converter=pydantic_data_converter).replay_workflow(history)
    finally:
        await client.close()


def test_the_converter_writes_pydantic_json_and_validates_on_the_way_back() -> None:
    pc = PydanticPayloadConverter()
    assert isinstance(pc.converters[b"json/plain"], PydanticJSONPlainPayloadConverter)
    p = pc.to_payload(MyPydanticModel(some_ip=IPv4Address("1.2.3.4"), some_date=datetime(2020, 1, 1)))
    assert p.metadata["encoding"] == b"json/plain"
    assert p.data == b'{"some_ip":"1.2.3.4","some_date":"2020-01-01T00:00:00"}'
    assert pc.from_payload(p) == {"some_ip": "1.2.3.4", "some_date": "2020-01-01T00:00:00"}
    assert pc.from_payload(p, MyPydanticModel).some_ip == IPv4Address("1.2.3.4")
    assert pc.from_payload(pc.to_payload(None)) is None and pc.from_payload(pc.to_payload(b"x")) == b"x"
    bad = pc.to_payload({"some_ip": "not an ip", "some_date": "2020-01-01"})
    with pytest.raises(RuntimeError, match="could not be converted") as info:
        pc.from_payload(bad, MyPydanticModel)
    assert isinstance(info.value.__cause__, pydantic.ValidationError)
    with pytest.raises(ValueError, match="some_ip"):
        pydantic_data_converter.from_payload(bad, MyPydanticModel)


def test_without_pydantic_the_import_says_what_to_install() -> None:
    code = ("import sys; sys.modules['pydantic'] = None\n"
            "try:\n    import spindle.contrib.pydantic\n"
            "except ImportError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "pip install 'spindle[pydantic]'" in out.stdout, out.stderr


def test_the_pydantic_v1_sample_shape_a_json_plain_subclass_with_pydantics_encoder() -> None:
    import json as _json

    from pydantic.v1 import BaseModel as V1Model
    from pydantic.v1.json import pydantic_encoder

    from spindle.api.common.v1 import Payload
    from spindle.converter import (
        CompositePayloadConverter,
        DataConverter,
        DefaultPayloadConverter,
        JSONPlainPayloadConverter,
    )

    class V1Thing(V1Model):
        when: datetime
        ip: IPv4Address

    class V1JSONConverter(JSONPlainPayloadConverter):
        def to_payload(self, value: object) -> Payload:
            return Payload(metadata={"encoding": self.encoding.encode()},
                           data=_json.dumps(value, separators=(",", ":"), sort_keys=True,
                                            default=pydantic_encoder).encode())

    class V1PayloadConverter(CompositePayloadConverter):
        def __init__(self) -> None:
            super().__init__(*(V1JSONConverter() if isinstance(c, JSONPlainPayloadConverter) else c
                               for c in DefaultPayloadConverter.default_encoding_payload_converters))

    conv = DataConverter(payload_converter_class=V1PayloadConverter)
    thing = V1Thing(when=datetime(2020, 5, 6, tzinfo=timezone.utc), ip=IPv4Address("8.8.8.8"))
    payload = conv.to_payload(thing)
    assert payload.data == b'{"ip":"8.8.8.8","when":"2020-05-06T00:00:00+00:00"}'
    back = conv.from_payload(payload, V1Thing)
    assert isinstance(back, V1Thing) and back == thing
