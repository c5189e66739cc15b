"""Reading a run: describe it, or read (and long-poll) its history.

Both read the cached state under the workflow id's lock; nothing is written. A history
long poll (``wait_new_event``) waits on the state's ``changed`` event, which every commit
(and an eviction) sets.
"""

from __future__ import annotations

import asyncio

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.controlplane._paging import token_position
from spindle.controlplane.archival import fitting_prefix
from spindle.controlplane.namespaces import Namespace

from .._context import HistoryContext
from .._versioning import versioning_info
from . import activity_task


async def describe(ctx: HistoryContext, ns: Namespace, execution: pb.WorkflowExecution
                   ) -> svc.DescribeWorkflowExecutionResponse:
    """A run's state: its info, pending activities and children, and whether a workflow task is pending."""
    async with ctx.cache.locked(ns.id, execution.workflow_id):
        st = await ctx.cache.resolve(ns.id, execution.workflow_id, execution.run_id)
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
        vinfo = versioning_info(st)
        if vinfo is not None:
            info.versioning_info.CopyFrom(vinfo)
        wt = st.workflow_task
        return svc.DescribeWorkflowExecutionResponse(
            workflow_execution_info=info,
            pending_activities=[activity_task.pending_info(a) for a in st.activities.values()],
            pending_children=[svc.PendingChildInfo(workflow_id=c.workflow_id, run_id=c.run_id,
                                                   workflow_type=c.workflow_type, initiated_event_id=c.initiated_event_id)
                              for c in st.children.values()],
            pending_workflow_task=wt is not None,
            run_timeout_ms=st.started.run_timeout_ms, execution_timeout_ms=st.started.execution_timeout_ms,
        )


async def get_history(ctx: HistoryContext, ns: Namespace, req: svc.GetWorkflowExecutionHistoryRequest,
                      deadline: float) -> svc.GetWorkflowExecutionHistoryResponse:
    """A page of history; with wait_new_event, waits (until ``deadline``) for events or the close."""
    page = req.maximum_page_size or 1000
    first = token_position(req.next_page_token, default=1, minimum=1)
    loop = asyncio.get_running_loop()
    while True:
        async with ctx.cache.locked(ns.id, req.execution.workflow_id):
            st = await ctx.cache.resolve(ns.id, req.execution.workflow_id, req.execution.run_id)
            if req.close_event_only:
                if st.close_event is not None:
                    return svc.GetWorkflowExecutionHistoryResponse(history=pb.History(events=[st.close_event]))
            else:
                events = st.events[first - 1:first - 1 + page]
                budget = ctx.config.history_page_max_bytes
                if events and (st.may_hold_blob_refs or st.history_bytes + 8 * len(st.events) > budget):
                    # cut by bytes too, so that every page fits in a message
                    events = events[:fitting_prefix(events, budget, may_hold_refs=st.may_hold_blob_refs)]
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


__all__ = ["describe", "get_history"]
