"""What the widgets accept as an execution: a ``WorkflowHandle``, a ``History``, or History JSON."""

from __future__ import annotations

import asyncio
import concurrent.futures
import os

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from spindle.client import History
from spindle.converter import decode_history

__all__ = ["is_handle", "load_history", "codecs_for"]


def is_handle(source: Any) -> bool:
    """True for a ``WorkflowHandle`` (anything with an async ``fetch_history``)."""
    return not isinstance(source, History) and callable(getattr(source, "fetch_history", None))


def codecs_for(client: Any, codecs: Sequence[Any] | None) -> tuple[Sequence[Any], str]:
    """The codecs (and namespace) to decode a recorded history with: ``codecs`` if given, else the client's."""
    namespace = str(getattr(client, "namespace", "") or "default")
    if codecs is not None:
        return tuple(codecs), namespace
    return tuple(getattr(client, "codecs", ()) or ()), namespace


def load_history(source: Any, *, codecs: Sequence[Any] = (), namespace: str = "default") -> History:
    """A ``History`` from a ``History``, History JSON text or bytes, its parsed dict, or a JSON file path.

    With ``codecs``, its payloads are decoded (as stored, a history holds what the codecs
    encoded); an event they cannot decode is kept as it is and drawn with opaque payloads.

    Raises:
        ValueError: the value is not in the history format.
        TypeError: the value is none of the accepted kinds.
    """
    history = _load(source)
    if codecs:
        # The codecs are async; run them on a private loop in a helper thread, so this works
        # while the kernel's event loop runs in this thread (a notebook).
        with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="spindle-decode") as pool:
            history, _errors = pool.submit(asyncio.run, decode_history(history, codecs, namespace=namespace)).result()
    return history


def _load(source: Any) -> History:
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
