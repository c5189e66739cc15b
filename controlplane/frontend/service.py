"""The frontend: every RPC of ``spindle.v1.WorkflowService`` through one pipeline, then its handler.

``FrontendService`` has one method per RPC, named after it, taking the request and a
deadline (event-loop time, or None) and raising ``ServiceError``s; the gRPC servicer
(``spindle.controlplane._grpc_service``, which authenticates and authorizes first), the
embedded stub and a cluster member's forwarded calls all call these methods. Each is
made from one row of :meth:`FrontendService.rpcs` by :func:`pipeline`, which runs the
same steps for every RPC:

1. the request's fields against their rules (``_validate.check_request``), so nothing is
   looked up, offloaded or written for a refused request;
2. for RPCs that may carry client-made blob references which nothing else checks first
   (worker answers, schedule writes): those refused, naming the field;
3. when the RPC's row names the request field that names its namespace: the namespace
   looked up (NotFound / InvalidArgument naming that field) and, for a client's calls,
   counted against its ``rps_limit`` (ResourceExhausted with a retry delay);
4. the handler, ``handler(request, namespace or None, deadline)``.

Adding an RPC: a row in :meth:`FrontendService.rpcs`, a handler in the module of its kind
(``_namespace_calls``, ``_workflow_calls``, ``_visibility_calls``, ``_worker_calls``,
``_schedule_calls``, ``_deployment_calls``, ``_erasure_calls``), and its access rule in ``spindle.controlplane.auth._rpc_policy.POLICY``
(the servicer refuses to start without one).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from google.protobuf.message import Message

from spindle.controlplane._field_rules import check_fields
from spindle.controlplane.auth import ApiKeyAdmin, ApiKeys
from spindle.controlplane.config import ServerConfig
from spindle.controlplane.erasure import ErasureJobs
from spindle.controlplane.history import HistoryEngine, token_clock
from spindle.controlplane.namespaces import NamespaceRegistry
from spindle.controlplane.nexus import NexusEndpointRegistry
from spindle.controlplane.store import Store

from ._deployment_calls import DeploymentCalls
from ._erasure_calls import ErasureCalls
from ._namespace_calls import VERSION, NamespaceCalls
from ._nexus_calls import NexusCalls
from ._payload_intake import PayloadIntake, refuse_blob_refs
from ._rate_limit import NamespaceRateLimiter
from ._schedule_calls import ScheduleCalls
from ._validate import HISTORY_CHECKED, RPC_NAMES
from ._visibility_calls import VisibilityCalls
from ._worker_calls import WorkerCalls, poll_timeout
from ._workflow_calls import WorkflowCalls

#: A handler: ``(request, namespace or None, deadline) -> response``.
Handler = Callable[[Any, Any, "float | None"], Awaitable[Message]]
#: A frontend RPC method: ``(request, deadline) -> response``.
Method = Callable[[Any, "float | None"], Awaitable[Message]]

@dataclass(frozen=True, slots=True)
class Rpc:
    """One row of the frontend's table: how the pipeline treats the RPC before its handler runs.

    Attributes:
        handler: called with ``(request, namespace or None, deadline)``.
        namespace: the request field (a dotted path) naming the call's namespace, which the
            pipeline looks up and passes to the handler; None: the handler needs none, or finds it.
        counted: the call counts against the namespace's ``rps_limit``.
        refs_first: client-made blob references are refused before anything else.
    """

    handler: Handler
    namespace: str | None = None
    counted: bool = False
    refs_first: bool = False


def client_call(handler: Handler, namespace: str = "namespace", *, refs_first: bool = False) -> Rpc:
    """A client's call about workflows or schedules: its namespace looked up and counted against ``rps_limit``.

    Counted first thing, so a throttled call does nothing. Not counted: worker polls and
    answers (bounded by worker slots and task-queue dispatch rates; throttling them would
    hold back running executions and waste work already handed out), namespace
    administration (an operator must be able to raise a flooded namespace's limit) and
    system info.
    """
    return Rpc(handler, namespace, counted=True, refs_first=refs_first)


def in_namespace(handler: Handler, namespace: str = "namespace") -> Rpc:
    """A call whose namespace is looked up but not counted (worker polls, namespace administration)."""
    return Rpc(handler, namespace)


def worker_answer(handler: Handler) -> Rpc:
    """A worker's answer to a task: its task token names the namespace; blob references are refused first."""
    return Rpc(handler, refs_first=True)


def pipeline(rpc: str, row: Rpc, config: ServerConfig, namespaces: NamespaceRegistry,
             rate_limiter: NamespaceRateLimiter) -> Method:
    """The frontend method of ``rpc``: the steps of the module docstring, then ``row.handler`` (hot path)."""
    handler, refs_first, counted = row.handler, row.refs_first, row.counted
    skip = HISTORY_CHECKED.get(rpc, frozenset())
    where = attrgetter(row.namespace) if row.namespace else None
    label = row.namespace.rpartition(".")[2] if row.namespace else ""  # "start.namespace" is reported as "namespace"

    async def method(req: Any, deadline: float | None) -> Message:
        check_fields(req, "", config.max_id_length, skip=skip)
        if refs_first:
            refuse_blob_refs(req)
        ns = None
        if where is not None:
            ns = namespaces.get(where(req), label)
            if counted:
                rate_limiter.check(ns)
        return await handler(req, ns, deadline)

    method.__name__ = method.__qualname__ = rpc
    return method


class FrontendService:
    """The frontend of one control plane: the table of RPCs (:meth:`rpcs`) and, per RPC, its pipeline method."""

    def __init__(self, store: Store, config: ServerConfig, namespaces: NamespaceRegistry, engine: HistoryEngine,
                 api_keys: ApiKeys | None = None) -> None:
        self.store = store
        self.config = config
        self.namespaces = namespaces
        self.engine = engine
        #: The API keys (the authorizer of the gRPC servicer shares them: a revocation here is seen there at once).
        self.api_keys = api_keys or ApiKeys(store)
        #: Per-namespace request rate limits (``rps_limit``) of this process.
        self.rate_limiter = NamespaceRateLimiter(token_clock(engine.clock))
        engine.context.start_tokens = self.rate_limiter  # schedule actions and child starts take the same tokens
        #: Client-made blob references refused, failure chains capped, large payloads offloaded and collected.
        self.payloads = PayloadIntake(engine.archival.payloads, store)
        key_admin = ApiKeyAdmin(self.api_keys, namespaces, max_id_length=config.max_id_length)
        self._namespace_calls = NamespaceCalls(store, config, namespaces, engine, self.payloads, self.rate_limiter,
                                               key_admin)
        self._workflow_calls = WorkflowCalls(config, namespaces, engine, self.payloads)
        self._visibility_calls = VisibilityCalls(store)
        self._worker_calls = WorkerCalls(config, engine, self.payloads)
        self._schedule_calls = ScheduleCalls(config, engine)
        self._deployment_calls = DeploymentCalls(engine, self._visibility_calls)
        #: Erasure jobs (issue 26): the runner (``erasure.ErasureRunner``) the server starts runs them.
        self.erasure_jobs = ErasureJobs(store, engine.clock)
        self._erasure_calls = ErasureCalls(config, engine, self.erasure_jobs)
        #: The Nexus endpoint registry (issue 30): history resolves a ScheduleNexusOperation's endpoint with it.
        self.nexus_endpoints = NexusEndpointRegistry(store, namespaces, engine.clock, config.max_id_length)
        self._nexus_calls = NexusCalls(config, self.nexus_endpoints)
        table = self.rpcs()
        missing = set(RPC_NAMES) ^ set(table)
        if missing:
            raise RuntimeError(f"the frontend's table and WorkflowService differ in: {', '.join(sorted(missing))}")
        for name, row in table.items():
            setattr(self, name, pipeline(name, row, config, namespaces, self.rate_limiter))

    def rpcs(self) -> dict[str, Rpc]:
        """Every RPC of WorkflowService: how the pipeline treats it, and its handler."""
        system, wf, vis = self._namespace_calls, self._workflow_calls, self._visibility_calls
        work, sched, dep = self._worker_calls, self._schedule_calls, self._deployment_calls
        erase, nexus = self._erasure_calls, self._nexus_calls
        return {
            # system, namespaces, API keys (who may manage which key: auth._key_admin)
            "GetSystemInfo": Rpc(system.system_info),
            "CreateNamespace": Rpc(system.create),
            "DescribeNamespace": in_namespace(system.describe, "name"),
            "ListNamespaces": Rpc(system.list),
            "UpdateNamespace": Rpc(system.update),
            "DeleteNamespace": in_namespace(system.delete, "name"),
            "AddSearchAttributes": Rpc(system.add_search_attributes),
            "CreateApiKey": Rpc(system.create_api_key),
            "ListApiKeys": Rpc(system.list_api_keys),
            "RevokeApiKey": Rpc(system.revoke_api_key),
            # a client's calls about one workflow
            "StartWorkflowExecution": client_call(wf.start),
            "SignalWithStartWorkflowExecution": client_call(wf.signal_with_start, "start.namespace"),
            "SignalWorkflowExecution": client_call(wf.signal),
            "QueryWorkflow": client_call(wf.query),
            "UpdateWorkflowExecution": client_call(wf.update),
            "RequestCancelWorkflowExecution": client_call(wf.request_cancel),
            "TerminateWorkflowExecution": client_call(wf.terminate),
            "ResetWorkflowExecution": client_call(wf.reset),
            "DescribeWorkflowExecution": client_call(wf.describe),
            "GetWorkflowExecutionHistory": client_call(wf.history),
            # visibility
            "ListWorkflowExecutions": client_call(vis.list),
            "CountWorkflowExecutions": client_call(vis.count),
            # workers
            "PollWorkflowTaskQueue": in_namespace(work.poll_workflow_task),
            "PollActivityTaskQueue": in_namespace(work.poll_activity_task),
            "RespondWorkflowTaskCompleted": worker_answer(work.workflow_task_completed),
            "RespondWorkflowTaskFailed": worker_answer(work.workflow_task_failed),
            "RespondQueryTaskCompleted": worker_answer(work.query_task_completed),
            "RespondActivityTaskCompleted": worker_answer(work.activity_task_completed),
            "RespondActivityTaskFailed": worker_answer(work.activity_task_failed),
            "RespondActivityTaskCanceled": worker_answer(work.activity_task_canceled),
            "RecordActivityTaskHeartbeat": worker_answer(work.activity_heartbeat),
            # schedules (issue 17)
            "CreateSchedule": client_call(sched.create, refs_first=True),
            "DescribeSchedule": client_call(sched.describe),
            "UpdateSchedule": client_call(sched.update, refs_first=True),
            "PatchSchedule": client_call(sched.patch),
            "DeleteSchedule": client_call(sched.delete),
            "ListSchedules": client_call(sched.list),
            # worker deployments (issue 25)
            "DescribeWorkerDeployment": client_call(dep.describe),
            "ListWorkerDeployments": client_call(dep.list),
            "SetWorkerDeploymentCurrentVersion": client_call(dep.set_current),
            "SetWorkerDeploymentRampingVersion": client_call(dep.set_ramping),
            "UpdateWorkflowExecutionOptions": client_call(dep.update_options),
            # erasure (issue 26)
            "DeleteWorkflowExecution": client_call(erase.delete),
            "StartBatchOperation": client_call(erase.start_batch),
            "DescribeBatchOperation": client_call(erase.describe_batch),
            "ListBatchOperations": client_call(erase.list_batches),
            # Nexus (issue 30): endpoint registry (who may: auth._rpc_policy) and the handler's tasks
            "CreateNexusEndpoint": Rpc(nexus.create_endpoint, refs_first=True),
            "GetNexusEndpoint": Rpc(nexus.get_endpoint),
            "ListNexusEndpoints": Rpc(nexus.list_endpoints),
            "UpdateNexusEndpoint": Rpc(nexus.update_endpoint, refs_first=True),
            "DeleteNexusEndpoint": Rpc(nexus.delete_endpoint),
            "PollNexusTaskQueue": in_namespace(nexus.poll_task),
            "RespondNexusTaskCompleted": worker_answer(nexus.task_completed),
            "RespondNexusTaskFailed": worker_answer(nexus.task_failed),
        }

    def _poll_timeout(self, deadline: float | None) -> float:
        """How long a long poll may wait (the cluster frontend's polls use it too)."""
        return poll_timeout(self.config, deadline)


__all__ = ["RPC_NAMES", "VERSION", "FrontendService", "Rpc", "client_call", "in_namespace", "pipeline",
           "worker_answer"]
