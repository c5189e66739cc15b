"""How long ``spindle.dsl.load`` takes on long step chains: prints one JSON line.

    .venv/bin/python bench/dsl_load.py [--steps 4000,20000] [--repeat 3]

For each size N, two documents are generated: ``plain``, a chain of N activity
steps each depending on the one before (20,000 steps are 1.1 MB of YAML), and
``exprs``, the same chain where each step also reads the previous step's result
in an expression. Times are the best of ``--repeat`` loads (parse, build,
validate), with the document's size in bytes. Loading is linear in the number
of steps: before issue 16 a 4,000-step chain took 9.8 s and 20,000 steps over
60 s (the upstream sets were computed per step, and scalars' positions by
re-splitting the text); the goal is under 2 s for 20,000 steps.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from spindle import dsl  # noqa: E402


def chain(steps: int, *, expressions: bool) -> str:
    """A YAML workflow of ``steps`` steps, each depending on the one before."""
    lines = ["name: chain", "steps:", "  - id: s0", "    activity: work"]
    for index in range(1, steps):
        lines += [f"  - id: s{index}", "    activity: work", f"    depends_on: [s{index - 1}]"]
        if expressions:
            lines.append(f'    args: ["${{{{ steps.s{index - 1}.result }}}}"]')
    return "\n".join(lines) + "\n"


def best_of(text: str, repeat: int) -> float:
    """The shortest of ``repeat`` loads of ``text``, in seconds."""
    times = []
    for _ in range(max(1, repeat)):
        started = time.perf_counter()
        dsl.load_text(text)
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    """Run the benchmark and print its JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", default="4000,20000", help="comma-separated chain lengths")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    results: dict[str, dict[str, float | int]] = {}
    for size in (int(part) for part in args.steps.split(",")):
        for label, expressions in (("plain", False), ("exprs", True)):
            text = chain(size, expressions=expressions)
            results[f"{label}_{size}"] = {"bytes": len(text.encode()), "load_s": round(best_of(text, args.repeat), 3)}
    print(json.dumps({"bench": "dsl_load", "repeat": args.repeat, "results": results}))


if __name__ == "__main__":
    main()
