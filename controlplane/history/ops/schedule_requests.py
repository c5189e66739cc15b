"""What clients ask of schedules (issue 17): create, describe, update, patch, delete and list.

Each runs on the shard of the schedule id, under the schedule's lock, and writes the
record with its next timer (``schedule_record.write``). Firing is ``schedule``.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.controlplane.errors import AlreadyExists, FailedPrecondition
from spindle.controlplane.namespaces import Namespace
from spindle.controlplane.schedules._wire import from_ms, to_ms

from .._context import HistoryContext
from .schedule import refresh_running
from .schedule_limits import buffered_room, check_room_for_a_schedule, over_buffered
from .schedule_record import calendar, conflict_token, decode, future_action_times, load, lock, write


async def create(ctx: HistoryContext, ns: Namespace, req: svc.CreateScheduleRequest) -> svc.CreateScheduleResponse:
    """Create a schedule (checked by the frontend). A retry with the same request id succeeds again.

    Raises:
        AlreadyExists: the id is taken (by another request).
        ResourceExhausted: the namespace has ``namespace_max_schedules`` schedules (``schedule_limits``).
    """
    sid = req.schedule_id
    async with lock(ctx, ns.id, sid):
        existing = await ctx.store.get_schedule(ns.id, sid)
        if existing is not None:
            rec = decode(existing)
            if req.request_id and rec.create_request_id == req.request_id:
                return svc.CreateScheduleResponse(conflict_token=conflict_token(rec))
            raise AlreadyExists(f"schedule_id: schedule {sid!r} already exists in namespace {ns.name!r}")
        await check_room_for_a_schedule(ctx, ns)
        now = ctx.clock.now_ms()
        rec = pb.ScheduleRecord(schedule=req.schedule, namespace_name=ns.name, last_processed_ms=now,
                                conflict_token=1, create_request_id=req.request_id)
        rec.info.create_time_ms = now
        await write(ctx, ns, sid, rec, expected_version=None)
        return svc.CreateScheduleResponse(conflict_token=conflict_token(rec))


async def describe(ctx: HistoryContext, ns: Namespace, schedule_id: str) -> svc.DescribeScheduleResponse:
    """The schedule, what it did (``info``) and its next action times."""
    _, rec = await load(ctx, ns, schedule_id)
    info = pb.ScheduleInfo()
    info.CopyFrom(rec.info)
    # runs that closed since the last fire are still in the record (a close rewrites it only when an action waits)
    probe = pb.ScheduleRecord()
    probe.info.running_workflows.extend(rec.info.running_workflows)
    await refresh_running(ctx, ns, probe)
    del info.running_workflows[:]
    info.running_workflows.extend(probe.info.running_workflows)
    info.future_action_times_ms.extend(future_action_times(rec, schedule_id, ctx.clock.now_ms()))
    return svc.DescribeScheduleResponse(schedule=rec.schedule, info=info, conflict_token=conflict_token(rec))


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
        row, rec = await load(ctx, ns, schedule_id)
        if token and token != conflict_token(rec):
            raise FailedPrecondition(f"conflict_token: schedule {schedule_id!r} changed since it was read "
                                     "(describe it again and retry)")
        now = ctx.clock.now_ms()
        fn(rec, now)
        rec.conflict_token += 1
        rec.info.update_time_ms = now
        await write(ctx, ns, schedule_id, rec, expected_version=row.version)


def update(ctx: HistoryContext, ns: Namespace, req: svc.UpdateScheduleRequest) -> Coroutine[Any, Any, None]:
    """Replace the schedule's spec, action, policies and state (checked by the frontend); its info stays.

    Times already processed stay processed: a new spec acts from now on.
    """
    def apply(rec: pb.ScheduleRecord, now: int) -> None:
        rec.schedule.CopyFrom(req.schedule)
        rec.last_processed_ms = max(rec.last_processed_ms, now)

    return _change(ctx, ns, req.schedule_id, apply, token=req.conflict_token)


async def patch(ctx: HistoryContext, ns: Namespace, req: svc.PatchScheduleRequest) -> None:
    """Pause or unpause (with a note), trigger an action now, backfill ranges (checked by the frontend).

    Unpausing does not take the actions due while paused: they were skipped (no burst).
    Triggered and backfilled actions wait in the record and are started at the namespace's
    ``rps_limit`` (``schedule``).

    Raises:
        ResourceExhausted: the actions would take the namespace over ``namespace_max_buffered_actions``.
    """
    p = req.patch
    adds = p.HasField("trigger_immediately") or bool(p.backfill_request)
    room = await buffered_room(ctx, ns, req.schedule_id) if adds else None
    limit = ctx.config.namespace_max_buffered_actions

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
            if room is not None and len(rec.buffered) > room:
                raise over_buffered(ns, limit, "patch.trigger_immediately")
        if p.backfill_request:
            cal = calendar(rec)
            from spindle.controlplane.schedules import times_between

            for b in p.backfill_request:
                for t in times_between(cal, from_ms(b.start_time_ms), from_ms(b.end_time_ms), schedule_id=req.schedule_id,
                                       include_start=True):
                    rec.buffered.append(pb.ScheduleBufferedAction(
                        nominal_time_ms=to_ms(t.nominal), actual_time_ms=to_ms(t.nominal), manual=True,
                        overlap_policy=b.overlap_policy))
                    if room is not None and len(rec.buffered) > room:
                        raise over_buffered(ns, limit, "patch.backfill_request")

    await _change(ctx, ns, req.schedule_id, apply)


async def delete(ctx: HistoryContext, ns: Namespace, schedule_id: str) -> None:
    """Delete the schedule and its timer (workflows it started keep running)."""
    async with lock(ctx, ns.id, schedule_id):
        row, rec = await load(ctx, ns, schedule_id)
        await write(ctx, ns, schedule_id, rec, expected_version=row.version, delete=True)


__all__ = ["create", "delete", "describe", "list_page", "patch", "update"]
