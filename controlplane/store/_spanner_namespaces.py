"""The Spanner store's namespaces, API keys and server secrets (the rows an operator manages)."""

from __future__ import annotations

import json

from collections.abc import Awaitable, Callable
from typing import Any

from ._model import ApiKeyRow, ConditionFailedError, NamespaceRow, ServerSecret
from ._spanner_codec import (
    API_KEY_COLUMNS,
    NAMESPACE_COLUMNS,
    api_key_from_row,
    api_key_values,
    dec,
    enc,
    namespace_from_row,
)

#: ``query(sql, params)``: rows of a read-only snapshot (``SpannerStore._query``).
Query = Callable[..., Awaitable[list[list[Any]]]]
#: ``txn(fn)``: ``fn(transaction)`` run by the store's writer (``SpannerStore._txn``).
Txn = Callable[..., Awaitable[Any]]


class SpannerNamespaces:
    """Namespaces, API keys, server secrets: reads in snapshots, writes in their own read-write transactions."""

    def __init__(self, query: Query, txn: Txn) -> None:
        self._query = query
        self._txn = txn

    async def create_namespace(self, row: NamespaceRow) -> None:
        def run(txn: Any) -> None:
            exists = list(txn.execute_sql("SELECT Name FROM Namespaces WHERE Name = @n OR Id = @i",
                                          params={"n": row.name, "i": row.id}))
            if exists:
                raise ConditionFailedError(f"namespace {row.name!r} already exists")
            txn.insert("Namespaces", ["Name", "Id", "Data", "State", "Version"],
                       [[row.name, row.id, row.data, row.state, row.version]])

        await self._txn(run)

    async def get_namespace(self, name: str) -> NamespaceRow | None:
        cols = ", ".join(NAMESPACE_COLUMNS)
        rows = await self._query(f"SELECT {cols} FROM Namespaces WHERE Name = @n", {"n": name})
        return namespace_from_row(rows[0]) if rows else None

    async def list_namespaces(self) -> list[NamespaceRow]:
        cols = ", ".join(NAMESPACE_COLUMNS)
        return [namespace_from_row(r) for r in await self._query(f"SELECT {cols} FROM Namespaces ORDER BY Name")]

    async def update_namespace(self, row: NamespaceRow, expected_version: int) -> None:
        from google.cloud.spanner_v1 import KeySet

        def run(txn: Any) -> None:
            rows = list(txn.read("Namespaces", ["Version"], KeySet(keys=[[row.name]])))
            if not rows or int(rows[0][0]) != expected_version:
                raise ConditionFailedError(f"namespace {row.name!r} changed concurrently")
            txn.update("Namespaces", ["Name", "Data", "State", "Version"], [[row.name, row.data, row.state, row.version]])

        await self._txn(run)

    async def delete_namespace(self, name: str, now_ms: int) -> list[ApiKeyRow]:
        from google.cloud.spanner_v1 import KeySet

        def run(txn: Any) -> list[ApiKeyRow]:
            quoted = json.dumps(name)  # only keys whose JSON names it can hold a grant or task queues on it
            rows = [list(r) for r in txn.execute_sql(
                f"SELECT {', '.join(API_KEY_COLUMNS)} FROM ApiKeys WHERE STRPOS(Grants, @q) > 0 "
                "OR STRPOS(IFNULL(TaskQueues, ''), @q) > 0", params={"q": quoted})]
            changed = [c for c in (api_key_from_row(r).without_namespace(name, now_ms) for r in rows) if c is not None]
            txn.delete("Namespaces", KeySet(keys=[[name]]))
            if changed:
                txn.update("ApiKeys", ["KeyId", "Grants", "TaskQueues", "RevokeTimeMs"],
                           [[c.key_id, c.grants, c.task_queues or None, c.revoke_time_ms] for c in changed])
            return changed

        return await self._txn(run)

    async def create_api_key(self, row: ApiKeyRow) -> None:
        from google.cloud.spanner_v1 import KeySet

        def run(txn: Any) -> None:
            if list(txn.read("ApiKeys", ["KeyId"], KeySet(keys=[[row.key_id]]))):
                raise ConditionFailedError(f"API key {row.key_id!r} already exists")
            txn.insert("ApiKeys", list(API_KEY_COLUMNS), [api_key_values(row)])

        await self._txn(run)

    async def get_api_key(self, key_id: str) -> ApiKeyRow | None:
        rows = await self._query(f"SELECT {', '.join(API_KEY_COLUMNS)} FROM ApiKeys WHERE KeyId = @k", {"k": key_id})
        return api_key_from_row(rows[0]) if rows else None

    async def list_api_keys(self) -> list[ApiKeyRow]:
        rows = await self._query(f"SELECT {', '.join(API_KEY_COLUMNS)} FROM ApiKeys ORDER BY KeyId")
        return [api_key_from_row(r) for r in rows]

    async def revoke_api_key(self, key_id: str, revoke_time_ms: int) -> ApiKeyRow | None:
        from google.cloud.spanner_v1 import KeySet

        def run(txn: Any) -> ApiKeyRow | None:
            rows = [list(r) for r in txn.read("ApiKeys", list(API_KEY_COLUMNS), KeySet(keys=[[key_id]]))]
            if not rows:
                return None
            row = api_key_from_row(rows[0])
            if not row.revoke_time_ms:
                row.revoke_time_ms = revoke_time_ms
                txn.update("ApiKeys", ["KeyId", "RevokeTimeMs"], [[key_id, revoke_time_ms]])
            return row

        return await self._txn(run)

    async def add_server_secret(self, secret: ServerSecret) -> ServerSecret:
        from google.cloud.spanner_v1 import KeySet

        def run(txn: Any) -> ServerSecret:
            rows = list(txn.read("ServerSecrets", ["Name", "Value", "CreateTimeMs"], KeySet(keys=[[secret.name]])))
            if rows:
                name, value, created = rows[0]
                return ServerSecret(name, dec(value), int(created))
            txn.insert("ServerSecrets", ["Name", "Value", "CreateTimeMs"],
                       [[secret.name, enc(secret.value), secret.create_time_ms]])
            return secret

        return await self._txn(run)

    async def list_server_secrets(self, prefix: str = "") -> list[ServerSecret]:
        rows = await self._query("SELECT Name, Value, CreateTimeMs FROM ServerSecrets WHERE STARTS_WITH(Name, @p) "
                                 "ORDER BY Name", {"p": prefix})
        return [ServerSecret(r[0], dec(r[1]), int(r[2])) for r in rows]


__all__ = ["SpannerNamespaces"]
