"""``workflow.logger``: a logger that tags records with the workflow and is silent during replay.

Same knobs and record shape as ``temporalio.workflow.LoggerAdapter``, so handlers,
formatters and filters written for Temporal keep working after the import rename:

- the message gets `` ({'attempt': 1, 'namespace': ..., 'run_id': ..., 'task_queue': ...,
  'workflow_id': ..., 'workflow_type': ...})`` appended (plus ``update_id`` / ``update_name``
  inside an update handler);
- the record carries each of those keys as an attribute (``record.workflow_id``, ...) and all
  of them together as the dict ``record.spindle_workflow`` (Temporal's ``temporal_workflow``);
- nothing is logged while the workflow replays recorded events, unless ``log_during_replay``.
"""

from __future__ import annotations

import logging

from collections.abc import Mapping, MutableMapping
from typing import Any

from spindle._workflow.context import maybe_instance
from spindle._workflow.info import CURRENT_UPDATE, WorkflowInfo

__all__ = ["LoggerAdapter", "logger", "logger_details"]


def logger_details(info: WorkflowInfo) -> dict[str, Any]:
    """What ``workflow.logger`` adds to records: the run's identity (and the update being handled)."""
    details: dict[str, Any] = {"attempt": info.attempt, "namespace": info.namespace, "run_id": info.run_id,
                               "task_queue": info.task_queue, "workflow_id": info.workflow_id,
                               "workflow_type": info.workflow_type}
    update = CURRENT_UPDATE.get()
    if update is not None:
        details["update_id"] = update.id
        details["update_name"] = update.name
    return details


class LoggerAdapter(logging.LoggerAdapter):
    """Adds the running workflow's details to each record; drops records during replay.

    Outside workflow code it logs like the underlying logger, unchanged.

    Attributes:
        workflow_info_on_message: append the details dict to the message (default True).
        workflow_info_on_extra: set each detail as a record attribute and all of them as
            ``record.spindle_workflow`` (default True).
        full_workflow_info_on_extra: also set ``record.workflow_info`` to the whole
            :class:`~spindle.workflow.WorkflowInfo` (default False).
        log_during_replay: log while the workflow replays recorded events (default False:
            a message is written once, when its code first runs).

    Values passed in a call's own ``extra`` win over the ones added here.
    """

    def __init__(self, logger: logging.Logger, extra: Mapping[str, Any] | None = None) -> None:
        super().__init__(logger, dict(extra or {}))
        self.workflow_info_on_message = True
        self.workflow_info_on_extra = True
        self.full_workflow_info_on_extra = False
        self.log_during_replay = False

    def isEnabledFor(self, level: int) -> bool:
        """False while the workflow replays (unless ``log_during_replay``), else the logger's answer."""
        if not self.log_during_replay:
            inst = maybe_instance()
            if inst is not None and inst.runtime.is_replaying:
                return False
        return self.logger.isEnabledFor(level)

    def process(self, msg: Any, kwargs: MutableMapping[str, Any]) -> tuple[Any, MutableMapping[str, Any]]:
        """Append the workflow details to ``msg`` and put them in ``extra`` (see the class docs)."""
        inst = maybe_instance()
        started = inst.runtime.info if inst is not None else None
        if inst is None or started is None:
            return msg, kwargs
        details = logger_details(started)
        extra: dict[str, Any] = {}
        if self.workflow_info_on_extra:
            extra.update(details)
            extra["spindle_workflow"] = dict(details)
        if self.full_workflow_info_on_extra:
            extra["workflow_info"] = inst.runtime.workflow_info
        kwargs["extra"] = {**extra, **(kwargs.get("extra") or {})}
        if self.workflow_info_on_message:
            msg = f"{msg} ({details})"
        return msg, kwargs

    @property
    def base_logger(self) -> logging.Logger:
        """The wrapped ``logging.Logger`` (add handlers and formatters to it)."""
        return self.logger


logger = LoggerAdapter(logging.getLogger("spindle.workflow"))
"""Logger for workflow code: tagged with the workflow's details, silent during replay."""
