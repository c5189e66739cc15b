"""History: shards, executions as event histories, transfer and timer queues.

``HistoryEngine`` is the service's facade; ``CrossShard`` is the port through which it
reaches workflows on other shards (a cluster member plugs in its router's); ``StartTokens``
is the port through which the starts the server makes take tokens of the namespaces' rate
limits (the frontend plugs in its limiter, whose clock is ``token_clock``). The layout is
described in docs/ARCHITECTURE.md.
"""

from ._context import CrossShard
from ._pacing import StartTokens, token_clock
from .engine import HistoryEngine

__all__ = ["CrossShard", "HistoryEngine", "StartTokens", "token_clock"]
