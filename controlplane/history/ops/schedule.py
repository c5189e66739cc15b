"""Schedules (issue 17): create, describe, update, patch, delete and list, on the shard of the schedule id.

A schedule is one store row (``ScheduleRow``, its ``data`` a ``spindle.v1.ScheduleRecord``)
and at most one timer row (``TM_SCHEDULE``) on the shard its schedule id hashes to (as a
workflow id would). Every change writes both in ONE mutation, fenced by the shard's range id
and guarded by the row's version: the record names its pending timer (fire time, task id),
so a change deletes the old timer row and writes the next one with the record. A timer that
fires but is no longer the record's (the schedule changed meanwhile) is dropped.

Changes to one schedule are serialized by a per-schedule lock of the engine
(``ctx.schedule_locks``); across processes the fence and the version keep a stale writer out.

The timer is due at the next action time (nominal time plus jitter) after the last
processed one, or now when a trigger or backfill left actions waiting, and there is none
while the schedule is paused, ended or out of remaining actions (and nothing waits).
Actions that wait for a run the schedule started (BUFFER_ONE, BUFFER_ALL, CANCEL_OTHER) need
no timer: the run's close (its ``T_CLOSE`` transfer task, durable and retried) calls
:func:`run_closed` through the cross-shard port, which takes them then.
Firing is :func:`fired` (called by the timer executor).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.controlplane.errors import AlreadyExists, FailedPrecondition, InvalidArgument, NotFound, ShardNotOwned
from spindle.controlplane.namespaces import Namespace
from spindle.controlplane.schedules import CalendarSpec, next_times
from spindle.controlplane.schedules._wire import calendar_of, from_ms, to_ms
from spindle.controlplane.store import ConditionFailedError, Mutation, ScheduleRow, ShardOwnershipLostError, TimerTask

from .._context import HistoryContext
from .._tasks import TM_SCHEDULE, Task

log = logging.getLogger("spindle.schedules")

#: Next action times a describe or list returns.
NEXT_TIMES = 10
#: Most actions that may wait at once (backfills and buffered overlaps).
MAX_BUFFERED = 10_000
#: Most missed actions counted one by one after an outage longer than the catch-up window.
MAX_MISSED_COUNTED = 10_000
#: Recent actions a schedule keeps (oldest dropped first).
RECENT_ACTIONS = 10

_MS = timedelta(milliseconds=1)


def lock(ctx: HistoryContext, namespace_id: str, schedule_id: str):  # type: ignore[no-untyped-def]
    """The lock that serializes every change to one schedule in this engine (``async with``)."""
    return ctx.schedule_locks.get((namespace_id, schedule_id))


# ---------------------------------------------------------------------------- the record
def decode(row: ScheduleRow) -> pb.ScheduleRecord:
    rec = pb.ScheduleRecord()
    rec.ParseFromString(row.data)
    return rec


def calendar(rec: pb.ScheduleRecord) -> CalendarSpec:
    """The record's calendar (checked when it was written, so this does not raise)."""
    return calendar_of(rec.schedule.spec)


def wants_timer_at(rec: pb.ScheduleRecord, schedule_id: str, now_ms: int) -> int | None:
    """When the schedule's timer should fire, or None (nothing to do until a client acts).

    Actions waiting for a running workflow are taken when it closes (:func:`run_closed`): no timer for them.
    """
    state = rec.schedule.state
    at: int | None = None
    if not (state.paused or (state.HasField("remaining_actions") and state.remaining_actions <= 0)):
        nxt = next_times(calendar(rec), from_ms(rec.last_processed_ms), 1, schedule_id=schedule_id)
        at = to_ms(nxt[0].actual) if nxt else None
    if rec.buffered and not (rec.info.running_workflows and _waits(rec, rec.buffered[0])):
        at = now_ms if at is None else min(at, now_ms)
    return at


_WAITING_POLICIES = frozenset({pb.SCHEDULE_OVERLAP_POLICY_BUFFER_ONE, pb.SCHEDULE_OVERLAP_POLICY_BUFFER_ALL,
                               pb.SCHEDULE_OVERLAP_POLICY_CANCEL_OTHER})


def _waits(rec: pb.ScheduleRecord, action: pb.ScheduleBufferedAction) -> bool:
    """Whether ``action`` waits for the running runs to close (rather than being taken, skipped or terminating them)."""
    from spindle.controlplane.schedules._wire import effective_overlap

    return effective_overlap(action.overlap_policy, rec.schedule) in _WAITING_POLICIES


def future_action_times(rec: pb.ScheduleRecord, schedule_id: str, now_ms: int, n: int = NEXT_TIMES) -> list[int]:
    """The next ``n`` times the schedule will act (jitter included), none while paused."""
    state = rec.schedule.state
    if state.paused:
        return []
    n = min(n, state.remaining_actions) if state.HasField("remaining_actions") else n
    after = from_ms(max(rec.last_processed_ms, now_ms))
    return [to_ms(t.actual) for t in next_times(calendar(rec), after, max(n, 0), schedule_id=schedule_id)]


async def write(ctx: HistoryContext, ns: Namespace, schedule_id: str, rec: pb.ScheduleRecord, *,
                expected_version: int | None, delete: bool = False) -> int:
    """Write ``rec`` (or delete it) with its next timer in one mutation; returns the new version.

    The old timer row (named by the record as stored) is deleted, the next one (``wants_timer_at``)
    inserted and armed after the commit.

    Raises:
        ShardNotOwned: this process does not own the schedule's shard (retry at the owner).
        FailedPrecondition: the row changed under us (another process wrote it).
    """
    shard = ctx.shards.shard_for(ns.id, schedule_id)
    now = ctx.clock.now_ms()
    m = Mutation(shard_id=shard.shard_id, range_id=shard.range_id)
    if rec.timer_task_id:
        m.timer_delete.append((rec.timer_fire_time_ms, rec.timer_task_id))
    timer: Task | None = None
    version = (expected_version or 0) + 1
    if delete:
        assert expected_version is not None
        m.schedule_delete = (ns.id, schedule_id, expected_version)
    else:
        at = wants_timer_at(rec, schedule_id, now)
        rec.timer_fire_time_ms = rec.timer_task_id = 0
        if at is not None:
            timer = Task(TM_SCHEDULE, ns.id, schedule_id, "", task_id=shard.next_task_id(), fire_time_ms=at)
            rec.timer_fire_time_ms, rec.timer_task_id = at, timer.task_id
            m.timer_insert.append(TimerTask(at, timer.task_id, timer.encode()))
        m.schedule = ScheduleRow(ns.id, schedule_id, shard.shard_id, version, rec.SerializeToString())
        m.schedule_expected_version = expected_version
    ctx.background.in_flight += 1
    try:
        await ctx.store.apply(m)
    except ShardOwnershipLostError as e:
        ctx.shards.lost(shard.shard_id)
        raise ShardNotOwned(f"schedule {schedule_id!r}: {e}") from e
    except ConditionFailedError as e:
        raise FailedPrecondition(f"schedule_id: schedule {schedule_id!r} changed concurrently; retry: {e}") from e
    finally:
        ctx.background.in_flight -= 1
    if timer is not None:
        shard.timers.arm(timer)
    return version


async def _load(ctx: HistoryContext, ns: Namespace, schedule_id: str) -> tuple[ScheduleRow, pb.ScheduleRecord]:
    row = await ctx.store.get_schedule(ns.id, schedule_id)
    if row is None:
        raise NotFound(f"schedule_id: no schedule {schedule_id!r} in namespace {ns.name!r}")
    return row, decode(row)


def _token(rec: pb.ScheduleRecord) -> bytes:
    return str(rec.conflict_token).encode()


# ---------------------------------------------------------------------------- operations
async def create(ctx: HistoryContext, ns: Namespace, req: svc.CreateScheduleRequest) -> svc.CreateScheduleResponse:
    """Create a schedule (checked by the frontend). A retry with the same request id succeeds again.

    Raises:
        AlreadyExists: the id is taken (by another request).
    """
    sid = req.schedule_id
    async with lock(ctx, ns.id, sid):
        existing = await ctx.store.get_schedule(ns.id, sid)
        if existing is not None:
            rec = decode(existing)
            if req.request_id and rec.create_request_id == req.request_id:
                return svc.CreateScheduleResponse(conflict_token=_token(rec))
            raise AlreadyExists(f"schedule_id: schedule {sid!r} already exists in namespace {ns.name!r}")
        now = ctx.clock.now_ms()
        rec = pb.ScheduleRecord(schedule=req.schedule, namespace_name=ns.name, last_processed_ms=now,
                                conflict_token=1, create_request_id=req.request_id)
        rec.info.create_time_ms = now
        await write(ctx, ns, sid, rec, expected_version=None)
        return svc.CreateScheduleResponse(conflict_token=_token(rec))


async def describe(ctx: HistoryContext, ns: Namespace, schedule_id: str) -> svc.DescribeScheduleResponse:
    """The schedule, what it did (``info``) and its next action times."""
    _, rec = await _load(ctx, ns, schedule_id)
    info = pb.ScheduleInfo()
    info.CopyFrom(rec.info)
    # runs that closed since the last fire are still in the record (a close rewrites it only when an action waits)
    probe = pb.ScheduleRecord()
    probe.info.running_workflows.extend(rec.info.running_workflows)
    await _refresh_running(ctx, ns, probe)
    del info.running_workflows[:]
    info.running_workflows.extend(probe.info.running_workflows)
    info.future_action_times_ms.extend(future_action_times(rec, schedule_id, ctx.clock.now_ms()))
    return svc.DescribeScheduleResponse(schedule=rec.schedule, info=info, conflict_token=_token(rec))


async def list_page(ctx: HistoryContext, ns: Namespace, after: str, size: int) -> tuple[list[svc.ScheduleListEntry], str]:
    """A page of the namespace's schedules by id, and the last id on it if more may follow ('' otherwise)."""
    rows = await ctx.store.list_schedules(ns.id, after, size)
    now = ctx.clock.now_ms()
    out = []
    for row in rows:
        rec = decode(row)
        out.append(svc.ScheduleListEntry(
            schedule_id=row.schedule_id, paused=rec.schedule.state.paused, notes=rec.schedule.state.notes,
            workflow_type=rec.schedule.action.workflow_type, recent_actions=rec.info.recent_actions[-3:],
            future_action_times_ms=future_action_times(rec, row.schedule_id, now, 3)))
    return out, (rows[-1].schedule_id if len(rows) == size else "")


async def _change(ctx: HistoryContext, ns: Namespace, schedule_id: str,
                  fn: Callable[[pb.ScheduleRecord, int], None], *, token: bytes = b"") -> None:
    async with lock(ctx, ns.id, schedule_id):
        row, rec = await _load(ctx, ns, schedule_id)
        if token and token != _token(rec):
            raise FailedPrecondition(f"conflict_token: schedule {schedule_id!r} changed since it was read "
                                     "(describe it again and retry)")
        now = ctx.clock.now_ms()
        fn(rec, now)
        rec.conflict_token += 1
        rec.info.update_time_ms = now
        await write(ctx, ns, schedule_id, rec, expected_version=row.version)


def update(ctx: HistoryContext, ns: Namespace, req: svc.UpdateScheduleRequest):  # type: ignore[no-untyped-def]
    """Replace the schedule's spec, action, policies and state (checked by the frontend); its info stays.

    Times already processed stay processed: a new spec acts from now on.
    """
    def apply(rec: pb.ScheduleRecord, now: int) -> None:
        rec.schedule.CopyFrom(req.schedule)
        rec.last_processed_ms = max(rec.last_processed_ms, now)

    return _change(ctx, ns, req.schedule_id, apply, token=req.conflict_token)


def patch(ctx: HistoryContext, ns: Namespace, req: svc.PatchScheduleRequest):  # type: ignore[no-untyped-def]
    """Pause or unpause (with a note), trigger an action now, backfill ranges (checked by the frontend).

    Unpausing does not take the actions due while paused: they were skipped (no burst).
    """
    p = req.patch

    def apply(rec: pb.ScheduleRecord, now: int) -> None:
        state = rec.schedule.state
        if p.HasField("pause"):
            state.paused, state.notes = True, p.pause
        if p.HasField("unpause"):
            state.paused, state.notes = False, p.unpause
            rec.last_processed_ms = max(rec.last_processed_ms, now)
        if p.HasField("trigger_immediately"):
            rec.buffered.append(pb.ScheduleBufferedAction(nominal_time_ms=now, actual_time_ms=now, manual=True,
                                                          overlap_policy=p.trigger_immediately.overlap_policy))
        if p.backfill_request:
            cal = calendar(rec)
            from spindle.controlplane.schedules import times_between

            for b in p.backfill_request:
                for t in times_between(cal, from_ms(b.start_time_ms), from_ms(b.end_time_ms), schedule_id=req.schedule_id,
                                       include_start=True):
                    rec.buffered.append(pb.ScheduleBufferedAction(
                        nominal_time_ms=to_ms(t.nominal), actual_time_ms=to_ms(t.nominal), manual=True,
                        overlap_policy=b.overlap_policy))
                    if len(rec.buffered) > MAX_BUFFERED:
                        raise InvalidArgument(f"patch.backfill_request: over {MAX_BUFFERED} actions would wait at once; "
                                              "backfill a shorter range (and the rest when these ran)")

    return _change(ctx, ns, req.schedule_id, apply)


async def delete(ctx: HistoryContext, ns: Namespace, schedule_id: str) -> None:
    """Delete the schedule and its timer (workflows it started keep running)."""
    async with lock(ctx, ns.id, schedule_id):
        row, rec = await _load(ctx, ns, schedule_id)
        await write(ctx, ns, schedule_id, rec, expected_version=row.version, delete=True)


# ---------------------------------------------------------------------------- firing
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
    await _refresh_running(ctx, ns, rec)
    _collect_due(rec, sid, now)
    await _take_actions(ctx, ns, sid, rec, now)
    await write(ctx, ns, sid, rec, expected_version=row.version)


async def _refresh_running(ctx: HistoryContext, ns: Namespace, rec: pb.ScheduleRecord) -> None:
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


def _collect_due(rec: pb.ScheduleRecord, sid: str, now: int) -> None:
    """Buffer the scheduled actions due by ``now`` (skipped while paused, counted as missed beyond the catch-up window).

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
        if now - actual > window:
            rec.info.missed_catchup_window += 1
            continue
        rec.buffered.append(pb.ScheduleBufferedAction(nominal_time_ms=processed, actual_time_ms=actual))
    else:
        processed = now
    rec.last_processed_ms = processed


async def _take_actions(ctx: HistoryContext, ns: Namespace, sid: str, rec: pb.ScheduleRecord, now: int) -> None:
    """Start the buffered actions the overlap policies allow now; keep the ones that must wait."""
    from spindle.controlplane.schedules._wire import effective_overlap

    waiting: list[pb.ScheduleBufferedAction] = []
    state = rec.schedule.state
    pending = list(rec.buffered)
    del rec.buffered[:]
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
        if running and policy in _WAITING_POLICIES:
            if policy == pb.SCHEDULE_OVERLAP_POLICY_CANCEL_OTHER:
                for ex in running:
                    try:
                        await ctx.cross_shard.request_cancel(ns, ex, "spindle-schedule", f"schedule {sid}: CANCEL_OTHER")
                    except (NotFound, FailedPrecondition):
                        pass
            waiting.append(action)
            continue
        if running and policy == pb.SCHEDULE_OVERLAP_POLICY_TERMINATE_OTHER:
            for ex in running:
                try:
                    await ctx.cross_shard.terminate(ns, ex, f"schedule {sid}: TERMINATE_OTHER", pb.Payloads(),
                                                    "spindle-schedule")
                except (NotFound, FailedPrecondition):
                    pass
            del rec.info.running_workflows[:]
        await _start(ctx, ns, sid, rec, action, now)
    if waiting:  # BUFFER_ONE keeps only the first action that waits
        first = effective_overlap(waiting[0].overlap_policy, rec.schedule)
        rec.buffered.extend(waiting[:1] if first == pb.SCHEDULE_OVERLAP_POLICY_BUFFER_ONE else waiting)
        rec.info.overlap_skipped += len(waiting) - len(rec.buffered)


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


__all__ = ["create", "fired", "run_closed", "workflow_id_for", "delete", "describe", "future_action_times", "list_page", "lock", "patch", "update", "write"]
