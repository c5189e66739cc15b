"""Spindle: durable workflows written as ``async def`` code.

The usual start::

    from spindle import Client, Worker, RetryPolicy, workflow, activity

The public modules hold the names of Temporal's ``temporalio.*`` modules, so Temporal code
ports by renaming the package (``from spindle.client import Client``,
``from spindle.common import RetryPolicy``, ``from spindle.worker import Worker``):
``spindle.client`` (the client, handles, schedules, histories), ``spindle.worker`` (the
worker and its interceptors), ``spindle.common`` (retry policy, id policies, search
attributes), ``spindle.converter`` (data conversion and payload codecs),
``spindle.exceptions``, ``spindle.service`` (TLS settings), ``spindle.testing``,
``spindle.dsl`` (YAML workflows) and ``spindle.api`` (the wire protocol).

Importing ``spindle`` imports nothing else: the control plane (``spindle.controlplane``,
whose import runs this file first) and the workflow runtime load only what they use. The
names below are therefore looked up in their public module the first time they are read
(``spindle.Client`` is ``spindle.client.Client``); the table is static, the same imports are
spelled out for type checkers, and no module of the SDK goes through this package for them
(``tests/packaging/test_import_cycles.py`` checks both).
"""

from __future__ import annotations

import importlib

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the same names, for type checkers and IDEs
    from spindle.client import (
        AsyncActivityHandle,
        BatchOperationSummary,
        Client,
        History,
        HistoryEvent,
        ResetType,
        Schedule,
        ScheduleActionResult,
        ScheduleActionStartWorkflow,
        ScheduleBackfill,
        ScheduleDescription,
        ScheduleHandle,
        ScheduleInfo,
        ScheduleIntervalSpec,
        ScheduleListEntry,
        ScheduleOverlapPolicy,
        SchedulePolicy,
        ScheduleSpec,
        ScheduleState,
        ScheduleUpdate,
        ScheduleUpdateInput,
        WorkflowExecutionDescription,
        WorkflowExecutionStatus,
        WorkflowHandle,
    )
    from spindle.common import RetryPolicy, WorkflowIDConflictPolicy, WorkflowIDReusePolicy
    from spindle.converter import DataConverter, EncryptionCodec, PayloadCodec, ZlibCodec
    from spindle.service import TLSConfig
    from spindle.worker import Worker

__version__ = "0.1.0"

#: Each top-level name and the public module that defines it.
_PUBLIC_NAMES: dict[str, str] = {
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

__all__ = [
    "__version__",
    "Client",
    "WorkflowHandle",
    "WorkflowExecutionDescription",
    "AsyncActivityHandle",
    "WorkflowExecutionStatus",
    "History",
    "HistoryEvent",
    "ResetType",
    "BatchOperationSummary",
    "Schedule",
    "ScheduleActionStartWorkflow",
    "ScheduleSpec",
    "ScheduleIntervalSpec",
    "SchedulePolicy",
    "ScheduleOverlapPolicy",
    "ScheduleState",
    "ScheduleBackfill",
    "ScheduleDescription",
    "ScheduleInfo",
    "ScheduleActionResult",
    "ScheduleListEntry",
    "ScheduleHandle",
    "ScheduleUpdate",
    "ScheduleUpdateInput",
    "Worker",
    "RetryPolicy",
    "WorkflowIDReusePolicy",
    "WorkflowIDConflictPolicy",
    "DataConverter",
    "PayloadCodec",
    "ZlibCodec",
    "EncryptionCodec",
    "TLSConfig",
]


def __getattr__(name: str) -> object:
    """``spindle.Client`` and the other names of ``_PUBLIC_NAMES``: read from their module on first use."""
    module = _PUBLIC_NAMES.get(name)
    if module is None:
        raise AttributeError(f"module 'spindle' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
