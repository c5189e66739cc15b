"""The Store contract for the Nexus endpoint registry (issue 30), on every backend.

An endpoint is one row per id with a unique name and its serialized record, written under an optimistic
version: create inserts version 1; update and delete name the stored version or raise ConditionFailedError
and change nothing.
"""

from __future__ import annotations

import pytest

from spindle.controlplane.store import ConditionFailedError, Store
from spindle.controlplane.store._interface import NexusEndpointRow


def ep(endpoint_id: str, name: str, data: bytes = b"\x00rec") -> NexusEndpointRow:
    return NexusEndpointRow(id=endpoint_id, name=name, version=0, data=data)


async def test_create_then_get_by_id_and_by_name(store: Store) -> None:
    row = ep("e1", "orders", bytes(range(256)))
    await store.create_nexus_endpoint(row)
    assert row.version == 1
    assert await store.get_nexus_endpoint("e1") == row
    assert await store.get_nexus_endpoint(name="orders") == row
    assert await store.get_nexus_endpoint("nope") is None
    assert await store.get_nexus_endpoint(name="nope") is None


async def test_create_is_refused_for_a_taken_id_or_name(store: Store) -> None:
    await store.create_nexus_endpoint(ep("e1", "orders", b"first"))
    for dup in (ep("e1", "other"), ep("e2", "orders")):
        with pytest.raises(ConditionFailedError):
            await store.create_nexus_endpoint(dup)
    assert [r.id for r in await store.list_nexus_endpoints()] == ["e1"]
    stored = await store.get_nexus_endpoint("e1")
    assert stored is not None and stored.data == b"first"


async def test_update_needs_the_stored_version_and_a_free_name(store: Store) -> None:
    row = ep("e1", "orders", b"v1")
    await store.create_nexus_endpoint(row)
    await store.create_nexus_endpoint(ep("e2", "billing"))
    row.name, row.data = "orders2", b"v2"
    await store.update_nexus_endpoint(row, 1)
    assert row.version == 2
    assert await store.get_nexus_endpoint(name="orders") is None
    stale = ep("e1", "stale", b"stale")
    for expected in (1, 3):
        with pytest.raises(ConditionFailedError):
            await store.update_nexus_endpoint(stale, expected)
    taken = ep("e1", "billing", b"taken")
    with pytest.raises(ConditionFailedError):
        await store.update_nexus_endpoint(taken, 2)
    stored = await store.get_nexus_endpoint("e1")
    assert stored is not None and (stored.version, stored.name, stored.data) == (2, "orders2", b"v2")
    with pytest.raises(ConditionFailedError):
        await store.update_nexus_endpoint(ep("gone", "x"), 1)


async def test_delete_needs_the_stored_version(store: Store) -> None:
    await store.create_nexus_endpoint(ep("e1", "orders"))
    with pytest.raises(ConditionFailedError):
        await store.delete_nexus_endpoint("e1", 2)
    assert await store.get_nexus_endpoint("e1") is not None
    await store.delete_nexus_endpoint("e1", 1)
    assert await store.get_nexus_endpoint("e1") is None
    with pytest.raises(ConditionFailedError):
        await store.delete_nexus_endpoint("e1", 1)
    await store.create_nexus_endpoint(ep("e3", "orders"))  # the name is free again


async def test_list_is_ordered_by_name_and_pages_after_a_name(store: Store) -> None:
    for i, name in enumerate(["c", "a", "b", "d"]):
        await store.create_nexus_endpoint(ep(f"e{i}", name))
    assert [r.name for r in await store.list_nexus_endpoints()] == ["a", "b", "c", "d"]
    assert [r.name for r in await store.list_nexus_endpoints(limit=2)] == ["a", "b"]
    assert [r.name for r in await store.list_nexus_endpoints(after_name="b", limit=5)] == ["c", "d"]
