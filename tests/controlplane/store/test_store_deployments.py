"""The Store contract for worker deployments (issue 25: worker build versioning), on every backend.

A deployment is one JSON document per (namespace, name), written under an optimistic version:
``put_deployment(row, expected_version)`` stores version ``expected_version + 1`` or raises
ConditionFailedError and writes nothing.
"""

from __future__ import annotations

import asyncio
import json

from pathlib import Path

import pytest

from spindle.controlplane.store import ConditionFailedError, DeploymentRow, Store

NS, OTHER = "ns-1", "ns-2"


def dep(name: str, doc: object = None, *, ns: str = NS, version: int = 0) -> DeploymentRow:
    return DeploymentRow(namespace_id=ns, name=name, version=version,
                         doc=json.dumps(doc if doc is not None else {"name": name}, ensure_ascii=False))


async def test_insert_then_get(store: Store) -> None:
    row = dep("orders", {"versions": [{"build_id": "1.0", "note": "déjà vu ✓"}], "current": "orders.1.0"})
    await store.put_deployment(row, 0)
    assert row.version == 1  # the stored version is set on the row written
    assert await store.get_deployment(NS, "orders") == row
    stored = await store.get_deployment(NS, "orders")
    assert stored is not None and json.loads(stored.doc)["versions"][0]["note"] == "déjà vu ✓"
    assert await store.get_deployment(NS, "nope") is None
    assert await store.get_deployment(OTHER, "orders") is None  # per namespace


async def test_update_with_the_stored_version(store: Store) -> None:
    await store.put_deployment(dep("orders", {"n": 1}), 0)
    row = dep("orders", {"n": 2})
    await store.put_deployment(row, 1)
    assert row.version == 2
    assert await store.get_deployment(NS, "orders") == dep("orders", {"n": 2}, version=2)
    await store.put_deployment(dep("orders", {"n": 3}), 2)
    assert await store.get_deployment(NS, "orders") == dep("orders", {"n": 3}, version=3)


async def test_a_stale_version_is_refused_and_changes_nothing(store: Store) -> None:
    await store.put_deployment(dep("orders", {"n": 1}), 0)
    await store.put_deployment(dep("orders", {"n": 2}), 1)
    stale = dep("orders", {"n": "stale"}, version=7)
    for expected in (1, 3):  # behind, and ahead of, the stored version 2
        with pytest.raises(ConditionFailedError):
            await store.put_deployment(stale, expected)
        assert stale.version == 7  # a refused write does not touch the row's version
    assert await store.get_deployment(NS, "orders") == dep("orders", {"n": 2}, version=2)


async def test_insert_is_refused_when_the_row_exists(store: Store) -> None:
    await store.put_deployment(dep("orders", {"n": 1}), 0)
    with pytest.raises(ConditionFailedError):
        await store.put_deployment(dep("orders", {"n": "again"}), 0)
    assert await store.get_deployment(NS, "orders") == dep("orders", {"n": 1}, version=1)
    await store.put_deployment(dep("orders", {"n": 1}, ns=OTHER), 0)  # the same name in another namespace: another row
    assert (await store.get_deployment(OTHER, "orders")) == dep("orders", {"n": 1}, ns=OTHER, version=1)


async def test_update_of_a_missing_row_is_refused(store: Store) -> None:
    with pytest.raises(ConditionFailedError):
        await store.put_deployment(dep("ghost"), 1)
    assert await store.get_deployment(NS, "ghost") is None


async def test_list_pages_by_name_per_namespace(store: Store) -> None:
    for name in ("payments", "a", "orders", "b-2", "b-10"):
        await store.put_deployment(dep(name), 0)
    await store.put_deployment(dep("other", ns=OTHER), 0)
    first = await store.list_deployments(NS, "", 2)
    assert [r.name for r in first] == ["a", "b-10"]  # ordered by name (bytewise), names > after_name
    second = await store.list_deployments(NS, first[-1].name, 2)
    assert [r.name for r in second] == ["b-2", "orders"]
    assert [r.name for r in await store.list_deployments(NS, "orders", 2)] == ["payments"]
    assert await store.list_deployments(NS, "payments", 2) == []
    every = [dep(n, version=1) for n in ("a", "b-10", "b-2", "orders", "payments")]
    assert await store.list_deployments(NS, "", 100) == every
    assert await store.list_deployments(OTHER, "", 100) == [dep("other", ns=OTHER, version=1)]
    assert await store.list_deployments("ns-none", "", 100) == []


async def test_two_writers_of_the_same_version_one_wins(store: Store) -> None:
    await store.put_deployment(dep("orders", {"writer": "first"}), 0)
    read = await store.get_deployment(NS, "orders")
    assert read is not None and read.version == 1
    results = await asyncio.gather(store.put_deployment(dep("orders", {"writer": "a"}), read.version),
                                   store.put_deployment(dep("orders", {"writer": "b"}), read.version),
                                   return_exceptions=True)
    assert sum(r is None for r in results) == 1, results
    assert sum(isinstance(r, ConditionFailedError) for r in results) == 1, results
    winner = "a" if results[0] is None else "b"
    assert await store.get_deployment(NS, "orders") == dep("orders", {"writer": winner}, version=2)


async def test_two_inserts_of_the_same_name_one_wins(store: Store) -> None:
    results = await asyncio.gather(store.put_deployment(dep("orders", {"writer": "a"}), 0),
                                   store.put_deployment(dep("orders", {"writer": "b"}), 0), return_exceptions=True)
    assert sorted(type(r).__name__ for r in results) == ["ConditionFailedError", "NoneType"], results
    stored = await store.get_deployment(NS, "orders")
    assert stored is not None and stored.version == 1
    assert json.loads(stored.doc) == {"writer": "a" if results[0] is None else "b"}


async def test_read_modify_write_loops_lose_no_update(store: Store) -> None:
    """Writers that retry on ConditionFailedError (as the deployments code does) never overwrite each other."""
    await store.put_deployment(dep("counter", {"n": 0}), 0)

    async def bump(times: int) -> None:
        for _ in range(times):
            while True:
                cur = await store.get_deployment(NS, "counter")
                assert cur is not None
                try:
                    await store.put_deployment(dep("counter", {"n": json.loads(cur.doc)["n"] + 1}), cur.version)
                    break
                except ConditionFailedError:
                    continue

    await asyncio.gather(*(bump(3) for _ in range(3)))
    final = await store.get_deployment(NS, "counter")
    assert final is not None and json.loads(final.doc) == {"n": 9} and final.version == 10


async def test_delete_per_namespace_leaves_other_namespaces(store: Store) -> None:
    for name in ("a", "b", "c"):
        await store.put_deployment(dep(name), 0)
    await store.put_deployment(dep("a", ns=OTHER), 0)
    await store.put_deployment(dep("z", ns="ns-10"), 0)  # a namespace id that extends NS's is not a prefix match
    await store.delete_deployments(NS)
    assert await store.list_deployments(NS, "", 100) == []
    assert await store.get_deployment(NS, "a") is None
    assert await store.list_deployments(OTHER, "", 100) == [dep("a", ns=OTHER, version=1)]
    assert await store.list_deployments("ns-10", "", 100) == [dep("z", ns="ns-10", version=1)]
    await store.delete_deployments("ns-none")  # nothing to delete is not an error
    await store.put_deployment(dep("a"), 0)  # a deleted name can be inserted again, from version 1
    assert await store.get_deployment(NS, "a") == dep("a", version=1)


async def test_deleting_a_namespace_deletes_its_deployments(tmp_path: Path) -> None:
    """Namespace deletion (``NamespaceRegistry.delete``, which the frontend's DeleteNamespace calls) removes them."""
    from spindle.api import service_pb2 as svc
    from spindle.controlplane.namespaces import NamespaceRegistry
    from spindle.controlplane.store.sqlite import SqliteStore

    store = SqliteStore(str(tmp_path / "ns.db"))
    await store.open(1)
    try:
        reg = NamespaceRegistry(store, default_retention_ms=86_400_000)
        gone = await reg.create(svc.CreateNamespaceRequest(name="gone"))
        kept = await reg.create(svc.CreateNamespaceRequest(name="kept"))
        await store.put_deployment(dep("orders", ns=gone.id), 0)
        await store.put_deployment(dep("orders", ns=kept.id), 0)
        await reg.delete("gone")
        assert await store.list_deployments(gone.id, "", 10) == []
        assert await store.list_deployments(kept.id, "", 10) == [dep("orders", ns=kept.id, version=1)]
    finally:
        await store.close()
