"""Fixtures: a freshly opened store of each backend (SQLite file; Spanner on the emulator)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from spanner_emulator import SpannerTestInstance

from spindle.controlplane.store import Store

NUM_SHARDS = 4


@pytest.fixture(params=["sqlite", "spanner"])
def backend(request: pytest.FixtureRequest) -> str:
    """Which backend a conformance test runs on."""
    return str(request.param)


@pytest.fixture
async def store(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Store]:
    """An open store with ``NUM_SHARDS`` shards, empty."""
    s = make_store(backend, tmp_path, request)
    await s.open(NUM_SHARDS)
    try:
        yield s
    finally:
        await s.close()


def make_store(backend: str, tmp_path: Path, request: pytest.FixtureRequest, *, db_id: str | None = None) -> Store:
    """A new (unopened) store of ``backend``; Spanner databases are fresh unless ``db_id`` is given."""
    if backend == "sqlite":
        from spindle.controlplane.store.sqlite import SqliteStore

        return SqliteStore(str(tmp_path / "store.db"))
    inst: SpannerTestInstance = request.getfixturevalue("spanner_instance")
    from spindle.controlplane.store.spanner import SpannerStore

    return SpannerStore(inst.project, inst.instance_id, db_id or inst.new_database_id(), client=inst.client)


@pytest.fixture
def store_factory(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Any:
    """Make more stores on the same database as each other (reopen tests)."""
    db_id = None
    if backend == "spanner":
        inst: SpannerTestInstance = request.getfixturevalue("spanner_instance")
        db_id = inst.new_database_id()
    return lambda: make_store(backend, tmp_path, request, db_id=db_id)
