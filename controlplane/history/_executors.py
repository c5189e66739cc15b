"""The executors of a shard's queues: which operation handles each kind of transfer task and timer.

``execute_transfer`` runs right after the commit that wrote the task (and for recovered
rows): workflow and activity tasks go to matching, visibility rows to the shard's ack
batch, and tasks that reach other executions run as background tasks, retried with
backoff while this process owns the shard. ``execute_timer`` handles a due timer.
"""

from __future__ import annotations

import asyncio
import logging

from spindle.controlplane._log_format import run_fields
from spindle.controlplane.errors import ServiceError, ShardNotOwned
from spindle.controlplane.matching import KIND_WORKFLOW, TaskRef

from ._context import HistoryContext
from ._shard import Shard
from ._tasks import (
    T_ACTIVITY_TASK,
    T_CANCEL_EXTERNAL,
    T_CLOSE,
    T_SIGNAL_EXTERNAL,
    T_START_CHILD,
    T_VISIBILITY,
    T_WORKFLOW_TASK,
    TM_ACTIVITY_RETRY,
    TM_ACTIVITY_TIMEOUT,
    TM_RETENTION,
    TM_SCHEDULE,
    TM_USER_TIMER,
    TM_WORKFLOW_RUN_TIMEOUT,
    TM_WORKFLOW_TASK_BACKOFF,
    TM_WORKFLOW_TASK_TIMEOUT,
    Task,
)
from .ops import activity_task, child, close, retention, schedule, user_timer, workflow_task
from .ops._run import row_from_json, timer_done

log = logging.getLogger("spindle.history")

#: Backoff of a transfer task that failed (say, the shard of the workflow it reaches is between owners).
TRANSFER_RETRY_FIRST_S = 0.5
TRANSFER_RETRY_MAX_S = 30.0

#: Transfer tasks that reach other executions, and their handlers.
_REACHING_OUT = {
    T_CLOSE: close.closed,
    T_START_CHILD: child.start_child,
    T_SIGNAL_EXTERNAL: child.signal_external,
    T_CANCEL_EXTERNAL: child.cancel_external,
}


def execute_transfer(ctx: HistoryContext, shard: Shard, t: Task) -> None:
    """Process one transfer task of ``shard`` (see the module docstring)."""
    if t.kind == T_WORKFLOW_TASK:
        ref = TaskRef(KIND_WORKFLOW, t.namespace_id, t.workflow_id, t.run_id, t.event_id, t.attempt,
                      ("t", shard.shard_id, t.task_id), pin=t.extra.get("p", ""))
        workflow_task.dispatch(ctx, ref, t.extra.get("q", ""))
    elif t.kind == T_ACTIVITY_TASK:
        activity_task.dispatch(ctx, t)
    elif t.kind == T_VISIBILITY:
        shard.visibility.append(row_from_json(t.extra["row"]))
        shard.transfer.ack(t.task_id)
    else:
        ctx.background.spawn(_reach_out(ctx, shard, t))


async def _reach_out(ctx: HistoryContext, shard: Shard, t: Task) -> None:
    """Run a transfer task that reaches other executions; retried with backoff while this process owns the shard.

    Every handler is idempotent (it re-reads the state and the request ids it wrote), so
    running one again after a failure, or after a crash, never applies it twice.
    """
    handler = _REACHING_OUT.get(t.kind)
    delay = TRANSFER_RETRY_FIRST_S
    while True:
        try:
            if handler is not None:
                await handler(ctx, t)
            shard.transfer.ack(t.task_id)
            return
        except ServiceError as e:
            if ctx.shards.owned.get(shard.shard_id) is not shard or ctx.background.stopping:
                return  # its row stays: the shard's next owner (or the next start) runs it
            ns = ctx.namespaces.by_id(t.namespace_id)
            # a shard between owners (this one fenced, or the target's moving) is routine during a
            # handover: retried quietly; the lease manager logs each shard this process loses
            log.log(logging.DEBUG if isinstance(e, ShardNotOwned) else logging.WARNING,
                    "transfer task %s of %s failed; retrying in %.1f s: %s", t.kind, t.workflow_id, delay, e,
                    extra=run_fields(ns.name if ns is not None else "", t.workflow_id, t.run_id))
        await asyncio.sleep(delay)
        delay = min(delay * 2, TRANSFER_RETRY_MAX_S)


async def execute_timer(ctx: HistoryContext, shard: Shard, t: Task) -> None:
    """Handle one due timer of ``shard``; an exception makes the timer queue retry it."""
    kind = t.kind
    if kind == TM_USER_TIMER:
        await user_timer.fired(ctx, t)
    elif kind in (TM_ACTIVITY_TIMEOUT, TM_ACTIVITY_RETRY):
        await activity_task.timer_fired(ctx, t)
    elif kind == TM_WORKFLOW_TASK_TIMEOUT:
        await workflow_task.timed_out(ctx, t)
    elif kind == TM_WORKFLOW_TASK_BACKOFF:
        await workflow_task.backoff_fired(ctx, t)
    elif kind == TM_WORKFLOW_RUN_TIMEOUT:
        await close.run_timed_out(ctx, t)
    elif kind == TM_RETENTION:
        await retention.retention_fired(ctx, shard, t)
    elif kind == TM_SCHEDULE:
        await schedule.fired(ctx, shard, t)
    else:
        timer_done(ctx, t)


__all__ = ["TRANSFER_RETRY_FIRST_S", "TRANSFER_RETRY_MAX_S", "execute_timer", "execute_transfer"]
