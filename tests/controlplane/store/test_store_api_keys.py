"""The Store contract for API keys and server secrets (issue 15), on every backend (SQLite, Spanner emulator)."""

from __future__ import annotations

import asyncio
import json

import pytest

from spindle.controlplane.store import ApiKeyRow, ConditionFailedError, NamespaceRow, ServerSecret, Store


def key(key_id: str, **kw: object) -> ApiKeyRow:
    fields: dict[str, object] = dict(name=f"key {key_id}", secret_hash=b"\x00\xffhash-" + key_id.encode(),
                                     grants='{"orders": "worker"}', system_admin=False, create_time_ms=1000,
                                     expire_time_ms=0, revoke_time_ms=0, created_by="tester")
    fields.update(kw)
    return ApiKeyRow(key_id=key_id, **fields)  # type: ignore[arg-type]


async def test_api_keys_round_trip_binary_safe(store: Store) -> None:
    a = key("a1", system_admin=True, grants="{}", expire_time_ms=99_000)
    b = key("b2")
    await store.create_api_key(b)
    await store.create_api_key(a)
    assert await store.get_api_key("a1") == a  # the hash's bytes come back as written (no base64 leaks)
    assert await store.get_api_key("b2") == b
    assert await store.get_api_key("nope") is None
    assert await store.list_api_keys() == [a, b]  # ordered by id


async def test_task_queues_round_trip_and_default_to_none(store: Store) -> None:
    confined = key("c1", grants='{"orders": "worker", "billing": "worker"}',
                   task_queues='{"billing": ["invoices"], "orders": ["orders-eu", "orders-us"]}')
    await store.create_api_key(confined)
    await store.create_api_key(key("u1"))
    assert await store.get_api_key("c1") == confined
    unconfined = await store.get_api_key("u1")
    assert unconfined is not None and unconfined.task_queues == ""  # no confinement: every task queue
    assert [k.task_queues for k in await store.list_api_keys()] == [confined.task_queues, ""]


async def test_deleting_a_namespace_removes_its_grants_and_revokes_keys_left_with_none(store: Store) -> None:
    """Issue 26, finding 6: in the namespace delete's own transaction."""
    await store.create_namespace(NamespaceRow("id-o", "orders", "{}"))
    await store.create_namespace(NamespaceRow("id-b", "billing", "{}"))
    await store.create_api_key(key("only", grants='{"orders": "writer"}'))
    await store.create_api_key(key("two", grants='{"billing": "reader", "orders": "worker"}',
                                   task_queues='{"orders": ["q1"]}'))
    await store.create_api_key(key("root", grants='{"orders": "admin"}', system_admin=True))
    await store.create_api_key(key("old", grants='{"orders": "reader"}', revoke_time_ms=77))
    await store.create_api_key(key("other", grants='{"billing": "writer", "orders-2": "reader"}',
                                   task_queues='{"orders-2": ["x"]}'))
    changed = await store.delete_namespace("orders", 5000)
    assert await store.get_namespace("orders") is None
    assert sorted(c.key_id for c in changed) == ["old", "only", "root", "two"]
    after = {k.key_id: k for k in await store.list_api_keys()}
    assert {c.key_id: c for c in changed} == {k: after[k] for k in ("old", "only", "root", "two")}
    assert json.loads(after["only"].grants) == {} and after["only"].revoke_time_ms == 5000
    assert json.loads(after["two"].grants) == {"billing": "reader"} and after["two"].task_queues == ""
    assert after["two"].revoke_time_ms == 0
    assert json.loads(after["root"].grants) == {} and after["root"].revoke_time_ms == 0  # system_admin stays
    assert after["old"].revoke_time_ms == 77  # the first revocation time is kept
    assert after["other"] == key("other", grants='{"billing": "writer", "orders-2": "reader"}',
                                 task_queues='{"orders-2": ["x"]}')  # a namesake prefix is not the namespace
    assert await store.delete_namespace("orders", 6000) == []  # nothing left to change


async def test_creating_a_key_with_an_existing_id_fails_and_keeps_the_first(store: Store) -> None:
    first = key("dup")
    await store.create_api_key(first)
    with pytest.raises(ConditionFailedError):
        await store.create_api_key(key("dup", name="other", secret_hash=b"other"))
    assert await store.get_api_key("dup") == first


async def test_revocation_is_recorded_once(store: Store) -> None:
    await store.create_api_key(key("k"))
    revoked = await store.revoke_api_key("k", 5000)
    assert revoked is not None and revoked.revoke_time_ms == 5000
    again = await store.revoke_api_key("k", 9000)  # revoking twice keeps the first time
    assert again is not None and again.revoke_time_ms == 5000
    stored = await store.get_api_key("k")
    assert stored is not None and stored.revoke_time_ms == 5000 and stored.secret_hash == key("k").secret_hash
    assert await store.revoke_api_key("missing", 1) is None
    assert await store.get_api_key("missing") is None


async def test_server_secrets_are_written_once_first_writer_wins(store: Store) -> None:
    first = ServerSecret("task_token_key/1", b"\x00\x01secret\xff", 10)
    assert await store.add_server_secret(first) == first
    kept = await store.add_server_secret(ServerSecret("task_token_key/1", b"another", 20))
    assert kept == first  # two members starting at once end up with the same secret
    await store.add_server_secret(ServerSecret("api_key_pepper", b"pepper", 30))
    await store.add_server_secret(ServerSecret("task_token_key/2", b"two", 40))
    assert [s.name for s in await store.list_server_secrets()] == ["api_key_pepper", "task_token_key/1",
                                                                   "task_token_key/2"]
    assert await store.list_server_secrets("task_token_key/") == [first, ServerSecret("task_token_key/2", b"two", 40)]
    assert await store.list_server_secrets("nothing/") == []


async def test_concurrent_secret_creation_agrees(store: Store) -> None:
    """Members starting together each propose a secret; every one of them gets the same stored value."""
    got = await asyncio.gather(*(store.add_server_secret(ServerSecret("api_key_pepper", bytes([i]) * 32, i))
                                 for i in range(5)))
    assert len({g.value for g in got}) == 1
    assert await store.list_server_secrets("api_key_pepper") == [got[0]]


async def test_keys_and_secrets_survive_a_reopen(store_factory: object) -> None:
    s1: Store = store_factory()  # type: ignore[operator]
    await s1.open(4)
    try:
        await s1.create_api_key(key("persist", revoke_time_ms=7))
        await s1.add_server_secret(ServerSecret("p", b"v", 1))
    finally:
        await s1.close()
    s2: Store = store_factory()  # type: ignore[operator]
    await s2.open(4)
    try:
        assert await s2.get_api_key("persist") == key("persist", revoke_time_ms=7)
        assert await s2.list_server_secrets() == [ServerSecret("p", b"v", 1)]
    finally:
        await s2.close()
