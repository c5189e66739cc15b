"""Persistence: the Store contract and its backends (SQLite here; Cloud Spanner in ``spanner``)."""

from ._interface import Store
from ._model import (
    ApiKeyRow,
    BacklogTask,
    ConditionFailedError,
    CurrentRow,
    DeploymentRow,
    ExecutionRow,
    LoadedExecution,
    Mutation,
    NamespaceRow,
    ScheduleRow,
    ServerSecret,
    ShardOwnershipLostError,
    StoreError,
    StoreUnavailableError,
    TimerTask,
    TransferTask,
    VisibilityRow,
)

__all__ = [
    "Store",
    "ApiKeyRow",
    "BacklogTask",
    "ConditionFailedError",
    "CurrentRow",
    "DeploymentRow",
    "ExecutionRow",
    "LoadedExecution",
    "Mutation",
    "NamespaceRow",
    "ScheduleRow",
    "ServerSecret",
    "ShardOwnershipLostError",
    "StoreError",
    "StoreUnavailableError",
    "TimerTask",
    "TransferTask",
    "VisibilityRow",
]
