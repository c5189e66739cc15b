"""``WorkflowInfo``: what a running workflow knows about its own execution."""

from __future__ import annotations

import dataclasses

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

__all__ = ["WorkflowInfo", "ParentInfo"]


@dataclasses.dataclass(frozen=True)
class ParentInfo:
    """The parent of a child workflow."""

    namespace: str
    workflow_id: str
    run_id: str


@dataclasses.dataclass(frozen=True)
class WorkflowInfo:
    """Facts about the current run, as of the current workflow task.

    ``history_length`` is the id of the current ``WorkflowTaskStarted`` event;
    ``is_replaying`` is true while the code re-runs recorded workflow tasks.
    """

    namespace: str
    workflow_id: str
    run_id: str
    workflow_type: str
    task_queue: str
    attempt: int
    start_time: datetime
    parent: ParentInfo | None
    continued_run_id: str | None
    first_run_id: str
    search_attributes: Mapping[str, Any]
    memo: Mapping[str, Any]
    history_length: int
    is_replaying: bool
    execution_timeout: timedelta | None = None
    run_timeout: timedelta | None = None
    task_timeout: timedelta | None = None
    suggest_continue_as_new: bool = False
