"""Standalone activities, Temporal idiom: what ``activity.info()`` says inside one.

A standalone activity is started by a client, not scheduled by a workflow, so its
``activity.Info`` has no workflow fields (``None``), ``in_workflow`` is ``False`` and
``activity_run_id`` names the activity's run. (Only this SDK-side part exists so far:
the control plane does not yet start standalone activities; see the report of issue 30.)
"""

from __future__ import annotations

import dataclasses
import logging

import pytest

from spindle import activity
from spindle.testing import ActivityEnvironment


@activity.defn
def describe_self() -> dict[str, object]:
    info = activity.info()
    activity.logger.info("running")
    return {"in_workflow": info.in_workflow, "workflow_id": info.workflow_id,
            "workflow_run_id": info.workflow_run_id, "workflow_type": info.workflow_type,
            "activity_run_id": info.activity_run_id}


def test_a_standalone_activity_info_has_no_workflow_fields(caplog: pytest.LogCaptureFixture) -> None:
    env = ActivityEnvironment()
    with caplog.at_level(logging.INFO):
        out = env.run(describe_self, workflow_id=None, workflow_run_id=None, workflow_type=None,
                      activity_run_id="run-1")
    assert out == {"in_workflow": False, "workflow_id": None, "workflow_run_id": None,
                   "workflow_type": None, "activity_run_id": "run-1"}
    record = next(r for r in caplog.records if r.getMessage().startswith("running"))
    assert record.workflow_id is None  # type: ignore[attr-defined]


def test_a_workflow_activity_info_is_in_workflow_without_an_activity_run_id() -> None:
    out = ActivityEnvironment().run(describe_self)
    assert out["in_workflow"] is True and out["workflow_id"] == "test-workflow"
    assert out["activity_run_id"] is None


def test_info_fields_match_temporal_names() -> None:
    names = {f.name for f in dataclasses.fields(activity.Info)}
    assert {"workflow_id", "workflow_run_id", "workflow_type", "activity_run_id"} <= names
    assert isinstance(activity.Info.in_workflow, property)
