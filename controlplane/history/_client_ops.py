"""Operations clients call: start, signal, cancel, terminate, describe, history, query, update."""

from __future__ import annotations

import asyncio
import uuid
from typing import TYPE_CHECKING

from spindle.controlplane.api import messages_pb2 as pb
from spindle.controlplane.api import service_pb2 as svc
from spindle.controlplane._paging import token_position
from spindle.controlplane.errors import AlreadyExists, DeadlineExceeded, FailedPrecondition, NotFound
from spindle.controlplane.matching import KIND_QUERY, TaskRef
from spindle.controlplane.namespaces import Namespace

from ._runs import new_run_id
from ._mutable_state import RUNNING, MutableState
from ._pending import PendingUpdate
from ._txn import Txn

if TYPE_CHECKING:
    from .engine import HistoryEngine

FAILED_LIKE = {
    pb.WORKFLOW_EXECUTION_STATUS_FAILED,
    pb.WORKFLOW_EXECUTION_STATUS_CANCELED,
    pb.WORKFLOW_EXECUTION_STATUS_TERMINATED,
    pb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT,
}


class PendingQuery:
    def __init__(self, query: pb.WorkflowQuery) -> None:
        self.id = uuid.uuid4().hex
        self.query = query
        self.future: asyncio.Future[svc.RespondQueryTaskCompletedRequest] = asyncio.get_running_loop().create_future()


class ClientOpsMixin:
    """What clients ask of executions."""

    # ------------------------------------------------------------------ start
    async def start_workflow(self: "HistoryEngine", ns: Namespace, req: svc.StartWorkflowExecutionRequest, *,
                             parent: pb.ParentExecutionInfo | None = None,
                             signal: tuple[str, pb.Payloads, pb.Header] | None = None) -> tuple[str, bool]:
        """Start a run (or, per the conflict policy, return the running one). Returns (run_id, started)."""
        async with self.locked(ns.id, req.workflow_id):
            return await self._start_locked(ns, req, parent=parent, signal=signal)

    async def _start_locked(self: "HistoryEngine", ns: Namespace, req: svc.StartWorkflowExecutionRequest, *,
                            parent: pb.ParentExecutionInfo | None,
                            signal: tuple[str, pb.Payloads, pb.Header] | None) -> tuple[str, bool]:
        cur_rid = await self.current_run_id(ns.id, req.workflow_id)
        expect = ""
        terminate: MutableState | None = None
        if cur_rid is not None:
            cur = await self.load(ns.id, req.workflow_id, cur_rid)
            conflict = req.workflow_id_conflict_policy
            if cur is not None and cur.running:
                if signal is not None and conflict != pb.WORKFLOW_ID_CONFLICT_POLICY_TERMINATE_EXISTING:
                    await self._signal_locked(cur, signal[0], signal[1], signal[2], req.identity, "")
                    return cur.run_id, False
                started_by = cur.started.identity if cur.started else ""
                cur_request_id = await self.start_request_id(cur)
                if req.request_id and cur_request_id == req.request_id:
                    return cur.run_id, False
                if conflict == pb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING:
                    return cur.run_id, False
                if conflict != pb.WORKFLOW_ID_CONFLICT_POLICY_TERMINATE_EXISTING:
                    raise AlreadyExists(
                        f"workflow_id: workflow {req.workflow_id!r} is already running (run {cur.run_id}"
                        f"{', started by ' + started_by if started_by else ''})", run_id=cur.run_id,
                        start_request_id=cur_request_id)
                # TERMINATE_EXISTING: the reuse policy is not consulted (it governs closed runs; the
                # frontend refuses REJECT_DUPLICATE with it), as in Temporal
                terminate = cur
            elif cur is not None:
                cur_request_id = await self.start_request_id(cur)
                if req.request_id and cur_request_id == req.request_id:
                    return cur.run_id, False
                policy = req.workflow_id_reuse_policy
                if policy == pb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE:
                    raise AlreadyExists(f"workflow_id: workflow {req.workflow_id!r} already ran (run {cur.run_id}) and the "
                                        "id reuse policy is REJECT_DUPLICATE", run_id=cur.run_id,
                                        start_request_id=cur_request_id)
                if policy == pb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY and cur.status not in FAILED_LIKE:
                    raise AlreadyExists(f"workflow_id: workflow {req.workflow_id!r} already completed (run {cur.run_id}) and "
                                        "the id reuse policy is ALLOW_DUPLICATE_FAILED_ONLY", run_id=cur.run_id,
                                        start_request_id=cur_request_id)
            expect = cur_rid
        now = self.clock.now_ms()
        rid = new_run_id()
        shard = self.shard_for(ns.id, req.workflow_id)
        st = MutableState(ns.id, ns.name, req.workflow_id, rid, shard.shard_id)
        st.start_request_id = req.request_id
        attrs = pb.WorkflowExecutionStartedEventAttributes(
            workflow_type=req.workflow_type, task_queue=req.task_queue, input=req.input,
            execution_timeout_ms=req.execution_timeout_ms, run_timeout_ms=req.run_timeout_ms or req.execution_timeout_ms,
            task_timeout_ms=req.task_timeout_ms or int(self.config.default_workflow_task_timeout * 1000),
            first_execution_run_id=rid, original_execution_run_id=rid, memo=req.memo,
            search_attributes=req.search_attributes, identity=req.identity, attempt=1,
            execution_expiration_time_ms=(now + req.workflow_start_delay_ms + req.execution_timeout_ms)
            if req.execution_timeout_ms else 0,
            first_workflow_task_backoff_ms=req.workflow_start_delay_ms, header=req.header,
        )
        if parent is not None:
            attrs.parent.CopyFrom(parent)
        txn = self.build_run(st, attrs, now, start_delay_ms=req.workflow_start_delay_ms)
        txn.start_request_id = req.request_id
        if signal is not None:
            txn.event(pb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED, "workflow_execution_signaled_event_attributes",
                      pb.WorkflowExecutionSignaledEventAttributes(signal_name=signal[0], input=signal[1], header=signal[2],
                                                                  identity=req.identity))
        self.cache_put(st)
        try:
            if terminate is None:
                await self.commit(txn, new=True, current_expect=expect)
            else:
                await self.commit(self._terminate_for_new_run(terminate, txn, req.identity))
        except Exception:
            self.evict(st)
            raise
        return rid, True

    def _terminate_for_new_run(self: "HistoryEngine", cur: MutableState, new: Txn, identity: str) -> Txn:
        """One transaction that terminates ``cur`` and creates the run ``new`` builds (TERMINATE_EXISTING).

        Written like continue-as-new: the closing run's mutation carries the new run's, and
        the current-run pointer moves from ``cur`` to the new run only if it still points at
        ``cur``. Either both happen or neither.
        """
        txn = Txn(cur, new.now_ms)
        self.abandon_running_tasks(txn)
        txn.event(pb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED, "workflow_execution_terminated_event_attributes",
                  pb.WorkflowExecutionTerminatedEventAttributes(
                      reason=f"terminated by a new start of workflow id {cur.workflow_id!r} "
                             f"(id conflict policy TERMINATE_EXISTING; new run {new.state.run_id})",
                      identity=identity))
        self.close_run(txn)
        txn.new_run = (new.state, new.events, new.transfer, new.timers)
        txn.new_run_request_id = new.start_request_id
        txn.after_commit.extend(new.after_commit)
        return txn

    # ------------------------------------------------------------------ signals
    async def signal(self: "HistoryEngine", ns: Namespace, execution: pb.WorkflowExecution, name: str, payloads: pb.Payloads,
                     header: pb.Header, identity: str, request_id: str) -> None:
        async with self.locked(ns.id, execution.workflow_id):
            st = await self.resolve(ns.id, execution.workflow_id, execution.run_id)
            await self._signal_locked(st, name, payloads, header, identity, request_id)

    async def _signal_locked(self: "HistoryEngine", st: MutableState, name: str, payloads: pb.Payloads, header: pb.Header,
                             identity: str, request_id: str, external: pb.WorkflowExecution | None = None) -> None:
        if not st.running:
            raise FailedPrecondition(f"workflow_execution: workflow {st.workflow_id!r} run {st.run_id} is already closed; "
                                     "signals go only to running executions")
        if request_id and request_id in st.signal_request_ids:
            return
        txn = Txn(st, self.clock.now_ms())
        attrs = pb.WorkflowExecutionSignaledEventAttributes(signal_name=name, input=payloads, header=header, identity=identity,
                                                            request_id=request_id)
        if external is not None:
            attrs.external_workflow_execution.CopyFrom(external)
        txn.external(pb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED, "workflow_execution_signaled_event_attributes", attrs)
        if st.workflow_task is None:
            self.schedule_workflow_task(txn)
        await self.commit(txn)
        if request_id:
            st.signal_request_ids.add(request_id)

    # ------------------------------------------------------------------ cancel / terminate
    async def request_cancel(self: "HistoryEngine", ns: Namespace, execution: pb.WorkflowExecution, identity: str,
                             reason: str, external: tuple[int, pb.WorkflowExecution] | None = None) -> None:
        async with self.locked(ns.id, execution.workflow_id):
            st = await self.resolve(ns.id, execution.workflow_id, execution.run_id)
            if not st.running:
                raise FailedPrecondition(f"workflow_execution: workflow {st.workflow_id!r} is already closed")
            if st.cancel_requested:
                return
            txn = Txn(st, self.clock.now_ms())
            attrs = pb.WorkflowExecutionCancelRequestedEventAttributes(cause=reason, identity=identity)
            if external is not None:
                attrs.external_initiated_event_id = external[0]
                attrs.external_workflow_execution.CopyFrom(external[1])
            txn.external(pb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED,
                         "workflow_execution_cancel_requested_event_attributes", attrs)
            st.cancel_requested = True
            if st.workflow_task is None:
                self.schedule_workflow_task(txn)
            await self.commit(txn)

    async def terminate(self: "HistoryEngine", ns: Namespace, execution: pb.WorkflowExecution, reason: str,
                        details: pb.Payloads, identity: str) -> None:
        async with self.locked(ns.id, execution.workflow_id):
            st = await self.resolve(ns.id, execution.workflow_id, execution.run_id)
            if not st.running:
                raise FailedPrecondition(f"workflow_execution: workflow {st.workflow_id!r} is already closed")
            await self.terminate_locked(st, reason, details, identity)

    async def terminate_locked(self: "HistoryEngine", st: MutableState, reason: str, details: pb.Payloads,
                               identity: str) -> None:
        txn = Txn(st, self.clock.now_ms())
        self.abandon_running_tasks(txn)
        txn.event(pb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED, "workflow_execution_terminated_event_attributes",
                  pb.WorkflowExecutionTerminatedEventAttributes(reason=reason, details=details, identity=identity))
        self.close_run(txn)
        await self.commit(txn)

    # ------------------------------------------------------------------ describe / history
    async def describe(self: "HistoryEngine", ns: Namespace, execution: pb.WorkflowExecution
                       ) -> svc.DescribeWorkflowExecutionResponse:
        async with self.locked(ns.id, execution.workflow_id):
            st = await self.resolve(ns.id, execution.workflow_id, execution.run_id)
            assert st.started is not None
            info = svc.WorkflowExecutionInfo(
                execution=pb.WorkflowExecution(workflow_id=st.workflow_id, run_id=st.run_id),
                workflow_type=st.workflow_type, task_queue=st.task_queue, status=st.status, start_time_ms=st.start_time_ms,
                close_time_ms=st.close_time_ms if not st.running else 0,
                execution_time_ms=st.start_time_ms + st.started.first_workflow_task_backoff_ms,
                history_length=st.next_event_id - 1, memo=pb.Memo(fields=st.memo),
                search_attributes=pb.SearchAttributes(indexed_fields=st.search_attributes),
                first_run_id=st.started.first_execution_run_id,
            )
            if st.started.HasField("parent"):
                info.parent_execution.CopyFrom(st.started.parent.execution)
                info.parent_namespace = st.started.parent.namespace
            wt = st.workflow_task
            return svc.DescribeWorkflowExecutionResponse(
                workflow_execution_info=info,
                pending_activities=[self.activity_describe(a) for a in st.activities.values()],
                pending_children=[svc.PendingChildInfo(workflow_id=c.workflow_id, run_id=c.run_id,
                                                       workflow_type=c.workflow_type, initiated_event_id=c.initiated_event_id)
                                  for c in st.children.values()],
                pending_workflow_task=wt is not None,
                run_timeout_ms=st.started.run_timeout_ms, execution_timeout_ms=st.started.execution_timeout_ms,
            )

    async def get_history(self: "HistoryEngine", ns: Namespace, req: svc.GetWorkflowExecutionHistoryRequest,
                          deadline: float) -> svc.GetWorkflowExecutionHistoryResponse:
        """A page of history; with wait_new_event, waits (until ``deadline``) for events or the close."""
        page = req.maximum_page_size or 1000
        first = token_position(req.next_page_token, default=1, minimum=1)
        loop = asyncio.get_running_loop()
        while True:
            async with self.locked(ns.id, req.execution.workflow_id):
                st = await self.resolve(ns.id, req.execution.workflow_id, req.execution.run_id)
                if req.close_event_only:
                    if st.close_event is not None:
                        return svc.GetWorkflowExecutionHistoryResponse(history=pb.History(events=[st.close_event]))
                else:
                    events = st.events[first - 1:first - 1 + page]
                    if events:
                        nxt = first + len(events)
                        token = str(nxt).encode() if (nxt < st.next_event_id or st.running) else b""
                        return svc.GetWorkflowExecutionHistoryResponse(history=pb.History(events=events),
                                                                       next_page_token=token)
                    if not st.running or not req.wait_new_event:
                        return svc.GetWorkflowExecutionHistoryResponse(history=pb.History())
                changed = st.changed
            remaining = deadline - loop.time()
            if remaining <= 0:
                token = str(first).encode() if not req.close_event_only else b""
                return svc.GetWorkflowExecutionHistoryResponse(history=pb.History(), next_page_token=token)
            try:
                await asyncio.wait_for(changed.wait(), remaining)
            except asyncio.TimeoutError:
                pass

    # ------------------------------------------------------------------ query
    async def query(self: "HistoryEngine", ns: Namespace, req: svc.QueryWorkflowRequest) -> svc.QueryWorkflowResponse:
        timeout = (req.timeout_ms / 1000.0) if req.timeout_ms else self.config.query_timeout
        async with self.locked(ns.id, req.execution.workflow_id):
            st = await self.resolve(ns.id, req.execution.workflow_id, req.execution.run_id)
            pq = PendingQuery(req.query)
            self.pending_queries[pq.id] = pq
            ref = TaskRef(KIND_QUERY, ns.id, st.workflow_id, st.run_id, query=pq)
            if st.sticky_queue and st.running:
                self.matching.add(ref, st.sticky_queue, sticky=True)
                sticky_queue = st.sticky_queue
            else:
                self.matching.add(ref, st.task_queue)
                sticky_queue = ""
        try:
            try:
                done = await asyncio.wait_for(asyncio.shield(pq.future), timeout if not sticky_queue else min(timeout, 2.0))
            except asyncio.TimeoutError:
                if not sticky_queue or pq.future.done():
                    raise
                # the worker holding the run did not answer: ask any worker of the queue
                self.matching.remove(ref, sticky_queue, 0)
                self.matching.add(ref, st.task_queue)
                done = await asyncio.wait_for(asyncio.shield(pq.future), max(0.1, timeout - 2.0))
        except asyncio.TimeoutError as e:
            raise DeadlineExceeded(f"query {req.query.query_type!r}: no worker answered within {timeout:g} s "
                                   f"(is a worker polling task queue {st.task_queue!r}?)") from e
        finally:
            self.pending_queries.pop(pq.id, None)
        if done.error_message:
            raise FailedPrecondition(f"query {req.query.query_type!r} failed: {done.error_message}")
        return svc.QueryWorkflowResponse(query_result=done.query_result)

    def build_query_task(self: "HistoryEngine", st: MutableState, pq: PendingQuery) -> svc.PollWorkflowTaskQueueResponse:
        """A query task: the committed history (up to the last completed task) and the query."""
        from ._tokens import QUERY, TaskToken

        upto = st.last_completed_started_id
        events = [e for e in st.events if e.event_id <= upto] if st.running else list(st.events)
        if st.running and upto:
            # include the completion event of that task so the worker sees its commands' results
            events = st.events[: upto + 1]
        tok = TaskToken(QUERY, st.namespace_id, st.workflow_id, st.run_id, 0, 0, pq.id)
        return svc.PollWorkflowTaskQueueResponse(
            task_token=tok.encode(), workflow_execution=pb.WorkflowExecution(workflow_id=st.workflow_id, run_id=st.run_id),
            workflow_type=st.workflow_type, previous_started_event_id=upto, started_event_id=upto,
            history=pb.History(events=events), query=pq.query, namespace=st.namespace, task_queue=st.task_queue,
        )

    async def record_query_started(self: "HistoryEngine", ref: TaskRef) -> svc.PollWorkflowTaskQueueResponse | None:
        pq = ref.query
        if pq is None or pq.future.done() or pq.id not in self.pending_queries:
            return None
        async with self.locked(ref.namespace_id, ref.workflow_id):
            st = await self.load(ref.namespace_id, ref.workflow_id, ref.run_id)
            if st is None:
                return None
            return self.build_query_task(st, pq)

    def respond_query(self: "HistoryEngine", req: svc.RespondQueryTaskCompletedRequest) -> None:
        from ._tokens import QUERY
        from ._workflow_tasks import decode_token

        tok = decode_token(req.task_token, QUERY)
        pq = self.pending_queries.get(tok.nonce)
        if pq is None or pq.future.done():
            raise NotFound("task_token: query not found (it timed out or was already answered)")
        pq.future.set_result(req)

    # ------------------------------------------------------------------ update
    async def update(self: "HistoryEngine", ns: Namespace, req: svc.UpdateWorkflowExecutionRequest
                     ) -> svc.UpdateWorkflowExecutionResponse:
        timeout = (req.timeout_ms / 1000.0) if req.timeout_ms else self.config.update_timeout
        upd = req.request
        if not upd.update_id:
            upd.update_id = uuid.uuid4().hex
        async with self.locked(ns.id, req.workflow_execution.workflow_id):
            st = await self.resolve(ns.id, req.workflow_execution.workflow_id, req.workflow_execution.run_id)
            done = st.completed_updates.get(upd.update_id)
            if done is not None:
                return _update_response(done, st.run_id)
            if not st.running:
                raise FailedPrecondition(f"workflow_execution: workflow {st.workflow_id!r} is already closed")
            pu = st.pending_updates.get(upd.update_id)
            if pu is None:
                pu = PendingUpdate(upd, asyncio.get_running_loop().create_future())
                st.pending_updates[upd.update_id] = pu
                if st.workflow_task is None:
                    txn = Txn(st, self.clock.now_ms())
                    self.schedule_workflow_task(txn)
                    await self.commit(txn)
        try:
            return await asyncio.wait_for(asyncio.shield(pu.future), timeout)
        except asyncio.TimeoutError as e:
            raise DeadlineExceeded(f"update {upd.name!r}: no outcome within {timeout:g} s (is a worker running?)") from e


def _update_response(done: pb.WorkflowExecutionUpdateCompletedEventAttributes, run_id: str
                     ) -> svc.UpdateWorkflowExecutionResponse:
    resp = svc.UpdateWorkflowExecutionResponse(run_id=run_id)
    if done.HasField("failure"):
        resp.failure.CopyFrom(done.failure)
    else:
        resp.success.CopyFrom(done.success)
    return resp


__all__ = ["ClientOpsMixin", "PendingQuery", "RUNNING"]
