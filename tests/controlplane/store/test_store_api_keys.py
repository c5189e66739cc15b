"""The Store contract for API keys and server secrets (issue 15), on every backend (SQLite, Spanner emulator)."""

from __future__ import annotations

import asyncio

import pytest

from spindle.controlplane.store import ApiKeyRow, ConditionFailedError, ServerSecret, Store


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
