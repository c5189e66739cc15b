"""The payload visitor reaches every payload of requests/responses, except search attributes."""

from __future__ import annotations

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.converter import DataConverter, ZlibCodec
from spindle.converter._payload_visitor import collect_payloads, decode_message, encode_message

conv = DataConverter.default


def _task() -> svc.PollWorkflowTaskQueueResponse:
    failure = conv.to_failure(ValueError("x"))
    failure.application_failure_info.details.CopyFrom(conv.to_payloads(["detail"]))
    failure.cause.CopyFrom(conv.to_failure(KeyError("y")))
    failure.cause.application_failure_info.details.CopyFrom(conv.to_payloads(["deep"]))
    started = pb.HistoryEvent(event_id=1, event_type=pb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED)
    a = started.workflow_execution_started_event_attributes
    a.input.CopyFrom(conv.to_payloads(["in1", "in2"]))
    a.memo.fields["m"].CopyFrom(conv.to_payload("memo"))
    a.search_attributes.indexed_fields["CustomerId"].CopyFrom(conv.to_payload("c-1"))
    failed = pb.HistoryEvent(event_id=2, event_type=pb.EVENT_TYPE_ACTIVITY_TASK_FAILED)
    failed.activity_task_failed_event_attributes.failure.CopyFrom(failure)
    marker = pb.HistoryEvent(event_id=3, event_type=pb.EVENT_TYPE_MARKER_RECORDED)
    marker.marker_recorded_event_attributes.details["data"].CopyFrom(conv.to_payloads(["marker"]))
    task = svc.PollWorkflowTaskQueueResponse(history=pb.History(events=[started, failed, marker]))
    task.query.query_args.CopyFrom(conv.to_payloads(["q"]))
    task.updates.add(update_id="u").input.CopyFrom(conv.to_payloads(["upd"]))
    return task


def test_collects_every_payload_but_search_attributes() -> None:
    values = sorted(conv.from_payload(p) for p in collect_payloads(_task()))
    assert values == sorted(["in1", "in2", "memo", "detail", "deep", "marker", "q", "upd"])


async def test_encode_then_decode_in_place() -> None:
    task = _task()
    original = task.SerializeToString()
    codecs = [ZlibCodec(min_size=0)]
    await encode_message(codecs, task)
    encodings = {p.metadata["encoding"] for p in collect_payloads(task)}
    assert encodings == {b"binary/zlib"}
    sa = task.history.events[0].workflow_execution_started_event_attributes.search_attributes
    assert sa.indexed_fields["CustomerId"].metadata["encoding"] == b"json/plain"
    await decode_message(codecs, task)
    assert task.SerializeToString() == original


async def test_no_codecs_is_a_no_op() -> None:
    task = _task()
    before = task.SerializeToString()
    await encode_message([], task)
    assert task.SerializeToString() == before
