"""Activity tasks: dispatch, start, heartbeat, outcomes, server-side retries and timeouts.

An activity's attempts are retried by the server per its retry policy. A retried attempt
writes no history event (its count, schedule time and failure live on the execution row,
``ActivityRetryState``); only the final attempt writes ActivityTaskStarted together with
its outcome. A worker's answer for an attempt that is over gets NOT_FOUND.
"""

from __future__ import annotations

from typing import Any, Callable

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.controlplane.errors import NotFound
from spindle.controlplane.matching import KIND_ACTIVITY, TaskRef
from spindle.controlplane.store import Mutation

from .. import _retry
from .._context import HistoryContext
from .._mutable_state import MutableState
from .._outstanding import ACTIVITY as OUT_ACTIVITY
from .._outstanding import activity_task_key
from .._pending import ActivityInfo
from .._tasks import T_ACTIVITY_TASK, TM_ACTIVITY_RETRY, TM_ACTIVITY_TIMEOUT, Task
from .._tokens import ACTIVITY, TaskToken
from .._txn import Txn
from .._versioning import pin_of, task_extra
from . import workflow_task
from ._run import add_start_timer, new_timer, run_key, schedule_workflow_task, timer_done

_TIMEOUT_TYPES = {
    "START_TO_CLOSE": pb.TIMEOUT_TYPE_START_TO_CLOSE,
    "SCHEDULE_TO_START": pb.TIMEOUT_TYPE_SCHEDULE_TO_START,
    "SCHEDULE_TO_CLOSE": pb.TIMEOUT_TYPE_SCHEDULE_TO_CLOSE,
    "HEARTBEAT": pb.TIMEOUT_TYPE_HEARTBEAT,
}


def start(ctx: HistoryContext, st: MutableState, info: ActivityInfo, identity: str, m: Mutation | None = None, *,
          txn: Txn | None = None) -> svc.PollActivityTaskQueueResponse:
    """Mark the attempt started (in memory); ``m`` or ``txn`` gets its durable timeout timers."""
    now = ctx.clock.now_ms()
    info.started = True
    info.started_time_ms = now
    info.identity = identity
    info.last_heartbeat_ms = now
    if ctx.metrics is not None:
        ctx.metrics.task_started(st.namespace, "activity", info.attempt_scheduled_time_ms or info.scheduled_time_ms, now)
    old = info.timers.pop("SCHEDULE_TO_START", None)
    if old is not None:
        if txn is not None:
            txn.delete_timer(old)
        elif m is not None and old.task_id:
            m.timer_delete.append((old.fire_time_ms, old.task_id))
    for sub, ms in (("START_TO_CLOSE", info.start_to_close_ms), ("HEARTBEAT", info.heartbeat_ms)):
        if ms:
            t = Task(TM_ACTIVITY_TIMEOUT, st.namespace_id, st.workflow_id, st.run_id, info.scheduled_event_id,
                     info.attempt, sub, fire_time_ms=now + ms)
            add_start_timer(ctx, st, t, m, txn)
            info.timers[sub] = t
    ctx.outstanding.add(run_key(st), activity_task_key(info.scheduled_event_id, info.attempt), OUT_ACTIVITY)
    tok = TaskToken(ACTIVITY, st.namespace_id, st.workflow_id, st.run_id, info.scheduled_event_id, info.attempt,
                    task_queue=info.task_queue)
    resp = svc.PollActivityTaskQueueResponse(
        task_token=ctx.tokens.encode(tok), workflow_namespace=st.namespace, workflow_type=st.workflow_type,
        workflow_execution=pb.WorkflowExecution(workflow_id=st.workflow_id, run_id=st.run_id),
        activity_type=info.activity_type, activity_id=info.activity_id, input=info.input,
        scheduled_time_ms=info.scheduled_time_ms, current_attempt_scheduled_time_ms=info.attempt_scheduled_time_ms,
        started_time_ms=now, attempt=info.attempt, schedule_to_close_timeout_ms=info.schedule_to_close_ms,
        start_to_close_timeout_ms=info.start_to_close_ms, heartbeat_timeout_ms=info.heartbeat_ms,
        retry_policy=info.retry_policy, header=info.header, task_queue=info.task_queue,
    )
    if info.heartbeat_details is not None:
        resp.heartbeat_details.CopyFrom(info.heartbeat_details)
    return resp


async def record_started(ctx: HistoryContext, ref: TaskRef, identity: str) -> svc.PollActivityTaskQueueResponse | None:
    """Start the attempt a poller took; None if it went stale (then the poller takes the next)."""
    async with ctx.cache.locked(ref.namespace_id, ref.workflow_id):
        st = await ctx.cache.load(ref.namespace_id, ref.workflow_id, ref.run_id)
        shard = ctx.shards.shard_for(ref.namespace_id, ref.workflow_id)
        m = Mutation(shard_id=shard.shard_id, range_id=shard.range_id)
        ctx.backlog.source_ack(ref, m)
        info = st.activities.get(ref.event_id) if st is not None and st.running else None
        if st is None or info is None or info.attempt != ref.attempt or info.started:
            ctx.write_background(m)
            return None
        resp = start(ctx, st, info, identity, m)
        ctx.write_background(m)
        return resp


def dispatch(ctx: HistoryContext, t: Task) -> None:
    """Offer an activity task (from the transfer queue) to its task queue."""
    ref = TaskRef(KIND_ACTIVITY, t.namespace_id, t.workflow_id, t.run_id, t.event_id, t.attempt,
                  ("t", ctx.shards.shard_for(t.namespace_id, t.workflow_id).shard_id, t.task_id) if t.task_id else None)
    ref.pin = t.extra.get("p", "")
    st = ctx.cache.get((t.namespace_id, t.workflow_id, t.run_id))
    if st is not None:
        ref.pin = pin_of(st)
        info = st.activities.get(t.event_id)
        if info is not None:
            info.dispatched = True
    ctx.matching.add(ref, t.extra.get("q", ""))


# ---------------------------------------------------------------------- outcomes
def _pending(ctx: HistoryContext, st: MutableState | None, tok: TaskToken) -> ActivityInfo:
    """The attempt ``tok`` names; NotFound (and it no longer counts as outstanding) if it is over."""
    info = st.activities.get(tok.scheduled_event_id) if st is not None and st.running else None
    if info is None or info.attempt != tok.attempt or info.closed:
        # the attempt is over for the server: its worker no longer counts as busy with it
        ctx.outstanding.discard((tok.namespace_id, tok.workflow_id, tok.run_id),
                                 activity_task_key(tok.scheduled_event_id, tok.attempt))
        raise NotFound("task_token: activity task not found (already completed, timed out or retried, or the "
                       "execution closed)")
    return info


def _attempt_started(ctx: HistoryContext, txn: Txn, info: ActivityInfo) -> None:
    """ActivityTaskStarted of the activity's final attempt (written with its outcome)."""
    txn.external(pb.EVENT_TYPE_ACTIVITY_TASK_STARTED, "activity_task_started_event_attributes",
                 pb.ActivityTaskStartedEventAttributes(scheduled_event_id=info.scheduled_event_id, identity=info.identity,
                                                       attempt=info.attempt, last_failure=info.last_failure))
    _release_attempt(ctx, txn.state, info)


def _release_attempt(ctx: HistoryContext, st: MutableState, info: ActivityInfo) -> None:
    """The current attempt is over: it no longer counts as handed to a worker."""
    info.started = False
    ctx.outstanding.discard(run_key(st), activity_task_key(info.scheduled_event_id, info.attempt))


def _after_outcome(ctx: HistoryContext, txn: Txn, sticky_queue: str) -> None:
    st = txn.state
    if txn.wake and st.running and st.workflow_task is None:
        inline = bool(sticky_queue) and sticky_queue == st.sticky_queue
        schedule_workflow_task(ctx, txn, inline=inline)


async def _respond(ctx: HistoryContext, task_token: bytes, identity: str, sticky_task_queue: str,
                   record: Callable[[Txn, ActivityInfo], None]) -> svc.PollWorkflowTaskQueueResponse | None:
    """An attempt's outcome: ``record`` writes its events; returns the next workflow task if handed back."""
    tok = ctx.tokens.decode(task_token, ACTIVITY)
    async with ctx.cache.locked(tok.namespace_id, tok.workflow_id):
        st = await ctx.cache.load(tok.namespace_id, tok.workflow_id, tok.run_id)
        info = _pending(ctx, st, tok)
        assert st is not None
        txn = Txn(st, ctx.clock.now_ms())
        if not info.identity:
            info.identity = identity
        record(txn, info)
        _after_outcome(ctx, txn, sticky_task_queue)
        wt = workflow_task.start_inline(ctx, txn, identity)
        await ctx.commit(txn)
        return wt


def _final_outcome(ctx: HistoryContext, txn: Txn, info: ActivityInfo, event_type: pb.EventType, attr: str,
                   attrs: Any) -> None:
    """Started + Completed/Canceled: the activity is done (buffered while a workflow task runs)."""
    _attempt_started(ctx, txn, info)
    delete_timers(txn, info)
    txn.external(event_type, attr, attrs)
    info.closed = bool(txn.buffered)
    txn.wake = txn.wake or bool(txn.buffered)


async def respond_completed(ctx: HistoryContext, req: svc.RespondActivityTaskCompletedRequest
                            ) -> svc.RespondActivityTaskCompletedResponse:
    """The attempt completed: the activity is done."""

    def record(txn: Txn, info: ActivityInfo) -> None:
        _final_outcome(ctx, txn, info, pb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, "activity_task_completed_event_attributes",
                       pb.ActivityTaskCompletedEventAttributes(
                           result=req.result, scheduled_event_id=info.scheduled_event_id, identity=req.identity))

    wt = await _respond(ctx, req.task_token, req.identity, req.sticky_task_queue, record)
    return svc.RespondActivityTaskCompletedResponse(workflow_task=wt)


async def respond_failed(ctx: HistoryContext, req: svc.RespondActivityTaskFailedRequest
                         ) -> svc.RespondActivityTaskFailedResponse:
    """The attempt failed: retried per the retry policy, or the activity failed."""

    def record(txn: Txn, info: ActivityInfo) -> None:
        if req.HasField("last_heartbeat_details"):
            info.heartbeat_details = req.last_heartbeat_details
        _fail_attempt(ctx, txn, info, req.failure, timeout_sub=None, identity=req.identity)

    wt = await _respond(ctx, req.task_token, req.identity, req.sticky_task_queue, record)
    return svc.RespondActivityTaskFailedResponse(workflow_task=wt)


async def respond_canceled(ctx: HistoryContext, req: svc.RespondActivityTaskCanceledRequest
                           ) -> svc.RespondActivityTaskCanceledResponse:
    """The attempt ended as cancelled (after the workflow asked): the activity is done."""

    def record(txn: Txn, info: ActivityInfo) -> None:
        _final_outcome(ctx, txn, info, pb.EVENT_TYPE_ACTIVITY_TASK_CANCELED, "activity_task_canceled_event_attributes",
                       pb.ActivityTaskCanceledEventAttributes(
                           details=req.details, latest_cancel_requested_event_id=info.cancel_requested_event_id,
                           scheduled_event_id=info.scheduled_event_id, identity=req.identity))

    wt = await _respond(ctx, req.task_token, req.identity, req.sticky_task_queue, record)
    return svc.RespondActivityTaskCanceledResponse(workflow_task=wt)


async def heartbeat(ctx: HistoryContext, req: svc.RecordActivityTaskHeartbeatRequest
                    ) -> svc.RecordActivityTaskHeartbeatResponse:
    """Record a heartbeat (and its details); tells the worker whether the workflow asked for cancellation."""
    tok = ctx.tokens.decode(req.task_token, ACTIVITY)
    async with ctx.cache.locked(tok.namespace_id, tok.workflow_id):
        st = await ctx.cache.load(tok.namespace_id, tok.workflow_id, tok.run_id)
        info = _pending(ctx, st, tok)
        info.last_heartbeat_ms = ctx.clock.now_ms()
        if req.HasField("details"):
            info.heartbeat_details = req.details
        return svc.RecordActivityTaskHeartbeatResponse(cancel_requested=info.cancel_requested)


def _fail_attempt(ctx: HistoryContext, txn: Txn, info: ActivityInfo, failure: pb.Failure, *,
                  timeout_sub: str | None, identity: str = "") -> None:
    """Record a failed or timed-out attempt: retried per the retry policy, or final.

    A retried attempt writes no history event (as in Temporal: polling by retrying an
    activity must not grow the history): the attempt count, its schedule time and the
    failure change in memory and on the execution row (``ActivityRetryState``), and
    show in ``describe``'s pending activities. The final attempt writes
    ActivityTaskStarted (carrying the attempt and the previous failure) if it started,
    then ActivityTaskFailed / ActivityTaskTimedOut with the reason it was not retried.
    """
    now = txn.now_ms
    if timeout_sub in ("SCHEDULE_TO_CLOSE", "SCHEDULE_TO_START"):
        decision = _retry.RetryDecision(False, 0, pb.RETRY_STATE_TIMEOUT)
    elif info.cancel_requested:
        decision = _retry.RetryDecision(False, 0, pb.RETRY_STATE_CANCEL_REQUESTED)
    else:
        decision = _retry.decide(info.retry_policy, attempt=info.attempt, failure=failure, now_ms=now,
                                 schedule_to_close_deadline_ms=info.schedule_to_close_deadline_ms,
                                 timeout=timeout_sub is not None)
    if decision.retry:
        for sub in ("START_TO_CLOSE", "HEARTBEAT", "SCHEDULE_TO_START"):
            t = info.timers.pop(sub, None)
            if t is not None:
                txn.delete_timer(t)
        _release_attempt(ctx, txn.state, info)
        info.last_worker_identity = identity or info.identity
        info.identity = ""
        info.attempt += 1
        info.attempt_scheduled_time_ms = now + decision.backoff_ms
        info.last_failure = failure
        info.dispatched = False
        txn.row_changed = True
        _schedule_retry(ctx, txn, info, decision.backoff_ms)
        return
    if info.started or timeout_sub in ("START_TO_CLOSE", "HEARTBEAT") or timeout_sub is None:
        _attempt_started(ctx, txn, info)
    delete_timers(txn, info)
    if txn.buffered:
        info.closed = True
    if timeout_sub is None:
        txn.external(pb.EVENT_TYPE_ACTIVITY_TASK_FAILED, "activity_task_failed_event_attributes",
                     pb.ActivityTaskFailedEventAttributes(failure=failure, scheduled_event_id=info.scheduled_event_id,
                                                          identity=identity, retry_state=decision.state,
                                                          attempt=info.attempt))
    else:
        txn.external(pb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT, "activity_task_timed_out_event_attributes",
                     pb.ActivityTaskTimedOutEventAttributes(failure=failure, scheduled_event_id=info.scheduled_event_id,
                                                            retry_state=decision.state, attempt=info.attempt))
    if txn.buffered:
        txn.wake = True


def _schedule_retry(ctx: HistoryContext, txn: Txn, info: ActivityInfo, backoff_ms: int) -> None:
    st = txn.state
    if backoff_ms <= 0:
        txn.transfer.append(Task(T_ACTIVITY_TASK, st.namespace_id, st.workflow_id, st.run_id, info.scheduled_event_id,
                                 info.attempt, extra=task_extra(st, info.task_queue)))
        if info.schedule_to_start_ms:
            info.timers["SCHEDULE_TO_START"] = new_timer(
                txn, TM_ACTIVITY_TIMEOUT, txn.now_ms + info.schedule_to_start_ms, event_id=info.scheduled_event_id,
                attempt=info.attempt, sub="SCHEDULE_TO_START")
    else:
        new_timer(txn, TM_ACTIVITY_RETRY, txn.now_ms + backoff_ms, event_id=info.scheduled_event_id,
                  attempt=info.attempt, extra={"q": info.task_queue})


# ---------------------------------------------------------------------- timers and describe
async def timer_fired(ctx: HistoryContext, t: Task) -> None:
    """An activity's timeout or retry-backoff timer fired."""
    async with ctx.cache.locked(t.namespace_id, t.workflow_id):
        st = await ctx.cache.load(t.namespace_id, t.workflow_id, t.run_id)
        info = st.activities.get(t.event_id) if st is not None and st.running else None
        if st is None or info is None or info.closed:
            timer_done(ctx, t)
            return
        txn = Txn(st, ctx.clock.now_ms())
        timer_done(ctx, t, txn)
        if t.kind == TM_ACTIVITY_RETRY:
            if info.attempt == t.attempt and not info.started:
                _schedule_retry(ctx, txn, info, 0)
            await ctx.commit(txn)
            return
        sub = t.sub
        if sub != "SCHEDULE_TO_CLOSE" and info.attempt != t.attempt:
            await ctx.commit(txn)
            return
        if sub == "SCHEDULE_TO_START" and info.started:
            await ctx.commit(txn)
            return
        # (not "and info.started": after a restart that in-memory flag is lost, but heartbeats still arrive)
        if sub == "HEARTBEAT" and info.last_heartbeat_ms + info.heartbeat_ms > txn.now_ms:
            info.timers["HEARTBEAT"] = new_timer(txn, TM_ACTIVITY_TIMEOUT, info.last_heartbeat_ms + info.heartbeat_ms,
                                                 event_id=info.scheduled_event_id, attempt=info.attempt,
                                                 sub="HEARTBEAT")
            await ctx.commit(txn)
            return
        info.timers.pop(sub, None)
        failure = pb.Failure(message=f"activity {sub.lower().replace('_', '-')} timeout", source="server",
                             timeout_failure_info=pb.TimeoutFailureInfo(timeout_type=_TIMEOUT_TYPES[sub]))
        if info.heartbeat_details is not None:
            failure.timeout_failure_info.last_heartbeat_details.CopyFrom(info.heartbeat_details)
        _fail_attempt(ctx, txn, info, failure, timeout_sub=sub)
        _after_outcome(ctx, txn, "")
        await ctx.commit(txn)


def pending_info(info: ActivityInfo) -> svc.PendingActivityInfo:
    """A pending activity as ``DescribeWorkflowExecution`` shows it."""
    out = svc.PendingActivityInfo(
        activity_id=info.activity_id, activity_type=info.activity_type,
        state="CANCEL_REQUESTED" if info.cancel_requested else ("STARTED" if info.started else "SCHEDULED"),
        attempt=info.attempt, scheduled_event_id=info.scheduled_event_id, last_started_time_ms=info.started_time_ms,
        last_heartbeat_time_ms=info.last_heartbeat_ms,
    )
    if info.heartbeat_details is not None:
        out.heartbeat_details.CopyFrom(info.heartbeat_details)
    if info.last_failure is not None:
        out.last_failure.CopyFrom(info.last_failure)
    return out


def delete_timers(txn: Txn, act: ActivityInfo) -> None:
    """Delete the activity's timeout and retry timers with ``txn``."""
    for t in act.timers.values():
        if t.task_id:
            txn.timer_delete.append((t.fire_time_ms, t.task_id))
    act.timers.clear()


__all__ = ["delete_timers", "dispatch", "heartbeat", "pending_info", "record_started", "respond_canceled", "respond_completed",
           "respond_failed", "start", "timer_fired"]
