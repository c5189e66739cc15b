"""A schedule's stored record and its one timer: reading the record, when its timer is due, writing both.

A schedule is one store row (``ScheduleRow``, its ``data`` a ``spindle.v1.ScheduleRecord``)
and at most one timer row (``TM_SCHEDULE``) on the shard its schedule id hashes to (as a
workflow id would). Every change writes both in ONE mutation (``write``), fenced by the
shard's range id and guarded by the row's version: the record names its pending timer
(fire time, task id), so a change deletes the old timer row and writes the next one with
the record.

Changes to one schedule are serialized by a per-schedule lock of the engine (``lock``,
``ctx.schedule_locks``); across processes the fence and the version keep a stale writer out.
What changes a schedule: the client requests (``schedule_requests``) and its firing
(``schedule``).
"""

from __future__ import annotations

import asyncio

from spindle.api import messages_pb2 as pb
from spindle.controlplane.errors import FailedPrecondition, NotFound, ShardNotOwned
from spindle.controlplane.namespaces import Namespace
from spindle.controlplane.schedules import CalendarSpec, next_times
from spindle.controlplane.schedules._wire import calendar_of, from_ms, to_ms
from spindle.controlplane.store import ConditionFailedError, Mutation, ScheduleRow, ShardOwnershipLostError, TimerTask

from .._context import HistoryContext
from .._tasks import TM_SCHEDULE, Task

#: Next action times a describe or list returns.
NEXT_TIMES = 10


def lock(ctx: HistoryContext, namespace_id: str, schedule_id: str) -> asyncio.Lock:
    """The lock that serializes every change to one schedule in this engine (``async with``)."""
    return ctx.schedule_locks.get((namespace_id, schedule_id))


def decode(row: ScheduleRow) -> pb.ScheduleRecord:
    rec = pb.ScheduleRecord()
    rec.ParseFromString(row.data)
    return rec


def calendar(rec: pb.ScheduleRecord) -> CalendarSpec:
    """The record's calendar (checked when it was written, so this does not raise)."""
    return calendar_of(rec.schedule.spec)


def wants_timer_at(rec: pb.ScheduleRecord, schedule_id: str, now_ms: int, buffered_at_ms: int | None = None) -> int | None:
    """When the schedule's timer should fire, or None (nothing to do until a client acts).

    Actions waiting for a running workflow are taken when it closes (:func:`run_closed`): no timer for them.
    Other buffered actions are taken at ``buffered_at_ms`` (when pacing lets them go) or now.
    """
    state = rec.schedule.state
    at: int | None = None
    if not (state.paused or (state.HasField("remaining_actions") and state.remaining_actions <= 0)):
        nxt = next_times(calendar(rec), from_ms(rec.last_processed_ms), 1, schedule_id=schedule_id)
        at = to_ms(nxt[0].actual) if nxt else None
    if rec.buffered and not (rec.info.running_workflows and waits(rec, rec.buffered[0])):
        go = now_ms if buffered_at_ms is None else buffered_at_ms
        at = go if at is None else min(at, go)
    return at


WAITING_POLICIES = frozenset({pb.SCHEDULE_OVERLAP_POLICY_BUFFER_ONE, pb.SCHEDULE_OVERLAP_POLICY_BUFFER_ALL,
                               pb.SCHEDULE_OVERLAP_POLICY_CANCEL_OTHER})


def waits(rec: pb.ScheduleRecord, action: pb.ScheduleBufferedAction) -> bool:
    """Whether ``action`` waits for the running runs to close (rather than being taken, skipped or terminating them)."""
    from spindle.controlplane.schedules._wire import effective_overlap

    return effective_overlap(action.overlap_policy, rec.schedule) in WAITING_POLICIES


def future_action_times(rec: pb.ScheduleRecord, schedule_id: str, now_ms: int, n: int = NEXT_TIMES) -> list[int]:
    """The next ``n`` times the schedule will act (jitter included), none while paused."""
    state = rec.schedule.state
    if state.paused:
        return []
    n = min(n, state.remaining_actions) if state.HasField("remaining_actions") else n
    after = from_ms(max(rec.last_processed_ms, now_ms))
    return [to_ms(t.actual) for t in next_times(calendar(rec), after, max(n, 0), schedule_id=schedule_id)]


async def write(ctx: HistoryContext, ns: Namespace, schedule_id: str, rec: pb.ScheduleRecord, *,
                expected_version: int | None, delete: bool = False, buffered_at_ms: int | None = None) -> int:
    """Write ``rec`` (or delete it) with its next timer in one mutation; returns the new version.

    The old timer row (named by the record as stored) is deleted, the next one (``wants_timer_at``;
    ``buffered_at_ms``: when paced buffered actions may go) inserted and armed after the commit.
    Pacing is durable so: the actions still to start are in the record, their time in the timer row.

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
        at = wants_timer_at(rec, schedule_id, now, buffered_at_ms)
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


async def load(ctx: HistoryContext, ns: Namespace, schedule_id: str) -> tuple[ScheduleRow, pb.ScheduleRecord]:
    """The schedule's row and its record; NotFound when there is none."""
    row = await ctx.store.get_schedule(ns.id, schedule_id)
    if row is None:
        raise NotFound(f"schedule_id: no schedule {schedule_id!r} in namespace {ns.name!r}")
    return row, decode(row)


def conflict_token(rec: pb.ScheduleRecord) -> bytes:
    """The conflict token clients get and pass back (the record's change count)."""
    return str(rec.conflict_token).encode()


__all__ = ["NEXT_TIMES", "WAITING_POLICIES", "calendar", "conflict_token", "decode", "future_action_times", "load", "lock",
           "waits", "wants_timer_at", "write"]
