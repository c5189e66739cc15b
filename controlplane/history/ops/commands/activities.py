"""Activity commands: SCHEDULE_ACTIVITY_TASK and REQUEST_CANCEL_ACTIVITY_TASK."""

from __future__ import annotations

from spindle.api import messages_pb2 as pb

from ..._context import HistoryContext
from ..._retry import normalized_policy
from ..._tasks import T_ACTIVITY_TASK, TM_ACTIVITY_TIMEOUT, Task
from ..._txn import Txn
from ..._versioning import task_extra
from .. import activity_task
from .._run import new_timer
from .handler import CommandHandler, Validation

_TIMEOUTS = ("schedule_to_close_timeout_ms", "schedule_to_start_timeout_ms", "start_to_close_timeout_ms",
             "heartbeat_timeout_ms")


def check_schedule(a: pb.ScheduleActivityTaskCommandAttributes, where: str, v: Validation) -> str | None:
    """Type and id given and within the limit, the id not used by a pending activity, a timeout that ends it."""
    if not a.activity_type:
        return f"{where}.activity_type: required"
    if not a.activity_id:
        return f"{where}.activity_id: required"
    max_id = v.max_id
    if len(a.activity_id) > max_id or len(a.activity_type) > max_id or len(a.task_queue) > max_id:
        return f"{where}: activity_id, activity_type and task_queue are limited to {max_id} characters"
    if a.activity_id in v.activity_ids:
        return f"{where}.activity_id: {a.activity_id!r} is already used by a pending activity"
    v.activity_ids.add(a.activity_id)
    for f in _TIMEOUTS:
        if getattr(a, f) < 0:
            return f"{where}.{f}: must not be negative"
    if a.start_to_close_timeout_ms <= 0 and a.schedule_to_close_timeout_ms <= 0:
        return (f"{where}: activity {a.activity_type!r} needs start_to_close_timeout or "
                "schedule_to_close_timeout (an activity without a timeout could wait forever)")
    return None


def apply_schedule(ctx: HistoryContext, txn: Txn, a: pb.ScheduleActivityTaskCommandAttributes, wtc: int,
                   identity: str) -> None:
    """ActivityTaskScheduled, the activity task (or an eager start in this write) and its schedule timeouts."""
    st = txn.state
    now = txn.now_ms
    stc = a.start_to_close_timeout_ms or a.schedule_to_close_timeout_ms
    policy = normalized_policy(
        a.retry_policy if a.HasField("retry_policy") else None,
        default_initial_ms=int(ctx.config.default_activity_retry_initial_interval * 1000),
        backoff=ctx.config.default_activity_retry_backoff,
        max_factor=ctx.config.default_activity_retry_maximum_interval_factor,
    )
    e = txn.event(
        pb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, "activity_task_scheduled_event_attributes",
        pb.ActivityTaskScheduledEventAttributes(
            activity_id=a.activity_id, activity_type=a.activity_type, task_queue=a.task_queue or st.task_queue,
            input=a.input, schedule_to_close_timeout_ms=a.schedule_to_close_timeout_ms,
            schedule_to_start_timeout_ms=a.schedule_to_start_timeout_ms, start_to_close_timeout_ms=stc,
            heartbeat_timeout_ms=a.heartbeat_timeout_ms, workflow_task_completed_event_id=wtc,
            retry_policy=policy, header=a.header,
        ),
    )
    sid = e.event_id
    info = st.activities[sid]
    eager = a.request_eager_execution and info.task_queue == st.task_queue
    if eager:
        txn.eager_activities.append(sid)  # started by start_inline_tasks, in this same write
    else:
        txn.transfer.append(Task(T_ACTIVITY_TASK, st.namespace_id, st.workflow_id, st.run_id, sid, 1,
                                 extra=task_extra(st, info.task_queue)))
    if a.schedule_to_close_timeout_ms:
        info.timers["SCHEDULE_TO_CLOSE"] = new_timer(
            txn, TM_ACTIVITY_TIMEOUT, now + a.schedule_to_close_timeout_ms, event_id=sid, attempt=0,
            sub="SCHEDULE_TO_CLOSE")
    if a.schedule_to_start_timeout_ms and not eager:
        info.timers["SCHEDULE_TO_START"] = new_timer(
            txn, TM_ACTIVITY_TIMEOUT, now + a.schedule_to_start_timeout_ms, event_id=sid, attempt=1,
            sub="SCHEDULE_TO_START")


def check_request_cancel(a: pb.RequestCancelActivityTaskCommandAttributes, where: str, v: Validation) -> str | None:
    """The activity is pending (scheduled by an earlier task of the run) and its cancel not yet requested.

    Once only, as in Temporal: by an earlier task (its ActivityTaskCancelRequested is written)
    or by an earlier command of this one (which may have cancelled it at once).
    """
    sid = a.scheduled_event_id
    info = v.state.activities.get(sid)
    if info is None:
        return f"{where}.scheduled_event_id: no pending activity scheduled by event {sid}"
    earlier = v.cancelled_activities.get(sid)
    if earlier is not None:
        return f"{where}.scheduled_event_id: the cancel of the activity scheduled by event {sid} is already requested by {earlier}"
    if info.cancel_requested:
        return (f"{where}.scheduled_event_id: the cancel of the activity scheduled by event {sid} was already requested "
                f"(event {info.cancel_requested_event_id})")
    v.cancelled_activities[sid] = where
    return None


def apply_request_cancel(ctx: HistoryContext, txn: Txn, a: pb.RequestCancelActivityTaskCommandAttributes, wtc: int,
                         identity: str) -> None:
    """ActivityTaskCancelRequested; and ActivityTaskCanceled right after when no attempt runs."""
    st = txn.state
    act = st.activities[a.scheduled_event_id]
    req = txn.event(pb.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED, "activity_task_cancel_requested_event_attributes",
                    pb.ActivityTaskCancelRequestedEventAttributes(scheduled_event_id=a.scheduled_event_id,
                                                                  workflow_task_completed_event_id=wtc))
    # Its outcome already arrived while this task ran (buffered, written right after the
    # task's events): that is its one terminal event. A started attempt ends when its
    # worker reports (the cancellation reaches it through heartbeats); one that is not
    # running (scheduled, or waiting out a retry backoff) is cancelled now, and a late
    # answer of its worker gets NOT_FOUND.
    if not act.started and not act.closed:
        activity_task.delete_timers(txn, act)
        txn.event(pb.EVENT_TYPE_ACTIVITY_TASK_CANCELED, "activity_task_canceled_event_attributes",
                  pb.ActivityTaskCanceledEventAttributes(latest_cancel_requested_event_id=req.event_id,
                                                         scheduled_event_id=a.scheduled_event_id), wake=False)


SCHEDULE_ACTIVITY_TASK = CommandHandler(
    pb.COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK, "schedule_activity_task_command_attributes",
    check=check_schedule, apply=apply_schedule)
REQUEST_CANCEL_ACTIVITY_TASK = CommandHandler(
    pb.COMMAND_TYPE_REQUEST_CANCEL_ACTIVITY_TASK, "request_cancel_activity_task_command_attributes",
    check=check_request_cancel, apply=apply_request_cancel)

__all__ = ["REQUEST_CANCEL_ACTIVITY_TASK", "SCHEDULE_ACTIVITY_TASK", "apply_request_cancel", "apply_schedule",
           "check_request_cancel", "check_schedule"]
