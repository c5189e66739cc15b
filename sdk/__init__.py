"""Spindle: durable workflows written as ``async def`` code.

The public modules hold the names of Temporal's ``temporalio.*`` modules, so Temporal code
ports by renaming the package::

    from spindle import activity, workflow
    from spindle.client import Client
    from spindle.common import RetryPolicy
    from spindle.worker import Worker

``spindle.client`` (the client, handles, schedules, histories), ``spindle.worker``
(the worker and its interceptors), ``spindle.common`` (retry policy, id policies, search
attributes), ``spindle.converter`` (data conversion and payload codecs), ``spindle.exceptions``,
``spindle.service`` (TLS settings), ``spindle.testing``, ``spindle.dsl`` (YAML workflows) and
``spindle.api`` (the wire protocol). Importing ``spindle`` itself imports nothing else, so the
control plane (``spindle.controlplane``) and the workflow runtime load only what they use.
"""

from __future__ import annotations

__version__ = "0.1.0"

#: Names this package re-exported before 0.1 (``from spindle import Client``), by the public
#: module that holds them now. Only used to say where a name went: nothing is imported here.
_MOVED = {
    **dict.fromkeys(("Client", "WorkflowHandle", "WorkflowExecutionDescription", "AsyncActivityHandle",
                     "WorkflowExecutionStatus", "History", "HistoryEvent", "ResetType", "BatchOperationSummary",
                     "Schedule", "ScheduleActionStartWorkflow", "ScheduleSpec", "ScheduleIntervalSpec",
                     "SchedulePolicy", "ScheduleOverlapPolicy", "ScheduleState", "ScheduleBackfill",
                     "ScheduleDescription", "ScheduleInfo", "ScheduleActionResult", "ScheduleListEntry",
                     "ScheduleHandle", "ScheduleUpdate", "ScheduleUpdateInput"), "spindle.client"),
    "Worker": "spindle.worker",
    **dict.fromkeys(("RetryPolicy", "WorkflowIDReusePolicy", "WorkflowIDConflictPolicy"), "spindle.common"),
    **dict.fromkeys(("DataConverter", "PayloadCodec", "ZlibCodec", "EncryptionCodec"), "spindle.converter"),
    "TLSConfig": "spindle.service",
}


def __getattr__(name: str) -> object:
    """Raise an ``AttributeError`` that names the module a moved name lives in (imports nothing)."""
    module = _MOVED.get(name)
    hint = f": it is in {module} (from {module} import {name})" if module else ""
    raise AttributeError(f"module 'spindle' has no attribute {name!r}{hint}")


__all__ = ["__version__"]
