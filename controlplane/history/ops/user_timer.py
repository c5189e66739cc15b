"""A workflow's own timer (``workflow.sleep``, ``asyncio.sleep`` in workflow code) firing."""

from __future__ import annotations

from spindle.api import messages_pb2 as pb

from .._context import HistoryContext
from .._tasks import Task
from .._txn import Txn
from ._run import schedule_workflow_task, timer_done


async def fired(ctx: HistoryContext, t: Task) -> None:
    """A timer the workflow started fired: TimerFired (buffered while a workflow task runs) wakes the workflow."""
    async with ctx.cache.locked(t.namespace_id, t.workflow_id):
        st = await ctx.cache.load(t.namespace_id, t.workflow_id, t.run_id)
        timer_id = t.extra.get("id", "")
        info = st.timers.get(timer_id) if st is not None and st.running else None
        if st is None or info is None or info.started_event_id != t.event_id:
            timer_done(ctx, t)
            return
        if any(e.event_type == pb.EVENT_TYPE_TIMER_FIRED and e.timer_fired_event_attributes.timer_id == timer_id
               and e.timer_fired_event_attributes.started_event_id == t.event_id for e in st.buffered):
            timer_done(ctx, t)
            return
        txn = Txn(st, ctx.clock.now_ms())
        timer_done(ctx, t, txn)
        txn.external(pb.EVENT_TYPE_TIMER_FIRED, "timer_fired_event_attributes",
                     pb.TimerFiredEventAttributes(timer_id=timer_id, started_event_id=t.event_id))
        if st.workflow_task is None:
            schedule_workflow_task(ctx, txn)
        await ctx.commit(txn)


__all__ = ["fired"]
