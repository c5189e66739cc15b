"""Histories whose shape changed with issue 13 replay, old and new.

``fixtures/pre_h13_*.json`` were recorded by the control plane before issue 13 (see
``make_fixtures.py``): failed activity attempts wrote ActivityTaskStarted +
ActivityTaskFailed/TimedOut pairs with retry_state IN_PROGRESS, and an activity cancelled
while its completion was buffered got ActivityTaskCanceled *and* ActivityTaskCompleted.
Executions with those histories exist, so the SDK must keep replaying them. The same
workflows run live here produce the new shapes (only the last attempt is written; one
terminal event per activity), which must replay too.
"""

from __future__ import annotations

import uuid

from pathlib import Path

import pytest

from _history_shape_workflows import (
    CancelRace,
    RetriesThenSucceeds,
    always_fails,
    fails_twice,
    run_cancel_race,
    slow_first,
)

from spindle.api import messages_pb2 as pb
from spindle.client import History
from spindle.testing import Replayer, WorkflowEnvironment
from spindle.worker import Worker

FIXTURES = Path(__file__).resolve().parent / "fixtures"
OLD = sorted(FIXTURES.glob("pre_h13_*.json"))
ACTIVITY_CLOSES = {"ActivityTaskCompleted", "ActivityTaskFailed", "ActivityTaskTimedOut", "ActivityTaskCanceled"}


def _replayer() -> Replayer:
    return Replayer(workflows=[RetriesThenSucceeds, CancelRace])


def test_the_old_fixtures_exist_and_have_the_old_shapes() -> None:
    assert {p.name for p in OLD} == {"pre_h13_retries.json", "pre_h13_cancel_race.json"}
    retries = History.from_json((FIXTURES / "pre_h13_retries.json").read_text())
    in_progress = [e for e in retries.events if e.attributes.get("retry_state") == "RETRY_STATE_IN_PROGRESS"]
    assert len(in_progress) == 5
    race = History.from_json((FIXTURES / "pre_h13_cancel_race.json").read_text())
    closes = [e.event_type for e in race.events if e.event_type in ACTIVITY_CLOSES]
    assert closes == ["ActivityTaskCanceled", "ActivityTaskCompleted"]


@pytest.mark.parametrize("path", OLD, ids=lambda p: p.stem)
async def test_histories_recorded_before_issue_13_replay(path: Path) -> None:
    await _replayer().replay_workflow(History.from_json(path.read_text()))


def _closes_by_activity(history: History) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for e in history.events:
        if e.event_type in ACTIVITY_CLOSES or e.event_type == "ActivityTaskStarted":
            out.setdefault(int(e.attributes["scheduled_event_id"]), []).append(e.event_type)
    return out


async def test_retried_activities_write_only_their_last_attempt_and_replay() -> None:
    async with await WorkflowEnvironment.start_local() as env:
        q = "shapes-" + uuid.uuid4().hex[:6]
        async with Worker(env.client, task_queue=q, workflows=[RetriesThenSucceeds],
                          activities=[fails_twice, slow_first, always_fails]):
            handle = await env.client.start_workflow(RetriesThenSucceeds.run, id="retries", task_queue=q)
            assert await handle.result() == ["a@3", "b@2", "c:ApplicationError:MAXIMUM_ATTEMPTS_REACHED"]
        history = await handle.fetch_history()
    assert not [e for e in history.events if e.attributes.get("retry_state") == "RETRY_STATE_IN_PROGRESS"]
    per_activity = _closes_by_activity(history)
    assert list(per_activity.values()) == [["ActivityTaskStarted", "ActivityTaskCompleted"],
                                           ["ActivityTaskStarted", "ActivityTaskCompleted"],
                                           ["ActivityTaskStarted", "ActivityTaskFailed"]]
    started = [e.attributes for e in history.events if e.event_type == "ActivityTaskStarted"]
    assert [int(a["attempt"]) for a in started] == [3, 2, 3]  # the attempt count travels on the Started event
    assert [a["last_failure"]["message"] for a in started] == [
        "attempt 2 fails", "activity start-to-close timeout", "c never works"]
    assert len(history.events) == 33 - 2 * 5  # the pre-issue-13 fixture: 5 retried attempts wrote 2 events each
    await _replayer().replay_workflow(history)


async def test_cancel_racing_a_completion_ends_the_activity_once_and_replays() -> None:
    async with await WorkflowEnvironment.start_local() as env:
        q = "race-" + uuid.uuid4().hex[:6]
        async with Worker(env.client, task_queue=q, workflows=[CancelRace]):
            handle = await run_cancel_race(env.client, env.control_plane.engine, task_queue=q, workflow_id="race")
        history = await handle.fetch_history()  # type: ignore[attr-defined]
    names = [e.event_type for e in history.events]
    # Temporal's shape: the cancel request is recorded; the activity's outcome is the buffered completion
    assert [n for n in names if n.startswith("ActivityTask")] == [
        "ActivityTaskScheduled", "ActivityTaskCancelRequested", "ActivityTaskStarted", "ActivityTaskCompleted"]
    assert list(_closes_by_activity(history).values()) == [["ActivityTaskStarted", "ActivityTaskCompleted"]]
    await _replayer().replay_workflow(history)


def test_event_type_names_used_here_exist() -> None:
    for name in ACTIVITY_CLOSES:
        assert pb.EventType.Value("EVENT_TYPE_" + "".join("_" + c if c.isupper() else c for c in name)
                                  .lstrip("_").upper())
