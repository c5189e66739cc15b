"""Spindle SDK: write durable workflows as ``async def`` code.

``from spindle import Client, Worker, RetryPolicy, workflow, activity`` is the usual
start; see DESIGN.md section 4. ``spindle.client``, ``spindle.common``,
``spindle.converter``, ``spindle.exceptions`` and ``spindle.worker`` hold the names of
Temporal's ``temporalio.*`` modules, so Temporal code ports by renaming the package.
Names are loaded on first use, so importing one part of the SDK (for example the
deterministic runtime) does not import the client and worker, and the modules can
import each other without cycles.
"""

from __future__ import annotations

import importlib

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from spindle import activity, client, common, converter, exceptions, service, worker, workflow
    from spindle._client import AsyncActivityHandle, Client, WorkflowExecutionDescription, WorkflowHandle
    from spindle._converter import DataConverter, EncryptionCodec, PayloadCodec, ZlibCodec
    from spindle._enums import WorkflowExecutionStatus, WorkflowIDConflictPolicy, WorkflowIDReusePolicy
    from spindle._history import History, HistoryEvent
    from spindle._batch import BatchOperationSummary
    from spindle._reset import ResetType
    from spindle._retry_policy import RetryPolicy
    from spindle._tls import TLSConfig
    from spindle._schedule_client import ScheduleHandle, ScheduleUpdate, ScheduleUpdateInput
    from spindle._schedule_description import (
        ScheduleActionResult,
        ScheduleDescription,
        ScheduleInfo,
        ScheduleListEntry,
    )
    from spindle._schedule_types import (
        Schedule,
        ScheduleActionStartWorkflow,
        ScheduleBackfill,
        ScheduleIntervalSpec,
        ScheduleOverlapPolicy,
        SchedulePolicy,
        ScheduleSpec,
        ScheduleState,
    )
    from spindle._worker import Worker

__all__ = [
    "Client",
    "Worker",
    "RetryPolicy",
    "workflow",
    "activity",
    "WorkflowIDReusePolicy",
    "WorkflowIDConflictPolicy",
    "WorkflowExecutionStatus",
    "WorkflowHandle",
    "WorkflowExecutionDescription",
    "AsyncActivityHandle",
    "History",
    "HistoryEvent",
    "DataConverter",
    "PayloadCodec",
    "ZlibCodec",
    "EncryptionCodec",
    "TLSConfig",
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
]

_LAZY: dict[str, str] = {
    "Client": "spindle._client",
    "WorkflowHandle": "spindle._client",
    "WorkflowExecutionDescription": "spindle._client",
    "AsyncActivityHandle": "spindle._client",
    "Worker": "spindle._worker",
    "RetryPolicy": "spindle._retry_policy",
    "WorkflowIDReusePolicy": "spindle._enums",
    "WorkflowIDConflictPolicy": "spindle._enums",
    "WorkflowExecutionStatus": "spindle._enums",
    "History": "spindle._history",
    "HistoryEvent": "spindle._history",
    "DataConverter": "spindle._converter",
    "PayloadCodec": "spindle._converter",
    "ZlibCodec": "spindle._converter",
    "EncryptionCodec": "spindle._converter",
    "TLSConfig": "spindle._tls",
    "ResetType": "spindle._reset",
    "BatchOperationSummary": "spindle._batch",
    "Schedule": "spindle._schedule_types",
    "ScheduleActionStartWorkflow": "spindle._schedule_types",
    "ScheduleSpec": "spindle._schedule_types",
    "ScheduleIntervalSpec": "spindle._schedule_types",
    "SchedulePolicy": "spindle._schedule_types",
    "ScheduleOverlapPolicy": "spindle._schedule_types",
    "ScheduleState": "spindle._schedule_types",
    "ScheduleBackfill": "spindle._schedule_types",
    "ScheduleDescription": "spindle._schedule_description",
    "ScheduleInfo": "spindle._schedule_description",
    "ScheduleActionResult": "spindle._schedule_description",
    "ScheduleListEntry": "spindle._schedule_description",
    "ScheduleHandle": "spindle._schedule_client",
    "ScheduleUpdate": "spindle._schedule_client",
    "ScheduleUpdateInput": "spindle._schedule_client",
}
# Public modules, reachable as attributes (``spindle.common.RetryPolicy``) after ``import spindle``;
# they mirror Temporal's ``temporalio.client`` / ``.common`` / ``.converter`` / ``.exceptions`` / ``.service`` /
# ``.worker``.
_SUBMODULES = frozenset({"workflow", "activity", "client", "common", "converter", "exceptions", "service", "worker"})


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"spindle.{name}")
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'spindle' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
