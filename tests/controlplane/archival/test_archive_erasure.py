"""Erasure in the archive (issue 26): only matching runs go, latest.json stays right, passes are idempotent,
a cursor resumes; on a local folder and on fake-gcs-server."""

from __future__ import annotations

import json

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from spindle.api import messages_pb2 as pb
from spindle.controlplane.archival import GcsObjectStore, HistoryArchiver, LocalObjectStore, ObjectStore
from spindle.controlplane.archival._erasure import (
    ArchivedRun,
    archived_run_matcher,
    erase_archived_page,
    erase_archived_run,
)
from spindle.controlplane.visibility import QueryError

NS = "ns-1"
TYPES = {"CustomerId": "Keyword", "Amount": "Int", "Due": "Datetime", "Tags": "KeywordList",
         "ScheduledById": "Keyword"}


def history(customer: str, start: int, close: int, *, wf_type: str = "Order", upsert: str | None = None,
            extra: dict[str, bytes] | None = None) -> pb.History:
    h = pb.History()
    e = h.events.add(event_id=1, event_time_ms=start, event_type=pb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED)
    s = e.workflow_execution_started_event_attributes
    s.workflow_type, s.task_queue = wf_type, "orders"
    s.search_attributes.indexed_fields["CustomerId"].data = json.dumps(customer).encode()
    for k, v in (extra or {}).items():
        s.search_attributes.indexed_fields[k].data = v
    s.memo.fields["note"].data = b'"personal data"'
    if upsert is not None:
        up = h.events.add(event_id=2, event_time_ms=start + 1, event_type=pb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES)
        up.upsert_workflow_search_attributes_event_attributes.search_attributes.indexed_fields["CustomerId"].data = (
            json.dumps(upsert).encode())
    h.events.add(event_id=len(h.events) + 1, event_time_ms=close, event_type=pb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED)
    return h


async def archive_world(store: ObjectStore) -> HistoryArchiver:
    """wf-a: r1 (c-42, closed 2000), r2 (c-7, closed 3000), r3 (c-42, closed 4000, latest);
    wf/b: one run of c-42 (an id with a slash); wf-c: c-7 upserted to c-42; wf-d: c-7 only;
    another namespace: a c-42 run that must stay."""
    arch = HistoryArchiver(store)
    await arch.archive(NS, "wf-a", "r1", history("c-42", 1000, 2000).events, 2000)
    await arch.archive(NS, "wf-a", "r2", history("c-7", 2500, 3000).events, 3000)
    await arch.archive(NS, "wf-a", "r3", history("c-42", 3500, 4000).events, 4000)
    await arch.archive(NS, "wf/b", "r4", history("c-42", 1000, 1500).events, 1500)
    await arch.archive(NS, "wf-c", "r5", history("c-7", 1000, 1600, upsert="c-42").events, 1600)
    await arch.archive(NS, "wf-d", "r6", history("c-7", 1000, 1700).events, 1700)
    await arch.archive("ns-2", "wf-a", "r7", history("c-42", 1000, 1800).events, 1800)
    return arch


async def runs_left(store: ObjectStore) -> set[tuple[str, str]]:
    out = set()
    for k in await store.list_keys("histories/"):
        if k.endswith(".history.pb.gz"):
            parts = k.split("/")
            out.add((parts[1], parts[3].removesuffix(".history.pb.gz")))
    return out


async def erase_all(store: ObjectStore, query: str, *, limit: int = 100) -> tuple[list[tuple[str, str]], int]:
    match = archived_run_matcher(query, TYPES)
    cursor, erased, pages = "", [], 0
    while True:
        page = await erase_archived_page(store, NS, match, cursor, limit)
        erased += page.erased
        pages += 1
        if page.done:
            assert page.cursor == ""
            return erased, pages
        assert page.cursor > cursor
        cursor = page.cursor


@pytest.fixture(params=["local", "gcs"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[ObjectStore]:
    if request.param == "local":
        yield LocalObjectStore(str(tmp_path / "archive"))
        return
    gcs: Any = request.getfixturevalue("fake_gcs")  # conftest.FakeGcs
    yield GcsObjectStore(gcs.create_bucket(), "arch")


async def test_only_matching_runs_go_and_latest_json_stays_right(store: ObjectStore) -> None:
    arch = await archive_world(store)
    erased, _ = await erase_all(store, "CustomerId = 'c-42'")
    assert sorted(erased) == [("wf-a", "r1"), ("wf-a", "r3"), ("wf-c", "r5"), ("wf/b", "r4")]
    assert await runs_left(store) == {(NS, "r2"), (NS, "r6"), ("ns-2", "r7")}
    # wf-a's latest (r3) was erased: the pointer moved to the newest remaining run, r2
    assert await arch.latest_run_id(NS, "wf-a") == "r2"
    # wf/b and wf-c have no run left: no pointer either
    assert await arch.latest_run_id(NS, "wf/b") is None
    assert await arch.latest_run_id(NS, "wf-c") is None
    assert not [k for k in await store.list_keys(f"histories/{NS}/wf%2Fb/")]
    # untouched: other customers, the other namespace
    assert await arch.latest_run_id(NS, "wf-d") == "r6"
    assert await arch.latest_run_id("ns-2", "wf-a") == "r7"
    assert (await arch.read("ns-2", "wf-a", "r7")) is not None
    # a second pass finds nothing
    again, _ = await erase_all(store, "CustomerId = 'c-42'")
    assert again == []


async def test_a_cursor_resumes_and_pages_are_bounded(store: ObjectStore) -> None:
    await archive_world(store)
    match = archived_run_matcher("CustomerId = 'c-42'", TYPES)
    first = await erase_archived_page(store, NS, match, "", 2)
    assert not first.done and first.cursor
    assert first.erased == [("wf/b", "r4"), ("wf-a", "r1")]  # key order: wf%2Fb sorts before wf-a
    # resuming from the stored cursor (a crash after the page: the same cursor again) erases the rest
    erased, pages = [], 0
    cursor = first.cursor
    while True:
        page = await erase_archived_page(store, NS, match, cursor, 2)
        erased += page.erased
        pages += 1
        if page.done:
            break
        cursor = page.cursor
    assert sorted(erased) == [("wf-a", "r3"), ("wf-c", "r5")]
    assert pages == 2  # 4 runs left after the cursor, 2 per page
    # repeating an earlier page is harmless
    assert (await erase_archived_page(store, NS, match, "", 2)).erased == []


async def test_erase_archived_run_by_id(store: ObjectStore) -> None:
    arch = await archive_world(store)
    assert await erase_archived_run(store, NS, "wf-a", "r3") is True
    assert await arch.latest_run_id(NS, "wf-a") == "r2"
    assert await arch.read(NS, "wf-a", "r3") is None
    assert await erase_archived_run(store, NS, "wf-a", "r3") is False  # idempotent
    assert await erase_archived_run(store, NS, "wf-a", "r1") is True  # not the latest: pointer unchanged
    assert await arch.latest_run_id(NS, "wf-a") == "r2"
    assert await erase_archived_run(store, NS, "wf-a", "r2") is True
    assert await arch.latest_run_id(NS, "wf-a") is None
    assert await erase_archived_run(store, NS, "nope", "r0") is False
    assert await runs_left(store) == {(NS, "r4"), (NS, "r5"), (NS, "r6"), ("ns-2", "r7")}


async def test_a_pointer_left_naming_an_erased_run_is_repaired(tmp_path: Path) -> None:
    """A crash after the object went but before the pointer was fixed (an older order of steps) is repaired."""
    store = LocalObjectStore(str(tmp_path))
    arch = await archive_world(store)
    await store.delete(arch.history_key(NS, "wf-a", "r3"))  # pointer still names r3
    assert await erase_archived_run(store, NS, "wf-a", "r3") is False
    assert await arch.latest_run_id(NS, "wf-a") == "r2"


async def test_long_workflow_ids_are_erased_by_attributes(tmp_path: Path) -> None:
    store = LocalObjectStore(str(tmp_path))
    arch = HistoryArchiver(store)
    long_id = "customer-" + "x" * 400
    await arch.archive(NS, long_id, "r1", history("c-42", 1000, 2000).events, 2000)
    await arch.archive(NS, long_id, "r2", history("c-7", 1000, 3000).events, 3000)
    runs: list[ArchivedRun] = []
    await erase_archived_page(store, NS, lambda r: runs.append(r) or False)
    assert {r.workflow_id for r in runs} == {""}  # shortened in the key: unknown, NULL to a query
    assert (await erase_all(store, f"WorkflowId = '{long_id}'"))[0] == []
    erased, _ = await erase_all(store, "CustomerId = 'c-7'")
    assert erased == [("", "r2")]
    assert await arch.latest_run_id(NS, long_id) == "r1"
    assert await erase_archived_run(store, NS, long_id, "r1") is True  # by id: found
    assert await arch.latest_run_id(NS, long_id) is None


async def test_corrupt_objects_are_left_and_do_not_stop_the_scan(tmp_path: Path) -> None:
    store = LocalObjectStore(str(tmp_path))
    arch = await archive_world(store)
    await store.put(arch.history_key(NS, "wf-0", "bad"), b"not gzip")
    erased, _ = await erase_all(store, "CustomerId = 'c-42'")
    assert len(erased) == 4
    assert await store.exists(arch.history_key(NS, "wf-0", "bad"))
    with pytest.raises(ValueError, match="limit"):
        await erase_archived_page(store, NS, lambda r: True, "", 0)


def test_archived_run_record_and_matcher() -> None:
    h = history("c-1", 1000, 5000, upsert="c-2",
                extra={"Amount": b"12", "Due": b'"2024-05-01T00:00:00Z"', "Tags": b'["a", "b"]'})
    run = ArchivedRun.from_history("wf", "r1", h, key="k")
    assert (run.workflow_type, run.task_queue, run.status) == ("Order", "orders", pb.WORKFLOW_EXECUTION_STATUS_COMPLETED)
    assert (run.start_time_ms, run.close_time_ms, run.history_length) == (1000, 5000, 3)
    assert run.memo.fields["note"].data == b'"personal data"'
    rec = run.visibility_record(TYPES)
    assert rec["search_attributes"] == {"CustomerId": "c-2", "Amount": 12, "Due": 1714521600000, "Tags": ["a", "b"]}
    assert rec["execution_duration_ms"] == 4000

    def m(q: str) -> bool:
        return archived_run_matcher(q, TYPES)(run)

    assert m("CustomerId = 'c-2'") and not m("CustomerId = 'c-1'")  # the upsert wins
    assert m("Amount > 10 AND Due < '2024-06-01T00:00:00Z' AND Tags = 'b'")
    assert not m("Amount > 12")
    assert m("WorkflowType = 'Order' AND ExecutionStatus = 'Completed' AND TaskQueue = 'orders'")
    assert not m("ExecutionStatus = 'Running'")
    assert m("WorkflowId = 'wf' AND RunId = 'r1' AND StartTime <= 1000 AND CloseTime = 5000")
    assert m("")  # an empty query matches everything
    assert not m("ScheduledById = 'x'") and not m("ScheduledById != 'x'")  # missing: NULL
    assert m("ScheduledById IS NULL")
    with pytest.raises(QueryError):
        archived_run_matcher("Nope = 1", TYPES)
    with pytest.raises(QueryError):
        archived_run_matcher("Amount = 'x'", TYPES)
    with pytest.raises(ValueError):
        archived_run_matcher("", {"bad name": "Keyword"})


async def test_a_run_archived_while_the_pointer_is_rewritten_ends_up_latest(tmp_path: Path) -> None:
    """Retention archives a newer run of the workflow just before the erasure writes latest.json: the erasure sees
    the new run when it lists again and points latest.json at it (not at the older run it had computed)."""
    base = LocalObjectStore(str(tmp_path))
    arch = await archive_world(base)

    class Racing(LocalObjectStore):
        raced = False

        async def put(self, key: str, data: bytes, *, if_absent: bool = False) -> None:
            if key.endswith("wf-a/latest.json") and not Racing.raced:
                Racing.raced = True  # the concurrent retention: object and pointer written first
                await HistoryArchiver(base).archive(NS, "wf-a", "r9", history("c-7", 4500, 5000).events, 5000)
            await super().put(key, data, if_absent=if_absent)

    store = Racing(str(tmp_path))
    assert await erase_archived_run(store, NS, "wf-a", "r3") is True
    assert Racing.raced
    assert await arch.latest_run_id(NS, "wf-a") == "r9"


def test_the_matcher_takes_a_namespaces_own_attribute_types() -> None:
    from spindle.api import service_pb2 as svc
    from spindle.controlplane.namespaces import Namespace

    ns = Namespace(id="n1", name="n", search_attributes={"CustomerId": svc.SEARCH_ATTRIBUTE_TYPE_KEYWORD,
                                                         "Due": svc.SEARCH_ATTRIBUTE_TYPE_DATETIME})
    types = ns.search_attribute_type_names  # what the server passes: registered and system attributes
    run = ArchivedRun.from_history("wf", "r1", history("c-1", 1000, 2000, extra={"Due": b'"2024-05-01T00:00:00Z"'}))
    assert archived_run_matcher("CustomerId = 'c-1' AND Due = '2024-05-01T00:00:00Z'", types)(run)
    assert not archived_run_matcher("ScheduledById = 'x'", types)(run)  # a system attribute: known, absent
