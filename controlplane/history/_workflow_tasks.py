"""Workflow tasks: handing one to a worker, and recording its completion or failure."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from spindle.controlplane.api import messages_pb2 as pb
from spindle.controlplane.api import service_pb2 as svc
from spindle.controlplane.errors import InvalidArgument, NotFound
from spindle.controlplane.matching import KIND_WORKFLOW, TaskRef
from spindle.controlplane.store import Mutation, TimerTask

from ._outstanding import WORKFLOW as OUT_WORKFLOW, workflow_task_key
from ._mutable_state import MutableState
from ._pending import WorkflowTaskInfo
from ._tasks import T_WORKFLOW_TASK, TM_WORKFLOW_TASK_TIMEOUT, Task
from ._tokens import WORKFLOW, BadTokenError, TaskToken
from ._txn import Txn

if TYPE_CHECKING:
    from .engine import HistoryEngine

CLOSE_COMMANDS = frozenset(
    {
        pb.COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION,
        pb.COMMAND_TYPE_FAIL_WORKFLOW_EXECUTION,
        pb.COMMAND_TYPE_CANCEL_WORKFLOW_EXECUTION,
        pb.COMMAND_TYPE_CONTINUE_AS_NEW_WORKFLOW_EXECUTION,
    }
)


def decode_token(raw: bytes, kind: str) -> TaskToken:
    try:
        tok = TaskToken.decode(raw)
    except BadTokenError as e:
        raise InvalidArgument(str(e)) from e
    if tok.kind != kind:
        raise InvalidArgument("task_token: this token belongs to another kind of task")
    return tok


class WorkflowTasksMixin:
    """Workflow task lifecycle."""

    # ------------------------------------------------------------------ dispatch
    def dispatch_workflow_task(self: "HistoryEngine", ref: TaskRef, task_queue: str) -> None:
        """Offer a scheduled workflow task: to the worker holding the run in cache first.

        Only a ref for the run's current, unstarted task marks that task dispatched: a stale
        ref (an older task's transfer row whose acknowledgement was lost with a crash) is
        offered as it is (its start is refused and acknowledges the row) and must not make a
        timed-out task look as if it were still waiting in a queue.
        """
        st = self.cache.get((ref.namespace_id, ref.workflow_id, ref.run_id))
        wt = st.workflow_task if st is not None else None
        current = wt is not None and wt.scheduled_event_id == ref.event_id and wt.attempt == ref.attempt \
            and not wt.started
        if st is not None and wt is not None and current and st.sticky_queue:
            queue = st.sticky_queue
            wt.dispatched = True
            wt.sticky = True
            self.matching.add(ref, queue, sticky=True)
            fallback_s = (st.sticky_timeout_ms or int(self.config.sticky_schedule_to_start_timeout * 1000)) / 1000.0

            def fall_back() -> None:
                cur = st.workflow_task
                if cur is wt and not cur.started and st.running:
                    self.matching.remove(ref, queue, KIND_WORKFLOW)
                    st.sticky_queue = ""
                    wt.sticky = False
                    self.matching.add(ref, st.task_queue)

            asyncio.get_running_loop().call_later(fallback_s, fall_back)
            return
        if wt is not None and current:
            wt.dispatched = True
        self.matching.add(ref, st.task_queue if st is not None else task_queue)

    # ------------------------------------------------------------------ start
    def start_workflow_task(self: "HistoryEngine", st: MutableState, wt: WorkflowTaskInfo, identity: str,
                            m: Mutation | None = None, *, sticky: bool, txn: Txn | None = None
                            ) -> svc.PollWorkflowTaskQueueResponse:
        """Mark the task started (in memory) and build what the worker receives.

        The start itself is not an event yet (it is written with the outcome); the durable
        workflow-task timeout timer goes into ``txn`` (handed out with the write that
        scheduled the task) or ``m`` (a task a poller took), so a task lost with its worker
        times out even across a restart. With ``txn``, call this after the txn's last event.
        """
        now = self.clock.now_ms()
        wt.started = True
        wt.started_event_id = st.next_event_id
        wt.started_time_ms = now
        wt.nonce = self.next_nonce()
        wt.identity = identity
        fire = now + (wt.timeout_ms or int(self.config.default_workflow_task_timeout * 1000))
        t = Task(TM_WORKFLOW_TASK_TIMEOUT, st.namespace_id, st.workflow_id, st.run_id, wt.scheduled_event_id, wt.attempt,
                 extra={"n": wt.nonce}, fire_time_ms=fire)
        self.add_start_timer(st, t, m, txn)
        wt.timeout_timer = t
        started = pb.HistoryEvent(
            event_id=wt.started_event_id, event_time_ms=now, event_type=pb.EVENT_TYPE_WORKFLOW_TASK_STARTED,
            workflow_task_started_event_attributes=pb.WorkflowTaskStartedEventAttributes(
                scheduled_event_id=wt.scheduled_event_id, identity=identity, request_id=wt.nonce,
                suggest_continue_as_new=st.next_event_id > self.config.history_warn_events,
            ),
        )
        wt.started_event = started
        updates = []
        wt.delivered_updates = []
        for uid, pu in st.pending_updates.items():
            if not pu.delivered:
                pu.delivered = True
                wt.delivered_updates.append(uid)
                updates.append(pu.request)
        first = st.last_completed_started_id if sticky else 0
        events = st.events[first:]
        events.append(started)
        tok = TaskToken(WORKFLOW, st.namespace_id, st.workflow_id, st.run_id, wt.scheduled_event_id, wt.attempt, wt.nonce)
        self.outstanding.add(self.run_key(st), workflow_task_key(wt.nonce), OUT_WORKFLOW)
        return svc.PollWorkflowTaskQueueResponse(
            task_token=tok.encode(),
            workflow_execution=pb.WorkflowExecution(workflow_id=st.workflow_id, run_id=st.run_id),
            workflow_type=st.workflow_type,
            previous_started_event_id=st.last_completed_started_id,
            started_event_id=wt.started_event_id,
            attempt=wt.attempt,
            history=pb.History(events=events),
            updates=updates,
            scheduled_time_ms=wt.scheduled_time_ms,
            started_time_ms=now,
            namespace=st.namespace,
            task_queue=st.task_queue,
        )

    def add_start_timer(self: "HistoryEngine", st: MutableState, t: Task, m: Mutation | None, txn: Txn | None) -> None:
        """A start's timeout timer: with the transaction that hands the task out, or a small write of its own."""
        if txn is not None:
            txn.timers.append(t)
            return
        assert m is not None
        shard = self.shards[st.shard_id]
        t.task_id = shard.next_task_id()
        m.timer_insert.append(TimerTask(t.fire_time_ms, t.task_id, t.encode()))
        self.arm_timer(shard, t)

    def start_inline_tasks(self: "HistoryEngine", txn: Txn, identity: str
                           ) -> tuple[svc.PollWorkflowTaskQueueResponse | None, list[svc.PollActivityTaskQueueResponse]]:
        """Start what this request hands straight back (next workflow task, eager activities).

        Called last before the commit: their timeout timers are written by the same
        transaction, and no transfer task is needed (a lost response times out).
        """
        st = txn.state
        wt_resp = None
        wt = st.workflow_task
        if txn.inline_workflow_task and st.running and wt is not None and not wt.started:
            wt_resp = self.start_workflow_task(st, wt, identity, sticky=True, txn=txn)
        acts = []
        for sid in txn.eager_activities:
            info = st.activities.get(sid)
            if info is not None and not info.started:
                acts.append(self.start_activity(st, info, identity, txn=txn))
        return wt_resp, acts

    async def record_workflow_task_started(self: "HistoryEngine", ref: TaskRef, identity: str, *,
                                           sticky: bool) -> svc.PollWorkflowTaskQueueResponse | None:
        """Start the task a poller took; None if it went stale (then the poller takes the next)."""
        async with self.locked(ref.namespace_id, ref.workflow_id):
            st = await self.load(ref.namespace_id, ref.workflow_id, ref.run_id)
            shard = self.shard_for(ref.namespace_id, ref.workflow_id)
            m = Mutation(shard_id=shard.shard_id, range_id=shard.range_id)
            self.source_ack(ref, m)
            wt = st.workflow_task if st is not None else None
            if st is None or not st.running or wt is None or wt.scheduled_event_id != ref.event_id or wt.started:
                self.apply_background(m)
                return None
            resp = self.start_workflow_task(st, wt, identity, m, sticky=sticky)
            self.apply_background(m)
            return resp

    # ------------------------------------------------------------------ completion
    def _current_workflow_task(self: "HistoryEngine", st: MutableState | None, tok: TaskToken) -> WorkflowTaskInfo:
        wt = st.workflow_task if st is not None else None
        if st is None or not st.running or wt is None or not wt.started or wt.scheduled_event_id != tok.scheduled_event_id \
                or wt.nonce != tok.nonce:
            self.outstanding.discard((tok.namespace_id, tok.workflow_id, tok.run_id), workflow_task_key(tok.nonce))
            raise NotFound("task_token: workflow task not found (already completed or timed out, or the execution closed)")
        return wt

    def _write_started(self: "HistoryEngine", txn: Txn, wt: WorkflowTaskInfo) -> None:
        st = txn.state
        self.workflow_task_done((st.namespace_id, st.workflow_id, st.run_id, wt.scheduled_event_id))
        assert wt.started_event is not None
        assert txn.state.next_event_id == wt.started_event_id, "events were appended while a workflow task ran"
        txn.append_numbered(wt.started_event)
        if wt.timeout_timer is not None:
            txn.delete_timer(wt.timeout_timer)
        self.outstanding.discard(self.run_key(st), workflow_task_key(wt.nonce))

    def fail_workflow_task(self: "HistoryEngine", txn: Txn, wt: WorkflowTaskInfo, cause: int, failure: pb.Failure,
                           identity: str, *, timed_out: bool = False, inline: bool = False) -> None:
        """Record the task's failure (or timeout), flush buffered events and schedule a retry."""
        st = txn.state
        self._write_started(txn, wt)
        if timed_out:
            txn.event(pb.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT, "workflow_task_timed_out_event_attributes",
                      pb.WorkflowTaskTimedOutEventAttributes(scheduled_event_id=wt.scheduled_event_id,
                                                            started_event_id=wt.started_event_id,
                                                            timeout_type=pb.TIMEOUT_TYPE_START_TO_CLOSE))
        else:
            txn.event(pb.EVENT_TYPE_WORKFLOW_TASK_FAILED, "workflow_task_failed_event_attributes",
                      pb.WorkflowTaskFailedEventAttributes(scheduled_event_id=wt.scheduled_event_id,
                                                          started_event_id=wt.started_event_id, cause=cause,
                                                          failure=failure, identity=identity))
        self._requeue_updates(st, wt)
        st.sticky_queue = ""
        self.flush_buffered(txn)
        attempt = wt.attempt + 1
        backoff_ms = 0 if attempt <= 2 else int(min(2 ** (attempt - 3), 60) * 1000)
        self.schedule_workflow_task(txn, attempt=attempt, backoff_ms=backoff_ms, inline=inline and backoff_ms == 0)

    def _requeue_updates(self: "HistoryEngine", st: MutableState, wt: WorkflowTaskInfo) -> None:
        for uid in wt.delivered_updates:
            pu = st.pending_updates.get(uid)
            if pu is not None:
                pu.delivered = False

    def flush_buffered(self: "HistoryEngine", txn: Txn) -> None:
        st = txn.state
        if st.buffered:
            for e in st.buffered:
                txn.append_numbered(e)
            st.buffered = []
            txn.clear_buffered = True
        txn.buffered = []

    async def respond_workflow_task_completed(self: "HistoryEngine", req: svc.RespondWorkflowTaskCompletedRequest
                                              ) -> svc.RespondWorkflowTaskCompletedResponse:
        tok = decode_token(req.task_token, WORKFLOW)
        async with self.locked(tok.namespace_id, tok.workflow_id):
            st = await self.load(tok.namespace_id, tok.workflow_id, tok.run_id)
            wt = self._current_workflow_task(st, tok)
            assert st is not None
            txn = Txn(st, self.clock.now_ms())
            error = self.validate_commands(st, req.commands)
            if error is not None:
                self.fail_workflow_task(txn, wt, pb.WORKFLOW_TASK_FAILED_CAUSE_BAD_COMMAND,
                                        pb.Failure(message=error, source="server"), req.identity)
                await self.commit(txn)
                raise InvalidArgument(error)
            closing = any(c.command_type in CLOSE_COMMANDS for c in req.commands)
            waiting_signal = any(e.event_type == pb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED for e in st.buffered)
            waiting_update = any(not pu.delivered for pu in st.pending_updates.values())
            if closing and (waiting_signal or waiting_update):
                self.fail_workflow_task(
                    txn, wt, pb.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND,
                    pb.Failure(message="new signals or updates arrived while the task ran; the workflow sees them first",
                               source="server"), req.identity, inline=req.return_new_workflow_task)
                handed = self.start_inline_tasks(txn, req.identity)
                await self.commit(txn)
                return self._completion_response(handed)
            self._write_started(txn, wt)
            completed = txn.event(
                pb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, "workflow_task_completed_event_attributes",
                pb.WorkflowTaskCompletedEventAttributes(scheduled_event_id=wt.scheduled_event_id,
                                                        started_event_id=wt.started_event_id, identity=req.identity))
            if req.HasField("sticky_attributes") and req.sticky_attributes.worker_task_queue:
                st.sticky_queue = req.sticky_attributes.worker_task_queue
                st.sticky_timeout_ms = req.sticky_attributes.schedule_to_start_timeout_ms
            else:
                st.sticky_queue = ""
            txn.wake = False
            for cmd in req.commands:
                self.apply_command(txn, cmd, completed.event_id, req.identity)
            # updates delivered in this task but neither accepted nor rejected go out again
            for uid in wt.delivered_updates:
                pu = st.pending_updates.get(uid)
                if pu is not None and uid not in st.accepted_updates:
                    pu.delivered = False
                    txn.wake = True
            if st.running:
                self.flush_buffered(txn)
                if st.next_event_id > self.config.history_max_events:
                    self.fail_for_history_size(txn)
                elif (txn.wake or any(not pu.delivered for pu in st.pending_updates.values())) and st.workflow_task is None:
                    self.schedule_workflow_task(txn, inline=req.return_new_workflow_task)
                elif st.next_event_id > self.config.history_warn_events and not st.history_warned:
                    st.history_warned = True
                    import logging

                    logging.getLogger("spindle.history").warning(
                        "workflow %s/%s has %d events (limit %d): consider continue-as-new",
                        st.workflow_id, st.run_id, st.next_event_id - 1, self.config.history_max_events)
            handed = self.start_inline_tasks(txn, req.identity)
            if st.running:
                txn.after_commit.append(lambda: self.note_history_length(st))
            await self.commit(txn)
            return self._completion_response(handed)

    @staticmethod
    def _completion_response(handed: tuple[svc.PollWorkflowTaskQueueResponse | None,
                                           list[svc.PollActivityTaskQueueResponse]]
                             ) -> svc.RespondWorkflowTaskCompletedResponse:
        resp = svc.RespondWorkflowTaskCompletedResponse()
        wt, acts = handed
        if wt is not None:
            resp.workflow_task.CopyFrom(wt)
        resp.activity_tasks.extend(acts)
        return resp

    def enforce_history_limit(self: "HistoryEngine", txn: Txn) -> None:
        """Before a commit: fail the run if the events ``txn`` appends bring it to ``history_max_events``.

        A completing workflow task checks this itself (after its commands); this catches the
        events the engine appends on its own (signals, timer fires, activity and child
        outcomes, cancel requests) while no workflow task runs, so the history never grows
        past the limit by more than one write and the closing failure. (Events buffered
        behind a running task are written, and checked, when it completes.)
        """
        st = txn.state
        if not txn.events or not st.running or st.next_event_id <= self.config.history_max_events:
            return
        self.abandon_running_tasks(txn)
        self.fail_for_history_size(txn)

    def fail_for_history_size(self: "HistoryEngine", txn: Txn) -> None:
        st = txn.state
        txn.event(pb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED, "workflow_execution_failed_event_attributes",
                  pb.WorkflowExecutionFailedEventAttributes(failure=pb.Failure(
                      message=f"history has {st.next_event_id - 1} events, over the limit of "
                              f"{self.config.history_max_events}; use continue-as-new to bound it",
                      source="server", server_failure_info=pb.ServerFailureInfo(non_retryable=True)),
                      retry_state=pb.RETRY_STATE_NON_RETRYABLE_FAILURE))
        self.close_run(txn)

    async def respond_workflow_task_failed(self: "HistoryEngine", req: svc.RespondWorkflowTaskFailedRequest) -> None:
        tok = decode_token(req.task_token, WORKFLOW)
        async with self.locked(tok.namespace_id, tok.workflow_id):
            st = await self.load(tok.namespace_id, tok.workflow_id, tok.run_id)
            wt = self._current_workflow_task(st, tok)
            assert st is not None
            txn = Txn(st, self.clock.now_ms())
            self.fail_workflow_task(txn, wt, req.cause or pb.WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_WORKER_UNHANDLED_FAILURE,
                                    req.failure, req.identity)
            await self.commit(txn)

    async def workflow_task_timed_out(self: "HistoryEngine", t: Task) -> None:
        async with self.locked(t.namespace_id, t.workflow_id):
            st = await self.load(t.namespace_id, t.workflow_id, t.run_id)
            txn = Txn(st, self.clock.now_ms()) if st is not None else None
            wt = st.workflow_task if st is not None else None
            if st is None or txn is None or not st.running or wt is None or wt.scheduled_event_id != t.event_id \
                    or wt.attempt != t.attempt:
                self.timer_done(t)
                # that start is over (its run closed, or the task completed or timed out since)
                self.outstanding.discard((t.namespace_id, t.workflow_id, t.run_id), workflow_task_key(str(t.extra.get("n", ""))))
                return
            self.timer_done(t, txn)
            if wt.started and wt.nonce == t.extra.get("n"):
                wt.timeout_timer = None
                self.fail_workflow_task(txn, wt, 0, pb.Failure(), "", timed_out=True)
                await self.commit(txn)
            elif not wt.started and not wt.dispatched:
                # Started before a restart (the timer row proves it) and lost with its worker:
                # offer it again; nothing of that start was ever written. Through a transfer task
                # written with the timer's deletion: the timer row was the task's only durable
                # trace, and an in-memory dispatch was lost for good if the server died again
                # before a worker started it (the run then waited forever).
                txn.transfer.append(Task(T_WORKFLOW_TASK, st.namespace_id, st.workflow_id, st.run_id,
                                         wt.scheduled_event_id, wt.attempt, extra={"q": st.task_queue}))
                await self.commit(txn)
            else:
                await self.commit(txn)
