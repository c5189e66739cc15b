"""Shared fixtures of the widget tests: recorded histories and an embedded client with a worker."""

from __future__ import annotations

import gzip
import sys

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures"
sys.path.insert(0, str(HERE))

from sdk import Client, History, Worker, dsl  # noqa: E402

import widget_workflows as ww  # noqa: E402

QUEUE = "widgets"


def load(name: str) -> History:
    """A recorded history from ``fixtures/`` (``.json`` or ``.json.gz``)."""
    path = FIXTURES / name
    data = path.read_bytes()
    return History.from_json(gzip.decompress(data) if name.endswith(".gz") else data)


@pytest.fixture
def kitchen() -> History:
    """Every node kind: retries, a failed activity, a timer, markers, a child, an update and a signal."""
    return load("kitchen.json")


@pytest.fixture
def kitchen_child() -> History:
    """The child run of ``kitchen``."""
    return load("kitchen_child.json")


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[Client]:
    """An embedded client with a worker for the widget test workflows on queue ``widgets``."""
    c = await Client.connect("embedded:" + str(tmp_path / "w.db"))
    report = dsl.load_text(ww.DSL_YAML, file="dsl.yaml")
    try:
        async with Worker(c, task_queue=QUEUE, workflows=[*ww.WORKFLOWS, report], activities=ww.ACTIVITIES):
            yield c
    finally:
        await c.close()
