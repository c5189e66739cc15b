"""History pages cut by bytes: every page the server sends fits well inside a gRPC message.

A page of N events could exceed the 64 MiB message limit (1,000 signals of 250 KB), and
then no client and no worker could ever read the history. Pages are therefore cut at
``ServerConfig.history_page_max_bytes``, counting each large-payload reference at the
size of the payload it expands to, and always hold at least one event (so every history
the server accepted reads back, page by page).
"""

from __future__ import annotations

from collections.abc import Sequence

from spindle.api import messages_pb2 as pb

from ._blobs import BLOB_REF_ENCODING, is_blob_ref, ref_expanded_size
from ._visitor import iter_payloads

__all__ = ["event_page_size", "fitting_prefix", "fitting_suffix"]

#: Bytes an event adds to a page besides its own (field tag and length).
_FRAMING = 8


def event_page_size(e: pb.HistoryEvent, *, may_hold_refs: bool = True) -> int:
    """Bytes ``e`` takes in a response once its blob references are expanded.

    ``may_hold_refs=False`` (the run holds no reference) skips the reference scan.
    """
    n = e.ByteSize() + _FRAMING
    if may_hold_refs and BLOB_REF_ENCODING in e.SerializeToString():
        n += sum(ref_expanded_size(p) - p.ByteSize() for p in iter_payloads(e) if is_blob_ref(p))
    return n


def fitting_prefix(events: Sequence[pb.HistoryEvent], budget: int, *, may_hold_refs: bool = True) -> int:
    """How many of the first events fit in ``budget`` bytes (at least 1 when there are events)."""
    total = 0
    for i, e in enumerate(events):
        total += event_page_size(e, may_hold_refs=may_hold_refs)
        if total > budget and i > 0:
            return i
    return len(events)


def fitting_suffix(events: Sequence[pb.HistoryEvent], budget: int, *, may_hold_refs: bool = True) -> int:
    """How many of the last events fit in ``budget`` bytes (at least 1 when there are events)."""
    total = 0
    n = len(events)
    for i in range(n):
        total += event_page_size(events[n - 1 - i], may_hold_refs=may_hold_refs)
        if total > budget and i > 0:
            return i
    return n
