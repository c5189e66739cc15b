"""ListWorkflowExecutions through the frontend: every page, in order, with paging tokens, over many rows."""

from __future__ import annotations

import json
import random

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from spindle.api import service_pb2 as svc
from spindle.controlplane import embedded
from spindle.controlplane.config import ServerConfig
from spindle.controlplane.store import Mutation, VisibilityRow

BASE_MS = 1_704_067_200_000  # 2024-01-01T00:00:00Z
TYPES = ["Order", "Invoice", "Refund"]


@pytest.fixture
async def cp(tmp_path: Path) -> AsyncIterator[embedded.EmbeddedControlPlane]:
    plane = await embedded.start(str(tmp_path / "list.db"), config=ServerConfig(num_shards=2))
    await plane.stub.AddSearchAttributes(svc.AddSearchAttributesRequest(
        namespace="default", search_attributes={"CustomerId": svc.SEARCH_ATTRIBUTE_TYPE_KEYWORD}))
    yield plane
    await plane.stop()


def make_rows(ns_id: str, n: int) -> list[VisibilityRow]:
    rng = random.Random(3)
    rows = []
    for i in range(n):
        start = BASE_MS + rng.randrange(0, 3 * 86_400_000) // 1000 * 1000  # second resolution: many ties
        status = rng.choice([2, 2, 2, 3, 5])
        rows.append(VisibilityRow(
            namespace_id=ns_id, workflow_id=f"wf-{i}", run_id=f"run-{i:05d}", workflow_type=rng.choice(TYPES),
            status=status, task_queue="q", start_time_ms=start, close_time_ms=start + 5000, execution_duration_ms=5000,
            history_length=11, search_attributes=json.dumps({"CustomerId": f"c{rng.randrange(7)}"})))
    return rows


async def insert(cp: embedded.EmbeddedControlPlane, rows: list[VisibilityRow]) -> None:
    store = cp.control_plane.store
    rid = await store.get_range_id(0)
    for i in range(0, len(rows), 500):
        await store.apply(Mutation(shard_id=0, range_id=rid, visibility=rows[i:i + 500]))


async def all_pages(cp: embedded.EmbeddedControlPlane, query: str, page_size: int) -> list[list[str]]:
    pages: list[list[str]] = []
    token = b""
    while True:
        resp = await cp.stub.ListWorkflowExecutions(svc.ListWorkflowExecutionsRequest(
            namespace="default", query=query, page_size=page_size, next_page_token=token))
        pages.append([e.execution.run_id for e in resp.executions])
        token = resp.next_page_token
        if not token:
            return pages


def newest_first(r: VisibilityRow) -> Any:
    return (-r.start_time_ms, r.run_id)


CASES: list[tuple[str, Callable[[VisibilityRow], bool], Callable[[VisibilityRow], Any]]] = [
    ("", lambda r: True, newest_first),
    ("WorkflowType = 'Invoice'", lambda r: r.workflow_type == "Invoice", newest_first),
    ("ExecutionStatus = 'Failed'", lambda r: r.status == 3, newest_first),
    ("StartTime >= '2024-01-02T00:00:00Z' AND StartTime < '2024-01-03T00:00:00Z'",
     lambda r: BASE_MS + 86_400_000 <= r.start_time_ms < BASE_MS + 2 * 86_400_000, newest_first),
    ("CustomerId = 'c4'", lambda r: json.loads(r.search_attributes)["CustomerId"] == "c4", newest_first),
    ("WorkflowType = 'Order' AND ExecutionStatus = 'Completed' ORDER BY StartTime ASC",
     lambda r: r.workflow_type == "Order" and r.status == 2, lambda r: (r.start_time_ms, r.run_id)),
]


@pytest.mark.parametrize("query,keep,order", CASES, ids=[c[0] or "all" for c in CASES])
async def test_pages_are_complete_ordered_and_disjoint(cp: embedded.EmbeddedControlPlane, query: str,
                                                       keep: Callable[[VisibilityRow], bool],
                                                       order: Callable[[VisibilityRow], Any]) -> None:
    ns_id = cp.control_plane.namespaces.get("default").id
    rows = make_rows(ns_id, 1200)
    await insert(cp, rows)
    expected = [r.run_id for r in sorted((r for r in rows if keep(r)), key=order)]
    pages = await all_pages(cp, query, page_size=97)
    assert [rid for page in pages for rid in page] == expected
    assert all(len(p) == 97 for p in pages[:-1]) and len(pages[-1]) <= 97
    count = await cp.stub.CountWorkflowExecutions(svc.CountWorkflowExecutionsRequest(namespace="default", query=query))
    assert count.count == len(expected)


async def test_exact_multiple_of_the_page_size_ends_with_an_empty_page(cp: embedded.EmbeddedControlPlane) -> None:
    ns_id = cp.control_plane.namespaces.get("default").id
    await insert(cp, make_rows(ns_id, 100))
    pages = await all_pages(cp, "", page_size=50)
    assert [len(p) for p in pages] == [50, 50, 0]
