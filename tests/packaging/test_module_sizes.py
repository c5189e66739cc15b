"""Modules stay small enough to read: none over 500 lines outside generated code, and the
history service's under 400 (its modules are the ones every change to the engine reads)."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LIMIT = 500
HISTORY_LIMIT = 400


def _modules() -> list[Path]:
    found = [p for tree in ("sdk", "controlplane", "widgets") for p in (REPO / tree).rglob("*.py")]
    return [p for p in found if "__pycache__" not in p.parts and "_pb2" not in p.name]


def test_no_module_over_the_limit() -> None:
    sizes = {p.relative_to(REPO): len(p.read_text(encoding="utf-8").splitlines()) for p in _modules()}
    assert len(sizes) > 200
    too_long = sorted(f"{p}: {n} lines" for p, n in sizes.items() if n > LIMIT)
    history = sorted(f"{p}: {n} lines" for p, n in sizes.items()
                     if p.parts[:2] == ("controlplane", "history") and n >= HISTORY_LIMIT)
    assert not too_long, f"modules over {LIMIT} lines (split them by concept): {too_long}"
    assert not history, f"history modules at or over {HISTORY_LIMIT} lines: {history}"
