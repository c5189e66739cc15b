"""The frontend's handlers of a worker's RPCs: the two long polls, the task answers and heartbeats.

Each handler takes ``(request, ns, deadline)`` as :class:`~.service.FrontendService`'s
pipeline calls it. A poll gets the namespace it names, looked up but not counted against
``rps_limit`` (polls are bounded by worker slots, answers by the tasks handed out). An
answer names no namespace (``ns`` is None): its task token does, and the pipeline has
already refused client-made blob references in it. The namespace id of an answer's token
is needed only when the answer has payloads to offload (their blobs are scoped to it);
the engine verifies the token in any case.
"""

from __future__ import annotations

import asyncio

from google.protobuf.message import Message

from spindle.api import service_pb2 as svc
from spindle.controlplane.config import ServerConfig
from spindle.controlplane.deployments import version_key
from spindle.controlplane.errors import InvalidArgument
from spindle.controlplane.history import HistoryEngine
from spindle.controlplane.history._tokens import BadTokenError
from spindle.controlplane.matching import KIND_ACTIVITY, KIND_WORKFLOW
from spindle.controlplane.namespaces import Namespace

from ._payload_intake import PayloadIntake
from ._validate import check_payloads, require_id, task_rate
from ._workflow_calls import check_size, transient_limit

#: Where a poll names its build (the field errors name).
_VERSION_FIELD = "deployment_options.version"

def poll_timeout(config: ServerConfig, deadline: float | None) -> float:
    """How long a long poll may wait: the server's ``long_poll_timeout``, ending 0.2 s before the caller's deadline."""
    t = config.long_poll_timeout
    if deadline is not None:
        t = min(t, deadline - asyncio.get_running_loop().time() - 0.2)
    return max(0.0, t)


class WorkerCalls:
    """Polls for workflow and activity tasks, and the answers to them."""

    def __init__(self, config: ServerConfig, engine: HistoryEngine, payloads: PayloadIntake) -> None:
        self.config = config
        self.engine = engine
        self.payloads = payloads
        self.offloader = payloads.offloader

    def _offload_namespace(self, req: Message) -> str:
        """The namespace id the task token of ``req`` names when the answer has payloads to offload; ``""`` otherwise
        (saves verifying the token twice: the engine does).

        Raises:
            InvalidArgument: a token this server did not sign (when it is needed).
        """
        offloader = self.offloader
        if not offloader.enabled or req.ByteSize() <= offloader.threshold:
            return ""
        try:
            return self.engine.tokens.verify(req.task_token).namespace_id
        except BadTokenError as e:
            raise InvalidArgument(str(e)) from e

    # ------------------------------------------------------------------ polls
    async def poll_workflow_task(self, req: svc.PollWorkflowTaskQueueRequest, ns: Namespace, deadline: float | None
                                 ) -> svc.PollWorkflowTaskQueueResponse:
        require_id(req.task_queue, "task_queue", self.config)
        self.engine.note_workflow_poller(ns.id, req.identity or "anonymous")
        deployment, build = await self.engine.deployments.poller(ns.id, req.deployment_options, _VERSION_FIELD)
        version = version_key(deployment, build) if deployment else ""
        loop = asyncio.get_running_loop()
        end = loop.time() + poll_timeout(self.config, deadline)
        while True:
            remaining = end - loop.time()
            if remaining <= 0:
                return svc.PollWorkflowTaskQueueResponse()
            ref = await self.engine.matching.poll(ns.id, req.task_queue, KIND_WORKFLOW, remaining, sticky=req.sticky,
                                                  identity=req.identity, deployment=deployment, build=build)
            if ref is None:
                return svc.PollWorkflowTaskQueueResponse()
            resp = await self.engine.start_polled(ref, req.task_queue, KIND_WORKFLOW, req.identity, sticky=req.sticky,
                                                  version=version)
            if resp is not None:
                return await self.offloader.expand(resp, ns.id)

    async def poll_activity_task(self, req: svc.PollActivityTaskQueueRequest, ns: Namespace, deadline: float | None
                                 ) -> svc.PollActivityTaskQueueResponse:
        require_id(req.task_queue, "task_queue", self.config)
        rate = task_rate(req.max_tasks_per_second, self.config)  # clamped to the server's floor and ceiling
        deployment, build = await self.engine.deployments.poller(ns.id, req.deployment_options, _VERSION_FIELD)
        loop = asyncio.get_running_loop()
        end = loop.time() + poll_timeout(self.config, deadline)
        while True:
            remaining = end - loop.time()
            if remaining <= 0:
                return svc.PollActivityTaskQueueResponse()
            ref = await self.engine.matching.poll(ns.id, req.task_queue, KIND_ACTIVITY, remaining, rate=rate,
                                                  identity=req.identity, deployment=deployment, build=build)
            if ref is None:
                return svc.PollActivityTaskQueueResponse()
            resp = await self.engine.start_polled(ref, req.task_queue, KIND_ACTIVITY, req.identity)
            if resp is not None:
                return await self.offloader.expand(resp, ns.id)

    # ------------------------------------------------------------------ answers (stored payloads offloaded)
    async def workflow_task_completed(self, req: svc.RespondWorkflowTaskCompletedRequest, ns: None,
                                      deadline: float | None) -> svc.RespondWorkflowTaskCompletedResponse:
        ns_id = self._offload_namespace(req)
        prepared = await self.payloads.prepare(req, "commands", ns_id, refs_checked=True)
        req = prepared.request
        check_payloads(self.config, "commands", *req.commands)
        async with self.payloads.offloaded(prepared):
            resp = await self.engine.respond_workflow_task_completed(req)
        return await self.offloader.expand(resp, ns_id or None)

    async def workflow_task_failed(self, req: svc.RespondWorkflowTaskFailedRequest, ns: None,
                                   deadline: float | None) -> svc.RespondWorkflowTaskFailedResponse:
        ns_id = self._offload_namespace(req)
        prepared = await self.payloads.prepare(req, "failure", ns_id, refs_checked=True)
        req = prepared.request
        check_payloads(self.config, "failure", req.failure)
        async with self.payloads.offloaded(prepared):
            await self.engine.respond_workflow_task_failed(req)
        return svc.RespondWorkflowTaskFailedResponse()

    async def activity_task_completed(self, req: svc.RespondActivityTaskCompletedRequest, ns: None,
                                      deadline: float | None) -> svc.RespondActivityTaskCompletedResponse:
        ns_id = self._offload_namespace(req)
        prepared = await self.payloads.prepare(req, "result", ns_id, refs_checked=True)
        req = prepared.request
        check_payloads(self.config, "result", req.result)
        async with self.payloads.offloaded(prepared):
            resp = await self.engine.respond_activity_completed(req)
        return await self.offloader.expand(resp, ns_id or None)

    async def activity_task_failed(self, req: svc.RespondActivityTaskFailedRequest, ns: None,
                                   deadline: float | None) -> svc.RespondActivityTaskFailedResponse:
        ns_id = self._offload_namespace(req)
        prepared = await self.payloads.prepare(req, "failure", ns_id, refs_checked=True)
        req = prepared.request
        check_payloads(self.config, "failure", req.failure, req.last_heartbeat_details)
        async with self.payloads.offloaded(prepared):
            resp = await self.engine.respond_activity_failed(req)
        return await self.offloader.expand(resp, ns_id or None)

    async def activity_task_canceled(self, req: svc.RespondActivityTaskCanceledRequest, ns: None,
                                     deadline: float | None) -> svc.RespondActivityTaskCanceledResponse:
        ns_id = self._offload_namespace(req)
        prepared = await self.payloads.prepare(req, "details", ns_id, refs_checked=True)
        req = prepared.request
        check_payloads(self.config, "details", req.details)
        async with self.payloads.offloaded(prepared):
            resp = await self.engine.respond_activity_canceled(req)
        return await self.offloader.expand(resp, ns_id or None)

    # ------------------------------------------------------------------ answers kept inline
    async def query_task_completed(self, req: svc.RespondQueryTaskCompletedRequest, ns: None,
                                   deadline: float | None) -> svc.RespondQueryTaskCompletedResponse:
        # a query's answer is never stored: it goes inline to the waiting QueryWorkflow
        ns_id = self._offload_namespace(req)
        req = (await self.payloads.prepare(req, "query_result", ns_id, offload=False, refs_checked=True)).request
        check_size(transient_limit(self.config, self.payloads), "query_result", req.query_result)
        self.engine.respond_query(req)
        return svc.RespondQueryTaskCompletedResponse()

    async def activity_heartbeat(self, req: svc.RecordActivityTaskHeartbeatRequest, ns: None,
                                 deadline: float | None) -> svc.RecordActivityTaskHeartbeatResponse:
        # Heartbeat details stay inline (max_payload_bytes): they live in memory until the attempt
        # ends, so an offloaded blob could not be told apart from an orphan; each heartbeat would
        # otherwise leave one behind.
        ns_id = self._offload_namespace(req)
        req = (await self.payloads.prepare(req, "details", ns_id, offload=False, refs_checked=True)).request
        check_payloads(self.config, "details", req.details)
        return await self.engine.record_heartbeat(req)


__all__ = ["WorkerCalls", "poll_timeout"]
