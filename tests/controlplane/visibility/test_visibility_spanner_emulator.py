"""The Spanner dialect, run on the Cloud Spanner emulator, agrees with the `matches` evaluator.

Runs on the store's own schema; skipped like every Spanner test when the emulator is missing
(a failure when ``SPINDLE_REQUIRE_SPANNER=1``, as in CI).
"""

from __future__ import annotations

import sqlite3

from collections.abc import Iterator
from typing import Any

import pytest

from spanner_emulator import require_emulator, spanner_test_instance

from spindle.controlplane.store._spanner_schema import load_ddl
from spindle.controlplane.visibility import compile_query, matches

SA = {"CustomerId": "Keyword", "Note": "Text", "Priority": "Int", "Amount": "Double", "Vip": "Bool",
      "DueAt": "Datetime", "Tags": "KeywordList"}
Db = tuple[sqlite3.Connection, tuple[dict[str, Any], ...]]

COLUMNS = ["namespace_id", "workflow_id", "run_id", "workflow_type", "status", "task_queue", "start_time_ms",
           "close_time_ms", "execution_duration_ms", "history_length", "search_attributes", "parent_workflow_id",
           "parent_run_id"]


@pytest.fixture(scope="module")
def spanner_db(visibility_db: Db) -> Iterator[Any]:
    """The store's own schema (schema/spanner_v1.sql) on the emulator, its Visibility table filled with the rows."""
    require_emulator()
    with spanner_test_instance() as inst:
        db = inst.instance.database(inst.new_database_id(), ddl_statements=load_ddl("spanner_v1.sql"))
        db.create().result(60)
        _, rows = visibility_db
        from google.cloud.spanner_v1.data_types import JsonObject

        with db.batch() as batch:
            batch.insert("Visibility", COLUMNS, [
                ["ns", *(r[c] for c in COLUMNS[1:-3]), JsonObject(r["search_attributes"]), "", ""] for r in rows
            ])
        yield db


def _spanner_queries() -> list[str]:
    from test_visibility_sqlite_exec import QUERIES  # the same corpus as the SQLite test

    return QUERIES


@pytest.mark.parametrize("query", _spanner_queries())
def test_spanner_sql_and_evaluator_agree(query: str, spanner_db: Any, visibility_db: Db) -> None:
    _, rows = visibility_db
    compiled = compile_query(query, search_attributes=SA, dialect="spanner")
    sql = f"SELECT run_id FROM visibility WHERE namespace_id = @ns AND ({compiled.where}) ORDER BY {compiled.order_by}"
    with spanner_db.snapshot() as snap:
        got = [r[0] for r in snap.execute_sql(sql, params={**compiled.params, "ns": "ns"})]
    assert sorted(got) == sorted(r["run_id"] for r in rows if matches(compiled.ast, r)), compiled.where
    sqlite_order = compile_query(query, search_attributes=SA, dialect="sqlite")
    conn, _ = visibility_db
    expected_order = [r[0] for r in conn.execute(
        f"SELECT run_id FROM visibility WHERE {sqlite_order.where} ORDER BY {sqlite_order.order_by}",
        sqlite_order.params)]
    assert got == expected_order
