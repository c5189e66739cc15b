"""How long a 5,000-event history takes to become an SVG: prints one JSON line.

    .venv/bin/python bench/widgets_render.py [--repeat 5]

Uses the recorded Fanout run in ``tests/widgets/fixtures/big.json.gz`` (25 rounds
of 66 parallel activities). Times, best of ``--repeat``: parsing the History
JSON, building the causal graph, rendering the graph SVG (layout included) and
the timeline SVG. The goal is under 2 s for ``graph_s + svg_s``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from spindle import History  # noqa: E402
from spindle.widgets._graph_model import build_graph  # noqa: E402
from spindle.widgets._history_render import history_svg  # noqa: E402
from spindle.widgets._timeline import timeline_svg  # noqa: E402

FIXTURE = ROOT / "tests" / "widgets" / "fixtures" / "big.json.gz"


def main() -> None:
    """Run the benchmark and print its JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    text = gzip.decompress(FIXTURE.read_bytes())
    best: dict[str, float] = {}
    for _ in range(max(1, args.repeat)):
        t0 = time.perf_counter()
        history = History.from_json(text)
        t1 = time.perf_counter()
        builder = build_graph(history)
        t2 = time.perf_counter()
        svg = history_svg(builder)
        t3 = time.perf_counter()
        timeline = timeline_svg(builder)
        t4 = time.perf_counter()
        for key, value in (("parse_s", t1 - t0), ("graph_s", t2 - t1), ("svg_s", t3 - t2), ("timeline_s", t4 - t3)):
            best[key] = min(best.get(key, value), value)
    result = {
        "bench": "widgets_render",
        "events": len(history.events),
        "nodes": builder.graph.number_of_nodes(),
        "edges": builder.graph.number_of_edges(),
        "svg_bytes": len(svg),
        "timeline_bytes": len(timeline),
        **{k: round(v, 4) for k, v in best.items()},
        "history_to_svg_s": round(best["graph_s"] + best["svg_s"], 4),
        "under_2s": best["graph_s"] + best["svg_s"] < 2.0,
        "repeat": args.repeat,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
