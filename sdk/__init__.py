"""Spindle SDK: write durable workflows as ``async def`` code.

``from sdk import Client, Worker, RetryPolicy, workflow, activity`` is the usual
start; see DESIGN.md section 4. Names are loaded on first use, so importing one
part of the SDK (for example the deterministic runtime) does not import the
client and worker, and the modules can import each other without cycles.
"""

from __future__ import annotations

import importlib

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from sdk import activity, workflow
    from sdk._client import AsyncActivityHandle, Client, WorkflowExecutionDescription, WorkflowHandle
    from sdk._converter import DataConverter, EncryptionCodec, PayloadCodec, ZlibCodec
    from sdk._enums import WorkflowExecutionStatus, WorkflowIDConflictPolicy, WorkflowIDReusePolicy
    from sdk._history import History, HistoryEvent
    from sdk._retry_policy import RetryPolicy
    from sdk._worker import Worker

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
]

_LAZY: dict[str, str] = {
    "Client": "sdk._client",
    "WorkflowHandle": "sdk._client",
    "WorkflowExecutionDescription": "sdk._client",
    "AsyncActivityHandle": "sdk._client",
    "Worker": "sdk._worker",
    "RetryPolicy": "sdk._retry_policy",
    "WorkflowIDReusePolicy": "sdk._enums",
    "WorkflowIDConflictPolicy": "sdk._enums",
    "WorkflowExecutionStatus": "sdk._enums",
    "History": "sdk._history",
    "HistoryEvent": "sdk._history",
    "DataConverter": "sdk._converter",
    "PayloadCodec": "sdk._converter",
    "ZlibCodec": "sdk._converter",
    "EncryptionCodec": "sdk._converter",
}
_SUBMODULES = frozenset({"workflow", "activity"})


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"sdk.{name}")
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'sdk' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
