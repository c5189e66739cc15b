"""Shared fixtures of the widget tests: recorded histories and an embedded client with a worker."""

from __future__ import annotations

import sys

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import widget_workflows as ww  # noqa: E402

from widget_fixtures import QUEUE, load  # noqa: E402

from spindle import dsl  # noqa: E402
from spindle.client import Client, History
from spindle.worker import Worker


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
