"""The worker <-> runtime seam: input validation, stale cached instances, replay-then-query, exports."""

from __future__ import annotations

from datetime import timedelta

import pytest

from _runtime_history import History, decode, kinds

import spindle.workflow

from spindle import workflow
from spindle._workflow.instance import StaleWorkflowInstanceError, WorkflowInstance
from spindle.api import messages_pb2 as pb
from spindle.common._retry_policy import RetryPolicy


@workflow.defn
class Counter:
    def __init__(self) -> None:
        self.n = 0

    @workflow.run
    async def run(self) -> None:
        while True:
            await workflow.execute_activity("tick", start_to_close_timeout=timedelta(seconds=1))
            self.n += 1

    @workflow.query
    def count(self) -> int:
        return self.n


def test_activate_requires_events_ending_with_the_started_task() -> None:
    inst = WorkflowInstance(Counter, run_id="r")
    h = History("Counter")
    with pytest.raises(ValueError, match="must end with the WorkflowTaskStarted"):
        inst.activate(h.events)
    with pytest.raises(ValueError, match="started_event_id is 99"):
        inst.activate(h.next_task(), started_event_id=99)


def test_a_cached_instance_whose_task_failed_on_the_server_is_stale() -> None:
    h = History("Counter")
    inst = WorkflowInstance(Counter, run_id="r")
    inst.activate(h.next_task())
    h.fail_task()  # e.g. the server refused the commands
    with pytest.raises(StaleWorkflowInstanceError, match="evict"):
        inst.activate(h.next_task())


def test_replay_then_query_gives_the_latest_state() -> None:
    h = History("Counter")
    inst = WorkflowInstance(Counter, run_id="r")
    for i in range(3):
        cmds = inst.activate(h.next_task())
        h.complete(cmds)
        h.activity_completed(str(i + 1))
    fresh = WorkflowInstance(Counter, run_id="r")
    fresh.replay(h.events)  # the last completion is not seen by any workflow task yet
    assert decode(fresh.query(pb.WorkflowQuery(query_type="count"))) == [2]
    h.next_task()  # a task in flight: replay runs it too (its commands are not checked)
    fresh = WorkflowInstance(Counter, run_id="r")
    fresh.replay(h.events)
    assert decode(fresh.query(pb.WorkflowQuery(query_type="count"))) == [3]
    assert fresh.is_replaying


def test_retry_policy_validates_and_converts() -> None:
    p = RetryPolicy(initial_interval=timedelta(seconds=2), maximum_attempts=5, non_retryable_error_types=["Card"])
    wire = p.to_proto()
    assert (wire.initial_interval_ms, wire.backoff_coefficient, wire.maximum_attempts,
            list(wire.non_retryable_error_types)) == (2000, 2.0, 5, ["Card"])
    assert RetryPolicy.from_proto(wire) == p
    with pytest.raises(ValueError, match="backoff_coefficient"):
        RetryPolicy(backoff_coefficient=0.5)
    with pytest.raises(ValueError, match="not a str"):
        RetryPolicy(non_retryable_error_types="Card")


def test_workflow_module_exports() -> None:
    assert sorted(spindle.workflow.__all__) == [
        "ActivityCancellationType", "ActivityHandle", "ChildWorkflowHandle", "ContinueAsNewError", "DEFAULT_VERSION", "ExternalWorkflowHandle",
        "LoggerAdapter", "ParentInfo", "RetryPolicy", "UpdateInfo", "WorkflowDefinition", "WorkflowInfo",
        "all_handlers_finished", "as_completed", "continue_as_new", "current_update_info", "defn",
        "deprecate_patch", "execute_activity", "execute_activity_method", "execute_child_workflow",
        "execute_local_activity", "execute_local_activity_method", "get_external_workflow_handle",
        "get_query_handler", "get_signal_handler", "get_update_handler", "get_version", "in_workflow", "info", "init", "logger", "metric_meter", "now", "patched", "query", "random", "record_marker",
        "run", "set_query_handler", "set_signal_handler", "set_update_handler", "side_effect", "signal", "sleep", "start_activity", "start_activity_method",
        "start_child_workflow", "start_local_activity", "start_local_activity_method", "unsafe", "update",
        "upsert_search_attributes", "uuid4", "wait", "wait_condition", "wait_for_signal"]
    assert all(hasattr(spindle.workflow, name) for name in spindle.workflow.__all__)
    assert kinds([]) == []
