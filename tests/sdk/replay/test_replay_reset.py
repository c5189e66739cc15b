"""The history of a reset run replays: the committed fixture (recorded when reset was added) and a live one.

A reset run's history is a copied prefix, ``WorkflowTaskFailed`` (cause RESET_WORKFLOW) and the
re-applied signals (docs/RESET.md); the SDK must treat the failed task's commands as never
made and run the current code from there, now and after any future change.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from _reset_shape_workflows import ResetShapeRelease1, ResetShapeRelease2, run_reset_shape

from spindle.client import Client, History
from spindle.controlplane import embedded
from spindle.exceptions import NonDeterminismError
from spindle.testing import Replayer

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "h17_reset_run.json"


def test_the_fixture_has_the_reset_shape() -> None:
    h = History.from_json(FIXTURE.read_text())
    types = [e.event_type for e in h.events]
    assert types[9] == "WorkflowTaskFailed" and types[10:12] == ["WorkflowExecutionSignaled"] * 2
    assert "RESET_WORKFLOW" in str(h.events[9].attributes.get("cause"))
    assert types[-1] == "WorkflowExecutionCompleted"


async def test_the_committed_reset_run_replays_with_the_fixed_code_only() -> None:
    h = History.from_json(FIXTURE.read_text())
    await Replayer(workflows=[ResetShapeRelease2]).replay_workflow(h)
    # release 1 replays the copied prefix too, then fails where release 2 completed
    with pytest.raises(NonDeterminismError) as err:
        await Replayer(workflows=[ResetShapeRelease1]).replay_workflow(h)
    assert "event 16 is WorkflowExecutionCompleted" in str(err.value), err.value


async def test_a_reset_run_recorded_now_replays(tmp_path: Path) -> None:
    cp = await embedded.start(str(tmp_path / "live.db"))
    client = Client(cp.stub, namespace="default")
    try:
        _, new_run = await run_reset_shape(client, "reset-live", "reset-live")
        h = await client.get_workflow_handle("reset-live", run_id=new_run).fetch_history()
        await Replayer(workflows=[ResetShapeRelease2]).replay_workflow(h)
        assert [e.event_type for e in h.events] == [e.event_type for e in History.from_json(FIXTURE.read_text()).events]
    finally:
        await client.close()
        await cp.stop()
