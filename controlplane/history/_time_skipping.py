"""What the time-skipping test clock (``spindle.testing``) asks of the history service.

The clock moves only while nothing is in progress (``is_idle``), and then to the earliest
durable timer (``next_timer_ms``). ``HistoryEngine`` offers both, and tells listeners when
the count of tasks handed to workers changes (``on_outstanding``).
"""

from __future__ import annotations

from ._context import HistoryContext
from ._tasks import TM_RETENTION, Task


def is_idle(ctx: HistoryContext, *, count_activities: bool) -> bool:
    """No task handed to a worker is unfinished, no task waits in a queue, no write or timer firing is in flight.

    (Query tasks do not count.) The time-skipping test environment moves the clock
    only when this holds. With ``count_activities=False`` running activity attempts do
    not count (``env.sleep`` moves time while activities run: a hung activity's
    start-to-close timeout must fire in virtual time).
    """
    background = ctx.background
    outstanding = ctx.outstanding
    busy = outstanding.total if count_activities else outstanding.workflow_tasks
    if busy or background.in_flight or ctx.matching.total_backlog(ignore_queries=True):
        return False
    return not background.busy


async def next_timer_ms(ctx: HistoryContext) -> int | None:
    """The fire time of the earliest durable timer of any shard, or None when there is none.

    Retention timers count only once due: they are housekeeping, so automatic time
    skipping never jumps to one (closed runs would vanish under a test), but a due
    one is still waited for.
    """
    now = ctx.clock.now_ms()

    def counts(fire_ms: int, t: Task) -> bool:
        return t.kind != TM_RETENTION or fire_ms <= now

    best: int | None = None
    for shard in list(ctx.shards.owned.values()):
        found = await shard.timers.next_fire_ms(counts)
        if found is not None and (best is None or found < best):
            best = found
    return best


__all__ = ["is_idle", "next_timer_ms"]
