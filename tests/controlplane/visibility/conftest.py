"""Fixtures: an SQLite visibility table (the columns compile_query targets) with 200 varied rows."""

from __future__ import annotations

import json
import random
import sqlite3

from collections.abc import Iterator
from typing import Any

import pytest

SEARCH_ATTRIBUTES = {
    "CustomerId": "Keyword",
    "Note": "Text",
    "Priority": "Int",
    "Amount": "Double",
    "Vip": "Bool",
    "DueAt": "Datetime",
    "Tags": "KeywordList",
}

COLUMNS = [
    "workflow_id", "run_id", "workflow_type", "status", "task_queue", "start_time_ms",
    "close_time_ms", "execution_duration_ms", "history_length", "search_attributes",
]

DDL = """
CREATE TABLE visibility (
    namespace_id TEXT NOT NULL,
    workflow_id TEXT NOT NULL,
    run_id TEXT NOT NULL,
    workflow_type TEXT NOT NULL,
    status INTEGER NOT NULL,
    task_queue TEXT NOT NULL,
    start_time_ms INTEGER NOT NULL,
    close_time_ms INTEGER,
    execution_duration_ms INTEGER,
    history_length INTEGER NOT NULL,
    search_attributes TEXT NOT NULL DEFAULT '{}',
    PRIMARY KEY (namespace_id, run_id)
);
CREATE TABLE executions (x INTEGER);
"""

BASE_MS = 1_704_067_200_000  # 2024-01-01T00:00:00Z
HOUR = 3_600_000
WORKFLOW_TYPES = ["OrderWorkflow", "PaymentWorkflow", "ReportWorkflow", "order_workflow"]
ID_PREFIXES = ["order-", "order_", "payment-", "it's-", 'say "hi"-', "Order-", "ünï-", ""]
CUSTOMERS = ["acme", "globex", "initech", "ACME", "o'brien", "zeta"]
NOTES = ["urgent: ship today", "urgent", "call back", "", "Urgent!"]
TAGS = ["gold", "silver", "bronze", "eu", "us", "it's"]


def make_rows(n: int = 200, seed: int = 7) -> list[dict[str, Any]]:
    rnd = random.Random(seed)
    rows: list[dict[str, Any]] = []
    for i in range(n):
        status = rnd.randint(1, 7)
        start = BASE_MS + rnd.randint(-30, 30) * 24 * HOUR + rnd.randint(0, HOUR)
        duration = None if status == 1 else rnd.choice([0, 500, 90_000, 1_800_000, HOUR, 2 * HOUR, 3 * 24 * HOUR])
        attrs: dict[str, Any] = {}
        if rnd.random() < 0.7:
            attrs["CustomerId"] = rnd.choice(CUSTOMERS)
        if rnd.random() < 0.5:
            attrs["Note"] = rnd.choice(NOTES)
        if rnd.random() < 0.6:
            attrs["Priority"] = rnd.randint(-2, 5)
        if rnd.random() < 0.6:
            attrs["Amount"] = rnd.choice([0.0, 9.99, 10.0, 10, 99.5, -1.25, 1000.0])
        if rnd.random() < 0.6:
            attrs["Vip"] = rnd.random() < 0.5
        if rnd.random() < 0.5:
            attrs["DueAt"] = BASE_MS + rnd.randint(-10, 10) * 24 * HOUR
        if rnd.random() < 0.6:
            attrs["Tags"] = rnd.sample(TAGS, rnd.randint(0, 3))
        if rnd.random() < 0.05:
            attrs["CustomerId"] = None  # a JSON null reads as NULL, same as a missing key
        rows.append({
            "workflow_id": f"{rnd.choice(ID_PREFIXES)}{i}",
            "run_id": f"run-{i:04d}",
            "workflow_type": rnd.choice(WORKFLOW_TYPES),
            "status": status,
            "task_queue": rnd.choice(["orders", "payments", "reports"]),
            "start_time_ms": start,
            "close_time_ms": None if duration is None else start + duration,
            "execution_duration_ms": duration,
            "history_length": rnd.randint(3, 400),
            "search_attributes": attrs,
        })
    return rows


VisibilityDb = tuple[sqlite3.Connection, tuple[dict[str, Any], ...]]


@pytest.fixture(scope="session")
def visibility_db() -> Iterator[VisibilityDb]:
    """An in-memory DB shared by the session's tests, and the rows in it (read-only: do not modify)."""
    conn = sqlite3.connect(":memory:", check_same_thread=False)
    conn.executescript(DDL)
    rows = make_rows()
    conn.executemany(
        f"INSERT INTO visibility (namespace_id, {', '.join(COLUMNS)}) VALUES ('ns', {', '.join('?' * len(COLUMNS))})",
        [tuple(json.dumps(r[c]) if c == "search_attributes" else r[c] for c in COLUMNS) for r in rows],
    )
    yield conn, tuple(rows)
    conn.close()
