"""What a poller gets: the task it took from matching, recorded as started (or put back).

Frontend polls and a cluster member's reservations both start a polled task here.
"""

from __future__ import annotations

import asyncio

from typing import Any

from spindle.controlplane.matching import KIND_QUERY, KIND_WORKFLOW, TaskRef

from .._context import HistoryContext
from . import activity_task, query, workflow_task


async def start_polled(ctx: HistoryContext, ref: TaskRef, queue: str, kind: int, identity: str, *,
                       sticky: bool = False, version: str = "") -> Any:
    """Start a task a poller took from ``queue``: the poll response, or None if the task went stale.

    If the poller goes away (its call is cancelled) while the start waits for the
    workflow's lock or its state, the task goes back to the front of its queue for the
    next poller: nothing was started, and nothing else would ever offer it again (its
    transfer row is only re-read after a restart; an unstarted task has no timeout).
    """
    try:
        if ref.kind == KIND_QUERY:
            return await query.record_started(ctx, ref)
        if kind == KIND_WORKFLOW:
            return await workflow_task.record_started(ctx, ref, identity, sticky=sticky, version=version)
        return await activity_task.record_started(ctx, ref, identity)
    except asyncio.CancelledError:
        ctx.matching.queue(ref.namespace_id, queue, kind, sticky=sticky).push(ref, front=True)
        raise


__all__ = ["start_polled"]
