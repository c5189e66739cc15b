"""Paths and loaders of the recorded histories (a uniquely named module, unlike ``conftest``)."""

from __future__ import annotations

import gzip

from pathlib import Path

from spindle.client import History

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures"
QUEUE = "widgets"


def load(name: str) -> History:
    """A recorded history from ``fixtures/`` (``.json`` or ``.json.gz``)."""
    data = (FIXTURES / name).read_bytes()
    return History.from_json(gzip.decompress(data) if name.endswith(".gz") else data)
