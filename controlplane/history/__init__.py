"""History: shards, executions as event histories, transfer and timer queues."""

from .engine import HistoryEngine

__all__ = ["HistoryEngine"]
