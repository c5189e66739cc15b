"""``activity.logger``: a logger that tags each record with the running activity attempt.

Inside an activity, every record carries the attempt's details (activity id and
type, attempt, namespace, task queue, workflow id, run id and type) as ``extra``
fields and, by default, appended to the message. Outside an activity it logs
like the plain ``spindle.activity`` logger.
"""

from __future__ import annotations

import logging

from collections.abc import Mapping, MutableMapping
from typing import Any

from spindle._activity.context import ActivityInfo, _current

__all__ = ["LoggerAdapter", "logger", "logger_details"]

#: The ``extra`` key under which the details travel as one dict (temporalio's ``temporal_activity``).
EXTRA_KEY = "spindle_activity"


def logger_details(info: ActivityInfo) -> dict[str, Any]:
    """The details an activity's log records carry, by field name."""
    return {
        "activity_id": info.activity_id,
        "activity_type": info.activity_type,
        "attempt": info.attempt,
        "namespace": info.namespace,
        "task_queue": info.task_queue,
        "workflow_id": info.workflow_id,
        "workflow_run_id": info.workflow_run_id,
        "workflow_type": info.workflow_type,
    }


class LoggerAdapter(logging.LoggerAdapter):
    """Adds the running activity's details to each record (``activity.logger`` is one).

    Inside an activity a record gets each detail of :func:`logger_details` as an
    attribute (``record.activity_id``, ``record.attempt``, ...; a key the caller
    passes in ``extra`` wins), all of them as the dict ``record.spindle_activity``,
    and the dict appended to the message as ``"msg ({...})"``.

    Attributes:
        activity_info_on_message: append the details to the message (default ``True``).
        activity_info_on_extra: add the details to the record (default ``True``).
        full_activity_info_on_extra: also add the whole :class:`ActivityInfo` as
            ``record.activity_info`` (default ``False``).
    """

    def __init__(self, logger: logging.Logger, extra: Mapping[str, Any] | None = None) -> None:
        super().__init__(logger, dict(extra or {}))
        self.activity_info_on_message = True
        self.activity_info_on_extra = True
        self.full_activity_info_on_extra = False

    def process(self, msg: Any, kwargs: MutableMapping[str, Any]) -> tuple[Any, MutableMapping[str, Any]]:
        """Add the adapter's own ``extra`` and the running activity's details (if any)."""
        extra: dict[str, Any] = dict(self.extra or {})
        ctx = _current.get(None)
        if ctx is not None:
            details = logger_details(ctx.info)
            if self.activity_info_on_message:
                msg = f"{msg} ({details})"
            if self.activity_info_on_extra:
                extra.update(details)
                extra[EXTRA_KEY] = details
            if self.full_activity_info_on_extra:
                extra["activity_info"] = ctx.info
        if extra:
            # a copy, never the caller's dict; the caller's keys win
            kwargs["extra"] = {**extra, **(kwargs.get("extra") or {})}
        return msg, kwargs

    @property
    def base_logger(self) -> logging.Logger:
        """The wrapped logger (to add handlers, set levels, ...)."""
        return self.logger


logger = LoggerAdapter(logging.getLogger("spindle.activity"))
"""Logs with the running activity's details attached (see :class:`LoggerAdapter`)."""
