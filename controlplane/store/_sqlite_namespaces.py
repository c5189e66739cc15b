"""The SQLite store's namespaces, API keys and server secrets (the rows an operator manages)."""

from __future__ import annotations

import json
import sqlite3

from collections.abc import Sequence
from typing import Any

from ._model import ApiKeyRow, ConditionFailedError, NamespaceRow, ServerSecret
from ._sqlite_group_commit import GroupCommitWriter
from ._sqlite_reads import SqliteReads
from ._sqlite_schema import API_KEY_COLUMNS, ensure_sa_indexes


class SqliteNamespaces:
    """Namespaces (each registration indexes its search attributes), API keys, server secrets."""

    def __init__(self, reads: SqliteReads, writer: GroupCommitWriter) -> None:
        self._reads = reads
        self._writer = writer

    async def create_namespace(self, row: NamespaceRow) -> None:
        def run(conn: sqlite3.Connection) -> None:
            try:
                conn.execute(
                    "INSERT INTO namespaces (name, id, data, state, version) VALUES (?,?,?,?,?)",
                    (row.name, row.id, row.data, row.state, row.version),
                )
            except sqlite3.IntegrityError as e:
                raise ConditionFailedError(f"namespace {row.name!r} already exists") from e
            ensure_sa_indexes(conn, row.data)

        await self._writer.write(run)

    async def get_namespace(self, name: str) -> NamespaceRow | None:
        r = await self._reads.read(
            lambda c: c.execute("SELECT id, name, data, state, version FROM namespaces WHERE name=?", (name,)).fetchone()
        )
        return NamespaceRow(*r) if r else None

    async def list_namespaces(self) -> list[NamespaceRow]:
        rows = await self._reads.read(lambda c: c.execute("SELECT id, name, data, state, version FROM namespaces ORDER BY name").fetchall())
        return [NamespaceRow(*r) for r in rows]

    async def update_namespace(self, row: NamespaceRow, expected_version: int) -> None:
        def run(conn: sqlite3.Connection) -> None:
            cur = conn.execute(
                "UPDATE namespaces SET data=?, state=?, version=? WHERE name=? AND version=?",
                (row.data, row.state, row.version, row.name, expected_version),
            )
            if cur.rowcount != 1:
                raise ConditionFailedError(f"namespace {row.name!r} changed concurrently")
            ensure_sa_indexes(conn, row.data)

        await self._writer.write(run)

    async def delete_namespace(self, name: str, now_ms: int) -> list[ApiKeyRow]:
        def run(conn: sqlite3.Connection) -> list[ApiKeyRow]:
            conn.execute("DELETE FROM namespaces WHERE name=?", (name,))
            quoted = json.dumps(name)  # only keys whose JSON names it can hold a grant or task queues on it
            rows = conn.execute(f"SELECT {API_KEY_COLUMNS} FROM api_keys WHERE instr(grants, ?) > 0 "
                                "OR instr(task_queues, ?) > 0", (quoted, quoted)).fetchall()
            changed = [c for c in (_api_key(r).without_namespace(name, now_ms) for r in rows) if c is not None]
            conn.executemany("UPDATE api_keys SET grants=?, task_queues=?, revoke_time_ms=? WHERE key_id=?",
                             [(c.grants, c.task_queues, c.revoke_time_ms, c.key_id) for c in changed])
            return changed

        return await self._writer.write(run)

    async def create_api_key(self, row: ApiKeyRow) -> None:
        def run(conn: sqlite3.Connection) -> None:
            try:
                conn.execute(f"INSERT INTO api_keys ({API_KEY_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?)",
                             (row.key_id, row.name, row.secret_hash, row.grants, int(row.system_admin),
                              row.create_time_ms, row.expire_time_ms, row.revoke_time_ms, row.created_by,
                              row.task_queues))
            except sqlite3.IntegrityError as e:
                raise ConditionFailedError(f"API key {row.key_id!r} already exists") from e

        await self._writer.write(run)

    async def get_api_key(self, key_id: str) -> ApiKeyRow | None:
        r = await self._reads.read(
            lambda c: c.execute(f"SELECT {API_KEY_COLUMNS} FROM api_keys WHERE key_id=?", (key_id,)).fetchone())
        return _api_key(r) if r else None

    async def list_api_keys(self) -> list[ApiKeyRow]:
        rows = await self._reads.read(lambda c: c.execute(f"SELECT {API_KEY_COLUMNS} FROM api_keys ORDER BY key_id").fetchall())
        return [_api_key(r) for r in rows]

    async def revoke_api_key(self, key_id: str, revoke_time_ms: int) -> ApiKeyRow | None:
        def run(conn: sqlite3.Connection) -> ApiKeyRow | None:
            conn.execute("UPDATE api_keys SET revoke_time_ms=? WHERE key_id=? AND revoke_time_ms=0",
                         (revoke_time_ms, key_id))
            r = conn.execute(f"SELECT {API_KEY_COLUMNS} FROM api_keys WHERE key_id=?", (key_id,)).fetchone()
            return _api_key(r) if r else None

        return await self._writer.write(run)

    async def add_server_secret(self, secret: ServerSecret) -> ServerSecret:
        def run(conn: sqlite3.Connection) -> ServerSecret:
            conn.execute("INSERT OR IGNORE INTO server_secrets (name, value, create_time_ms) VALUES (?,?,?)",
                         (secret.name, secret.value, secret.create_time_ms))
            r = conn.execute("SELECT name, value, create_time_ms FROM server_secrets WHERE name=?",
                             (secret.name,)).fetchone()
            return ServerSecret(r[0], bytes(r[1]), int(r[2]))

        return await self._writer.write(run)

    async def list_server_secrets(self, prefix: str = "") -> list[ServerSecret]:
        rows = await self._reads.read(lambda c: c.execute(
            "SELECT name, value, create_time_ms FROM server_secrets WHERE substr(name, 1, ?) = ? ORDER BY name",
            (len(prefix), prefix)).fetchall())
        return [ServerSecret(r[0], bytes(r[1]), int(r[2])) for r in rows]


def _api_key(r: Sequence[Any]) -> ApiKeyRow:
    return ApiKeyRow(key_id=r[0], name=r[1], secret_hash=bytes(r[2]), grants=r[3], system_admin=bool(r[4]),
                     create_time_ms=int(r[5]), expire_time_ms=int(r[6]), revoke_time_ms=int(r[7]), created_by=r[8],
                     task_queues=r[9] or "")


__all__ = ["SqliteNamespaces"]
