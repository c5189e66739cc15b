"""Helpers many operations share: building a run, scheduling its workflow task, timers, visibility records."""

from __future__ import annotations

import json
import uuid

from typing import Any

from spindle.api import messages_pb2 as pb
from spindle.controlplane._field_rules import workflow_task_timeout_ms
from spindle.controlplane._search_attributes import search_attribute_values
from spindle.controlplane.store import Mutation, TimerTask, VisibilityRow

from .._context import HistoryContext
from .._mutable_state import MutableState
from .._outstanding import RunKey
from .._tasks import T_VISIBILITY, T_WORKFLOW_TASK, TM_WORKFLOW_RUN_TIMEOUT, TM_WORKFLOW_TASK_BACKOFF, Task
from .._txn import Txn
from .._versioning import pin_of, sticky_fits, task_extra


def new_run_id() -> str:
    return str(uuid.uuid4())


def run_key(st: MutableState) -> RunKey:
    return (st.namespace_id, st.workflow_id, st.run_id)


# ---------------------------------------------------------------------- timers
def new_timer(txn: Txn, kind: str, fire_time_ms: int, *, event_id: int = 0, attempt: int = 0, sub: str = "",
              extra: dict[str, Any] | None = None) -> Task:
    """A durable timer of the txn's run, written with the txn (its task id is assigned at commit)."""
    st = txn.state
    t = Task(kind, st.namespace_id, st.workflow_id, st.run_id, event_id, attempt, sub, extra or {}, fire_time_ms=fire_time_ms)
    txn.timers.append(t)
    return t


def timer_done(ctx: HistoryContext, t: Task, txn: Txn | None = None) -> None:
    """Delete a processed timer's row (with the txn, or in the shard's next ack batch)."""
    key = (t.fire_time_ms, t.task_id)
    if txn is not None:
        txn.timer_delete.append(key)
    else:
        ctx.shards.shard_for(t.namespace_id, t.workflow_id).timers.done(key)


async def timer_txn(ctx: HistoryContext, t: Task) -> Txn | None:
    """A txn that deletes the fired timer ``t``; None (timer dropped) if its run is gone or closed.

    The caller holds the workflow id's lock.
    """
    st = await ctx.cache.load(t.namespace_id, t.workflow_id, t.run_id)
    if st is None or not st.running:
        timer_done(ctx, t)
        return None
    txn = Txn(st, ctx.clock.now_ms())
    timer_done(ctx, t, txn)
    return txn


def add_start_timer(ctx: HistoryContext, st: MutableState, t: Task, m: Mutation | None, txn: Txn | None) -> None:
    """A task start's timeout timer: with the transaction that hands the task out, or a small write of its own."""
    if txn is not None:
        txn.timers.append(t)
        return
    assert m is not None
    shard = ctx.shards.owned[st.shard_id]
    t.task_id = shard.next_task_id()
    m.timer_insert.append(TimerTask(t.fire_time_ms, t.task_id, t.encode()))
    shard.timers.arm(t)


# ---------------------------------------------------------------------- runs and workflow tasks
def schedule_workflow_task(ctx: HistoryContext, txn: Txn, *, attempt: int = 1, backoff_ms: int = 0,
                           inline: bool = False) -> None:
    """Append WorkflowTaskScheduled and the task that dispatches it (after ``backoff_ms``)."""
    st = txn.state
    assert st.started is not None
    # clamped again here: runs started before the clamp existed may carry any value
    timeout = workflow_task_timeout_ms(st.started.task_timeout_ms, int(ctx.config.default_workflow_task_timeout * 1000))
    e = txn.event(
        pb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
        "workflow_task_scheduled_event_attributes",
        pb.WorkflowTaskScheduledEventAttributes(task_queue=st.task_queue, start_to_close_timeout_ms=timeout, attempt=attempt),
    )
    key = (st.namespace_id, st.workflow_id, st.run_id, e.event_id)
    admission = ctx.admission
    txn.after_commit.append(lambda: admission.workflow_task_scheduled(key))
    if backoff_ms > 0:
        new_timer(txn, TM_WORKFLOW_TASK_BACKOFF, txn.now_ms + backoff_ms, event_id=e.event_id, attempt=attempt)
    elif inline and sticky_fits(ctx.matching, st, pin_of(st)):
        txn.inline_workflow_task = True  # the caller starts it before committing (start_inline_tasks)
    else:
        txn.transfer.append(Task(T_WORKFLOW_TASK, st.namespace_id, st.workflow_id, st.run_id, e.event_id, attempt,
                                 extra=task_extra(st, st.task_queue)))


def build_run(ctx: HistoryContext, state: MutableState, attrs: pb.WorkflowExecutionStartedEventAttributes, now_ms: int,
              *, start_delay_ms: int = 0) -> Txn:
    """A new run's first events and tasks (not yet committed)."""
    txn = Txn(state, now_ms)
    txn.event(pb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, "workflow_execution_started_event_attributes", attrs)
    if start_delay_ms > 0:
        new_timer(txn, TM_WORKFLOW_TASK_BACKOFF, now_ms + start_delay_ms, event_id=0, attempt=1)
    else:
        schedule_workflow_task(ctx, txn)
    deadline = 0
    if attrs.run_timeout_ms:
        deadline = now_ms + start_delay_ms + attrs.run_timeout_ms
    if attrs.execution_expiration_time_ms:
        deadline = min(deadline, attrs.execution_expiration_time_ms) if deadline else attrs.execution_expiration_time_ms
    if deadline:
        state.run_timer = new_timer(txn, TM_WORKFLOW_RUN_TIMEOUT, deadline)
    visibility_task(ctx, txn)
    return txn


def flush_buffered(txn: Txn) -> None:
    """Write the events buffered behind a workflow task into the history (after the task's own events).

    A buffered TimerFired whose timer is no longer pending is dropped: the task's commands
    cancelled it (its TimerCanceled is its one end, as in Temporal), and a timer the task
    started under the same id is not the one that fired.
    """
    st = txn.state
    if st.buffered:
        for e in st.buffered:
            if e.event_type == pb.EVENT_TYPE_TIMER_FIRED and not st.ends_pending_timer(e):
                continue
            txn.append_numbered(e)
        st.buffered = []
        txn.clear_buffered = True
    txn.buffered = []


# ---------------------------------------------------------------------- visibility
def visibility_task(ctx: HistoryContext, txn: Txn) -> None:
    """Queue the run's visibility record (written from the transfer queue)."""
    st = txn.state
    row = visibility_row(ctx, st)
    txn.transfer.append(Task(T_VISIBILITY, st.namespace_id, st.workflow_id, st.run_id, extra={"row": row_to_json(row)}))


def visibility_row(ctx: HistoryContext, st: MutableState) -> VisibilityRow:
    closed = not st.running
    parent = st.started.parent if st.started is not None and st.started.HasField("parent") else None
    return VisibilityRow(
        namespace_id=st.namespace_id, workflow_id=st.workflow_id, run_id=st.run_id, workflow_type=st.workflow_type,
        status=st.status, task_queue=st.task_queue, start_time_ms=st.start_time_ms,
        close_time_ms=st.close_time_ms if closed else None,
        execution_duration_ms=(st.close_time_ms - st.start_time_ms) if closed else None,
        history_length=st.next_event_id - 1,
        search_attributes=json.dumps(search_attribute_values(ctx.namespaces.by_id(st.namespace_id), st.search_attributes),
                                     sort_keys=True),
        memo=pb.Memo(fields=st.memo).SerializeToString(),
        parent_workflow_id=parent.execution.workflow_id if parent else "",
        parent_run_id=parent.execution.run_id if parent else "",
    )


def note_history_length(ctx: HistoryContext, st: MutableState) -> None:
    """Queue ``st``'s history length for its visibility row, with the shard's next ack batch.

    Visibility rows are written when a run starts, upserts search attributes and
    closes; without this ``list_workflows`` kept showing a running run's length at its
    start. Coalesced per run and batch, so it adds no write per event or per task.
    """
    shard = ctx.shards.owned.get(st.shard_id)
    if shard is not None and st.running:
        shard.history_lengths[(st.namespace_id, st.run_id)] = st.next_event_id - 1


def row_to_json(row: VisibilityRow) -> dict[str, object]:
    d = dict(row.__dict__)
    d["memo"] = row.memo.hex()
    return d


def row_from_json(d: dict[str, object]) -> VisibilityRow:
    d = dict(d)
    d["memo"] = bytes.fromhex(str(d["memo"]))
    return VisibilityRow(**d)  # type: ignore[arg-type]


__all__ = ["add_start_timer", "build_run", "flush_buffered", "new_run_id", "new_timer", "note_history_length", "row_from_json",
           "row_to_json", "run_key", "schedule_workflow_task", "timer_done", "timer_txn", "visibility_row",
           "visibility_task"]
