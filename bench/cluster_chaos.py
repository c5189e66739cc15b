"""Chaos on a three-member cluster, repeated: does anything acknowledged get lost? Prints one JSON line.

Each run: a fresh database on one Spanner emulator, three ``spindle server start`` members
(mutual TLS between members, TLS and API keys for clients), a worker in its own process, and N
workflows (three activities, a 1 s timer, then a signal the result depends on). While they run,
member m1 is SIGSTOPped for three lease TTLs and continued, the worker is killed with kill -9 and
started again, and member m2 is killed with kill -9 and started again. A run *holds* when every
acknowledged start and signal is in the histories exactly once, every result is right, and no
history has a gap or a repeat. Per run: takeover and first progress per incident, signal and
activity-completion latency (overall and while m1 was paused), start to close.

    .venv/bin/python bench/cluster_chaos.py [--runs 10] [--workflows 360]

The driver is ``tests/controlplane/cluster/_chaos.py`` (its small form runs in CI:
``test_cluster_chaos.py``). Needs the Cloud Spanner emulator (``scripts/test.sh`` notes where it comes from).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
import traceback

from pathlib import Path
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for sub in ("tests", os.path.join("tests", "controlplane", "cluster")):
    sys.path.insert(0, os.path.join(ROOT, sub))

from _chaos import Plan, run_chaos  # noqa: E402
from _cluster import with_api_keys  # noqa: E402
from spanner_emulator import spanner_test_instance  # noqa: E402


def one_run(inst: Any, k: int, plan: Plan, keep: bool) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix=f"spindle-chaos-{k}-"))
    cluster = with_api_keys(inst, tmp, 3)
    try:
        out = asyncio.run(run_chaos(cluster, tmp, plan))
    except AssertionError as e:
        out = {"held": False, "error": str(e)[:2000], "folder": str(tmp)}
    except Exception as e:  # noqa: BLE001 - reported as a run that could not finish
        out = {"held": False, "error": f"{type(e).__name__}: {e}"[:2000], "trace": traceback.format_exc()[-2000:],
               "folder": str(tmp)}
    finally:
        cluster.stop()
    if keep or not out.get("held"):
        out["folder"] = str(tmp)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--workflows", type=int, default=360)
    ap.add_argument("--keep", action="store_true", help="print each run's folder (logs, certificates)")
    a = ap.parse_args()
    plan = Plan(workflows=a.workflows)
    runs = []
    t0 = time.time()
    with spanner_test_instance() as inst:
        for k in range(a.runs):
            r = one_run(inst, k, plan, a.keep)
            runs.append(r)
            print(f"run {k + 1}/{a.runs}: {'held' if r.get('held') else 'FAILED'}", file=sys.stderr, flush=True)

    def worst(key: str, stat: str) -> float | None:
        xs = [r[key][stat] for r in runs if r.get("held") and r[key][stat] is not None]
        return max(xs) if xs else None

    print(json.dumps({
        "bench": "cluster_chaos", "runs": a.runs, "held": sum(1 for r in runs if r.get("held")),
        "workflows_per_run": a.workflows, "seconds": round(time.time() - t0, 1),
        "worst_signal_p99_while_paused_s": worst("signal_latency_while_paused_s", "p99"),
        "worst_completion_p99_while_paused_s": worst("completion_latency_while_paused_s", "p99"),
        "per_run": runs,
    }))


if __name__ == "__main__":
    main()
