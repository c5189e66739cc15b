"""A namespace's schedule limits (security issue 26): how many schedules, and how many actions may wait to start.

Both are ``ServerConfig`` settings (0 = no limit), the operator's alone (not settable per
namespace):

- ``namespace_max_schedules``: CreateSchedule beyond it is RESOURCE_EXHAUSTED naming it.
- ``namespace_max_buffered_actions``: the actions waiting to start (buffered: backfills,
  triggers, actions held back by the overlap policy or by pacing) across the namespace's
  schedules. A patch that would take the namespace over it (a backfill, a trigger) is
  RESOURCE_EXHAUSTED naming it and changes nothing. A schedule's own timer never buffers
  more than it (scheduled times due while it is full are counted as missed, like those
  beyond the catch-up window).

Both are checked against the store when the request comes (a page read of the namespace's
schedules; these requests are rare and counted against ``rps_limit``), so requests racing
on other shards may overshoot by the number in flight. Firing reads nothing extra.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from spindle.controlplane.errors import ResourceExhausted
from spindle.controlplane.namespaces import Namespace
from spindle.controlplane.store import ScheduleRow

from .._context import HistoryContext
from .schedule_record import decode

#: Schedules read per store call while counting.
PAGE = 500


async def _rows(ctx: HistoryContext, ns: Namespace) -> AsyncIterator[ScheduleRow]:
    after = ""
    while True:
        rows = await ctx.store.list_schedules(ns.id, after, PAGE)
        for row in rows:
            yield row
        if len(rows) < PAGE:
            return
        after = rows[-1].schedule_id


async def check_room_for_a_schedule(ctx: HistoryContext, ns: Namespace) -> None:
    """Raises ResourceExhausted when ``ns`` has ``namespace_max_schedules`` schedules already."""
    limit = ctx.config.namespace_max_schedules
    if not limit:
        return
    n = 0
    async for _ in _rows(ctx, ns):
        n += 1
        if n >= limit:
            raise ResourceExhausted(
                f"namespace {ns.name!r} has {limit} schedules, the most a namespace may have on this server "
                "(namespace_max_schedules, set by the operator); delete one first")


async def buffered_room(ctx: HistoryContext, ns: Namespace, schedule_id: str) -> int | None:
    """How many actions may wait in schedule ``schedule_id`` (its own included) within the namespace's limit; None: no limit."""
    limit = ctx.config.namespace_max_buffered_actions
    if not limit:
        return None
    others = 0
    async for row in _rows(ctx, ns):
        if row.schedule_id != schedule_id:
            others += len(decode(row).buffered)
    return max(0, limit - others)


def over_buffered(ns: Namespace, limit: int, where: str) -> ResourceExhausted:
    """The refusal of a patch that would make more than ``namespace_max_buffered_actions`` wait in ``ns``."""
    return ResourceExhausted(
        f"{where}: namespace {ns.name!r} would have more than {limit} schedule actions waiting to start, the most "
        "a namespace may have on this server (namespace_max_buffered_actions, set by the operator); backfill a "
        "shorter range, and the rest once these started")


__all__ = ["buffered_room", "check_room_for_a_schedule", "over_buffered"]
