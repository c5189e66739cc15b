"""The frontend: validates every request, routes it to the history engine or matching.

Methods are named after the RPCs of ``spindle.v1.WorkflowService`` and take the
request and a deadline (event-loop time, or None). They raise ``ServiceError``s; the
gRPC adapter and the embedded stub turn those into gRPC statuses.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TypeVar

from google.protobuf.message import Message

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.controlplane._paging import token_position
from spindle.controlplane.auth import ApiKeyAdmin, ApiKeys, current_principal
from spindle.controlplane.config import ServerConfig
from spindle.controlplane.errors import FailedPrecondition, InvalidArgument, NotFound
from spindle.controlplane.history import HistoryEngine
from spindle.controlplane.history._tokens import BadTokenError
from spindle.controlplane.matching import KIND_ACTIVITY, KIND_WORKFLOW
from spindle.controlplane.namespaces import Namespace, NamespaceRegistry
from spindle.controlplane.store import Store
from spindle.controlplane.visibility import QueryError, STATUS_NAMES, compile_query

from ._payload_intake import PayloadIntake, refuse_blob_refs
from ._rate_limit import NamespaceRateLimiter
from spindle.controlplane._search_attributes import check_search_attributes
from spindle.controlplane.schedules._wire import check_backfill, check_overlap, check_schedule

from ._validate import check_payloads, check_start_request, require_id, task_rate, validated

VERSION = "0.1.0"

M = TypeVar("M", bound=Message)

log = logging.getLogger("spindle.frontend")


@validated  # every RPC's request passes check_request before the method runs
class FrontendService:
    def __init__(self, store: Store, config: ServerConfig, namespaces: NamespaceRegistry, engine: HistoryEngine,
                 api_keys: ApiKeys | None = None) -> None:
        self.store = store
        self.config = config
        self.namespaces = namespaces
        self.engine = engine
        #: The API keys (the authorizer of the gRPC servicer shares them: a revocation here is seen there at once).
        self.api_keys = api_keys or ApiKeys(store)
        self._key_admin = ApiKeyAdmin(self.api_keys, namespaces)
        #: Per-namespace request rate limits (``rps_limit``) of this process.
        self.rate_limiter = NamespaceRateLimiter()
        #: Client-made blob references refused, failure chains capped, large payloads offloaded and collected.
        self.payloads = PayloadIntake(engine.archival.payloads, store)

    def _charge(self, namespace: str) -> Namespace:
        """The namespace a client call addresses, counted against its ``rps_limit``.

        Counted: a client's calls about workflows (start, signal, signal-with-start, query,
        update, cancel, terminate, describe, history, list, count), first thing, so a
        throttled call does nothing. Not counted: worker polls and task responses (bounded by
        worker slots and task-queue dispatch rates; throttling them would hold back running
        executions and waste work already handed out), namespace administration (an
        operator must be able to raise a flooded namespace's limit) and system info.

        Raises:
            NotFound / InvalidArgument: no such namespace.
            ResourceExhausted: over the limit, with the retry delay.
        """
        ns = self.namespaces.get(namespace)
        self.rate_limiter.check(ns)
        return ns

    async def _out(self, resp: M, namespace_id: str | None = None) -> M:
        """Expand blob references in a response, so clients and workers see the original payloads.

        With ``namespace_id``, a reference to another namespace's blob is refused (never expanded).
        """
        return await self.engine.archival.payloads.expand(resp, namespace_id)

    def _offload_namespace(self, req: Message) -> str:
        """For a worker's answer: the namespace id its task token names, needed only when the answer has payloads
        to offload (scoping their blobs); ``""`` otherwise (saves verifying the token twice: the engine does).

        Raises:
            InvalidArgument: a token this server did not sign (when it is needed).
        """
        offloader = self.payloads.offloader
        if not offloader.enabled or req.ByteSize() <= offloader.threshold:
            return ""
        return self._token_namespace(req.task_token)  # type: ignore[attr-defined]

    def _token_namespace(self, token: bytes) -> str:
        """The namespace id a task token names (InvalidArgument for a token this server did not sign)."""
        try:
            return self.engine.tokens.verify(token).namespace_id
        except BadTokenError as e:
            raise InvalidArgument(str(e)) from e

    def _transient_limit(self) -> int:
        """Largest payloads of a request the server passes on without storing (query arguments and answers)."""
        return self.config.max_offloaded_payload_bytes if self.payloads.offloader.enabled else self.config.max_payload_bytes

    def _poll_timeout(self, deadline: float | None) -> float:
        t = self.config.long_poll_timeout
        if deadline is not None:
            t = min(t, deadline - asyncio.get_running_loop().time() - 0.2)
        return max(0.0, t)

    # ------------------------------------------------------------------ system / namespaces
    async def GetSystemInfo(self, req: svc.GetSystemInfoRequest, deadline: float | None) -> svc.GetSystemInfoResponse:
        return svc.GetSystemInfoResponse(server_version=VERSION, store=self.store.name, num_shards=self.config.num_shards)

    async def CreateNamespace(self, req: svc.CreateNamespaceRequest, deadline: float | None) -> svc.CreateNamespaceResponse:
        ns = await self.namespaces.create(req)
        return svc.CreateNamespaceResponse(namespace_info=ns.to_proto())

    async def DescribeNamespace(self, req: svc.DescribeNamespaceRequest, deadline: float | None) -> svc.DescribeNamespaceResponse:
        return svc.DescribeNamespaceResponse(namespace_info=self.namespaces.get(req.name, "name").to_proto())

    async def ListNamespaces(self, req: svc.ListNamespacesRequest, deadline: float | None) -> svc.ListNamespacesResponse:
        principal = current_principal()  # only the namespaces the caller holds a grant on (all: system_admin)
        all_ns = [n for n in self.namespaces.all() if principal is None or principal.sees_namespace(n.name)]
        start = token_position(req.next_page_token, default=0, minimum=0)
        if req.page_size < 0:
            raise InvalidArgument(f"page_size: must not be negative, got {req.page_size}")
        size = req.page_size or 100
        page = all_ns[start:start + size]
        token = str(start + size).encode() if start + size < len(all_ns) else b""
        return svc.ListNamespacesResponse(namespaces=[n.to_proto() for n in page], next_page_token=token)

    async def UpdateNamespace(self, req: svc.UpdateNamespaceRequest, deadline: float | None) -> svc.UpdateNamespaceResponse:
        if "search_attributes" in req.update_mask or not req.update_mask:
            ns = self.namespaces.get(req.name, "name")
            removed = set(ns.search_attributes) - set(req.search_attributes)
            if removed and req.update_mask:
                raise FailedPrecondition(f"search_attributes: removing registered attributes ({', '.join(sorted(removed))}) "
                                         "is not supported; existing executions may carry them")
        ns = await self.namespaces.update(req)
        return svc.UpdateNamespaceResponse(namespace_info=ns.to_proto())

    async def DeleteNamespace(self, req: svc.DeleteNamespaceRequest, deadline: float | None) -> svc.DeleteNamespaceResponse:
        ns = self.namespaces.get(req.name, "name")
        running = await self.store.count_running(ns.id)
        terminated = 0
        if running and not req.force:
            raise FailedPrecondition(
                f"name: namespace {req.name!r} has {running} running execution(s); terminate them first or delete with "
                "force (terraform: force_destroy = true)")
        while running:
            for row in await self.store.list_running(ns.id, 500):
                try:
                    await self.engine.terminate(ns, pb.WorkflowExecution(workflow_id=row.workflow_id, run_id=row.run_id),
                                                "namespace deleted", pb.Payloads(), "spindle-namespace-delete")
                    terminated += 1
                except (NotFound, FailedPrecondition):
                    pass
            running = await self.store.count_running(ns.id)
        await self.namespaces.delete(req.name)
        self.rate_limiter.forget(ns.id)
        await self._delete_namespace_blobs(ns)
        return svc.DeleteNamespaceResponse(terminated_executions=terminated)

    async def _delete_namespace_blobs(self, ns: Namespace) -> None:
        """A deleted namespace's large-payload blobs go with it (its runs can no longer be read)."""
        blobs = self.payloads.offloader.blobs
        if blobs is None:
            return
        try:
            n = await blobs.delete_namespace(ns.id)
        except Exception as e:  # noqa: BLE001 - the namespace is deleted either way; an operator can remove the prefix
            log.warning("namespace %s deleted, but its blobs (%s) could not be removed: %s", ns.name,
                        blobs.namespace_prefix(ns.id), e, extra={"namespace": ns.name})
        else:
            if n:
                log.info("namespace %s deleted with its %d large-payload blob(s)", ns.name, n,
                         extra={"namespace": ns.name})

    async def AddSearchAttributes(self, req: svc.AddSearchAttributesRequest, deadline: float | None) -> svc.AddSearchAttributesResponse:
        await self.namespaces.add_search_attributes(req.namespace, dict(req.search_attributes))
        return svc.AddSearchAttributesResponse()

    # ------------------------------------------------------------------ starting and messaging
    def _check_start(self, req: svc.StartWorkflowExecutionRequest) -> Namespace:
        ns = self.namespaces.get(req.namespace)
        check_start_request(req, ns, self.config)
        return ns

    async def StartWorkflowExecution(self, req: svc.StartWorkflowExecutionRequest, deadline: float | None
                                     ) -> svc.StartWorkflowExecutionResponse:
        ns = self._charge(req.namespace)
        prepared = await self.payloads.prepare(req, "input", ns.id)  # nothing is written before every check passed
        req = prepared.request  # type: ignore[assignment]
        self._check_start(req)
        async with self.engine.admit_start(ns.id), self.payloads.offloaded(prepared):
            run_id, started = await self.engine.start_workflow(ns, req)  # type: ignore[arg-type]
        return svc.StartWorkflowExecutionResponse(run_id=run_id, started=started)

    async def SignalWithStartWorkflowExecution(self, req: svc.SignalWithStartWorkflowExecutionRequest, deadline: float | None
                                               ) -> svc.SignalWithStartWorkflowExecutionResponse:
        ns = self._charge(req.start.namespace)
        require_id(req.signal_name, "signal_name", self.config)
        prepared = await self.payloads.prepare(req, "start.input", ns.id)
        req = prepared.request  # type: ignore[assignment]
        self._check_start(req.start)
        check_payloads(self.config, "signal_input", req.signal_input)
        async with self.payloads.offloaded(prepared):
            run_id, started = await self.engine.start_workflow(
                ns, req.start, signal=(req.signal_name, req.signal_input, req.signal_header))  # type: ignore[arg-type]
        return svc.SignalWithStartWorkflowExecutionResponse(run_id=run_id, started=started)

    async def SignalWorkflowExecution(self, req: svc.SignalWorkflowExecutionRequest, deadline: float | None
                                      ) -> svc.SignalWorkflowExecutionResponse:
        ns = self._charge(req.namespace)
        require_id(req.workflow_execution.workflow_id, "workflow_execution.workflow_id", self.config)
        require_id(req.signal_name, "signal_name", self.config)
        prepared = await self.payloads.prepare(req, "input", ns.id)
        req = prepared.request  # type: ignore[assignment]
        check_payloads(self.config, "input", req.input, req.header)
        async with self.payloads.offloaded(prepared):
            await self.engine.signal(ns, req.workflow_execution, req.signal_name, req.input, req.header, req.identity,
                                     req.request_id)
        return svc.SignalWorkflowExecutionResponse()

    async def QueryWorkflow(self, req: svc.QueryWorkflowRequest, deadline: float | None) -> svc.QueryWorkflowResponse:
        ns = self._charge(req.namespace)
        require_id(req.execution.workflow_id, "execution.workflow_id", self.config)
        require_id(req.query.query_type, "query.query_type", self.config)
        # query arguments are never stored: they travel inline (up to the large-payload limit)
        req = (await self.payloads.prepare(req, "query.query_args", ns.id, offload=False)).request  # type: ignore[assignment]
        _check_size(self._transient_limit(), "query.query_args", req.query.query_args)
        return await self._out(await self.engine.query(ns, req), ns.id)

    async def UpdateWorkflowExecution(self, req: svc.UpdateWorkflowExecutionRequest, deadline: float | None
                                      ) -> svc.UpdateWorkflowExecutionResponse:
        ns = self._charge(req.namespace)
        require_id(req.workflow_execution.workflow_id, "workflow_execution.workflow_id", self.config)
        require_id(req.request.name, "request.name", self.config)
        prepared = await self.payloads.prepare(req, "request.input", ns.id)
        req = prepared.request  # type: ignore[assignment]
        check_payloads(self.config, "request.input", req.request.input)
        async with self.payloads.offloaded(prepared):
            resp = await self.engine.update(ns, req)
        return await self._out(resp, ns.id)

    async def RequestCancelWorkflowExecution(self, req: svc.RequestCancelWorkflowExecutionRequest, deadline: float | None
                                             ) -> svc.RequestCancelWorkflowExecutionResponse:
        ns = self._charge(req.namespace)
        require_id(req.workflow_execution.workflow_id, "workflow_execution.workflow_id", self.config)
        await self.engine.request_cancel(ns, req.workflow_execution, req.identity, req.reason)
        return svc.RequestCancelWorkflowExecutionResponse()

    async def TerminateWorkflowExecution(self, req: svc.TerminateWorkflowExecutionRequest, deadline: float | None
                                         ) -> svc.TerminateWorkflowExecutionResponse:
        ns = self._charge(req.namespace)
        require_id(req.workflow_execution.workflow_id, "workflow_execution.workflow_id", self.config)
        prepared = await self.payloads.prepare(req, "details", ns.id)
        req = prepared.request  # type: ignore[assignment]
        check_payloads(self.config, "details", req.details)
        async with self.payloads.offloaded(prepared):
            await self.engine.terminate(ns, req.workflow_execution, req.reason, req.details, req.identity)
        return svc.TerminateWorkflowExecutionResponse()

    async def ResetWorkflowExecution(self, req: svc.ResetWorkflowExecutionRequest, deadline: float | None
                                     ) -> svc.ResetWorkflowExecutionResponse:
        ns = self._charge(req.namespace)
        require_id(req.workflow_execution.workflow_id, "workflow_execution.workflow_id", self.config)
        if req.workflow_task_finish_event_id <= 0:
            raise InvalidArgument("workflow_task_finish_event_id: required: the id of a WorkflowTaskCompleted event "
                                  "of the run to reset to")
        return svc.ResetWorkflowExecutionResponse(run_id=await self.engine.reset(ns, req))

    async def DescribeWorkflowExecution(self, req: svc.DescribeWorkflowExecutionRequest, deadline: float | None
                                        ) -> svc.DescribeWorkflowExecutionResponse:
        ns = self._charge(req.namespace)
        require_id(req.execution.workflow_id, "execution.workflow_id", self.config)
        try:
            resp = await self.engine.describe(ns, req.execution)
        except NotFound:
            resp = await self.engine.archival.describe(ns, req.execution)  # retention deleted it: read the archive
        return await self._out(resp, ns.id)

    async def GetWorkflowExecutionHistory(self, req: svc.GetWorkflowExecutionHistoryRequest, deadline: float | None
                                          ) -> svc.GetWorkflowExecutionHistoryResponse:
        ns = self._charge(req.namespace)
        require_id(req.execution.workflow_id, "execution.workflow_id", self.config)
        if req.maximum_page_size < 0:
            raise InvalidArgument(f"maximum_page_size: must not be negative, got {req.maximum_page_size}")
        loop = asyncio.get_running_loop()
        limit = loop.time() + (self.config.long_poll_timeout if req.wait_new_event else 0)
        if deadline is not None:
            limit = min(limit, deadline - 0.2)
        try:
            resp = await self.engine.get_history(ns, req, limit)
        except NotFound:
            resp = await self.engine.archival.read_history(ns, req)  # retention deleted it: read the archive
        return await self._out(resp, ns.id)

    async def ListWorkflowExecutions(self, req: svc.ListWorkflowExecutionsRequest, deadline: float | None
                                     ) -> svc.ListWorkflowExecutionsResponse:
        ns = self._charge(req.namespace)
        q = self._compile(ns, req.query)
        if q.group_by:
            raise InvalidArgument("query: GROUP BY is only for counting")
        offset = token_position(req.next_page_token, default=0, minimum=0)
        size = req.page_size or 100
        if size < 0 or size > 10_000:
            raise InvalidArgument(f"page_size: must be between 1 and 10000, got {req.page_size}")
        rows = await self.store.query_visibility(ns.id, q.where, q.params, q.order_by, size, offset)
        infos = []
        for r in rows:
            info = svc.WorkflowExecutionInfo(
                execution=pb.WorkflowExecution(workflow_id=r.workflow_id, run_id=r.run_id), workflow_type=r.workflow_type,
                task_queue=r.task_queue, status=r.status, start_time_ms=r.start_time_ms, close_time_ms=r.close_time_ms or 0,
                history_length=r.history_length)
            if r.memo:
                info.memo.ParseFromString(r.memo)
            _fill_search_attributes(info, r.search_attributes)
            if r.parent_workflow_id:
                info.parent_execution.workflow_id = r.parent_workflow_id
                info.parent_execution.run_id = r.parent_run_id
            infos.append(info)
        token = str(offset + len(rows)).encode() if len(rows) == size else b""
        return svc.ListWorkflowExecutionsResponse(executions=infos, next_page_token=token)

    async def CountWorkflowExecutions(self, req: svc.CountWorkflowExecutionsRequest, deadline: float | None
                                      ) -> svc.CountWorkflowExecutionsResponse:
        ns = self._charge(req.namespace)
        q = self._compile(ns, req.query)
        rows = await self.store.count_visibility(ns.id, q.where, q.params, q.group_by_columns)
        resp = svc.CountWorkflowExecutionsResponse(count=sum(c for _, c in rows))
        if q.group_by:
            for values, count in rows:
                names = [STATUS_NAMES.get(v, str(v)) if f == "ExecutionStatus" else str(v)  # type: ignore[call-overload]
                         for f, v in zip(q.group_by, values)]
                resp.groups.append(svc.CountGroup(group_values=names, count=count))
        return resp

    def _compile(self, ns: object, query: str) -> object:
        try:
            return compile_query(query, search_attributes=ns.search_attribute_type_names,  # type: ignore[attr-defined]
                                 dialect="sqlite" if self.store.name == "sqlite" else "spanner")
        except QueryError as e:
            raise InvalidArgument(f"query: {e}") from e

    # ------------------------------------------------------------------ workers
    async def PollWorkflowTaskQueue(self, req: svc.PollWorkflowTaskQueueRequest, deadline: float | None
                                    ) -> svc.PollWorkflowTaskQueueResponse:
        ns = self.namespaces.get(req.namespace)
        require_id(req.task_queue, "task_queue", self.config)
        self.engine.note_workflow_poller(ns.id, req.identity or "anonymous")
        loop = asyncio.get_running_loop()
        end = loop.time() + self._poll_timeout(deadline)
        while True:
            remaining = end - loop.time()
            if remaining <= 0:
                return svc.PollWorkflowTaskQueueResponse()
            ref = await self.engine.matching.poll(ns.id, req.task_queue, KIND_WORKFLOW, remaining, sticky=req.sticky,
                                                  identity=req.identity)
            if ref is None:
                return svc.PollWorkflowTaskQueueResponse()
            resp = await self.engine.start_polled(ref, req.task_queue, KIND_WORKFLOW, req.identity, sticky=req.sticky)
            if resp is not None:
                return await self._out(resp, ns.id)

    async def PollActivityTaskQueue(self, req: svc.PollActivityTaskQueueRequest, deadline: float | None
                                    ) -> svc.PollActivityTaskQueueResponse:
        ns = self.namespaces.get(req.namespace)
        require_id(req.task_queue, "task_queue", self.config)
        rate = task_rate(req.max_tasks_per_second, self.config)  # clamped to the server's floor and ceiling
        loop = asyncio.get_running_loop()
        end = loop.time() + self._poll_timeout(deadline)
        while True:
            remaining = end - loop.time()
            if remaining <= 0:
                return svc.PollActivityTaskQueueResponse()
            ref = await self.engine.matching.poll(ns.id, req.task_queue, KIND_ACTIVITY, remaining,
                                                  rate=rate)
            if ref is None:
                return svc.PollActivityTaskQueueResponse()
            resp = await self.engine.start_polled(ref, req.task_queue, KIND_ACTIVITY, req.identity)
            if resp is not None:
                return await self._out(resp, ns.id)

    async def RespondWorkflowTaskCompleted(self, req: svc.RespondWorkflowTaskCompletedRequest, deadline: float | None
                                           ) -> svc.RespondWorkflowTaskCompletedResponse:
        refuse_blob_refs(req)  # first: the error names the field, whatever else is wrong
        ns_id = self._offload_namespace(req)
        prepared = await self.payloads.prepare(req, "commands", ns_id, refs_checked=True)
        req = prepared.request  # type: ignore[assignment]
        check_payloads(self.config, "commands", *[c for c in req.commands])
        async with self.payloads.offloaded(prepared):
            resp = await self.engine.respond_workflow_task_completed(req)
        return await self._out(resp, ns_id or None)

    async def RespondWorkflowTaskFailed(self, req: svc.RespondWorkflowTaskFailedRequest, deadline: float | None
                                        ) -> svc.RespondWorkflowTaskFailedResponse:
        refuse_blob_refs(req)  # first: the error names the field, whatever else is wrong
        ns_id = self._offload_namespace(req)
        prepared = await self.payloads.prepare(req, "failure", ns_id, refs_checked=True)
        req = prepared.request  # type: ignore[assignment]
        check_payloads(self.config, "failure", req.failure)
        async with self.payloads.offloaded(prepared):
            await self.engine.respond_workflow_task_failed(req)
        return svc.RespondWorkflowTaskFailedResponse()

    async def RespondQueryTaskCompleted(self, req: svc.RespondQueryTaskCompletedRequest, deadline: float | None
                                        ) -> svc.RespondQueryTaskCompletedResponse:
        # a query's answer is never stored: it goes inline to the waiting QueryWorkflow
        refuse_blob_refs(req)  # first: the error names the field, whatever else is wrong
        ns_id = self._offload_namespace(req)
        req = (await self.payloads.prepare(req, "query_result", ns_id, offload=False, refs_checked=True)).request  # type: ignore[assignment]
        _check_size(self._transient_limit(), "query_result", req.query_result)
        self.engine.respond_query(req)
        return svc.RespondQueryTaskCompletedResponse()

    async def RespondActivityTaskCompleted(self, req: svc.RespondActivityTaskCompletedRequest, deadline: float | None
                                           ) -> svc.RespondActivityTaskCompletedResponse:
        refuse_blob_refs(req)  # first: the error names the field, whatever else is wrong
        ns_id = self._offload_namespace(req)
        prepared = await self.payloads.prepare(req, "result", ns_id, refs_checked=True)
        req = prepared.request  # type: ignore[assignment]
        check_payloads(self.config, "result", req.result)
        async with self.payloads.offloaded(prepared):
            resp = await self.engine.respond_activity_completed(req)
        return await self._out(resp, ns_id or None)

    async def RespondActivityTaskFailed(self, req: svc.RespondActivityTaskFailedRequest, deadline: float | None
                                        ) -> svc.RespondActivityTaskFailedResponse:
        refuse_blob_refs(req)  # first: the error names the field, whatever else is wrong
        ns_id = self._offload_namespace(req)
        prepared = await self.payloads.prepare(req, "failure", ns_id, refs_checked=True)
        req = prepared.request  # type: ignore[assignment]
        check_payloads(self.config, "failure", req.failure, req.last_heartbeat_details)
        async with self.payloads.offloaded(prepared):
            resp = await self.engine.respond_activity_failed(req)
        return await self._out(resp, ns_id or None)

    async def RespondActivityTaskCanceled(self, req: svc.RespondActivityTaskCanceledRequest, deadline: float | None
                                          ) -> svc.RespondActivityTaskCanceledResponse:
        refuse_blob_refs(req)  # first: the error names the field, whatever else is wrong
        ns_id = self._offload_namespace(req)
        prepared = await self.payloads.prepare(req, "details", ns_id, refs_checked=True)
        req = prepared.request  # type: ignore[assignment]
        check_payloads(self.config, "details", req.details)
        async with self.payloads.offloaded(prepared):
            resp = await self.engine.respond_activity_canceled(req)
        return await self._out(resp, ns_id or None)

    async def RecordActivityTaskHeartbeat(self, req: svc.RecordActivityTaskHeartbeatRequest, deadline: float | None
                                          ) -> svc.RecordActivityTaskHeartbeatResponse:
        # Heartbeat details stay inline (max_payload_bytes): they live in memory until the attempt
        # ends, so an offloaded blob could not be told apart from an orphan; each heartbeat would
        # otherwise leave one behind.
        refuse_blob_refs(req)  # first: the error names the field, whatever else is wrong
        ns_id = self._offload_namespace(req)
        req = (await self.payloads.prepare(req, "details", ns_id, offload=False, refs_checked=True)).request  # type: ignore[assignment]
        check_payloads(self.config, "details", req.details)
        return await self.engine.record_heartbeat(req)


    # ------------------------------------------------------------------ schedules (issue 17)
    def _check_schedule(self, ns: Namespace, schedule: pb.Schedule) -> None:
        check_schedule(schedule, max_id_length=self.config.max_id_length)
        action = schedule.action
        check_payloads(self.config, "schedule.action.input", action.input, action.memo, action.header)
        check_search_attributes(ns, action.search_attributes, "schedule.action.search_attributes")

    async def CreateSchedule(self, req: svc.CreateScheduleRequest, deadline: float | None) -> svc.CreateScheduleResponse:
        refuse_blob_refs(req)  # first: the error names the field, whatever else is wrong
        ns = self._charge(req.namespace)
        require_id(req.schedule_id, "schedule_id", self.config)
        if not req.HasField("schedule"):
            raise InvalidArgument("schedule: required")
        self._check_schedule(ns, req.schedule)
        return await self.engine.create_schedule(ns, req)

    async def DescribeSchedule(self, req: svc.DescribeScheduleRequest, deadline: float | None
                               ) -> svc.DescribeScheduleResponse:
        ns = self._charge(req.namespace)
        require_id(req.schedule_id, "schedule_id", self.config)
        return await self.engine.describe_schedule(ns, req.schedule_id)

    async def UpdateSchedule(self, req: svc.UpdateScheduleRequest, deadline: float | None) -> svc.UpdateScheduleResponse:
        refuse_blob_refs(req)  # first: the error names the field, whatever else is wrong
        ns = self._charge(req.namespace)
        require_id(req.schedule_id, "schedule_id", self.config)
        if not req.HasField("schedule"):
            raise InvalidArgument("schedule: required")
        self._check_schedule(ns, req.schedule)
        await self.engine.update_schedule(ns, req)
        return svc.UpdateScheduleResponse()

    async def PatchSchedule(self, req: svc.PatchScheduleRequest, deadline: float | None) -> svc.PatchScheduleResponse:
        ns = self._charge(req.namespace)
        require_id(req.schedule_id, "schedule_id", self.config)
        p = req.patch
        if p.HasField("pause") and p.HasField("unpause"):
            raise InvalidArgument("patch.unpause: a patch may pause or unpause, not both")
        if p.HasField("trigger_immediately"):
            check_overlap(p.trigger_immediately.overlap_policy, "patch.trigger_immediately.overlap_policy")
        for i, b in enumerate(p.backfill_request):
            check_backfill(b, f"patch.backfill_request[{i}]")
        await self.engine.patch_schedule(ns, req)
        return svc.PatchScheduleResponse()

    async def DeleteSchedule(self, req: svc.DeleteScheduleRequest, deadline: float | None) -> svc.DeleteScheduleResponse:
        ns = self._charge(req.namespace)
        require_id(req.schedule_id, "schedule_id", self.config)
        await self.engine.delete_schedule(ns, req.schedule_id)
        return svc.DeleteScheduleResponse()

    async def ListSchedules(self, req: svc.ListSchedulesRequest, deadline: float | None) -> svc.ListSchedulesResponse:
        ns = self._charge(req.namespace)
        if not 0 <= req.maximum_page_size <= 1000:
            raise InvalidArgument(f"maximum_page_size: must be between 0 (default 100) and 1000, got {req.maximum_page_size}")
        try:
            after = req.next_page_token.decode()
        except UnicodeDecodeError:
            raise InvalidArgument("next_page_token: not a token this server returned") from None
        entries, last = await self.engine.list_schedules(ns, after, req.maximum_page_size or 100)
        return svc.ListSchedulesResponse(schedules=entries, next_page_token=last.encode())

    # ------------------------------------------------------------------ API keys (who may: auth._key_admin)
    async def CreateApiKey(self, req: svc.CreateApiKeyRequest, deadline: float | None) -> svc.CreateApiKeyResponse:
        return await self._key_admin.create(req, current_principal())

    async def ListApiKeys(self, req: svc.ListApiKeysRequest, deadline: float | None) -> svc.ListApiKeysResponse:
        return await self._key_admin.list(req, current_principal())

    async def RevokeApiKey(self, req: svc.RevokeApiKeyRequest, deadline: float | None) -> svc.RevokeApiKeyResponse:
        return await self._key_admin.revoke(req, current_principal())


def _check_size(limit: int, field: str, *messages: Message) -> None:
    from spindle.controlplane.errors import ResourceExhausted

    size = sum(m.ByteSize() for m in messages)
    if size > limit:
        raise ResourceExhausted(f"{field}: {size} bytes is over the payload limit of {limit} bytes "
                                "(store large values elsewhere and pass a reference)")


def _fill_search_attributes(info: svc.WorkflowExecutionInfo, raw: str) -> None:
    import json

    try:
        values = json.loads(raw) if raw else {}
    except ValueError:
        return
    for k, v in values.items():
        info.search_attributes.indexed_fields[k].metadata["encoding"] = b"json/plain"
        info.search_attributes.indexed_fields[k].data = json.dumps(v).encode()


RPC_NAMES = [m.name for m in svc.DESCRIPTOR.services_by_name["WorkflowService"].methods]
