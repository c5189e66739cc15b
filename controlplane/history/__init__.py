"""History: shards, executions as event histories, transfer and timer queues.

``HistoryEngine`` is the service's facade; ``CrossShard`` is the port through which it
reaches workflows on other shards (a cluster member plugs in its router's). The layout is
described in docs/ARCHITECTURE.md.
"""

from ._context import CrossShard
from .engine import HistoryEngine

__all__ = ["CrossShard", "HistoryEngine"]
