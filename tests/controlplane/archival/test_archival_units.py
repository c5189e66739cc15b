"""Object stores (local folder and fake GCS), the payload visitor, offloading/expansion and archive reads."""

from __future__ import annotations

import gzip
import hashlib

from pathlib import Path

import pytest

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.controlplane.archival import (
    BlobStore,
    GcsObjectStore,
    HistoryArchiver,
    LocalObjectStore,
    ObjectStore,
    ObjectStoreError,
    PayloadOffloader,
    describe_from_history,
    escape_key_part,
    history_page,
    is_blob_ref,
    open_object_store,
)
from spindle.controlplane.archival._visitor import iter_payloads
from spindle.controlplane.errors import InvalidArgument, ResourceExhausted, Unavailable


def big(n: int, fill: bytes = b"x") -> pb.Payload:
    return pb.Payload(metadata={"encoding": b"json/plain", "k": b"v"}, data=fill * n)


# ---------------------------------------------------------------------------------------------- object stores
async def _exercise(store: ObjectStore) -> None:
    assert await store.get("a/b.bin") is None
    assert not await store.exists("a/b.bin")
    await store.put("a/b.bin", b"one")
    assert await store.get("a/b.bin") == b"one"
    assert await store.exists("a/b.bin")
    await store.put("a/b.bin", b"two")
    assert await store.get("a/b.bin") == b"two"
    await store.put("a/b.bin", b"three", if_absent=True)  # already there: left alone, no error
    assert await store.get("a/b.bin") == b"two"
    await store.put("a/c.bin", b"c")
    await store.put("z.bin", b"z")
    assert await store.list_keys("a/") == ["a/b.bin", "a/c.bin"]
    await store.delete("a/b.bin")
    await store.delete("a/b.bin")  # idempotent
    assert await store.list_keys("a/") == ["a/c.bin"]
    with pytest.raises(ValueError):
        await store.put("../escape", b"x")
    with pytest.raises(ValueError):
        await store.get("/abs")


async def test_local_object_store(tmp_path: Path) -> None:
    store = open_object_store(f"file://{tmp_path}/objs")
    assert isinstance(store, LocalObjectStore)
    await _exercise(store)
    assert not [p for p in (tmp_path / "objs").rglob(".tmp-*")]  # no temporary files left behind


async def test_gcs_object_store(gcs_bucket: str) -> None:
    store = open_object_store(f"gs://{gcs_bucket}/some/prefix")
    assert isinstance(store, GcsObjectStore)
    await _exercise(store)
    root = open_object_store(f"gs://{gcs_bucket}")
    assert "some/prefix/z.bin" in await root.list_keys("")


async def test_gcs_down_is_an_object_store_error(fake_gcs: object, gcs_bucket: str) -> None:
    store = GcsObjectStore(gcs_bucket, "p", timeout=1.0)
    await store.put("k", b"v")
    fake_gcs.stop()  # type: ignore[attr-defined]
    with pytest.raises(ObjectStoreError):
        await store.put("k2", b"v")
    with pytest.raises(ObjectStoreError):
        await store.get("k")


def test_open_object_store_rejects_bad_uris() -> None:
    for uri in ("s3://bucket/x", "file://host/dir", "gs:///nobucket", "relative/dir", "file://"):
        with pytest.raises(ValueError):
            open_object_store(uri)


def test_escape_key_part_is_one_safe_segment() -> None:
    for wid in ("..", ".", "a/b", "order-1", "ü mlaut", "x" * 2000, "", "~"):
        part = escape_key_part(wid)
        assert "/" not in part and part not in ("", ".", "..") and len(part) <= 180
    assert escape_key_part("a/b") != escape_key_part("a_b")
    assert escape_key_part("x" * 2000) != escape_key_part("x" * 1999)


# ---------------------------------------------------------------------------------------------- visitor
def test_visitor_finds_payloads_but_skips_memo_search_attributes_and_header() -> None:
    cmd = pb.Command(command_type=pb.COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK)
    a = cmd.schedule_activity_task_command_attributes
    a.input.payloads.add().data = b"in"
    a.header.fields["h"].data = b"header"
    req = svc.RespondWorkflowTaskCompletedRequest(commands=[cmd])
    fail = pb.Command(command_type=pb.COMMAND_TYPE_FAIL_WORKFLOW_EXECUTION)
    f = fail.fail_workflow_execution_command_attributes.failure
    f.cause.cause.application_failure_info.details.payloads.add().data = b"deep"  # recursive Failure.cause
    req.commands.append(fail)
    found = sorted(p.data for p in iter_payloads(req))
    assert found == [b"deep", b"in"]
    started = pb.HistoryEvent(event_type=pb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED)
    s = started.workflow_execution_started_event_attributes
    s.input.payloads.add().data = b"arg"
    s.memo.fields["m"].data = b"memo"
    s.search_attributes.indexed_fields["CustomerId"].data = b'"c1"'
    assert [p.data for p in iter_payloads(pb.History(events=[started]))] == [b"arg"]


# ---------------------------------------------------------------------------------------------- offloading
async def test_offload_copies_the_request_and_expand_restores_it(tmp_path: Path) -> None:
    blobs = BlobStore(LocalObjectStore(str(tmp_path)))
    off = PayloadOffloader(blobs, threshold=1024, max_offloaded=1 << 20)
    req = svc.RespondActivityTaskCompletedRequest(task_token=b"t")
    req.result.payloads.append(big(5000))
    req.result.payloads.append(big(10, b"s"))  # small: stays inline
    original = svc.RespondActivityTaskCompletedRequest()
    original.CopyFrom(req)
    out = await off.intake(req, "result", "ns1")
    assert req == original  # the caller's message is untouched
    assert is_blob_ref(out.result.payloads[0]) and not is_blob_ref(out.result.payloads[1])
    assert out.result.payloads[0].ByteSize() < 300
    blob_files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(blob_files) == 1 and blob_files[0].read_bytes() == original.result.payloads[0].SerializeToString()
    assert blob_files[0].relative_to(tmp_path).parts[:2] == ("blobs", "ns1")  # scoped by namespace
    # the same value again is a new blob (unique per offload: a blob is deleted once its runs are)
    again = await off.intake(original, "result", "ns1")
    assert again.result.payloads[0] != out.result.payloads[0]
    assert len([p for p in tmp_path.rglob("*") if p.is_file()]) == 2
    # on the way out, e.g. inside an activity-completed event of a history page
    ev = pb.HistoryEvent(event_type=pb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED)
    ev.activity_task_completed_event_attributes.result.CopyFrom(out.result)
    resp = svc.GetWorkflowExecutionHistoryResponse(history=pb.History(events=[ev]))
    other = svc.GetWorkflowExecutionHistoryResponse()
    other.CopyFrom(resp)
    await off.expand(resp, "ns1")
    assert resp.history.events[0].activity_task_completed_event_attributes.result == original.result
    # read in another namespace, the reference never expands
    with pytest.raises(Unavailable, match="another namespace"):
        await off.expand(other, "ns2")
    # a small request is returned as is (no walk, no copy)
    small = svc.SignalWorkflowExecutionRequest(signal_name="s")
    assert await off.intake(small, "input", "ns1") is small


async def test_offload_limits_and_failures(tmp_path: Path) -> None:
    store = LocalObjectStore(str(tmp_path))
    off = PayloadOffloader(BlobStore(store), threshold=100, max_offloaded=10_000)
    req = svc.SignalWorkflowExecutionRequest(signal_name="s")
    req.input.payloads.append(big(6000))
    req.input.payloads.append(big(6000, b"y"))
    with pytest.raises(ResourceExhausted, match="input"):
        await off.intake(req, "input", "ns1")
    assert not [p for p in tmp_path.rglob("*") if p.is_file()]  # refused before anything was written
    ok = svc.SignalWorkflowExecutionRequest(signal_name="s")
    ok.input.payloads.append(big(6000))
    out = await off.intake(ok, "input", "ns1")
    # a blob that changed on disk is detected on the way out
    path = next(p for p in tmp_path.rglob("*") if p.is_file())
    path.write_bytes(b"tampered")
    with pytest.raises(Unavailable, match="does not match"):
        await PayloadOffloader(BlobStore(store), threshold=100, max_offloaded=10_000).expand(out)
    path.unlink()
    with pytest.raises(Unavailable, match="missing"):
        await PayloadOffloader(BlobStore(store), threshold=100, max_offloaded=10_000).expand(out)
    # no blob store: nothing is offloaded or expanded
    none = PayloadOffloader(None, threshold=100, max_offloaded=10_000)
    assert await none.intake(ok, "input", "ns1") is ok and not none.enabled


async def test_blob_store_write_failure_is_unavailable(fake_gcs: object, gcs_bucket: str) -> None:
    off = PayloadOffloader(BlobStore(GcsObjectStore(gcs_bucket, "blobs", timeout=1.0)), threshold=100,
                           max_offloaded=1 << 20)
    req = svc.SignalWorkflowExecutionRequest(signal_name="s")
    req.input.payloads.append(big(5000))
    out = await off.intake(req, "input", "ns1")
    assert is_blob_ref(out.input.payloads[0])
    fake_gcs.stop()  # type: ignore[attr-defined]
    req.input.payloads[0].data = b"z" * 5000
    with pytest.raises(Unavailable, match="could not be written"):
        await off.intake(req, "input", "ns1")


# ---------------------------------------------------------------------------------------------- archive
def _history(n_activities: int = 3) -> pb.History:
    h = pb.History()
    e = h.events.add(event_id=1, event_time_ms=1000, event_type=pb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED)
    s = e.workflow_execution_started_event_attributes
    s.workflow_type, s.task_queue, s.first_execution_run_id = "Wf", "q", "r1"
    s.search_attributes.indexed_fields["CustomerId"].data = b'"c1"'
    s.memo.fields["note"].data = b'"hi"'
    for i in range(n_activities):
        h.events.add(event_id=len(h.events) + 1, event_time_ms=2000 + i,
                     event_type=pb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
    up = h.events.add(event_id=len(h.events) + 1, event_time_ms=3000,
                      event_type=pb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES)
    up.upsert_workflow_search_attributes_event_attributes.search_attributes.indexed_fields["CustomerId"].data = b'"c2"'
    done = h.events.add(event_id=len(h.events) + 1, event_time_ms=4000, event_type=pb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED)
    done.workflow_execution_completed_event_attributes.result.payloads.add().data = b"42"
    return h


async def test_archiver_round_trip_and_latest_pointer(tmp_path: Path) -> None:
    arch = HistoryArchiver(LocalObjectStore(str(tmp_path)))
    h = _history()
    key = await arch.archive("ns1", "wf/1", "r1", h.events, 4000)
    raw = (tmp_path / key).read_bytes()
    assert pb.History.FromString(gzip.decompress(raw)) == h  # documented format: gzip(History)
    assert await arch.read("ns1", "wf/1", "r1") == h
    assert await arch.read("ns1", "wf/1", "nope") is None
    assert await arch.latest_run_id("ns1", "wf/1") == "r1"
    await arch.archive("ns1", "wf/1", "r0", h.events, 3000)  # closed earlier: not the latest
    assert await arch.latest_run_id("ns1", "wf/1") == "r1"
    await arch.archive("ns1", "wf/1", "r2", h.events, 5000)
    assert await arch.latest_run_id("ns1", "wf/1") == "r2"
    assert await arch.latest_run_id("ns1", "other") is None
    (tmp_path / key).write_bytes(b"not gzip")
    with pytest.raises(ValueError, match="corrupt"):
        await HistoryArchiver(LocalObjectStore(str(tmp_path))).read("ns1", "wf/1", "r1")


def test_history_page_tokens_match_the_live_api() -> None:
    h = _history(n_activities=7)  # 10 events
    got: list[int] = []
    token = b""
    pages = 0
    while True:
        resp = history_page(h, svc.GetWorkflowExecutionHistoryRequest(maximum_page_size=3, next_page_token=token))
        assert resp.archived
        got.extend(e.event_id for e in resp.history.events)
        pages += 1
        token = resp.next_page_token
        if not token:
            break
    assert got == list(range(1, 11)) and pages == 4
    last = history_page(h, svc.GetWorkflowExecutionHistoryRequest(close_event_only=True))
    assert [e.event_id for e in last.history.events] == [10]
    with pytest.raises(InvalidArgument):
        history_page(h, svc.GetWorkflowExecutionHistoryRequest(next_page_token=b"x"))


def test_describe_from_history() -> None:
    d = describe_from_history("wf", "r1", _history())
    info = d.workflow_execution_info
    assert info.status == pb.WORKFLOW_EXECUTION_STATUS_COMPLETED
    assert (info.start_time_ms, info.close_time_ms, info.history_length) == (1000, 4000, 6)
    assert info.workflow_type == "Wf" and info.task_queue == "q" and info.execution.run_id == "r1"
    assert info.search_attributes.indexed_fields["CustomerId"].data == b'"c2"'  # upsert applied
    assert info.memo.fields["note"].data == b'"hi"'
    assert not d.pending_activities and not d.pending_workflow_task


def test_blob_keys_are_scoped_by_namespace_and_unique() -> None:
    digest = hashlib.sha256(b"x").hexdigest()
    assert BlobStore.key_for(digest) == f"blobs/{digest[:2]}/{digest}"  # the legacy (pre issue 16) key
    k1, k2 = BlobStore.new_key("ns1", digest), BlobStore.new_key("ns1", digest)
    assert k1 != k2 and k1.startswith(f"blobs/ns1/{digest[:2]}/{digest}.")


async def test_legacy_content_addressed_references_still_expand(tmp_path: Path) -> None:
    """Histories written before issue 16 hold ``blobs/<2 hex>/<sha256>`` references: they still read back."""
    payload = big(5000)
    data = payload.SerializeToString()
    digest = hashlib.sha256(data).hexdigest()
    store = LocalObjectStore(str(tmp_path))
    await store.put(BlobStore.key_for(digest), data)
    ref = BlobStore.ref_payload(BlobStore.key_for(digest), digest, len(data))
    msg = svc.GetWorkflowExecutionHistoryResponse()
    ev = msg.history.events.add(event_type=pb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED)
    ev.workflow_execution_signaled_event_attributes.input.payloads.append(ref)
    off = PayloadOffloader(BlobStore(store), threshold=100, max_offloaded=1 << 20)
    await off.expand(msg, "any-namespace")
    assert msg.history.events[0].workflow_execution_signaled_event_attributes.input.payloads[0] == payload
