"""Schedules (issue 17): a schedule's timer fires, and it starts the workflows that are due.

A schedule lives in three modules: ``schedule_record`` (its stored record and its one timer,
always written together, and the per-schedule lock), ``schedule_requests`` (what clients ask:
create, describe, update, patch, delete and list) and this one, firing.

The timer is due at the next action time (nominal time plus jitter) after the last
processed one, or now when a trigger or backfill left actions waiting, and there is none
while the schedule is paused, ended or out of remaining actions (and nothing waits).
Actions that wait for a run the schedule started (BUFFER_ONE, BUFFER_ALL, CANCEL_OTHER) need
no timer: the run's close (its ``T_CLOSE`` transfer task, durable and retried) calls
:func:`run_closed` through the cross-shard port, which takes them then.
Firing is :func:`fired` (called by the timer executor); a timer that fires but is no longer
the record's (the schedule changed meanwhile) is dropped.

Actions are starts the server makes, so they pay the namespace's budgets (security issue 26,
finding 2): each takes a token of the namespace's ``rps_limit`` (``ctx.start_tokens``) and
goes through start admission; an action that cannot go yet stays buffered in the record and
the timer is written for when it can (paced, never dropped; see ``_take_actions``).
"""

from __future__ import annotations

import asyncio
import logging
import math

from datetime import timedelta
from typing import Any

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.controlplane.errors import AlreadyExists, FailedPrecondition, NotFound
from spindle.controlplane.namespaces import Namespace
from spindle.controlplane.schedules._wire import from_ms, to_ms
from spindle.controlplane.store import ScheduleRow

from .._admission import SCHEDULE_ADMISSION_WAIT
from .._context import HistoryContext
from .._tasks import Task
from .schedule_record import WAITING_POLICIES, calendar, decode, lock, write

log = logging.getLogger("spindle.schedules")

#: Most missed actions counted one by one after an outage longer than the catch-up window.
MAX_MISSED_COUNTED = 10_000
#: Recent actions a schedule keeps (oldest dropped first).
RECENT_ACTIONS = 10
#: Most actions one fire starts before it writes the record (the progress) and fires again at once.
MAX_STARTS_PER_FIRE = 100

_MS = timedelta(milliseconds=1)


_RUNNING = pb.WORKFLOW_EXECUTION_STATUS_RUNNING
_CONTINUED = pb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW
_FAILED = {pb.WORKFLOW_EXECUTION_STATUS_FAILED, pb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT}


def workflow_id_for(prefix: str, nominal_ms: int) -> str:
    """The workflow id of the action due at ``nominal_ms``: ``{prefix}-YYYY-MM-DDTHH:MM:SSZ`` (UTC)."""
    return f"{prefix}-{from_ms(nominal_ms).strftime('%Y-%m-%dT%H:%M:%SZ')}"


async def fired(ctx: HistoryContext, shard: Any, t: Task) -> None:
    """A schedule's timer is due: take the due actions, record them, write the next timer.

    Idempotent: the record (with the time processed up to) is written only after the
    workflows were started, and each start carries a request id derived from the schedule
    and the action, so a repeat after a crash finds the run it already started.
    """
    ns = ctx.namespaces.by_id(t.namespace_id)
    sid = t.workflow_id
    async with lock(ctx, t.namespace_id, sid):
        row = await ctx.store.get_schedule(t.namespace_id, sid)
        if row is None or ns is None:
            shard.timers.done((t.fire_time_ms, t.task_id))
            return
        rec = decode(row)
        if rec.timer_task_id != t.task_id:
            return  # stale: the schedule changed and wrote another timer (this row was deleted with it)
        await _process(ctx, ns, sid, row, rec)


async def run_closed(ctx: HistoryContext, ns: Namespace, schedule_id: str, execution: pb.WorkflowExecution) -> None:
    """A run that schedule ``schedule_id`` started closed: drop it from the running ones and take what waited for it.

    Runs on the owner of the schedule's shard (the close's ``T_CLOSE`` task calls it through
    ``ctx.cross_shard.schedule_run_closed``). A run the schedule does not list (already
    dropped, or one that set ``ScheduledById`` itself) changes nothing.

    Raises:
        ShardNotOwned: this process does not own the schedule's shard (the transfer task retries).
    """
    async with lock(ctx, ns.id, schedule_id):
        row = await ctx.store.get_schedule(ns.id, schedule_id)
        if row is None:
            return
        rec = decode(row)
        # by workflow id: each action has its own, and a run that continued as new keeps it
        if not any(ex.workflow_id == execution.workflow_id for ex in rec.info.running_workflows):
            return
        if not rec.buffered and not rec.schedule.policies.pause_on_failure:
            return  # nothing waits for it: the next fire drops it from the record (describe leaves it out already)
        await _process(ctx, ns, schedule_id, row, rec)


async def _process(ctx: HistoryContext, ns: Namespace, sid: str, row: ScheduleRow, rec: pb.ScheduleRecord) -> None:
    """Refresh the running runs, buffer what is due, take what the overlap policies allow, write record and timer."""
    now = ctx.clock.now_ms()
    await refresh_running(ctx, ns, rec)
    _collect_due(rec, sid, now, ctx.config.namespace_max_buffered_actions)
    paced_until = await _take_actions(ctx, ns, sid, rec, now)
    await write(ctx, ns, sid, rec, expected_version=row.version, buffered_at_ms=paced_until)


async def refresh_running(ctx: HistoryContext, ns: Namespace, rec: pb.ScheduleRecord) -> None:
    """Drop the runs that closed from ``running_workflows``; pause on a failure if the policy says so."""
    still = []
    for ex in rec.info.running_workflows:
        row = await ctx.store.get_execution_row(ns.id, ex.workflow_id, ex.run_id)
        if row is not None and row.status == _CONTINUED:
            # the action's workflow continued as new: it runs on as the id's current run
            cur = await ctx.store.get_current(ns.id, ex.workflow_id)
            if cur is not None and cur.run_id != ex.run_id:
                ex = pb.WorkflowExecution(workflow_id=ex.workflow_id, run_id=cur.run_id)
                row = await ctx.store.get_execution_row(ns.id, ex.workflow_id, ex.run_id)
        if row is not None and row.status == _RUNNING:
            still.append(ex)
        elif row is not None and row.status in _FAILED and rec.schedule.policies.pause_on_failure:
            rec.schedule.state.paused = True
            rec.schedule.state.notes = f"paused: workflow {ex.workflow_id} (run {ex.run_id}) did not succeed"
    del rec.info.running_workflows[:]
    rec.info.running_workflows.extend(still)


def _collect_due(rec: pb.ScheduleRecord, sid: str, now: int, max_buffered: int) -> None:
    """Buffer the scheduled actions due by ``now`` (skipped while paused, counted as missed beyond the catch-up window).

    At most ``max_buffered`` actions wait (``namespace_max_buffered_actions``; 0 = no limit): a
    time due while that many wait (a per-second schedule paced by a low ``rps_limit``, a long
    catch-up window after an outage) is counted as missed.

    After a long outage the times older than the catch-up window are only counted (at most
    ``MAX_MISSED_COUNTED`` of them are walked: a per-second schedule down for a year is not
    walked second by second; beyond that, ``missed_catchup_window`` is a lower bound).
    """
    from spindle.controlplane.schedules import times_between
    from spindle.controlplane.schedules._wire import DEFAULT_CATCHUP_WINDOW_MS

    processed = rec.last_processed_ms
    if now <= processed:
        return
    cal = calendar(rec)
    window = rec.schedule.policies.catchup_window_ms or DEFAULT_CATCHUP_WINDOW_MS
    paused = rec.schedule.state.paused
    horizon = now - window - cal.jitter // _MS - 1  # nominal times before this are missed whatever their jitter
    start = processed
    if horizon > processed:
        if not paused:
            for n, _ in enumerate(times_between(cal, from_ms(processed), from_ms(horizon), schedule_id=sid)):
                if n >= MAX_MISSED_COUNTED:
                    break
                rec.info.missed_catchup_window += 1
        start = horizon
    processed = start
    for item in times_between(cal, from_ms(start), from_ms(now), schedule_id=sid):
        actual = to_ms(item.actual)
        if actual > now:
            break  # its jitter puts it later: the next timer
        processed = to_ms(item.nominal)
        if paused:
            continue
        if now - actual > window or (max_buffered and len(rec.buffered) >= max_buffered):
            rec.info.missed_catchup_window += 1
            continue
        rec.buffered.append(pb.ScheduleBufferedAction(nominal_time_ms=processed, actual_time_ms=actual))
    else:
        processed = now
    rec.last_processed_ms = processed


async def _take_actions(ctx: HistoryContext, ns: Namespace, sid: str, rec: pb.ScheduleRecord, now: int) -> int | None:
    """Start the buffered actions the overlap policies allow now; keep the ones that must wait.

    Each start is paced like a client's: it takes a token of the namespace's ``rps_limit``
    (``ctx.start_tokens``) and goes through start admission. When no token is there, the
    action and those after it stay buffered, and the fire returns when the next token is due
    (epoch ms) for the schedule's timer; likewise (returning now: the timer fires again at
    once) when admission did not let it in within ``SCHEDULE_ADMISSION_WAIT``, after
    ``MAX_STARTS_PER_FIRE`` starts, or after ``start_admission_wait`` seconds in one fire, so
    the record with the progress so far is written and the schedule's lock let go between
    turns (a pause gets in). None: nothing paced.
    """
    from spindle.controlplane.schedules._wire import effective_overlap

    waiting: list[pb.ScheduleBufferedAction] = []
    state = rec.schedule.state
    pending = list(rec.buffered)
    del rec.buffered[:]
    loop = asyncio.get_running_loop()
    give_up = loop.time() + ctx.config.start_admission_wait
    started = 0
    for i, action in enumerate(pending):
        if waiting:
            waiting.append(action)  # keep order behind an action that waits
            continue
        if not action.manual and state.HasField("remaining_actions") and state.remaining_actions <= 0:
            continue
        policy = effective_overlap(action.overlap_policy, rec.schedule)
        running = list(rec.info.running_workflows)
        if running and policy == pb.SCHEDULE_OVERLAP_POLICY_SKIP:
            rec.info.overlap_skipped += 1
            continue
        if running and policy in WAITING_POLICIES:
            if policy == pb.SCHEDULE_OVERLAP_POLICY_CANCEL_OTHER:
                for ex in running:
                    try:
                        await ctx.cross_shard.request_cancel(ns, ex, "spindle-schedule", f"schedule {sid}: CANCEL_OTHER")
                    except (NotFound, FailedPrecondition):
                        pass
            waiting.append(action)
            continue
        if started >= MAX_STARTS_PER_FIRE or (started and loop.time() >= give_up):
            rec.buffered.extend(pending[i:])  # the rest in the next fire, right away
            return now
        async with ctx.admission.admit(ns.id, SCHEDULE_ADMISSION_WAIT) as admitted:
            wait = ctx.start_tokens.take(ns) if admitted else 0.0
            if admitted and not wait:
                if running and policy == pb.SCHEDULE_OVERLAP_POLICY_TERMINATE_OTHER:
                    for ex in running:
                        try:
                            await ctx.cross_shard.terminate(ns, ex, f"schedule {sid}: TERMINATE_OTHER", pb.Payloads(),
                                                            "spindle-schedule")
                        except (NotFound, FailedPrecondition):
                            pass
                    del rec.info.running_workflows[:]
                await _start(ctx, ns, sid, rec, action, now)
        if not admitted:  # the namespace's admission budget is full: the rest in the next fire, right away
            rec.buffered.extend(pending[i:])
            return now
        if wait > 0:  # paced: the rest when the namespace's next token is due
            rec.buffered.extend(pending[i:])
            return now + max(1, math.ceil(wait * 1000))
        started += 1
    if waiting:  # BUFFER_ONE keeps only the first action that waits
        first = effective_overlap(waiting[0].overlap_policy, rec.schedule)
        rec.buffered.extend(waiting[:1] if first == pb.SCHEDULE_OVERLAP_POLICY_BUFFER_ONE else waiting)
        rec.info.overlap_skipped += len(waiting) - len(rec.buffered)
    return None


async def _start(ctx: HistoryContext, ns: Namespace, sid: str, rec: pb.ScheduleRecord,
                 action: pb.ScheduleBufferedAction, now: int) -> None:
    a = rec.schedule.action
    wid = workflow_id_for(a.workflow_id, action.nominal_time_ms)
    req = svc.StartWorkflowExecutionRequest(
        namespace=ns.name, workflow_id=wid, workflow_type=a.workflow_type, task_queue=a.task_queue, input=a.input,
        execution_timeout_ms=a.execution_timeout_ms, run_timeout_ms=a.run_timeout_ms, task_timeout_ms=a.task_timeout_ms,
        identity=f"spindle-schedule/{sid}", memo=a.memo, search_attributes=a.search_attributes, header=a.header,
        request_id=f"sched/{sid}/{action.nominal_time_ms}/{rec.info.action_count}",
        # a repeat (same request id) gets its run back; another action of the same id (a trigger in the
        # same second as a scheduled one) is refused instead of making a second run of that id
        workflow_id_reuse_policy=pb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE)
    json_plain = {"encoding": b"json/plain"}
    req.search_attributes.indexed_fields["ScheduledById"].CopyFrom(pb.Payload(metadata=json_plain,
                                                                              data=f'"{sid}"'.encode()))
    stamp = from_ms(action.nominal_time_ms).strftime("%Y-%m-%dT%H:%M:%SZ")
    req.search_attributes.indexed_fields["ScheduledStartTime"].CopyFrom(pb.Payload(metadata=json_plain,
                                                                                   data=f'"{stamp}"'.encode()))
    try:
        run_id, started = await ctx.cross_shard.start_workflow(ns, req)
    except AlreadyExists as e:  # another action's run holds the id (a trigger in the same second): not taken again
        log.warning("schedule %s: action at %s not started: %s", sid, stamp, e)
        rec.info.overlap_skipped += 1
        return
    rec.info.action_count += 1
    if not action.manual and rec.schedule.state.HasField("remaining_actions"):
        rec.schedule.state.remaining_actions -= 1
    rec.info.recent_actions.append(pb.ScheduleActionResult(schedule_time_ms=action.actual_time_ms, actual_time_ms=now,
                                                           workflow_id=wid, run_id=run_id))
    del rec.info.recent_actions[:-RECENT_ACTIONS]
    if not started:  # a repeat after a crash got the run back: it may have closed since (its close told nobody)
        row = await ctx.store.get_execution_row(ns.id, wid, run_id)
        if row is not None and row.status != _RUNNING:
            return
    rec.info.running_workflows.append(pb.WorkflowExecution(workflow_id=wid, run_id=run_id))


__all__ = ["MAX_MISSED_COUNTED", "MAX_STARTS_PER_FIRE", "RECENT_ACTIONS", "fired", "refresh_running", "run_closed", "workflow_id_for"]
