"""OutstandingTasks: every release is idempotent and a closed run's tasks stop counting."""

from __future__ import annotations

from spindle.controlplane.history._outstanding import (
    ACTIVITY,
    WORKFLOW,
    OutstandingTasks,
    activity_task_key,
    workflow_task_key,
)

RUN = ("ns", "w", "r1")
OTHER = ("ns", "w2", "r1")


def test_counts_are_per_key_and_releases_are_idempotent() -> None:
    seen: list[int] = []
    out = OutstandingTasks(seen.append)
    out.add(RUN, workflow_task_key("n1"), WORKFLOW)
    out.add(RUN, activity_task_key(5, 1), ACTIVITY)
    out.add(RUN, activity_task_key(5, 1), ACTIVITY)  # the same attempt handed out again: counted once
    out.add(OTHER, activity_task_key(5, 1), ACTIVITY)
    assert (out.total, out.workflow_tasks, out.activity_tasks) == (3, 1, 2)
    out.discard(RUN, activity_task_key(5, 1))
    out.discard(RUN, activity_task_key(5, 1))  # its timeout fired and its worker answered: released once
    out.discard(RUN, activity_task_key(6, 1))  # never counted
    assert (out.total, out.activity_tasks) == (2, 1)
    out.discard_run(RUN)  # closed while its workflow task ran
    out.discard_run(RUN)
    assert (out.total, out.workflow_tasks, out.activity_tasks) == (1, 0, 1)
    out.discard(OTHER, activity_task_key(5, 1))
    assert out.total == 0
    assert seen == [1, 2, 3, 2, 1, 0]
