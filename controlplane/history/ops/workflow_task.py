"""Workflow tasks: dispatch, start, failure, timeout and backoff (completion is ``workflow_task_completed``).

A workflow task is scheduled (WorkflowTaskScheduled, with a transfer task that
dispatches it, or a backoff timer), handed to a worker (started in memory only: its
WorkflowTaskStarted event is written with the outcome, and a durable timeout timer
guards the start), then completed, failed or timed out. A failed or timed-out task is
scheduled again, after a backoff from the third attempt on.

Each start carries a nonce unique to this engine instance (``ctx.nonces``): a worker's
answer is accepted only for the start it names, and a start made by another process (one
that died, or the shard's previous owner) is known to be lost.
"""

from __future__ import annotations

import asyncio

from collections.abc import Callable

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.controlplane._field_rules import workflow_task_timeout_ms
from spindle.controlplane.archival import fitting_suffix
from spindle.controlplane.errors import NotFound
from spindle.controlplane.matching import KIND_WORKFLOW, TaskRef
from spindle.controlplane.store import Mutation

from .._context import HistoryContext
from .._mutable_state import MutableState
from .._outstanding import WORKFLOW as OUT_WORKFLOW
from .._outstanding import workflow_task_key
from .._pending import WorkflowTaskInfo
from .._tasks import T_WORKFLOW_TASK, TM_WORKFLOW_TASK_TIMEOUT, Task
from .._tokens import WORKFLOW, StartNonces, TaskToken
from .._txn import Txn
from .._versioning import pin_of, sticky_fits, task_extra, version_message
from ._run import add_start_timer, flush_buffered, run_key, schedule_workflow_task, timer_done, timer_txn


# ---------------------------------------------------------------------- dispatch and start
def dispatch(ctx: HistoryContext, ref: TaskRef, task_queue: str) -> None:
    """Offer a scheduled workflow task: to the worker holding the run in cache first.

    Only a ref for the run's current, unstarted task marks that task dispatched: a stale
    ref (an older task's transfer row whose acknowledgement was lost with a crash) is
    offered as it is (its start is refused and acknowledges the row) and must not make a
    timed-out task look as if it were still waiting in a queue.
    """
    st = ctx.cache.get((ref.namespace_id, ref.workflow_id, ref.run_id))
    wt = st.workflow_task if st is not None else None
    current = wt is not None and wt.scheduled_event_id == ref.event_id and wt.attempt == ref.attempt \
        and not wt.started
    if st is not None:
        ref.pin = pin_of(st)
        if st.sticky_queue and not sticky_fits(ctx.matching, st, ref.pin):
            st.sticky_queue = ""  # the worker holding the run is not the build its next task goes to
    if st is not None and wt is not None and current and st.sticky_queue:
        queue = st.sticky_queue
        wt.dispatched = True
        wt.sticky = True
        ctx.matching.add(ref, queue, sticky=True)
        # at most 2 minutes, like a task's start-to-close: a sticky worker that died never holds a run longer
        fallback_s = workflow_task_timeout_ms(st.sticky_timeout_ms,
                                              int(ctx.config.sticky_schedule_to_start_timeout * 1000)) / 1000.0

        def fall_back() -> None:
            cur = st.workflow_task
            if cur is wt and not cur.started and st.running:
                ctx.matching.remove(ref, queue, KIND_WORKFLOW)
                if ctx.metrics is not None:
                    ctx.metrics.sticky(st.namespace, False)
                st.sticky_queue = ""
                wt.sticky = False
                ctx.matching.add(ref, st.task_queue)

        asyncio.get_running_loop().call_later(fallback_s, fall_back)
        return
    if wt is not None and current:
        wt.dispatched = True
        if wt.avoid_identity:
            ref.avoid = wt.avoid_identity
            ref.avoid_for = ctx.config.sticky_schedule_to_start_timeout
    ctx.matching.add(ref, st.task_queue if st is not None else task_queue)


def start(ctx: HistoryContext, st: MutableState, wt: WorkflowTaskInfo, identity: str, m: Mutation | None = None, *,
          sticky: bool, txn: Txn | None = None, version: str = "") -> svc.PollWorkflowTaskQueueResponse:
    """Mark the task started (in memory) and build what the worker receives.

    The start itself is not an event yet (it is written with the outcome); the durable
    workflow-task timeout timer goes into ``txn`` (handed out with the write that
    scheduled the task) or ``m`` (a task a poller took), so a task lost with its worker
    times out even across a restart. With ``txn``, call this after the txn's last event.
    """
    now = ctx.clock.now_ms()
    wt.started = True
    wt.started_event_id = st.next_event_id
    wt.started_time_ms = now
    wt.nonce = ctx.nonces.new()
    wt.identity = identity
    if ctx.metrics is not None:
        ctx.metrics.task_started(st.namespace, "workflow", wt.scheduled_time_ms, now)
        if sticky:  # taken from the sticky queue, or handed straight back to the worker holding the run
            ctx.metrics.sticky(st.namespace, True)
    fire = now + workflow_task_timeout_ms(wt.timeout_ms, int(ctx.config.default_workflow_task_timeout * 1000))
    t = Task(TM_WORKFLOW_TASK_TIMEOUT, st.namespace_id, st.workflow_id, st.run_id, wt.scheduled_event_id, wt.attempt,
             extra={"n": wt.nonce}, fire_time_ms=fire)
    add_start_timer(ctx, st, t, m, txn)
    wt.timeout_timer = t
    started = pb.HistoryEvent(
        event_id=wt.started_event_id, event_time_ms=now, event_type=pb.EVENT_TYPE_WORKFLOW_TASK_STARTED,
        workflow_task_started_event_attributes=pb.WorkflowTaskStartedEventAttributes(
            scheduled_event_id=wt.scheduled_event_id, identity=identity, request_id=wt.nonce,
            suggest_continue_as_new=st.next_event_id > ctx.config.history_warn_events,
        ),
    )
    if version:  # the poller's build
        started.workflow_task_started_event_attributes.deployment_version.CopyFrom(version_message(version))
    wt.started_event = started
    updates = []
    wt.delivered_updates = []
    for uid, pu in st.pending_updates.items():
        if not pu.delivered:
            pu.delivered = True
            wt.delivered_updates.append(uid)
            updates.append(pu.request)
    first = st.last_completed_started_id if sticky else 0
    events = st.events[first:]
    events.append(started)
    # The task carries the newest events that fit in a page (always its WorkflowTaskStarted); a
    # worker fetches the older ones with GetWorkflowExecutionHistory, page by page.
    budget = ctx.config.history_page_max_bytes
    if st.may_hold_blob_refs or st.history_bytes + 8 * len(st.events) + 4096 > budget:  # else all of it fits
        keep = fitting_suffix(events, budget, may_hold_refs=st.may_hold_blob_refs)
        if keep < len(events):
            events = events[len(events) - keep:]
    tok = TaskToken(WORKFLOW, st.namespace_id, st.workflow_id, st.run_id, wt.scheduled_event_id, wt.attempt, wt.nonce,
                    st.task_queue)
    ctx.outstanding.add(run_key(st), workflow_task_key(wt.nonce), OUT_WORKFLOW)
    return svc.PollWorkflowTaskQueueResponse(
        task_token=ctx.tokens.encode(tok),
        workflow_execution=pb.WorkflowExecution(workflow_id=st.workflow_id, run_id=st.run_id),
        workflow_type=st.workflow_type,
        previous_started_event_id=st.last_completed_started_id,
        started_event_id=wt.started_event_id,
        attempt=wt.attempt,
        history=pb.History(events=events),
        updates=updates,
        scheduled_time_ms=wt.scheduled_time_ms,
        started_time_ms=now,
        namespace=st.namespace,
        task_queue=st.task_queue,
    )


def start_inline(ctx: HistoryContext, txn: Txn, identity: str, version: str = ""
                 ) -> svc.PollWorkflowTaskQueueResponse | None:
    """Start the next workflow task in memory if ``txn`` hands it straight back (``inline_workflow_task``).

    Called last before the commit: its timeout timer is written by the same transaction,
    and no transfer task is needed (a lost response times out).
    """
    st = txn.state
    wt = st.workflow_task
    if txn.inline_workflow_task and st.running and wt is not None and not wt.started:
        return start(ctx, st, wt, identity, sticky=True, txn=txn, version=version)
    return None


async def record_started(ctx: HistoryContext, ref: TaskRef, identity: str, *, sticky: bool,
                         version: str = "") -> svc.PollWorkflowTaskQueueResponse | None:
    """Start the task a poller took; None if it went stale (then the poller takes the next)."""
    async with ctx.cache.locked(ref.namespace_id, ref.workflow_id):
        st = await ctx.cache.load(ref.namespace_id, ref.workflow_id, ref.run_id)
        shard = ctx.shards.shard_for(ref.namespace_id, ref.workflow_id)
        m = Mutation(shard_id=shard.shard_id, range_id=shard.range_id)
        ctx.backlog.source_ack(ref, m)
        wt = st.workflow_task if st is not None else None
        if st is None or not st.running or wt is None or wt.scheduled_event_id != ref.event_id or wt.started:
            ctx.write_background(m)
            return None
        resp = start(ctx, st, wt, identity, m, sticky=sticky, version=version)
        ctx.write_background(m)
        return resp


# ---------------------------------------------------------------------- outcomes
def current(ctx: HistoryContext, st: MutableState | None, tok: TaskToken) -> WorkflowTaskInfo:
    """The started task ``tok`` names; NotFound (and it no longer counts as outstanding) if that start is over."""
    wt = st.workflow_task if st is not None else None
    if st is None or not st.running or wt is None or not wt.started or wt.scheduled_event_id != tok.scheduled_event_id \
            or wt.nonce != tok.nonce:
        ctx.outstanding.discard((tok.namespace_id, tok.workflow_id, tok.run_id), workflow_task_key(tok.nonce))
        raise NotFound("task_token: workflow task not found (already completed or timed out, or the execution closed)")
    return wt


def write_started(ctx: HistoryContext, txn: Txn, wt: WorkflowTaskInfo) -> None:
    """Write the task's WorkflowTaskStarted (held in memory since the start) ahead of its outcome."""
    st = txn.state
    ctx.admission.workflow_task_done((st.namespace_id, st.workflow_id, st.run_id, wt.scheduled_event_id))
    assert wt.started_event is not None
    assert txn.state.next_event_id == wt.started_event_id, "events were appended while a workflow task ran"
    txn.append_numbered(wt.started_event)
    if wt.timeout_timer is not None:
        txn.delete_timer(wt.timeout_timer)
    ctx.outstanding.discard(run_key(st), workflow_task_key(wt.nonce))


def fail(ctx: HistoryContext, txn: Txn, wt: WorkflowTaskInfo, cause: pb.WorkflowTaskFailedCause, failure: pb.Failure,
         identity: str, *, timed_out: bool = False, inline: bool = False) -> None:
    """Record the task's failure (or timeout), flush buffered events and schedule a retry."""
    st = txn.state
    write_started(ctx, txn, wt)
    if timed_out:
        txn.event(pb.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT, "workflow_task_timed_out_event_attributes",
                  pb.WorkflowTaskTimedOutEventAttributes(scheduled_event_id=wt.scheduled_event_id,
                                                        started_event_id=wt.started_event_id,
                                                        timeout_type=pb.TIMEOUT_TYPE_START_TO_CLOSE))
    else:
        txn.event(pb.EVENT_TYPE_WORKFLOW_TASK_FAILED, "workflow_task_failed_event_attributes",
                  pb.WorkflowTaskFailedEventAttributes(scheduled_event_id=wt.scheduled_event_id,
                                                      started_event_id=wt.started_event_id, cause=cause,
                                                      failure=failure, identity=identity))
    _requeue_updates(st, wt)
    st.sticky_queue = ""
    flush_buffered(txn)
    attempt = wt.attempt + 1
    backoff_ms = 0 if attempt <= 2 else int(min(2 ** (attempt - 3), 60) * 1000)
    schedule_workflow_task(ctx, txn, attempt=attempt, backoff_ms=backoff_ms, inline=inline and backoff_ms == 0)
    nxt = st.workflow_task
    if timed_out and nxt is not None and nxt is not wt:
        # its poller took the task and never answered: offer the retry to another poller first
        nxt.avoid_identity = wt.identity


def _requeue_updates(st: MutableState, wt: WorkflowTaskInfo) -> None:
    for uid in wt.delivered_updates:
        pu = st.pending_updates.get(uid)
        if pu is not None:
            pu.delivered = False


async def respond_failed(ctx: HistoryContext, req: svc.RespondWorkflowTaskFailedRequest) -> None:
    """The worker failed the task: record it and schedule the next attempt."""
    tok = ctx.tokens.decode(req.task_token, WORKFLOW)
    async with ctx.cache.locked(tok.namespace_id, tok.workflow_id):
        st = await ctx.cache.load(tok.namespace_id, tok.workflow_id, tok.run_id)
        wt = current(ctx, st, tok)
        assert st is not None
        txn = Txn(st, ctx.clock.now_ms())
        fail(ctx, txn, wt, req.cause or pb.WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_WORKER_UNHANDLED_FAILURE,
             req.failure, req.identity)
        await ctx.commit(txn)


async def timed_out(ctx: HistoryContext, t: Task) -> None:
    """A workflow task's timeout timer fired: time the started task out, or offer a lost one again."""
    async with ctx.cache.locked(t.namespace_id, t.workflow_id):
        st = await ctx.cache.load(t.namespace_id, t.workflow_id, t.run_id)
        txn = Txn(st, ctx.clock.now_ms()) if st is not None else None
        wt = st.workflow_task if st is not None else None
        if st is None or txn is None or not st.running or wt is None or wt.scheduled_event_id != t.event_id \
                or wt.attempt != t.attempt:
            timer_done(ctx, t)
            # that start is over (its run closed, or the task completed or timed out since)
            ctx.outstanding.discard((t.namespace_id, t.workflow_id, t.run_id), workflow_task_key(str(t.extra.get("n", ""))))
            return
        timer_done(ctx, t, txn)
        if wt.started and wt.nonce == t.extra.get("n"):
            wt.timeout_timer = None
            fail(ctx, txn, wt, pb.WORKFLOW_TASK_FAILED_CAUSE_UNSPECIFIED, pb.Failure(), "", timed_out=True)
            await ctx.commit(txn)
        elif not wt.started and not wt.dispatched:
            # Started before a restart (the timer row proves it) and lost with its worker:
            # offer it again; nothing of that start was ever written. Through a transfer task
            # written with the timer's deletion: the timer row was the task's only durable
            # trace, and an in-memory dispatch was lost for good if the server died again
            # before a worker started it (the run then waited forever).
            txn.transfer.append(Task(T_WORKFLOW_TASK, st.namespace_id, st.workflow_id, st.run_id,
                                     wt.scheduled_event_id, wt.attempt, extra=task_extra(st, st.task_queue)))
            await ctx.commit(txn)
        else:
            await ctx.commit(txn)


async def backoff_fired(ctx: HistoryContext, t: Task) -> None:
    """A workflow task's backoff timer fired: the first task after a start delay, or a retried failing task."""
    async with ctx.cache.locked(t.namespace_id, t.workflow_id):
        txn = await timer_txn(ctx, t)
        if txn is None:
            return
        st = txn.state
        wt = st.workflow_task
        if t.event_id == 0:
            if wt is None:
                schedule_workflow_task(ctx, txn)  # the first task after a start delay
            await ctx.commit(txn)
            return
        if wt is not None and wt.scheduled_event_id == t.event_id and not wt.started:
            # a transfer task with the timer's deletion (not an in-memory dispatch after it):
            # a crash before a worker starts the task must not lose it
            txn.transfer.append(Task(T_WORKFLOW_TASK, st.namespace_id, st.workflow_id, st.run_id,
                                     wt.scheduled_event_id, wt.attempt, extra=task_extra(st, st.task_queue)))
        await ctx.commit(txn)


def timeout_due_at(nonces: StartNonces) -> Callable[[Task, int], int]:
    """The timer queue's policy for loaded timers: when each is handled (its fire time, or now).

    A workflow task started by another process (one that crashed, or the shard's previous
    owner) can never be completed: its worker's answer names a start this engine did not
    make. Its timeout is handled at once (the task is offered again) instead of after the
    rest of the task timeout (for timeouts inside the timer preload window, 30 s by default).
    """

    def due_at(t: Task, now_ms: int) -> int:
        if t.kind == TM_WORKFLOW_TASK_TIMEOUT and not nonces.issued_here(str(t.extra.get("n", ""))):
            return min(t.fire_time_ms, now_ms)
        return t.fire_time_ms

    return due_at


__all__ = ["backoff_fired", "current", "dispatch", "fail", "record_started", "respond_failed", "start", "start_inline",
           "timed_out", "timeout_due_at", "write_started"]
