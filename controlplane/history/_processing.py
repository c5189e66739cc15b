"""Processing transfer tasks (after commit, or after a restart) and fired timers."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import TYPE_CHECKING

from spindle.controlplane.api import messages_pb2 as pb
from spindle.controlplane.api import service_pb2 as svc
from spindle.controlplane.errors import AlreadyExists, FailedPrecondition, NotFound, ServiceError
from spindle.controlplane.matching import KIND_WORKFLOW, TaskRef
from spindle.controlplane.namespaces import Namespace

from ._shard import Shard
from ._runs import row_from_json
from ._tasks import (
    T_ACTIVITY_TASK,
    T_CANCEL_EXTERNAL,
    T_CLOSE,
    T_SIGNAL_EXTERNAL,
    T_START_CHILD,
    T_VISIBILITY,
    T_WORKFLOW_TASK,
    TM_ACTIVITY_RETRY,
    TM_ACTIVITY_TIMEOUT,
    TM_RETENTION,
    TM_USER_TIMER,
    TM_WORKFLOW_RUN_TIMEOUT,
    TM_WORKFLOW_TASK_BACKOFF,
    TM_WORKFLOW_TASK_TIMEOUT,
    Task,
)
from ._txn import Txn

if TYPE_CHECKING:
    from .engine import HistoryEngine

log = logging.getLogger("spindle.history")

#: Backoff of a transfer task that failed (say, the shard of the workflow it reaches is between owners).
TRANSFER_RETRY_FIRST_S = 0.5
TRANSFER_RETRY_MAX_S = 30.0

_CHILD_CLOSE = {
    pb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED: (pb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED,
                                                 "child_workflow_execution_completed_event_attributes"),
    pb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED: (pb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_FAILED,
                                              "child_workflow_execution_failed_event_attributes"),
    pb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED: (pb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_CANCELED,
                                                "child_workflow_execution_canceled_event_attributes"),
    pb.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT: (pb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_TIMED_OUT,
                                                 "child_workflow_execution_timed_out_event_attributes"),
    pb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED: (pb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_TERMINATED,
                                                  "child_workflow_execution_terminated_event_attributes"),
}


class ProcessingMixin:
    """The transfer queue's and the timer queue's handlers."""

    def process_transfer(self: "HistoryEngine", shard: Shard, t: Task) -> None:
        if t.kind == T_WORKFLOW_TASK:
            ref = TaskRef(KIND_WORKFLOW, t.namespace_id, t.workflow_id, t.run_id, t.event_id, t.attempt,
                          ("t", shard.shard_id, t.task_id))
            self.dispatch_workflow_task(ref, t.extra.get("q", ""))
        elif t.kind == T_ACTIVITY_TASK:
            self.dispatch_activity(t)
        elif t.kind == T_VISIBILITY:
            shard.visibility.append(row_from_json(t.extra["row"]))
            shard.transfer.ack(t.task_id)
        else:
            self.spawn(self._process_async(shard, t))

    async def _process_async(self: "HistoryEngine", shard: Shard, t: Task) -> None:
        """Run a transfer task that reaches other executions; retried with backoff while this process owns the shard.

        Every handler is idempotent (it re-reads the state and the request ids it wrote), so
        running one again after a failure, or after a crash, never applies it twice.
        """
        delay = TRANSFER_RETRY_FIRST_S
        while True:
            try:
                if t.kind == T_CLOSE:
                    await self._on_close(t)
                elif t.kind == T_START_CHILD:
                    await self._start_child(t)
                elif t.kind == T_SIGNAL_EXTERNAL:
                    await self._signal_external(t)
                elif t.kind == T_CANCEL_EXTERNAL:
                    await self._cancel_external(t)
                shard.transfer.ack(t.task_id)
                return
            except ServiceError as e:
                if self.shards.get(shard.shard_id) is not shard or self.background.stopping:
                    return  # its row stays: the shard's next owner (or the next start) runs it
                log.warning("transfer task %s of %s failed; retrying in %.1f s: %s", t.kind, t.workflow_id, delay, e)
            await asyncio.sleep(delay)
            delay = min(delay * 2, TRANSFER_RETRY_MAX_S)

    # ------------------------------------------------------------------ close
    async def _on_close(self: "HistoryEngine", t: Task) -> None:
        async with self.locked(t.namespace_id, t.workflow_id):
            st = await self.load(t.namespace_id, t.workflow_id, t.run_id)
            if st is None or st.close_event is None or st.started is None:
                return
            close = st.close_event
            parent = st.started.parent if st.started.HasField("parent") else None
            children = list(st.children.values())
        # parent-close policy for children still open
        for c in children:
            if c.parent_close_policy == pb.PARENT_CLOSE_POLICY_ABANDON or not c.run_id:
                continue
            try:
                ns = self.namespaces.get(c.namespace)
                ex = pb.WorkflowExecution(workflow_id=c.workflow_id, run_id=c.run_id)
                if c.parent_close_policy == pb.PARENT_CLOSE_POLICY_REQUEST_CANCEL:
                    await self.request_cancel(ns, ex, "spindle-parent-close", "parent closed")
                else:
                    await self.terminate(ns, ex, "parent workflow closed (parent close policy TERMINATE)", pb.Payloads(),
                                         "spindle-parent-close")
            except (NotFound, FailedPrecondition):
                pass
        # tell the parent (a continued-as-new run is not the end of the child)
        if parent is None or close.event_type == pb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
            return
        pns = self.namespaces.get(parent.namespace) if parent.namespace else self.namespaces.by_id(t.namespace_id)
        if pns is None:
            return
        await self.notify_parent(pns, parent, close, child_namespace=st.namespace,
                                 child=pb.WorkflowExecution(workflow_id=st.workflow_id, run_id=st.run_id),
                                 first_run_id=st.started.first_execution_run_id or st.run_id,
                                 workflow_type=st.workflow_type)

    async def notify_parent(self: "HistoryEngine", pns: Namespace, parent: pb.ParentExecutionInfo,
                            close: pb.HistoryEvent, *, child_namespace: str, child: pb.WorkflowExecution,
                            first_run_id: str, workflow_type: str) -> None:
        """Record a child's close (``close``, its last event) in the parent's history.

        Arguments are plain values so that a cluster member can run this on the
        process that owns the parent's shard (spindle.controlplane.cluster overrides it).
        """
        mapping = _CHILD_CLOSE.get(close.event_type)
        if mapping is None:
            return
        etype, attr = mapping
        async with self.locked(pns.id, parent.execution.workflow_id):
            pst = await self.load(pns.id, parent.execution.workflow_id, parent.execution.run_id)
            if pst is None or not pst.running:
                return
            info = pst.children.get(parent.initiated_event_id)
            if info is None:
                return
            txn = Txn(pst, self.clock.now_ms())
            if not info.started_event_id and not any(
                    e.event_type == pb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED
                    and e.child_workflow_execution_started_event_attributes.initiated_event_id == parent.initiated_event_id
                    for e in pst.buffered):
                txn.external(pb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED, "child_workflow_execution_started_event_attributes",
                             pb.ChildWorkflowExecutionStartedEventAttributes(
                                 namespace=child_namespace, initiated_event_id=parent.initiated_event_id,
                                 workflow_execution=pb.WorkflowExecution(workflow_id=child.workflow_id,
                                                                         run_id=first_run_id),
                                 workflow_type=workflow_type))
            attrs = getattr(pb, _attr_class(attr))(
                namespace=child_namespace, workflow_execution=child,
                workflow_type=workflow_type, initiated_event_id=parent.initiated_event_id,
                started_event_id=info.started_event_id)
            if etype == pb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED:
                attrs.result.CopyFrom(close.workflow_execution_completed_event_attributes.result)
            elif etype == pb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_FAILED:
                attrs.failure.CopyFrom(close.workflow_execution_failed_event_attributes.failure)
            elif etype == pb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_CANCELED:
                attrs.details.CopyFrom(close.workflow_execution_canceled_event_attributes.details)
            elif etype == pb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_TERMINATED:
                attrs.reason = close.workflow_execution_terminated_event_attributes.reason
            txn.external(etype, attr, attrs)
            if pst.workflow_task is None:
                self.schedule_workflow_task(txn)
            await self.commit(txn)

    # ------------------------------------------------------------------ children
    async def _start_child(self: "HistoryEngine", t: Task) -> None:
        async with self.locked(t.namespace_id, t.workflow_id):
            st = await self.load(t.namespace_id, t.workflow_id, t.run_id)
            if st is None or not st.running or t.event_id not in st.children or st.children[t.event_id].run_id:
                return
            init = st.events[t.event_id - 1].start_child_workflow_execution_initiated_event_attributes
        try:
            cns = self.namespaces.get(init.namespace)
        except ServiceError:
            await self._child_start_failed(t, init, "NAMESPACE_NOT_FOUND")
            return
        req = svc.StartWorkflowExecutionRequest(
            namespace=init.namespace, workflow_id=init.workflow_id, workflow_type=init.workflow_type,
            task_queue=init.task_queue, input=init.input, execution_timeout_ms=init.execution_timeout_ms,
            run_timeout_ms=init.run_timeout_ms, task_timeout_ms=init.task_timeout_ms, identity="spindle-child",
            request_id=f"{t.run_id}:{t.event_id}", workflow_id_reuse_policy=init.workflow_id_reuse_policy,
            memo=init.memo, search_attributes=init.search_attributes, header=init.header)
        parent = pb.ParentExecutionInfo(namespace=st.namespace,
                                        execution=pb.WorkflowExecution(workflow_id=t.workflow_id, run_id=t.run_id),
                                        initiated_event_id=t.event_id)
        try:
            run_id, _ = await self.start_workflow(cns, req, parent=parent)
        except AlreadyExists:
            await self._child_start_failed(t, init, "WORKFLOW_ALREADY_EXISTS")
            return
        async with self.locked(t.namespace_id, t.workflow_id):
            st = await self.load(t.namespace_id, t.workflow_id, t.run_id)
            if st is None or not st.running or t.event_id not in st.children or st.children[t.event_id].run_id:
                return
            if any(e.event_type == pb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED
                   and e.child_workflow_execution_started_event_attributes.initiated_event_id == t.event_id for e in st.buffered):
                return
            txn = Txn(st, self.clock.now_ms())
            txn.external(pb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED, "child_workflow_execution_started_event_attributes",
                         pb.ChildWorkflowExecutionStartedEventAttributes(
                             namespace=init.namespace, initiated_event_id=t.event_id,
                             workflow_execution=pb.WorkflowExecution(workflow_id=init.workflow_id, run_id=run_id),
                             workflow_type=init.workflow_type))
            st.children[t.event_id].run_id = run_id
            if st.workflow_task is None:
                self.schedule_workflow_task(txn)
            await self.commit(txn)

    async def _child_start_failed(self: "HistoryEngine", t: Task, init: pb.StartChildWorkflowExecutionInitiatedEventAttributes,
                                  cause: str) -> None:
        async with self.locked(t.namespace_id, t.workflow_id):
            st = await self.load(t.namespace_id, t.workflow_id, t.run_id)
            if st is None or not st.running or t.event_id not in st.children:
                return
            txn = Txn(st, self.clock.now_ms())
            txn.external(pb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_FAILED,
                         "start_child_workflow_execution_failed_event_attributes",
                         pb.StartChildWorkflowExecutionFailedEventAttributes(
                             namespace=init.namespace, workflow_id=init.workflow_id, workflow_type=init.workflow_type,
                             cause=cause, initiated_event_id=t.event_id,
                             workflow_task_completed_event_id=init.workflow_task_completed_event_id))
            if st.workflow_task is None:
                self.schedule_workflow_task(txn)
            await self.commit(txn)

    # ------------------------------------------------------------------ external signal / cancel
    async def _signal_external(self: "HistoryEngine", t: Task) -> None:
        async with self.locked(t.namespace_id, t.workflow_id):
            st = await self.load(t.namespace_id, t.workflow_id, t.run_id)
            if st is None or not st.running or t.event_id not in st.signals_external:
                return
            init = st.signals_external[t.event_id]
        cause = ""
        try:
            tns = self.namespaces.get(init.namespace)
            await self.deliver_external_signal(tns, init.workflow_execution, init.signal_name, init.input, init.header,
                                               f"{t.run_id}:{t.event_id}",
                                               pb.WorkflowExecution(workflow_id=t.workflow_id, run_id=t.run_id))
        except (NotFound, FailedPrecondition):
            cause = "EXTERNAL_WORKFLOW_EXECUTION_NOT_FOUND"
        await self._external_outcome(t, init.namespace, init.workflow_execution, cause, signal=True)

    async def deliver_external_signal(self: "HistoryEngine", tns: Namespace, target: pb.WorkflowExecution, name: str,
                                      payloads: pb.Payloads, header: pb.Header, request_id: str,
                                      source: pb.WorkflowExecution) -> None:
        """Signal ``target`` on behalf of the workflow ``source`` (a cluster member runs it on the target's owner)."""
        async with self.locked(tns.id, target.workflow_id):
            st = await self.resolve(tns.id, target.workflow_id, target.run_id)
            await self._signal_locked(st, name, payloads, header, "spindle-signal-external", request_id, external=source)

    async def _cancel_external(self: "HistoryEngine", t: Task) -> None:
        async with self.locked(t.namespace_id, t.workflow_id):
            st = await self.load(t.namespace_id, t.workflow_id, t.run_id)
            if st is None or not st.running or t.event_id not in st.cancels_external:
                return
            init = st.cancels_external[t.event_id]
        cause = ""
        try:
            tns = self.namespaces.get(init.namespace)
            await self.request_cancel(tns, init.workflow_execution, "spindle-cancel-external", init.reason,
                                      external=(t.event_id, pb.WorkflowExecution(workflow_id=t.workflow_id, run_id=t.run_id)))
        except (NotFound, FailedPrecondition):
            cause = "EXTERNAL_WORKFLOW_EXECUTION_NOT_FOUND"
        await self._external_outcome(t, init.namespace, init.workflow_execution, cause, signal=False)

    async def _external_outcome(self: "HistoryEngine", t: Task, namespace: str, execution: pb.WorkflowExecution, cause: str, *,
                                signal: bool) -> None:
        async with self.locked(t.namespace_id, t.workflow_id):
            st = await self.load(t.namespace_id, t.workflow_id, t.run_id)
            pending = (st.signals_external if signal else st.cancels_external) if st is not None else {}
            if st is None or not st.running or t.event_id not in pending:
                return
            txn = Txn(st, self.clock.now_ms())
            if signal and cause:
                txn.external(pb.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_FAILED,
                             "signal_external_workflow_execution_failed_event_attributes",
                             pb.SignalExternalWorkflowExecutionFailedEventAttributes(
                                 cause=cause, namespace=namespace, workflow_execution=execution, initiated_event_id=t.event_id))
            elif signal:
                txn.external(pb.EVENT_TYPE_EXTERNAL_WORKFLOW_EXECUTION_SIGNALED,
                             "external_workflow_execution_signaled_event_attributes",
                             pb.ExternalWorkflowExecutionSignaledEventAttributes(
                                 initiated_event_id=t.event_id, namespace=namespace, workflow_execution=execution))
            elif cause:
                txn.external(pb.EVENT_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_FAILED,
                             "request_cancel_external_workflow_execution_failed_event_attributes",
                             pb.RequestCancelExternalWorkflowExecutionFailedEventAttributes(
                                 cause=cause, namespace=namespace, workflow_execution=execution, initiated_event_id=t.event_id))
            else:
                txn.external(pb.EVENT_TYPE_EXTERNAL_WORKFLOW_EXECUTION_CANCEL_REQUESTED,
                             "external_workflow_execution_cancel_requested_event_attributes",
                             pb.ExternalWorkflowExecutionCancelRequestedEventAttributes(
                                 initiated_event_id=t.event_id, namespace=namespace, workflow_execution=execution))
            pending.pop(t.event_id, None)
            if st.workflow_task is None:
                self.schedule_workflow_task(txn)
            await self.commit(txn)

    # ------------------------------------------------------------------ timers
    async def handle_timer(self: "HistoryEngine", shard: Shard, t: Task) -> None:
        if t.kind == TM_USER_TIMER:
            await self._user_timer(t)
        elif t.kind in (TM_ACTIVITY_TIMEOUT, TM_ACTIVITY_RETRY):
            await self.activity_timer_fired(t)
        elif t.kind == TM_WORKFLOW_TASK_TIMEOUT:
            await self.workflow_task_timed_out(t)
        elif t.kind == TM_WORKFLOW_TASK_BACKOFF:
            await self._workflow_task_backoff(t)
        elif t.kind == TM_WORKFLOW_RUN_TIMEOUT:
            await self._run_timeout(t)
        elif t.kind == TM_RETENTION:
            await self.retention_fired(shard, t)
        else:
            self.timer_done(t)

    async def _user_timer(self: "HistoryEngine", t: Task) -> None:
        async with self.locked(t.namespace_id, t.workflow_id):
            st = await self.load(t.namespace_id, t.workflow_id, t.run_id)
            timer_id = t.extra.get("id", "")
            info = st.timers.get(timer_id) if st is not None and st.running else None
            if st is None or info is None or info.started_event_id != t.event_id:
                self.timer_done(t)
                return
            if any(e.event_type == pb.EVENT_TYPE_TIMER_FIRED and e.timer_fired_event_attributes.timer_id == timer_id
                   for e in st.buffered):
                self.timer_done(t)
                return
            txn = Txn(st, self.clock.now_ms())
            self.timer_done(t, txn)
            txn.external(pb.EVENT_TYPE_TIMER_FIRED, "timer_fired_event_attributes",
                         pb.TimerFiredEventAttributes(timer_id=timer_id, started_event_id=t.event_id))
            if st.workflow_task is None:
                self.schedule_workflow_task(txn)
            await self.commit(txn)

    async def _timer_txn(self: "HistoryEngine", t: Task) -> Txn | None:
        """A txn that deletes the fired timer ``t``; None (timer dropped) if its run is gone or closed.

        The caller holds the workflow id's lock.
        """
        st = await self.load(t.namespace_id, t.workflow_id, t.run_id)
        if st is None or not st.running:
            self.timer_done(t)
            return None
        txn = Txn(st, self.clock.now_ms())
        self.timer_done(t, txn)
        return txn

    async def _workflow_task_backoff(self: "HistoryEngine", t: Task) -> None:
        async with self.locked(t.namespace_id, t.workflow_id):
            txn = await self._timer_txn(t)
            if txn is None:
                return
            st = txn.state
            wt = st.workflow_task
            if t.event_id == 0:
                if wt is None:
                    self.schedule_workflow_task(txn)  # the first task after a start delay
                await self.commit(txn)
                return
            if wt is not None and wt.scheduled_event_id == t.event_id and not wt.started:
                # a transfer task with the timer's deletion (not an in-memory dispatch after it):
                # a crash before a worker starts the task must not lose it
                txn.transfer.append(Task(T_WORKFLOW_TASK, st.namespace_id, st.workflow_id, st.run_id,
                                         wt.scheduled_event_id, wt.attempt, extra={"q": st.task_queue}))
            await self.commit(txn)

    async def _run_timeout(self: "HistoryEngine", t: Task) -> None:
        async with self.locked(t.namespace_id, t.workflow_id):
            txn = await self._timer_txn(t)
            if txn is None:
                return
            st = txn.state
            st.run_timer = None
            self.abandon_running_tasks(txn)
            txn.event(pb.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT, "workflow_execution_timed_out_event_attributes",
                      pb.WorkflowExecutionTimedOutEventAttributes(retry_state=pb.RETRY_STATE_TIMEOUT))
            self.close_run(txn)
            await self.commit(txn)


def _attr_class(attr: str) -> str:
    return "".join(p.capitalize() for p in attr.split("_"))


__all__ = ["ProcessingMixin", "json"]
