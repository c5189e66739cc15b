"""The frontend's handlers of a client's RPCs about one workflow: start, signal, query, update, cancel, terminate,
reset, describe, history.

Each handler takes ``(request, ns, deadline)`` as :class:`~.service.FrontendService`'s
pipeline calls it: the request already passed the field rules and ``ns`` is the namespace
it names, already counted against its ``rps_limit``. Payloads pass the intake
(``_payload_intake``) before anything is written; responses have blob references
expanded, so clients see the original payloads.
"""

from __future__ import annotations

import asyncio

from google.protobuf.message import Message

from spindle.api import service_pb2 as svc
from spindle.controlplane.config import ServerConfig
from spindle.controlplane.errors import InvalidArgument, NotFound, ResourceExhausted
from spindle.controlplane.history import HistoryEngine
from spindle.controlplane.namespaces import Namespace, NamespaceRegistry

from ._payload_intake import PayloadIntake
from ._validate import check_payloads, check_start_request, require_id


def check_size(limit: int, field: str, *messages: Message) -> None:
    """Payloads the server passes on without storing (query arguments and answers): at most ``limit`` bytes."""
    size = sum(m.ByteSize() for m in messages)
    if size > limit:
        raise ResourceExhausted(f"{field}: {size} bytes is over the payload limit of {limit} bytes "
                                "(store large values elsewhere and pass a reference)")


def transient_limit(config: ServerConfig, payloads: PayloadIntake) -> int:
    """Largest payloads of a request the server passes on without storing (query arguments and answers)."""
    return config.max_offloaded_payload_bytes if payloads.offloader.enabled else config.max_payload_bytes


class WorkflowCalls:
    """A client's calls about one workflow (by namespace and workflow id)."""

    def __init__(self, config: ServerConfig, namespaces: NamespaceRegistry, engine: HistoryEngine,
                 payloads: PayloadIntake) -> None:
        self.config = config
        self.namespaces = namespaces
        self.engine = engine
        self.payloads = payloads
        self.offloader = payloads.offloader

    def _check_start(self, req: svc.StartWorkflowExecutionRequest) -> None:
        check_start_request(req, self.namespaces.get(req.namespace), self.config)

    async def start(self, req: svc.StartWorkflowExecutionRequest, ns: Namespace, deadline: float | None
                    ) -> svc.StartWorkflowExecutionResponse:
        prepared = await self.payloads.prepare(req, "input", ns.id)  # nothing is written before every check passed
        req = prepared.request
        self._check_start(req)
        async with self.engine.admit_start(ns.id), self.payloads.offloaded(prepared):
            run_id, started = await self.engine.start_workflow(ns, req)
        return svc.StartWorkflowExecutionResponse(run_id=run_id, started=started)

    async def signal_with_start(self, req: svc.SignalWithStartWorkflowExecutionRequest, ns: Namespace,
                                deadline: float | None) -> svc.SignalWithStartWorkflowExecutionResponse:
        require_id(req.signal_name, "signal_name", self.config)
        prepared = await self.payloads.prepare(req, "start.input", ns.id)
        req = prepared.request
        self._check_start(req.start)
        check_payloads(self.config, "signal_input", req.signal_input)
        async with self.payloads.offloaded(prepared):
            run_id, started = await self.engine.start_workflow(
                ns, req.start, signal=(req.signal_name, req.signal_input, req.signal_header))
        return svc.SignalWithStartWorkflowExecutionResponse(run_id=run_id, started=started)

    async def signal(self, req: svc.SignalWorkflowExecutionRequest, ns: Namespace, deadline: float | None
                     ) -> svc.SignalWorkflowExecutionResponse:
        require_id(req.workflow_execution.workflow_id, "workflow_execution.workflow_id", self.config)
        require_id(req.signal_name, "signal_name", self.config)
        prepared = await self.payloads.prepare(req, "input", ns.id)
        req = prepared.request
        check_payloads(self.config, "input", req.input, req.header)
        async with self.payloads.offloaded(prepared):
            await self.engine.signal(ns, req.workflow_execution, req.signal_name, req.input, req.header, req.identity,
                                     req.request_id)
        return svc.SignalWorkflowExecutionResponse()

    async def query(self, req: svc.QueryWorkflowRequest, ns: Namespace, deadline: float | None
                    ) -> svc.QueryWorkflowResponse:
        require_id(req.execution.workflow_id, "execution.workflow_id", self.config)
        require_id(req.query.query_type, "query.query_type", self.config)
        # query arguments are never stored: they travel inline (up to the large-payload limit)
        req = (await self.payloads.prepare(req, "query.query_args", ns.id, offload=False)).request
        check_size(transient_limit(self.config, self.payloads), "query.query_args", req.query.query_args)
        return await self.offloader.expand(await self.engine.query(ns, req), ns.id)

    async def update(self, req: svc.UpdateWorkflowExecutionRequest, ns: Namespace, deadline: float | None
                     ) -> svc.UpdateWorkflowExecutionResponse:
        require_id(req.workflow_execution.workflow_id, "workflow_execution.workflow_id", self.config)
        require_id(req.request.name, "request.name", self.config)
        prepared = await self.payloads.prepare(req, "request.input", ns.id)
        req = prepared.request
        check_payloads(self.config, "request.input", req.request.input)
        async with self.payloads.offloaded(prepared):
            resp = await self.engine.update(ns, req)
        return await self.offloader.expand(resp, ns.id)

    async def request_cancel(self, req: svc.RequestCancelWorkflowExecutionRequest, ns: Namespace,
                             deadline: float | None) -> svc.RequestCancelWorkflowExecutionResponse:
        require_id(req.workflow_execution.workflow_id, "workflow_execution.workflow_id", self.config)
        await self.engine.request_cancel(ns, req.workflow_execution, req.identity, req.reason)
        return svc.RequestCancelWorkflowExecutionResponse()

    async def terminate(self, req: svc.TerminateWorkflowExecutionRequest, ns: Namespace, deadline: float | None
                        ) -> svc.TerminateWorkflowExecutionResponse:
        require_id(req.workflow_execution.workflow_id, "workflow_execution.workflow_id", self.config)
        prepared = await self.payloads.prepare(req, "details", ns.id)
        req = prepared.request
        check_payloads(self.config, "details", req.details)
        async with self.payloads.offloaded(prepared):
            await self.engine.terminate(ns, req.workflow_execution, req.reason, req.details, req.identity)
        return svc.TerminateWorkflowExecutionResponse()

    async def reset(self, req: svc.ResetWorkflowExecutionRequest, ns: Namespace, deadline: float | None
                    ) -> svc.ResetWorkflowExecutionResponse:
        require_id(req.workflow_execution.workflow_id, "workflow_execution.workflow_id", self.config)
        if req.workflow_task_finish_event_id <= 0:
            raise InvalidArgument("workflow_task_finish_event_id: required: the id of a WorkflowTaskCompleted event "
                                  "of the run to reset to")
        return svc.ResetWorkflowExecutionResponse(run_id=await self.engine.reset(ns, req))

    async def describe(self, req: svc.DescribeWorkflowExecutionRequest, ns: Namespace, deadline: float | None
                       ) -> svc.DescribeWorkflowExecutionResponse:
        require_id(req.execution.workflow_id, "execution.workflow_id", self.config)
        try:
            resp = await self.engine.describe(ns, req.execution)
        except NotFound:
            resp = await self.engine.archival.describe(ns, req.execution)  # retention deleted it: read the archive
        return await self.offloader.expand(resp, ns.id)

    async def history(self, req: svc.GetWorkflowExecutionHistoryRequest, ns: Namespace, deadline: float | None
                      ) -> svc.GetWorkflowExecutionHistoryResponse:
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
        return await self.offloader.expand(resp, ns.id)


__all__ = ["WorkflowCalls", "check_size", "transient_limit"]
