"""A small chaos run on three member processes (issue 24): nothing acknowledged is lost.

60 workflows (three activities, a timer, a signal the result depends on) while member m1 is
SIGSTOPped for three lease TTLs and member m2 is killed with kill -9 and started again. Every
acknowledged start and signal is in the histories exactly once, every result is right, and no
history has a gap or a repeat (``_chaos.run_chaos``). The full-size run (360 workflows, the worker
killed too, ten runs in a row) is ``bench/cluster_chaos.py``.

Before the fix a forwarded signal arriving at m1 between its lease re-claim and the engine opening
the shard was acknowledged and never written; and calls forwarded to the paused m1 waited for it
to continue. The latency bound here is loose (a loaded 2-core CI machine); the benchmark reports
the figures.
"""

from __future__ import annotations

import asyncio
import json

from pathlib import Path

import pytest

from _chaos import Plan, run_chaos
from _cluster import TTL, with_api_keys
from spanner_emulator import SpannerTestInstance

pytestmark = pytest.mark.timeout(240)


def test_nothing_acknowledged_is_lost_while_a_member_is_paused_and_another_killed(
        spanner_instance: SpannerTestInstance, tmp_path: Path) -> None:
    cluster = with_api_keys(spanner_instance, tmp_path, 3)
    try:
        # m2 dies half a second after m1 continues, while m1 re-claims its shards
        plan = Plan(workflows=60, pause_at=1.5, pause_ttls=3.0, kill_member_at=11.0, kill_worker_at=None,
                    signal_delay=(1.0, 14.0), result_timeout=120.0)
        figures = asyncio.run(run_chaos(cluster, tmp_path, plan))
    finally:
        cluster.stop()
    print(json.dumps(figures))
    assert figures["held"] and figures["runs_checked"] >= 60
    pause, kill = figures["incidents"]
    assert pause["takeover_s"] is not None and kill["takeover_s"] is not None, figures
    # the pause falls in the middle of the load (the kill may come when the killed member's shards have no work left)
    assert pause["first_progress_s"] is not None, f"the pause missed the load: {figures}"
    # Calls reaching the paused member's shards move to the new owner once the lease moved (about a TTL
    # plus renewal rounds), not after the route timeout (30 s) or the pause's end (3 TTLs).
    worst = figures["signal_latency_while_paused_s"]["max"]
    assert worst is None or worst < 3 * TTL, f"a signal waited {worst} s while m1 was paused"
