"""Queries: asked of a worker, answered from the run's committed history; nothing is written.

A query is a task in matching (never persisted): to the worker holding the run (its sticky
queue) first, after 2 s to any worker of the run's task queue. Pending queries live in
``ctx.queries`` until answered or timed out.
"""

from __future__ import annotations

import asyncio

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.controlplane.errors import DeadlineExceeded, FailedPrecondition, NotFound
from spindle.controlplane.matching import KIND_QUERY, TaskRef
from spindle.controlplane.namespaces import Namespace

from .._context import HistoryContext
from .._mutable_state import MutableState
from .._pending import PendingQuery
from .._tokens import QUERY, TaskToken
from .._versioning import pin_of


async def query(ctx: HistoryContext, ns: Namespace, req: svc.QueryWorkflowRequest) -> svc.QueryWorkflowResponse:
    """Ask a worker to answer ``req.query`` from the run's history; DeadlineExceeded when none answers in time."""
    timeout = (req.timeout_ms / 1000.0) if req.timeout_ms else ctx.config.query_timeout
    async with ctx.cache.locked(ns.id, req.execution.workflow_id):
        st = await ctx.cache.resolve(ns.id, req.execution.workflow_id, req.execution.run_id)
        pq = PendingQuery(req.query)
        ctx.queries[pq.id] = pq
        ref = TaskRef(KIND_QUERY, ns.id, st.workflow_id, st.run_id, query=pq, pin=pin_of(st))
        if st.sticky_queue and st.running:
            ctx.matching.add(ref, st.sticky_queue, sticky=True)
            sticky_queue = st.sticky_queue
        else:
            ctx.matching.add(ref, st.task_queue)
            sticky_queue = ""
    try:
        try:
            done = await asyncio.wait_for(asyncio.shield(pq.future), timeout if not sticky_queue else min(timeout, 2.0))
        except asyncio.TimeoutError:
            if not sticky_queue or pq.future.done():
                raise
            # the worker holding the run did not answer: ask any worker of the queue
            ctx.matching.remove(ref, sticky_queue, 0)
            ctx.matching.add(ref, st.task_queue)
            done = await asyncio.wait_for(asyncio.shield(pq.future), max(0.1, timeout - 2.0))
    except asyncio.TimeoutError as e:
        raise DeadlineExceeded(f"query {req.query.query_type!r}: no worker answered within {timeout:g} s "
                               f"(is a worker polling task queue {st.task_queue!r}?)") from e
    finally:
        ctx.queries.pop(pq.id, None)
    if done.error_message:
        raise FailedPrecondition(f"query {req.query.query_type!r} failed: {done.error_message}")
    return svc.QueryWorkflowResponse(query_result=done.query_result)


def build_query_task(ctx: HistoryContext, st: MutableState, pq: PendingQuery) -> svc.PollWorkflowTaskQueueResponse:
    """A query task: the committed history (up to the last completed task) and the query."""
    upto = st.last_completed_started_id
    events = [e for e in st.events if e.event_id <= upto] if st.running else list(st.events)
    if st.running and upto:
        # include the completion event of that task so the worker sees its commands' results
        events = st.events[: upto + 1]
    tok = TaskToken(QUERY, st.namespace_id, st.workflow_id, st.run_id, 0, 0, pq.id, st.task_queue)
    return svc.PollWorkflowTaskQueueResponse(
        task_token=ctx.tokens.encode(tok), workflow_execution=pb.WorkflowExecution(workflow_id=st.workflow_id, run_id=st.run_id),
        workflow_type=st.workflow_type, previous_started_event_id=upto, started_event_id=upto,
        history=pb.History(events=events), query=pq.query, namespace=st.namespace, task_queue=st.task_queue,
    )


async def record_started(ctx: HistoryContext, ref: TaskRef) -> svc.PollWorkflowTaskQueueResponse | None:
    """The query task a poller took; None if the query is over (answered or timed out) or its run is gone."""
    pq = ref.query
    if pq is None or pq.future.done() or pq.id not in ctx.queries:
        return None
    async with ctx.cache.locked(ref.namespace_id, ref.workflow_id):
        st = await ctx.cache.load(ref.namespace_id, ref.workflow_id, ref.run_id)
        if st is None:
            return None
        return build_query_task(ctx, st, pq)


def respond(ctx: HistoryContext, req: svc.RespondQueryTaskCompletedRequest) -> None:
    """A worker's answer to a query task; NotFound if the query is over."""
    tok = ctx.tokens.decode(req.task_token, QUERY)
    pq = ctx.queries.get(tok.nonce)
    if pq is None or pq.future.done():
        raise NotFound("task_token: query not found (it timed out or was already answered)")
    pq.future.set_result(req)


__all__ = ["build_query_task", "query", "record_started", "respond"]
