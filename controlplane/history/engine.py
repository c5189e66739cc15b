"""The history engine: owns shards and executions; everything that changes a history goes through it."""

from __future__ import annotations

from typing import Any, Callable

from controlplane.clock import Clock
from controlplane.config import ServerConfig
from controlplane.namespaces import NamespaceRegistry
from controlplane.store import Store

from ._activities import ActivitiesMixin
from ._client_ops import ClientOpsMixin, PendingQuery
from ._commands import CommandsMixin
from ._core import EngineCore
from ._processing import ProcessingMixin
from ._runs import RunsMixin
from ._workflow_tasks import WorkflowTasksMixin


class HistoryEngine(
    ClientOpsMixin,
    WorkflowTasksMixin,
    ActivitiesMixin,
    CommandsMixin,
    ProcessingMixin,
    RunsMixin,
    EngineCore,
):
    """Executions, their histories and their task and timer queues, for every shard this process owns."""

    def __init__(self, store: Store, config: ServerConfig, clock: Clock, namespaces: NamespaceRegistry) -> None:
        super().__init__(store, config, clock, namespaces)
        self.pending_queries: dict[str, PendingQuery] = {}
        self._outstanding_listeners: list[Callable[[int], Any]] = []

    def outstanding_changed(self, delta: int) -> None:
        """Track tasks handed to workers and not yet finished (the time-skipping clock waits for zero)."""
        self.outstanding_tasks = max(0, self.outstanding_tasks + delta)
        for fn in self._outstanding_listeners:
            fn(self.outstanding_tasks)

    def on_outstanding(self, fn: Callable[[int], Any]) -> None:
        self._outstanding_listeners.append(fn)


__all__ = ["HistoryEngine"]
