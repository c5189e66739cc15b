"""A completed workflow task: its commands become history, and what the worker gets straight back.

The completion is refused (the task fails, BAD_COMMAND) when a command is invalid, and
failed (UNHANDLED_COMMAND) when the task would close the run while signals or updates it
has not seen are waiting. Otherwise: WorkflowTaskStarted and WorkflowTaskCompleted are
written, then each command's events in order, then the events buffered while the task
ran; a new workflow task is scheduled if any of them needs the workflow code. With
``return_new_workflow_task`` that task, and eagerly requested activities, are started
in the same write and handed back in the response.
"""

from __future__ import annotations

import logging

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.controlplane._log_format import run_fields
from spindle.controlplane.errors import InvalidArgument

from .._context import HistoryContext
from .._tokens import WORKFLOW
from .._txn import Txn
from .._versioning import worker_version
from . import activity_task, commands, workflow_task
from ._run import flush_buffered, note_history_length, schedule_workflow_task, visibility_task
from .close import fail_for_history_size, history_limit_reached

log = logging.getLogger("spindle.history")

Handed = tuple[svc.PollWorkflowTaskQueueResponse | None, list[svc.PollActivityTaskQueueResponse]]


async def respond(ctx: HistoryContext, req: svc.RespondWorkflowTaskCompletedRequest
                  ) -> svc.RespondWorkflowTaskCompletedResponse:
    """Record a completed workflow task and its commands (see the module docstring)."""
    tok = ctx.tokens.decode(req.task_token, WORKFLOW)
    async with ctx.cache.locked(tok.namespace_id, tok.workflow_id):
        st = await ctx.cache.load(tok.namespace_id, tok.workflow_id, tok.run_id)
        wt = workflow_task.current(ctx, st, tok)
        assert st is not None
        txn = Txn(st, ctx.clock.now_ms())
        version = worker_version(req.deployment_options)
        st.sticky_version = version
        error = commands.validate(ctx, st, req.commands)
        if error is not None:
            workflow_task.fail(ctx, txn, wt, pb.WORKFLOW_TASK_FAILED_CAUSE_BAD_COMMAND,
                               pb.Failure(message=error, source="server"), req.identity)
            await ctx.commit(txn)
            raise InvalidArgument(error)
        closing = any(c.command_type in commands.CLOSE_COMMANDS for c in req.commands)
        waiting_signal = any(e.event_type == pb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED for e in st.buffered)
        waiting_update = any(not pu.delivered for pu in st.pending_updates.values())
        if closing and (waiting_signal or waiting_update):
            workflow_task.fail(
                ctx, txn, wt, pb.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND,
                pb.Failure(message="new signals or updates arrived while the task ran; the workflow sees them first",
                           source="server"), req.identity, inline=req.return_new_workflow_task)
            handed = start_inline_tasks(ctx, txn, req.identity, version)
            await ctx.commit(txn)
            return _response(handed)
        workflow_task.write_started(ctx, txn, wt)
        attrs = pb.WorkflowTaskCompletedEventAttributes(scheduled_event_id=wt.scheduled_event_id,
                                                        started_event_id=wt.started_event_id, identity=req.identity)
        before = (st.deployment_version, st.versioning_behavior)
        if version:
            attrs.deployment_version.CopyFrom(req.deployment_options.version)
            attrs.versioning_behavior = req.versioning_behavior or req.deployment_options.default_versioning_behavior
        completed = txn.event(pb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, "workflow_task_completed_event_attributes", attrs)
        if before != (st.deployment_version, st.versioning_behavior):
            visibility_task(ctx, txn)  # the build it runs on is searchable
        if req.HasField("sticky_attributes") and req.sticky_attributes.worker_task_queue:
            st.sticky_queue = req.sticky_attributes.worker_task_queue
            st.sticky_timeout_ms = req.sticky_attributes.schedule_to_start_timeout_ms
        else:
            st.sticky_queue = ""
        txn.wake = False
        for cmd in req.commands:
            commands.apply(ctx, txn, cmd, completed.event_id, req.identity)
        # updates delivered in this task but neither accepted nor rejected go out again
        for uid in wt.delivered_updates:
            pu = st.pending_updates.get(uid)
            if pu is not None and uid not in st.accepted_updates:
                pu.delivered = False
                txn.wake = True
        if st.running:
            flush_buffered(txn)
            if history_limit_reached(ctx, st) is not None:
                fail_for_history_size(ctx, txn)
            elif (txn.wake or any(not pu.delivered for pu in st.pending_updates.values())) and st.workflow_task is None:
                schedule_workflow_task(ctx, txn, inline=req.return_new_workflow_task)
            elif st.next_event_id > ctx.config.history_warn_events and not st.history_warned:
                st.history_warned = True
                log.warning("workflow %s/%s has %d events (limit %d): consider continue-as-new",
                            st.workflow_id, st.run_id, st.next_event_id - 1, ctx.config.history_max_events,
                            extra=run_fields(st.namespace, st.workflow_id, st.run_id))
        handed = start_inline_tasks(ctx, txn, req.identity, version)
        if st.running:
            txn.after_commit.append(lambda: note_history_length(ctx, st))
        await ctx.commit(txn)
        return _response(handed)


def start_inline_tasks(ctx: HistoryContext, txn: Txn, identity: str, version: str = "") -> Handed:
    """Start what this request hands straight back (next workflow task, eager activities).

    Called last before the commit: their timeout timers are written by the same
    transaction, and no transfer task is needed (a lost response times out).
    """
    st = txn.state
    wt_resp = workflow_task.start_inline(ctx, txn, identity, version)
    acts = []
    for sid in txn.eager_activities:
        info = st.activities.get(sid)
        if info is not None and not info.started:
            acts.append(activity_task.start(ctx, st, info, identity, txn=txn))
    return wt_resp, acts


def _response(handed: Handed) -> svc.RespondWorkflowTaskCompletedResponse:
    resp = svc.RespondWorkflowTaskCompletedResponse()
    wt, acts = handed
    if wt is not None:
        resp.workflow_task.CopyFrom(wt)
    resp.activity_tasks.extend(acts)
    return resp


__all__ = ["respond", "start_inline_tasks"]
