"""What the widgets accept as an execution: a ``WorkflowHandle``, a ``History``, or History JSON."""

from __future__ import annotations

import os

from pathlib import Path
from typing import Any

from spindle import History

__all__ = ["is_handle", "load_history"]


def is_handle(source: Any) -> bool:
    """True for a ``WorkflowHandle`` (anything with an async ``fetch_history``)."""
    return not isinstance(source, History) and callable(getattr(source, "fetch_history", None))


def load_history(source: Any) -> History:
    """A ``History`` from a ``History``, History JSON text or bytes, its parsed dict, or a JSON file path.

    Raises:
        ValueError: the value is not in the history format.
        TypeError: the value is none of the accepted kinds.
    """
    if isinstance(source, History):
        return source
    if isinstance(source, dict):
        return History.from_json(source)
    if isinstance(source, bytes):
        return History.from_json(source)
    if isinstance(source, str) and source.lstrip().startswith("{"):
        return History.from_json(source)
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        data = path.read_bytes()
        if path.suffix == ".gz":
            import gzip

            data = gzip.decompress(data)
        return History.from_json(data)
    raise TypeError(f"expected a WorkflowHandle, a History or History JSON, got {type(source).__name__}")
