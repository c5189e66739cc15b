"""``WorkflowInfo``: what a running workflow knows about its own execution."""

from __future__ import annotations

import contextvars
import dataclasses

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from spindle._workflow.loop import running_workflow_loop

__all__ = ["WorkflowInfo", "ParentInfo", "UpdateInfo", "current_update_info", "CURRENT_UPDATE"]


@dataclasses.dataclass(frozen=True)
class ParentInfo:
    """The parent of a child workflow."""

    namespace: str
    workflow_id: str
    run_id: str


@dataclasses.dataclass(frozen=True)
class UpdateInfo:
    """The update whose handler (or validator) is running: ``workflow.current_update_info()``."""

    id: str
    """The update id (the caller's, or one the server made up)."""

    name: str
    """The update name (the handler's wire name)."""


#: The update whose handler or validator runs in this context (``None`` elsewhere).
CURRENT_UPDATE: contextvars.ContextVar[UpdateInfo | None] = contextvars.ContextVar(
    "spindle_current_update", default=None)


def current_update_info() -> UpdateInfo | None:
    """The update being handled, inside an update handler or validator (and tasks they start).

    ``None`` anywhere else (run method, signal and query handlers, outside workflows).
    """
    return CURRENT_UPDATE.get()


@dataclasses.dataclass(frozen=True)
class WorkflowInfo:
    """Facts about the current run, as of the current workflow task.

    ``is_replaying`` is true while the code re-runs recorded workflow tasks
    (``workflow.unsafe.is_replaying()`` answers the same, without a snapshot).
    The history length and the continue-as-new suggestion change as the run goes
    on; read them with :meth:`get_current_history_length` and
    :meth:`is_continue_as_new_suggested`.
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
    is_replaying: bool
    execution_timeout: timedelta | None = None
    run_timeout: timedelta | None = None
    task_timeout: timedelta | None = None
    # Values when this snapshot was taken; the methods below prefer the live run's.
    _history_length: int = dataclasses.field(default=0, repr=False)
    _continue_as_new_suggested: bool = dataclasses.field(default=False, repr=False)

    def _live(self) -> Any:
        # The running run's WorkflowRuntime, looked up on the loop: spindle._workflow.context
        # (maybe_instance) names WorkflowInstance, which imports this module.
        loop = running_workflow_loop()
        runtime = loop.instance.runtime if loop is not None and loop.instance is not None else None
        started = runtime.info if runtime is not None else None
        if started is not None and started.run_id == self.run_id and started.workflow_id == self.workflow_id:
            return runtime
        return None

    def get_current_history_length(self) -> int:
        """The number of events in history up to the current workflow task.

        That is the id of the current ``WorkflowTaskStarted`` event. Deterministic: replay
        sees the same number at the same point. Read inside workflow code it is always
        current, even on an ``info()`` taken earlier; elsewhere it is the value when the
        info was taken. In a query it is as of the last workflow task.
        """
        runtime = self._live()
        return int(runtime.current_history_length) if runtime is not None else self._history_length

    def is_continue_as_new_suggested(self) -> bool:
        """Whether the server suggests continuing as new (the history is getting long).

        Set by the server on the current workflow task (``ServerConfig.history_warn_events``)
        and recorded in history, so replay sees the same answer. Current inside workflow
        code, like :meth:`get_current_history_length`.
        """
        runtime = self._live()
        return bool(runtime.continue_as_new_suggested) if runtime is not None else self._continue_as_new_suggested
