"""The commands of a completed workflow task: validation, then the events (and tasks) each one writes.

``validate`` finds the first problem with a task's commands (naming the command index and
field) before anything is written; ``apply`` turns one command into its event, in command
order, with the tasks and timers it needs (an activity task, a timer, a child start, an
external signal or cancel) and, for a closing command, the close of the run.
"""

from __future__ import annotations

from typing import Sequence

from spindle.controlplane._field_rules import find_problem, workflow_task_timeout_ms
from spindle.controlplane._search_attributes import check_search_attributes
from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.controlplane.errors import InvalidArgument, ServiceError

from .._context import HistoryContext
from .._mutable_state import MutableState
from .._retry import normalized_policy
from .._tasks import (
    T_ACTIVITY_TASK,
    T_CANCEL_EXTERNAL,
    T_SIGNAL_EXTERNAL,
    T_START_CHILD,
    TM_ACTIVITY_TIMEOUT,
    TM_USER_TIMER,
    Task,
)
from .._txn import Txn
from . import activity_task
from . import cron
from ._run import build_run, new_run_id, new_timer, visibility_task
from .close import close_run

_ATTR = {
    pb.COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK: "schedule_activity_task_command_attributes",
    pb.COMMAND_TYPE_REQUEST_CANCEL_ACTIVITY_TASK: "request_cancel_activity_task_command_attributes",
    pb.COMMAND_TYPE_START_TIMER: "start_timer_command_attributes",
    pb.COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION: "complete_workflow_execution_command_attributes",
    pb.COMMAND_TYPE_FAIL_WORKFLOW_EXECUTION: "fail_workflow_execution_command_attributes",
    pb.COMMAND_TYPE_CANCEL_TIMER: "cancel_timer_command_attributes",
    pb.COMMAND_TYPE_CANCEL_WORKFLOW_EXECUTION: "cancel_workflow_execution_command_attributes",
    pb.COMMAND_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION: "request_cancel_external_workflow_execution_command_attributes",
    pb.COMMAND_TYPE_RECORD_MARKER: "record_marker_command_attributes",
    pb.COMMAND_TYPE_CONTINUE_AS_NEW_WORKFLOW_EXECUTION: "continue_as_new_workflow_execution_command_attributes",
    pb.COMMAND_TYPE_START_CHILD_WORKFLOW_EXECUTION: "start_child_workflow_execution_command_attributes",
    pb.COMMAND_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION: "signal_external_workflow_execution_command_attributes",
    pb.COMMAND_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES: "upsert_workflow_search_attributes_command_attributes",
    pb.COMMAND_TYPE_ACCEPT_UPDATE: "accept_update_command_attributes",
    pb.COMMAND_TYPE_COMPLETE_UPDATE: "complete_update_command_attributes",
    pb.COMMAND_TYPE_REJECT_UPDATE: "reject_update_command_attributes",
}
CLOSE_COMMANDS = frozenset({
    pb.COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION,
    pb.COMMAND_TYPE_FAIL_WORKFLOW_EXECUTION,
    pb.COMMAND_TYPE_CANCEL_WORKFLOW_EXECUTION,
    pb.COMMAND_TYPE_CONTINUE_AS_NEW_WORKFLOW_EXECUTION,
})
"""Commands that close the run (the last command of a task)."""

_WITH_SEARCH_ATTRIBUTES = {
    pb.COMMAND_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES,
    pb.COMMAND_TYPE_START_CHILD_WORKFLOW_EXECUTION,
    pb.COMMAND_TYPE_CONTINUE_AS_NEW_WORKFLOW_EXECUTION,
}


def _name(t: int) -> str:
    try:
        return pb.CommandType.Name(t)
    except ValueError:
        return str(t)


def validate(ctx: HistoryContext, st: MutableState, commands: Sequence[pb.Command]) -> str | None:
    """The first problem with ``commands`` (naming the command index and field), or None."""
    max_id = ctx.config.max_id_length
    activity_ids = set(st.activity_ids)
    timers = set(st.timers)
    accepted = set(st.accepted_updates)
    size = 0
    for i, c in enumerate(commands):
        where = f"commands[{i}]"
        attr = _ATTR.get(c.command_type)
        if attr is None:
            return f"{where}: unknown command type {_name(c.command_type)}"
        if c.WhichOneof("attributes") != attr:
            return f"{where}: {_name(c.command_type)} needs {attr} (got {c.WhichOneof('attributes') or 'none'})"
        a = getattr(c, attr)
        size += a.ByteSize()
        if c.command_type in CLOSE_COMMANDS and i != len(commands) - 1:
            return f"{where}: {_name(c.command_type)} must be the last command of the task"
        t = c.command_type
        if t == pb.COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK:
            if not a.activity_type:
                return f"{where}.activity_type: required"
            if not a.activity_id:
                return f"{where}.activity_id: required"
            if len(a.activity_id) > max_id or len(a.activity_type) > max_id or len(a.task_queue) > max_id:
                return f"{where}: activity_id, activity_type and task_queue are limited to {max_id} characters"
            if a.activity_id in activity_ids:
                return f"{where}.activity_id: {a.activity_id!r} is already used by a pending activity"
            activity_ids.add(a.activity_id)
            for f in ("schedule_to_close_timeout_ms", "schedule_to_start_timeout_ms", "start_to_close_timeout_ms",
                      "heartbeat_timeout_ms"):
                if getattr(a, f) < 0:
                    return f"{where}.{f}: must not be negative"
            if a.start_to_close_timeout_ms <= 0 and a.schedule_to_close_timeout_ms <= 0:
                return (f"{where}: activity {a.activity_type!r} needs start_to_close_timeout or "
                        "schedule_to_close_timeout (an activity without a timeout could wait forever)")
        elif t == pb.COMMAND_TYPE_START_TIMER:
            if not a.timer_id:
                return f"{where}.timer_id: required"
            if a.timer_id in timers:
                return f"{where}.timer_id: {a.timer_id!r} is already used by a pending timer"
            if a.start_to_fire_timeout_ms <= 0:
                return f"{where}.start_to_fire_timeout_ms: must be positive, got {a.start_to_fire_timeout_ms}"
            timers.add(a.timer_id)
        elif t == pb.COMMAND_TYPE_CANCEL_TIMER:
            if a.timer_id not in timers:
                return f"{where}.timer_id: no pending timer {a.timer_id!r}"
            timers.discard(a.timer_id)
        elif t == pb.COMMAND_TYPE_REQUEST_CANCEL_ACTIVITY_TASK:
            if a.scheduled_event_id not in st.activities:
                return f"{where}.scheduled_event_id: no pending activity scheduled by event {a.scheduled_event_id}"
        elif t == pb.COMMAND_TYPE_START_CHILD_WORKFLOW_EXECUTION:
            if not a.workflow_id or not a.workflow_type:
                return f"{where}: workflow_id and workflow_type are required"
            if len(a.workflow_id) > max_id:
                return f"{where}.workflow_id: longer than {max_id} characters"
            # what a start must satisfy (frontend ``check_start_request``): a child that passes here
            # passes there too, wherever its shard lives (the cluster's internal RPC checks it again)
            for f in ("workflow_type", "task_queue"):
                if len(getattr(a, f)) > max_id:
                    return f"{where}.{f}: longer than {max_id} characters"
            for f in ("execution_timeout_ms", "run_timeout_ms", "task_timeout_ms"):
                if getattr(a, f) < 0:
                    return f"{where}.{f}: must not be negative"
            if a.workflow_id_reuse_policy not in pb.WorkflowIdReusePolicy.values():
                return f"{where}.workflow_id_reuse_policy: unknown value {a.workflow_id_reuse_policy}"
            if a.namespace and a.namespace != st.namespace:
                try:
                    ctx.namespaces.get(a.namespace)
                except Exception:  # noqa: BLE001
                    return f"{where}.namespace: namespace {a.namespace!r} not found"
        elif t == pb.COMMAND_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION:
            if not a.execution.workflow_id or not a.signal_name:
                return f"{where}: execution.workflow_id and signal_name are required"
            if len(a.execution.workflow_id) > max_id or len(a.signal_name) > max_id:
                return f"{where}: execution.workflow_id and signal_name are limited to {max_id} characters"
        elif t == pb.COMMAND_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION:
            if not a.workflow_id:
                return f"{where}.workflow_id: required"
            if len(a.workflow_id) > max_id:
                return f"{where}.workflow_id: longer than {max_id} characters"
        elif t == pb.COMMAND_TYPE_RECORD_MARKER:
            if not a.marker_name:
                return f"{where}.marker_name: required"
        elif t == pb.COMMAND_TYPE_ACCEPT_UPDATE:
            if a.update_id not in st.pending_updates:
                return f"{where}.update_id: no pending update {a.update_id!r}"
            accepted.add(a.update_id)
        elif t == pb.COMMAND_TYPE_REJECT_UPDATE:
            if a.update_id not in st.pending_updates:
                return f"{where}.update_id: no pending update {a.update_id!r}"
        elif t == pb.COMMAND_TYPE_COMPLETE_UPDATE:
            if a.update_id not in accepted or a.update_id in st.completed_updates:
                return f"{where}.update_id: update {a.update_id!r} was not accepted or is already completed"
        # every field in its range (durations, retry policy), ids and names without control characters:
        # the rules the frontend applies to every request (``_field_rules``), so that a child's start, a
        # timer or a retry never meets a value the store or the clock cannot hold after the task completed
        problem = find_problem(a, where, max_id)
        if problem is not None:
            return problem
        # search attributes must be registered and typed as at start (checked by the frontend there)
        if t in _WITH_SEARCH_ATTRIBUTES and a.HasField("search_attributes"):
            ns = ctx.namespaces.by_id(st.namespace_id)
            if t == pb.COMMAND_TYPE_START_CHILD_WORKFLOW_EXECUTION and a.namespace:
                try:
                    ns = ctx.namespaces.get(a.namespace)
                except ServiceError:
                    pass  # reported above
            if ns is not None:
                try:
                    check_search_attributes(ns, a.search_attributes, f"{where}.search_attributes")
                except InvalidArgument as e:
                    return e.message
    if size > ctx.config.max_payload_bytes * 4:
        return f"commands: {size} bytes in one task is over the limit"
    return None


def apply(ctx: HistoryContext, txn: Txn, c: pb.Command, wtc: int, identity: str) -> None:
    """Write the event(s) of one valid command (``wtc``: the task's WorkflowTaskCompleted event id)."""
    st = txn.state
    t = c.command_type
    now = txn.now_ms
    if t == pb.COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK:
        a = c.schedule_activity_task_command_attributes
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
                                     extra={"q": info.task_queue}))
        if a.schedule_to_close_timeout_ms:
            info.timers["SCHEDULE_TO_CLOSE"] = new_timer(
                txn, TM_ACTIVITY_TIMEOUT, now + a.schedule_to_close_timeout_ms, event_id=sid, attempt=0,
                sub="SCHEDULE_TO_CLOSE")
        if a.schedule_to_start_timeout_ms and not eager:
            info.timers["SCHEDULE_TO_START"] = new_timer(
                txn, TM_ACTIVITY_TIMEOUT, now + a.schedule_to_start_timeout_ms, event_id=sid, attempt=1,
                sub="SCHEDULE_TO_START")
    elif t == pb.COMMAND_TYPE_START_TIMER:
        a = c.start_timer_command_attributes
        e = txn.event(pb.EVENT_TYPE_TIMER_STARTED, "timer_started_event_attributes",
                      pb.TimerStartedEventAttributes(timer_id=a.timer_id, start_to_fire_timeout_ms=a.start_to_fire_timeout_ms,
                                                     workflow_task_completed_event_id=wtc))
        timer = new_timer(txn, TM_USER_TIMER, now + a.start_to_fire_timeout_ms, event_id=e.event_id,
                          extra={"id": a.timer_id})
        st.timers[a.timer_id].task = timer
    elif t == pb.COMMAND_TYPE_CANCEL_TIMER:
        a = c.cancel_timer_command_attributes
        info = st.timers[a.timer_id]
        if info.task is not None and info.task.task_id:
            txn.timer_delete.append((info.task.fire_time_ms, info.task.task_id))
        txn.event(pb.EVENT_TYPE_TIMER_CANCELED, "timer_canceled_event_attributes",
                  pb.TimerCanceledEventAttributes(timer_id=a.timer_id, started_event_id=info.started_event_id,
                                                  workflow_task_completed_event_id=wtc, identity=identity))
    elif t == pb.COMMAND_TYPE_REQUEST_CANCEL_ACTIVITY_TASK:
        a = c.request_cancel_activity_task_command_attributes
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
    elif t == pb.COMMAND_TYPE_RECORD_MARKER:
        a = c.record_marker_command_attributes
        txn.event(pb.EVENT_TYPE_MARKER_RECORDED, "marker_recorded_event_attributes",
                  pb.MarkerRecordedEventAttributes(marker_name=a.marker_name, details=a.details,
                                                   workflow_task_completed_event_id=wtc, header=a.header,
                                                   failure=a.failure))
    elif t == pb.COMMAND_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
        a = c.upsert_workflow_search_attributes_command_attributes
        txn.event(pb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES, "upsert_workflow_search_attributes_event_attributes",
                  pb.UpsertWorkflowSearchAttributesEventAttributes(workflow_task_completed_event_id=wtc,
                                                                   search_attributes=a.search_attributes))
        visibility_task(ctx, txn)
    elif t == pb.COMMAND_TYPE_START_CHILD_WORKFLOW_EXECUTION:
        a = c.start_child_workflow_execution_command_attributes
        e = txn.event(
            pb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED,
            "start_child_workflow_execution_initiated_event_attributes",
            pb.StartChildWorkflowExecutionInitiatedEventAttributes(
                namespace=a.namespace or st.namespace, workflow_id=a.workflow_id, workflow_type=a.workflow_type,
                task_queue=a.task_queue or st.task_queue, input=a.input, execution_timeout_ms=a.execution_timeout_ms,
                run_timeout_ms=a.run_timeout_ms, task_timeout_ms=a.task_timeout_ms,
                parent_close_policy=a.parent_close_policy or pb.PARENT_CLOSE_POLICY_TERMINATE,
                workflow_task_completed_event_id=wtc, workflow_id_reuse_policy=a.workflow_id_reuse_policy,
                memo=a.memo, search_attributes=a.search_attributes, header=a.header,
            ),
        )
        txn.transfer.append(Task(T_START_CHILD, st.namespace_id, st.workflow_id, st.run_id, e.event_id))
    elif t == pb.COMMAND_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION:
        a = c.signal_external_workflow_execution_command_attributes
        e = txn.event(
            pb.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED,
            "signal_external_workflow_execution_initiated_event_attributes",
            pb.SignalExternalWorkflowExecutionInitiatedEventAttributes(
                workflow_task_completed_event_id=wtc, namespace=a.namespace or st.namespace,
                workflow_execution=a.execution, signal_name=a.signal_name, input=a.input,
                child_workflow_only=a.child_workflow_only, header=a.header),
        )
        txn.transfer.append(Task(T_SIGNAL_EXTERNAL, st.namespace_id, st.workflow_id, st.run_id, e.event_id))
    elif t == pb.COMMAND_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION:
        a = c.request_cancel_external_workflow_execution_command_attributes
        e = txn.event(
            pb.EVENT_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED,
            "request_cancel_external_workflow_execution_initiated_event_attributes",
            pb.RequestCancelExternalWorkflowExecutionInitiatedEventAttributes(
                workflow_task_completed_event_id=wtc, namespace=a.namespace or st.namespace,
                workflow_execution=pb.WorkflowExecution(workflow_id=a.workflow_id, run_id=a.run_id),
                child_workflow_only=a.child_workflow_only, reason=a.reason),
        )
        txn.transfer.append(Task(T_CANCEL_EXTERNAL, st.namespace_id, st.workflow_id, st.run_id, e.event_id))
    elif t == pb.COMMAND_TYPE_ACCEPT_UPDATE:
        a = c.accept_update_command_attributes
        pu = st.pending_updates[a.update_id]
        txn.event(pb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED, "workflow_execution_update_accepted_event_attributes",
                  pb.WorkflowExecutionUpdateAcceptedEventAttributes(
                      update_id=a.update_id, name=pu.request.name, input=pu.request.input, header=pu.request.header,
                      identity=pu.request.identity, workflow_task_completed_event_id=wtc))
    elif t == pb.COMMAND_TYPE_REJECT_UPDATE:
        a = c.reject_update_command_attributes
        pu = st.pending_updates.pop(a.update_id)
        resp = svc.UpdateWorkflowExecutionResponse(failure=a.failure, run_id=st.run_id)
        txn.after_commit.append(lambda: pu.future.done() or pu.future.set_result(resp))
    elif t == pb.COMMAND_TYPE_COMPLETE_UPDATE:
        a = c.complete_update_command_attributes
        accepted_id = next((e.event_id for e in reversed(st.events)
                            if e.event_type == pb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED
                            and e.workflow_execution_update_accepted_event_attributes.update_id == a.update_id), 0)
        attrs = pb.WorkflowExecutionUpdateCompletedEventAttributes(update_id=a.update_id, accepted_event_id=accepted_id,
                                                                  workflow_task_completed_event_id=wtc)
        if a.HasField("failure"):
            attrs.failure.CopyFrom(a.failure)
        else:
            attrs.success.CopyFrom(a.success)
        txn.event(pb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED, "workflow_execution_update_completed_event_attributes",
                  attrs)
        pu2 = st.pending_updates.pop(a.update_id, None)
        if pu2 is not None:
            resp2 = svc.UpdateWorkflowExecutionResponse(run_id=st.run_id)
            if a.HasField("failure"):
                resp2.failure.CopyFrom(a.failure)
            else:
                resp2.success.CopyFrom(a.success)
            fut = pu2.future
            txn.after_commit.append(lambda: fut.done() or fut.set_result(resp2))
    elif t == pb.COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION:
        result = c.complete_workflow_execution_command_attributes.result
        nxt = cron.next_run_id(st)  # a cron chain goes on at the next tick
        txn.event(pb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, "workflow_execution_completed_event_attributes",
                  pb.WorkflowExecutionCompletedEventAttributes(result=result, workflow_task_completed_event_id=wtc,
                                                               new_execution_run_id=nxt))
        close_run(ctx, txn)
        if nxt:
            cron.start_next(ctx, txn, nxt, result=result)
    elif t == pb.COMMAND_TYPE_FAIL_WORKFLOW_EXECUTION:
        failure = c.fail_workflow_execution_command_attributes.failure
        nxt = cron.next_run_id(st)
        txn.event(pb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED, "workflow_execution_failed_event_attributes",
                  pb.WorkflowExecutionFailedEventAttributes(
                      failure=failure, retry_state=pb.RETRY_STATE_RETRY_POLICY_NOT_SET,
                      workflow_task_completed_event_id=wtc, new_execution_run_id=nxt))
        close_run(ctx, txn)
        if nxt:
            cron.start_next(ctx, txn, nxt, failure=failure)
    elif t == pb.COMMAND_TYPE_CANCEL_WORKFLOW_EXECUTION:
        txn.event(pb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED, "workflow_execution_canceled_event_attributes",
                  pb.WorkflowExecutionCanceledEventAttributes(
                      details=c.cancel_workflow_execution_command_attributes.details,
                      workflow_task_completed_event_id=wtc))
        close_run(ctx, txn)
    elif t == pb.COMMAND_TYPE_CONTINUE_AS_NEW_WORKFLOW_EXECUTION:
        continue_as_new(ctx, txn, c.continue_as_new_workflow_execution_command_attributes, wtc)


def continue_as_new(ctx: HistoryContext, txn: Txn, a: pb.ContinueAsNewWorkflowExecutionCommandAttributes, wtc: int) -> None:
    """Close the run as continued-as-new; its successor is created in the same transaction (``txn.new_run``)."""
    st = txn.state
    assert st.started is not None
    rid = new_run_id()
    old = st.started
    txn.event(pb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW, "workflow_execution_continued_as_new_event_attributes",
              pb.WorkflowExecutionContinuedAsNewEventAttributes(
                  new_execution_run_id=rid, workflow_type=a.workflow_type or old.workflow_type,
                  task_queue=a.task_queue or old.task_queue, input=a.input,
                  run_timeout_ms=a.run_timeout_ms or old.run_timeout_ms,
                  task_timeout_ms=workflow_task_timeout_ms(a.task_timeout_ms, old.task_timeout_ms),
                  workflow_task_completed_event_id=wtc,
                  backoff_start_interval_ms=a.backoff_start_interval_ms, memo=a.memo,
                  search_attributes=a.search_attributes, header=a.header))
    close_run(ctx, txn)
    attrs = pb.WorkflowExecutionStartedEventAttributes(
        workflow_type=a.workflow_type or old.workflow_type, task_queue=a.task_queue or old.task_queue, input=a.input,
        execution_timeout_ms=old.execution_timeout_ms, run_timeout_ms=a.run_timeout_ms or old.run_timeout_ms,
        task_timeout_ms=workflow_task_timeout_ms(a.task_timeout_ms, old.task_timeout_ms),
        continued_execution_run_id=st.run_id,
        first_execution_run_id=old.first_execution_run_id or st.run_id, original_execution_run_id=rid,
        memo=a.memo if a.HasField("memo") else old.memo,
        search_attributes=a.search_attributes if a.HasField("search_attributes") else old.search_attributes,
        identity=old.identity, attempt=1, execution_expiration_time_ms=old.execution_expiration_time_ms,
        first_workflow_task_backoff_ms=a.backoff_start_interval_ms, header=a.header,
        cron_schedule=old.cron_schedule,  # a cron run that continues as new stays in its chain
    )
    if old.HasField("parent"):
        attrs.parent.CopyFrom(old.parent)
    nst = MutableState(st.namespace_id, st.namespace, st.workflow_id, rid, st.shard_id)
    ntxn = build_run(ctx, nst, attrs, txn.now_ms, start_delay_ms=a.backoff_start_interval_ms)
    txn.new_run = (nst, ntxn.events, ntxn.transfer, ntxn.timers)


__all__ = ["CLOSE_COMMANDS", "apply", "continue_as_new", "validate"]
