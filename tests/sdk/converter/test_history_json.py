"""History: CamelCase event types, attribute dicts, JSON and proto round trips."""

from __future__ import annotations

import datetime
import json

import pytest

from spindle.api import messages_pb2 as pb
from spindle.client import History
from spindle.converter import DataConverter

conv = DataConverter.default


def _events() -> list[pb.HistoryEvent]:
    e1 = pb.HistoryEvent(event_id=1, event_time_ms=1_714_564_800_123, event_type=pb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED)
    a = e1.workflow_execution_started_event_attributes
    a.workflow_type = "OrderWorkflow"
    a.task_queue = "orders"
    a.input.CopyFrom(conv.to_payloads([{"id": 1}]))
    a.execution_timeout_ms = 86_400_000
    e2 = pb.HistoryEvent(event_id=2, event_time_ms=1_714_564_800_200, event_type=pb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED)
    e2.workflow_task_scheduled_event_attributes.task_queue = "orders"
    e3 = pb.HistoryEvent(event_id=3, event_time_ms=1_714_564_800_300, event_type=pb.EVENT_TYPE_ACTIVITY_TASK_FAILED)
    f = e3.activity_task_failed_event_attributes
    f.failure.CopyFrom(conv.to_failure(ValueError("bad")))
    f.retry_state = pb.RETRY_STATE_IN_PROGRESS
    f.scheduled_event_id = 2
    e4 = pb.HistoryEvent(event_id=4, event_time_ms=1_714_564_800_400, event_type=pb.EVENT_TYPE_WORKFLOW_TASK_STARTED)
    e4.workflow_task_started_event_attributes.SetInParent()  # all-default attributes
    return [e1, e2, e3, e4]


def test_python_view() -> None:
    h = History.from_proto("wf", "run", _events())
    assert [e.event_id for e in h.events] == [1, 2, 3, 4]
    assert [e.event_type for e in h.events] == [
        "WorkflowExecutionStarted", "WorkflowTaskScheduled", "ActivityTaskFailed", "WorkflowTaskStarted"]
    assert h.events[0].event_time == datetime.datetime(2024, 5, 1, 12, 0, 0, 123000, tzinfo=datetime.timezone.utc)
    attrs = h.events[0].attributes
    assert attrs["workflow_type"] == "OrderWorkflow"
    assert attrs["execution_timeout_ms"] == 86_400_000
    assert h.events[2].attributes["retry_state"] == "RETRY_STATE_IN_PROGRESS"
    assert h.events[2].attributes["failure"]["application_failure_info"]["type"] == "ValueError"


def test_json_round_trip_is_lossless() -> None:
    events = _events()
    h = History.from_proto("wf", "run", events)
    text = h.to_json()
    d = json.loads(text)
    assert set(d) == {"workflow_id", "run_id", "events"}
    back = History.from_json(text)
    assert back == h
    assert back.to_proto_events() == events
    assert History.from_json(back.to_json(indent=2)).to_json() == text


def test_from_json_accepts_proto_style_type_names_and_rejects_garbage() -> None:
    h = History.from_json({"workflow_id": "w", "run_id": "r", "events": [
        {"event_id": 1, "event_type": "EVENT_TYPE_TIMER_FIRED", "event_time": "2024-01-01T00:00:00Z",
         "attributes": {"timer_id": "t1", "started_event_id": "5"}}]})
    assert h.events[0].event_type == "TimerFired"
    assert h.to_proto_events()[0].timer_fired_event_attributes.started_event_id == 5
    with pytest.raises(ValueError):
        History.from_json('{"nope": 1}')
    with pytest.raises(ValueError, match="unknown event type"):
        History.from_json({"events": [{"event_id": 1, "event_type": "Bogus", "event_time": 0}]}).to_proto_events()
