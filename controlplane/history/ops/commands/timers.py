"""Timer commands: START_TIMER and CANCEL_TIMER (the timer's firing is ``ops.user_timer``)."""

from __future__ import annotations

from spindle.api import messages_pb2 as pb

from ..._context import HistoryContext
from ..._tasks import TM_USER_TIMER
from ..._txn import Txn
from .._run import new_timer
from .handler import CommandHandler, Validation


def check_start(a: pb.StartTimerCommandAttributes, where: str, v: Validation) -> str | None:
    """An id no pending timer uses, and a positive duration."""
    if not a.timer_id:
        return f"{where}.timer_id: required"
    if a.timer_id in v.timers:
        return f"{where}.timer_id: {a.timer_id!r} is already used by a pending timer"
    if a.start_to_fire_timeout_ms <= 0:
        return f"{where}.start_to_fire_timeout_ms: must be positive, got {a.start_to_fire_timeout_ms}"
    v.timers.add(a.timer_id)
    return None


def apply_start(ctx: HistoryContext, txn: Txn, a: pb.StartTimerCommandAttributes, wtc: int, identity: str) -> None:
    """TimerStarted and its durable timer."""
    e = txn.event(pb.EVENT_TYPE_TIMER_STARTED, "timer_started_event_attributes",
                  pb.TimerStartedEventAttributes(timer_id=a.timer_id, start_to_fire_timeout_ms=a.start_to_fire_timeout_ms,
                                                 workflow_task_completed_event_id=wtc))
    timer = new_timer(txn, TM_USER_TIMER, txn.now_ms + a.start_to_fire_timeout_ms, event_id=e.event_id,
                      extra={"id": a.timer_id})
    txn.state.timers[a.timer_id].task = timer


def check_cancel(a: pb.CancelTimerCommandAttributes, where: str, v: Validation) -> str | None:
    """The timer is pending (started and not cancelled by the task's earlier commands counted)."""
    tid = a.timer_id
    if tid not in v.timers:
        earlier = v.cancelled_timers.get(tid)
        if earlier is not None:
            return f"{where}.timer_id: timer {tid!r} is already cancelled by {earlier}"
        return f"{where}.timer_id: no pending timer {tid!r}"
    v.timers.discard(tid)
    v.cancelled_timers[tid] = where
    return None


def apply_cancel(ctx: HistoryContext, txn: Txn, a: pb.CancelTimerCommandAttributes, wtc: int, identity: str) -> None:
    """TimerCanceled; its timer row is deleted with the write."""
    info = txn.state.timers[a.timer_id]
    if info.task is not None and info.task.task_id:
        txn.timer_delete.append((info.task.fire_time_ms, info.task.task_id))
    txn.event(pb.EVENT_TYPE_TIMER_CANCELED, "timer_canceled_event_attributes",
              pb.TimerCanceledEventAttributes(timer_id=a.timer_id, started_event_id=info.started_event_id,
                                              workflow_task_completed_event_id=wtc, identity=identity))


START_TIMER = CommandHandler(pb.COMMAND_TYPE_START_TIMER, "start_timer_command_attributes",
                             check=check_start, apply=apply_start)
CANCEL_TIMER = CommandHandler(pb.COMMAND_TYPE_CANCEL_TIMER, "cancel_timer_command_attributes",
                              check=check_cancel, apply=apply_cancel)

__all__ = ["CANCEL_TIMER", "START_TIMER", "apply_cancel", "apply_start", "check_cancel", "check_start"]
