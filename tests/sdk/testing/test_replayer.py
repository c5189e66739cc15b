"""Replayer on histories captured from real runs in the time-skipping environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from _histories import record_histories
from spindle_testing_wfs import OrderPatched, OrderReordered, OrderV1

from spindle.client import History
from spindle.exceptions import NonDeterminismError
from spindle.testing import Replayer, UnknownWorkflowTypeError


@pytest.fixture(scope="module")
def v1_histories() -> list[History]:
    return record_histories(OrderV1, ["a1", "a2"])


@pytest.fixture(scope="module")
def patched_history() -> History:
    return record_histories(OrderPatched, ["p1"])[0]


def test_captured_history_is_a_real_run(v1_histories: list[History]) -> None:
    h = v1_histories[0]
    assert h.workflow_id == "order-a1" and h.run_id
    types = [e.event_type for e in h.events]
    assert types[0] == "WorkflowExecutionStarted"
    assert types[-1] == "WorkflowExecutionCompleted"
    assert types.count("ActivityTaskScheduled") == 2 and "TimerFired" in types


async def test_same_code_replays(v1_histories: list[History]) -> None:
    await Replayer(workflows=[OrderV1]).replay_workflow(v1_histories[0])


async def test_reordered_activities_raise_non_determinism(v1_histories: list[History]) -> None:
    with pytest.raises(NonDeterminismError) as info:
        await Replayer(workflows=[OrderReordered]).replay_workflow(v1_histories[0])
    assert "reserve" in str(info.value) and "charge" in str(info.value)
    assert info.value.event_id == 5 or "event 5" in str(info.value)


async def test_patched_change_replays_old_and_new_histories(v1_histories: list[History],
                                                            patched_history: History) -> None:
    replayer = Replayer(workflows=[OrderPatched])
    await replayer.replay_workflow(v1_histories[0])  # old run: patched() is False on replay
    await replayer.replay_workflow(patched_history)  # new run: the marker says True
    assert any(e.event_type == "MarkerRecorded" for e in patched_history.events)
    with pytest.raises(NonDeterminismError):  # the old code cannot replay the new run
        await Replayer(workflows=[OrderV1]).replay_workflow(patched_history)


async def test_accepts_json_text_and_paths(v1_histories: list[History], tmp_path: Path) -> None:
    path = tmp_path / "h.json"
    path.write_text(v1_histories[1].to_json())
    replayer = Replayer(workflows=[OrderV1])
    await replayer.replay_workflow(v1_histories[1].to_json())
    await replayer.replay_workflow(path)
    await replayer.replay_workflow(str(path))


async def test_replay_workflows_reports_each_history(v1_histories: list[History], patched_history: History,
                                                     tmp_path: Path) -> None:
    path = tmp_path / "new.json"
    path.write_text(patched_history.to_json())
    # raise_on_replay_failure=False: report every history (the default, as temporalio's, raises the first failure)
    report = await Replayer(workflows=[OrderV1]).replay_workflows([v1_histories[0], v1_histories[1].to_json(), path],
                                                                  raise_on_replay_failure=False)
    assert not report.ok
    assert [r.ok for r in report.results] == [True, True, False]
    assert [r.workflow_id for r in report.results] == ["order-a1", "order-a2", "order-p1"]
    assert report.results[0].run_id == v1_histories[0].run_id
    assert report.results[2].workflow_type == "Order"
    (failure,) = report.failures
    assert failure.source == str(path)
    assert isinstance(failure.error, NonDeterminismError)
    assert str(path) in report.format() and "NonDeterminismError" in report.format()

    ok = await Replayer(workflows=[OrderPatched]).replay_workflows([v1_histories[0], path])
    assert ok.ok and ok.failures == []


async def test_unknown_workflow_type(v1_histories: list[History]) -> None:
    from spindle_testing_wfs import NOT_A_WORKFLOW  # noqa: F401 - the module has non-workflows too

    from spindle import workflow

    @workflow.defn(name="Other")
    async def other() -> None:
        return None

    with pytest.raises(UnknownWorkflowTypeError, match="'Order' is not registered"):
        await Replayer(workflows=[other]).replay_workflow(v1_histories[0])
    report = await Replayer(workflows=[other]).replay_workflows([v1_histories[0]], raise_on_replay_failure=False)
    assert isinstance(report.failures[0].error, UnknownWorkflowTypeError)


def test_duplicate_type_names_are_refused() -> None:
    with pytest.raises(ValueError, match="Order"):
        Replayer(workflows=[OrderV1, OrderPatched])
