"""A history with WorkflowExecutionOptionsUpdated events (a versioning override set or removed) replays.

The event is the server's record of an operator's change to where the execution's tasks go; it asks
nothing of the workflow code: no command matches it, and it must not count as non-determinism,
whether it is replayed from history or arrives in a live task's new events.
"""

from __future__ import annotations

from typing import Any

import pytest

from spindle import workflow
from spindle._workflow.instance import WorkflowInstance
from spindle.api import messages_pb2 as pb
from spindle.client import History
from spindle.common import PinnedVersioningOverride, VersioningBehavior, WorkerDeploymentVersion
from spindle.converter import DataConverter
from spindle.exceptions import NonDeterminismError
from spindle.testing import Replayer

conv = DataConverter.default
OPTIONS_UPDATED = pb.EVENT_TYPE_WORKFLOW_EXECUTION_OPTIONS_UPDATED


@workflow.defn(name="WaitsForTwo", versioning_behavior=VersioningBehavior.PINNED)
class WaitsForTwo:
    def __init__(self) -> None:
        self.got: list[str] = []

    @workflow.run
    async def run(self) -> list[str]:
        await workflow.wait_condition(lambda: len(self.got) >= 2)
        return self.got

    @workflow.signal
    def go(self, value: str) -> None:
        self.got.append(value)


def _event(event_type: int, **fields: Any) -> pb.HistoryEvent:
    e = pb.HistoryEvent(event_type=event_type)  # type: ignore[arg-type]
    for name, value in fields.items():
        getattr(e, name).CopyFrom(value)
    return e


def _options_updated(*, pin: bool) -> pb.HistoryEvent:
    attrs = pb.WorkflowExecutionOptionsUpdatedEventAttributes(identity="operator")
    if pin:
        attrs.versioning_override.CopyFrom(PinnedVersioningOverride(WorkerDeploymentVersion("d", "1.0"))._to_proto())
    else:
        attrs.unset_versioning_override = True
    return _event(OPTIONS_UPDATED, workflow_execution_options_updated_event_attributes=attrs)


def _signal(value: str) -> pb.HistoryEvent:
    return _event(pb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED,
                  workflow_execution_signaled_event_attributes=pb.WorkflowExecutionSignaledEventAttributes(
                      signal_name="go", input=conv.to_payloads([value])))


def _task() -> list[pb.HistoryEvent]:
    return [pb.HistoryEvent(event_type=t) for t in (pb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,  # type: ignore[arg-type]
                                                    pb.EVENT_TYPE_WORKFLOW_TASK_STARTED,
                                                    pb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED)]


def _history(*, with_options_updates: bool) -> list[pb.HistoryEvent]:
    started = pb.WorkflowExecutionStartedEventAttributes(workflow_type="WaitsForTwo", task_queue="q")
    first = _event(pb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, workflow_execution_started_event_attributes=started)
    second_task = _task()
    if with_options_updates:  # one between a task's Scheduled and Started, as a server may write it
        second_task.insert(1, _options_updated(pin=False))
    events = [first, *_task()]
    if with_options_updates:
        events.append(_options_updated(pin=True))
    events += [_signal("a"), *second_task, _signal("b"), *_task()]
    completed = pb.WorkflowExecutionCompletedEventAttributes(result=conv.to_payloads([["a", "b"]]))
    events.append(_event(pb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
                         workflow_execution_completed_event_attributes=completed))
    for i, e in enumerate(events, start=1):
        e.event_id = i
        e.event_time_ms = 1_700_000_000_000 + i
    return events


async def test_a_history_with_options_updated_events_replays() -> None:
    events = _history(with_options_updates=True)
    assert [e.event_type for e in events].count(OPTIONS_UPDATED) == 2
    replayer = Replayer(workflows=[WaitsForTwo])
    await replayer.replay_workflow(History.from_proto("wf", "run", _history(with_options_updates=False)))
    await replayer.replay_workflow(History.from_proto("wf", "run", events))


async def test_the_same_history_still_catches_real_non_determinism() -> None:
    events = _history(with_options_updates=True)
    events[-1].event_type = pb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED  # the code completes; the history says failed
    events[-1].ClearField("workflow_execution_completed_event_attributes")
    events[-1].workflow_execution_failed_event_attributes.failure.message = "x"
    with pytest.raises(NonDeterminismError):
        await Replayer(workflows=[WaitsForTwo]).replay_workflow(History.from_proto("wf", "run", events))


def test_a_live_task_whose_new_events_hold_an_options_update_runs() -> None:
    """A cached instance gets the update among a task's new events, as the worker's sticky path passes them."""
    events = _history(with_options_updates=True)
    started_ids = [e.event_id for e in events if e.event_type == pb.EVENT_TYPE_WORKFLOW_TASK_STARTED]
    inst = WorkflowInstance(WaitsForTwo, converter=conv, namespace="default", workflow_id="wf", run_id="run",
                            task_queue="q")
    try:
        done = 0
        for started_id in started_ids:
            new = [e for e in events if done < e.event_id <= started_id]
            commands = list(inst.activate(new, updates=[], started_event_id=started_id))
            done = started_id
        assert [c.command_type for c in commands] == [pb.COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION]
    finally:
        inst.close()
