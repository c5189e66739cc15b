"""Answering a query task: from the run's cached instance, or by replaying its history into a new one.

A query runs workflow code (its handler) but produces no commands: a cached instance
answers it under the run's lock; otherwise the run is replayed up to its last completed
workflow task in a throwaway instance. Either way the handler runs under the deadlock
deadline, and a handler interrupted by it evicts the cached run.
"""

from __future__ import annotations

import logging

from collections.abc import Callable, Sequence
from typing import Any

import grpc
import grpc.aio

from spindle._workflow.deadlock import DeadlockError
from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.converter._payload_codec import PayloadCodec
from spindle.converter._payload_visitor import encode_message
from spindle.worker._run_cache import RunCache
from spindle.worker._workflow_history import WorkflowHistory
from spindle.worker._workflow_task_responses import task_context

__all__ = ["QueryAnswerer"]

log = logging.getLogger("spindle.worker")


class QueryAnswerer:
    """Answers query tasks for the workflow worker.

    Args:
        stub: the client's stub.
        namespace: the worker's namespace.
        codecs: the client's codec chain (encodes the answer).
        runs: the worker's sticky cache.
        history: reads a run's history for a replay.
        definitions: ``WorkflowDefinition`` by type name.
        new_instance: builds a workflow instance (``(definition, task, task_queue)``).
        guarded: calls workflow code under the deadlock deadline (``(task, fn, *args, **kwargs)``).
    """

    def __init__(self, stub: Any, namespace: str, codecs: Sequence[PayloadCodec], runs: RunCache,
                 history: WorkflowHistory, definitions: dict[str, Any],
                 new_instance: Callable[[Any, svc.PollWorkflowTaskQueueResponse, str], Any],
                 guarded: Callable[..., Any]) -> None:
        self._stub = stub
        self._ns = namespace
        self._codecs = codecs
        self._runs = runs
        self._history = history
        self._defs = definitions
        self._registered_names = ", ".join(sorted(definitions)) or "none"
        self._new_instance = new_instance
        self._guarded = guarded

    async def answer(self, task: svc.PollWorkflowTaskQueueResponse) -> None:
        """Answer the query ``task`` carries (an error it raises becomes the answer's error message)."""
        run_id = task.workflow_execution.run_id
        req = svc.RespondQueryTaskCompletedRequest(task_token=task.task_token, namespace=self._ns)
        try:
            cache = self._runs.entries
            entry = cache.get(run_id)
            if entry is not None:
                async with entry.lock:
                    if cache.get(run_id) is entry and entry.instance is not None:
                        inst = entry.instance
                        try:
                            req.query_result.CopyFrom(self._guarded(task, inst.query, task.query))
                        except DeadlockError:
                            self._runs.evict(run_id, entry)  # interrupted mid-handler: its state is not to be trusted
                            raise
                    else:
                        entry = None
            if entry is None:
                req.query_result.CopyFrom(await self._query_fresh(task))
        except Exception as e:
            req.ClearField("query_result")
            req.error_message = str(e) or type(e).__name__
        if self._codecs:
            try:
                await encode_message(self._codecs, req, context=task_context(task, self._ns))
            except Exception as e:  # noqa: BLE001 - a codec refused the result
                req.ClearField("query_result")
                req.error_message = f"the query result cannot be encoded by the codec chain: {type(e).__name__}: {e}"
        try:
            await self._stub.RespondQueryTaskCompleted(req)
        except grpc.aio.AioRpcError as e:
            log.debug("answering a query failed: %s %s", e.code(), e.details())

    async def _query_fresh(self, task: svc.PollWorkflowTaskQueueResponse) -> pb.Payloads:
        """Replay the run from its history (up to the last completed workflow task) and query it."""
        defn = self._defs.get(task.workflow_type)
        if defn is None:
            raise RuntimeError(f"workflow type {task.workflow_type!r} is not registered on this worker; "
                               f"registered workflows: {self._registered_names}")
        events = await self._history.whole(task)
        # Replay up to the WorkflowTaskStarted of the last completed workflow task.
        cut = 0
        for i in range(len(events) - 1):
            if (events[i].event_type == pb.EVENT_TYPE_WORKFLOW_TASK_STARTED
                    and events[i + 1].event_type == pb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED):
                cut = i + 1
        if cut == 0:
            raise RuntimeError("the workflow has not completed its first workflow task yet")
        started = events[0].workflow_execution_started_event_attributes
        inst = self._new_instance(defn, task, started.task_queue)
        try:
            self._guarded(task, inst.activate, events[:cut], updates=[], started_event_id=events[cut - 1].event_id)
            result: pb.Payloads = self._guarded(task, inst.query, task.query)
            return result
        finally:
            self._runs.close_instance(inst, task.workflow_execution.run_id)

