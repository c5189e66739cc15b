"""Garbage-collector settings of a control-plane server process (``start-dev``, a cluster member).

A full (generation 2) collection walks every object the collector tracks and stops the
event loop while it runs. Measured with ``bench/bench.py --mode start-dev`` on CPython's
defaults: pauses of 40-75 ms every few seconds under load, which set the p99 of a
chain3 workflow at half load (100-175 ms). What exists once the server has started
(modules, the gRPC server, the engine's fixed structures: about 70,000 objects) never
becomes garbage, so it is frozen out of every later collection; a larger first
threshold makes young collections rarer. With both: p99 at half load 51-53 ms and more
throughput (166-174 workflows/s against 155-173). Embedded mode runs in the user's
process and leaves its collector alone.
"""

from __future__ import annotations

import gc

#: ``gc.set_threshold`` of a server process (CPython's defaults: 700, 10, 10).
SERVER_GC_THRESHOLDS = (2000, 10, 10)


def settle_after_start() -> None:
    """Collect once, freeze every surviving object, and apply ``SERVER_GC_THRESHOLDS``.

    Call when the server is up, before it takes load. Frozen objects are never
    collected, which is right for what lives as long as the process.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(*SERVER_GC_THRESHOLDS)


__all__ = ["SERVER_GC_THRESHOLDS", "settle_after_start"]
