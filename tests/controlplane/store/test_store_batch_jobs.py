"""The Store contract for server-side batch jobs (issue 26: erasure), on every backend.

A job is one row per (namespace, job id): its state (indexed) and its serialized record, written under an
optimistic version: ``create_batch_job`` inserts version 1, ``update_batch_job(row, expected_version)`` stores
``expected_version + 1`` or raises ConditionFailedError and writes nothing.
"""

from __future__ import annotations

import asyncio

from pathlib import Path

import pytest

from spindle.controlplane.store import ConditionFailedError, Store
from spindle.controlplane.store._interface import BatchJobRow

NS, OTHER = "ns-1", "ns-2"
RUNNING, COMPLETED = 1, 2
NUM_SHARDS = 4  # conftest's


def job(job_id: str, data: bytes = b"\x00\x01rec", *, ns: str = NS, state: int = RUNNING) -> BatchJobRow:
    return BatchJobRow(namespace_id=ns, job_id=job_id, version=0, state=state, data=data)


async def test_create_then_get(store: Store) -> None:
    row = job("erase-1", bytes(range(256)))
    await store.create_batch_job(row)
    assert row.version == 1
    assert await store.get_batch_job(NS, "erase-1") == row
    assert await store.get_batch_job(NS, "nope") is None
    assert await store.get_batch_job(OTHER, "erase-1") is None  # per namespace


async def test_create_is_refused_when_the_job_exists(store: Store) -> None:
    await store.create_batch_job(job("erase-1", b"first"))
    with pytest.raises(ConditionFailedError):
        await store.create_batch_job(job("erase-1", b"second"))
    stored = await store.get_batch_job(NS, "erase-1")
    assert stored is not None and stored.data == b"first" and stored.version == 1
    await store.create_batch_job(job("erase-1", b"other ns", ns=OTHER))  # the same id in another namespace is free


async def test_update_with_the_stored_version_and_a_stale_one_is_refused(store: Store) -> None:
    row = job("erase-1", b"v1")
    await store.create_batch_job(row)
    row.data, row.state = b"v2", COMPLETED
    await store.update_batch_job(row, 1)
    assert row.version == 2
    stale = job("erase-1", b"stale")
    stale.version = 9
    for expected in (1, 3):
        with pytest.raises(ConditionFailedError):
            await store.update_batch_job(stale, expected)
        assert stale.version == 9
    stored = await store.get_batch_job(NS, "erase-1")
    assert stored is not None and (stored.version, stored.state, stored.data) == (2, COMPLETED, b"v2")
    with pytest.raises(ConditionFailedError):  # a job that does not exist cannot be updated
        await store.update_batch_job(job("missing"), 1)
    assert await store.get_batch_job(NS, "missing") is None


async def test_concurrent_updates_of_one_version_exactly_one_wins(store: Store) -> None:
    await store.create_batch_job(job("erase-1"))
    rows = [job("erase-1", f"w{i}".encode()) for i in range(4)]
    results = await asyncio.gather(*(store.update_batch_job(r, 1) for r in rows), return_exceptions=True)
    winners = [r for r, e in zip(rows, results) if e is None]
    assert len(winners) == 1 and all(isinstance(e, ConditionFailedError) for e in results if e is not None)
    stored = await store.get_batch_job(NS, "erase-1")
    assert stored is not None and stored.data == winners[0].data and stored.version == 2


async def test_list_by_namespace_and_state(store: Store) -> None:
    await store.create_batch_job(job("b"))
    await store.create_batch_job(job("a", state=COMPLETED))
    await store.create_batch_job(job("c"))
    await store.create_batch_job(job("a", ns=OTHER))
    assert [(r.namespace_id, r.job_id) for r in await store.list_batch_jobs(state=RUNNING)] == [
        (NS, "b"), (NS, "c"), (OTHER, "a")]
    assert [r.job_id for r in await store.list_batch_jobs(namespace_id=NS)] == ["a", "b", "c"]
    assert [r.job_id for r in await store.list_batch_jobs(namespace_id=NS, state=COMPLETED)] == ["a"]
    assert [r.job_id for r in await store.list_batch_jobs(namespace_id=NS, limit=2)] == ["a", "b"]
    assert len(await store.list_batch_jobs()) == 4


async def test_jobs_survive_a_reopen(store_factory: object, tmp_path: Path) -> None:
    s1: Store = store_factory()  # type: ignore[operator]
    await s1.open(NUM_SHARDS)
    try:
        await s1.create_batch_job(job("erase-1", b"durable"))
    finally:
        await s1.close()
    s2: Store = store_factory()  # type: ignore[operator]
    await s2.open(NUM_SHARDS)
    try:
        stored = await s2.get_batch_job(NS, "erase-1")
        assert stored is not None and stored.data == b"durable"
        assert [r.job_id for r in await s2.list_batch_jobs(state=RUNNING)] == ["erase-1"]
    finally:
        await s2.close()
