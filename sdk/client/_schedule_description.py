"""What the client reads back about schedules: ``ScheduleDescription`` and ``ScheduleListEntry``.

``handle.describe()`` returns a :class:`ScheduleDescription` (``.schedule``, ``.info`` with
``num_actions``, ``recent_actions``, ``next_action_times``); ``client.list_schedules()``
yields :class:`ScheduleListEntry` items (``id``, ``paused``, ``next_action_times``). Field
names follow Temporal's ``ScheduleDescription`` / ``ScheduleInfo`` / ``ScheduleActionResult``.
All times are timezone-aware UTC datetimes.
"""

from __future__ import annotations

import dataclasses

from collections.abc import Sequence
from datetime import datetime

from spindle.client._schedule_types import Schedule

__all__ = [
    "ScheduleActionExecutionStartWorkflow",
    "ScheduleActionResult",
    "ScheduleDescription",
    "ScheduleInfo",
    "ScheduleListEntry",
    "ScheduleListInfo",
]


@dataclasses.dataclass
class ScheduleActionExecutionStartWorkflow:
    """A workflow run a schedule started (Temporal's name)."""

    workflow_id: str
    first_execution_run_id: str


@dataclasses.dataclass
class ScheduleActionResult:
    """One action a schedule took.

    ``scheduled_at`` is when the action was due, jitter included (the workflow id carries
    the time without jitter); ``started_at`` when the workflow was actually started;
    ``workflow_id`` and ``run_id`` name the run it started.
    """

    scheduled_at: datetime
    started_at: datetime
    workflow_id: str
    run_id: str

    @property
    def action(self) -> ScheduleActionExecutionStartWorkflow:
        """The started run, as Temporal's ``ScheduleActionResult.action``."""
        return ScheduleActionExecutionStartWorkflow(self.workflow_id, self.run_id)


@dataclasses.dataclass
class ScheduleInfo:
    """What a schedule has done and will do.

    ``num_actions`` counts actions taken (scheduled, triggered and backfilled);
    ``num_actions_missed_catchup_window`` those dropped because they were due longer than
    the catch-up window ago; ``num_actions_skipped_overlap`` those dropped by the overlap
    policy. ``running_actions`` are the runs it started that still run; ``recent_actions``
    the latest actions, oldest first; ``next_action_times`` the next due times (jitter
    included), earliest first.
    """

    num_actions: int = 0
    num_actions_missed_catchup_window: int = 0
    num_actions_skipped_overlap: int = 0
    running_actions: Sequence[ScheduleActionExecutionStartWorkflow] = ()
    recent_actions: Sequence[ScheduleActionResult] = ()
    next_action_times: Sequence[datetime] = ()
    created_at: datetime | None = None
    last_updated_at: datetime | None = None

    def __post_init__(self) -> None:
        for name in ("running_actions", "recent_actions", "next_action_times"):
            object.__setattr__(self, name, tuple(getattr(self, name)))


@dataclasses.dataclass
class ScheduleDescription:
    """A schedule as ``ScheduleHandle.describe()`` returns it: its ``id``, the ``schedule`` and ``info``."""

    id: str
    schedule: Schedule
    info: ScheduleInfo


@dataclasses.dataclass
class ScheduleListInfo:
    """What a listed schedule did and will do (Temporal's ``ScheduleListEntry.info``)."""

    recent_actions: Sequence[ScheduleActionResult] = ()
    next_action_times: Sequence[datetime] = ()


@dataclasses.dataclass
class ScheduleListEntry:
    """One schedule as ``client.list_schedules()`` yields it.

    ``workflow_type`` is the type its action starts; ``recent_actions`` and
    ``next_action_times`` may be fewer than :class:`ScheduleInfo` holds.
    """

    id: str
    paused: bool
    next_action_times: Sequence[datetime] = ()
    note: str = ""
    workflow_type: str = ""
    recent_actions: Sequence[ScheduleActionResult] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "next_action_times", tuple(self.next_action_times))
        object.__setattr__(self, "recent_actions", tuple(self.recent_actions))

    @property
    def info(self) -> ScheduleListInfo:
        """``recent_actions`` and ``next_action_times`` as Temporal's ``entry.info`` holds them."""
        return ScheduleListInfo(self.recent_actions, self.next_action_times)
