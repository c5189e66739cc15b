"""The dev namespace's pre-registered search attributes (Temporal's dev server set)."""

from __future__ import annotations

from pathlib import Path

from spindle.api import service_pb2 as svc
from spindle.controlplane.namespaces import DEV_SEARCH_ATTRIBUTES, NamespaceRegistry
from spindle.controlplane.store.sqlite import SqliteStore


async def test_ensure_adds_only_the_missing_attributes_and_keeps_existing_types(tmp_path: Path) -> None:
    store = SqliteStore(str(tmp_path / "ns.db"))
    await store.open(1)
    try:
        reg = NamespaceRegistry(store, default_retention_ms=1000)
        # a database made before: its default namespace has its own CustomIntField (a Keyword)
        await reg.create(svc.CreateNamespaceRequest(
            name="default", search_attributes={"CustomIntField": svc.SEARCH_ATTRIBUTE_TYPE_KEYWORD,
                                               "Mine": svc.SEARCH_ATTRIBUTE_TYPE_BOOL}))
        ns = await reg.ensure("default", DEV_SEARCH_ATTRIBUTES)
        assert ns.search_attributes["CustomIntField"] == svc.SEARCH_ATTRIBUTE_TYPE_KEYWORD  # kept
        assert ns.search_attributes["Mine"] == svc.SEARCH_ATTRIBUTE_TYPE_BOOL
        for name, sa_type in DEV_SEARCH_ATTRIBUTES.items():
            if name != "CustomIntField":
                assert ns.search_attributes[name] == sa_type
        version = ns.version
        assert (await reg.ensure("default", DEV_SEARCH_ATTRIBUTES)).version == version  # nothing to add: no write
        fresh = await reg.ensure("other", DEV_SEARCH_ATTRIBUTES)
        assert fresh.search_attributes == DEV_SEARCH_ATTRIBUTES
        assert (await reg.ensure("plain")).search_attributes == {}
        reloaded = NamespaceRegistry(store, default_retention_ms=1000)
        await reloaded.load()
        assert reloaded.get("default").search_attributes == ns.search_attributes
    finally:
        await store.close()
