"""Every RPC of ``spindle.v1.WorkflowService`` mapped to what it needs (a test fails when one is missing).

The servicer (``spindle.controlplane._grpc_service``) looks the rule up by RPC name and
the :class:`~spindle.controlplane.auth.Authorizer` applies it before the frontend sees
the request, so nothing is looked up (no workflow, no namespace) for a caller who may
not make the call: the answer never tells whether a workflow exists.

Scopes:

- ``NAMESPACE``: the request names its namespace; the caller needs ``permission`` on it.
- ``TASK_TOKEN``: worker answers carry only a task token; the token is verified first
  (INVALID_ARGUMENT when forged) and the caller needs ``permission`` on the namespace
  it names.
- ``SYSTEM_ADMIN``: ``system_admin`` only (creating namespaces).
- ``AUTHENTICATED``: any known principal; what it gets is narrowed by the handler
  (``ListNamespaces`` lists only the namespaces the caller holds a grant on; the API-key
  RPCs let a namespace admin manage only keys on namespaces it administers).
- ``PUBLIC``: answered without credentials (``GetSystemInfo``: a health and version
  check); credentials that are sent must still be valid, and an anonymous caller sees
  only the server version.

A workflow task's commands can act on other namespaces (signal or cancel an external
workflow, start a child there): the worker answering it needs ``writer`` on each of
them, as a client making the same call would (``Rule.acts_on``).

``audit`` marks the actions written to the ``spindle.audit`` log, one line per call,
allowed or not (``_audit.py``): admin actions, ending or repairing runs, schedule and
deployment-routing changes. The servicer audits every RPC whose rule says so (a new RPC is
audited by setting the flag and a ``target``); denials of any RPC are audited, aggregated.
"""

from __future__ import annotations

import enum

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from spindle.api import service_pb2 as svc

from ._roles import Permission


class Scope(enum.Enum):
    PUBLIC = "public"
    AUTHENTICATED = "authenticated"
    SYSTEM_ADMIN = "system_admin"
    NAMESPACE = "namespace"
    TASK_TOKEN = "task_token"


@dataclass(frozen=True)
class Rule:
    """What one RPC needs.

    Attributes:
        scope: see the module docstring.
        permission: for NAMESPACE and TASK_TOKEN scopes.
        namespace: the namespace name in the request (NAMESPACE scope).
        audit: an admin action (one ``spindle.audit`` line per call).
        target: what an audited call acts on, for the audit line (e.g. ``namespace/orders``).
        acts_on: other namespaces the request acts on (``writer`` is needed on each one
            that is not the call's own namespace): a workflow task's commands that signal,
            cancel or start a child in another namespace.
    """

    scope: Scope
    permission: Permission | None = None
    namespace: Callable[[Any], str] | None = None
    audit: bool = False
    target: Callable[[Any], str] | None = None
    acts_on: Callable[[Any], set[str]] | None = None

    def __post_init__(self) -> None:
        if self.audit and self.target is None:
            raise ValueError("an audited rule needs a target (what the audit line names)")


def _ns(field: str) -> Callable[[Any], str]:
    def get(req: Any) -> str:
        value = req
        for part in field.split("."):
            value = getattr(value, part)
        return str(value)

    get.__name__ = f"namespace_from_{field.replace('.', '_')}"
    return get


def _in_ns(permission: Permission, field: str = "namespace") -> Rule:
    return Rule(Scope.NAMESPACE, permission, _ns(field))


def _by_token(permission: Permission) -> Rule:
    return Rule(Scope.TASK_TOKEN, permission)


def _admin_of(field: str) -> Rule:
    get = _ns(field)
    return Rule(Scope.NAMESPACE, Permission.ADMIN, get, audit=True, target=lambda r: f"namespace/{get(r)}")


def _workflow(r: Any) -> str:
    return f"workflow/{r.namespace}/{r.workflow_execution.workflow_id}"


def _schedule(r: Any) -> str:
    return f"schedule/{r.namespace}/{r.schedule_id}"


def _deployment(r: Any) -> str:
    return f"deployment/{r.namespace}/{r.deployment_name}"


def _audited(permission: Permission, target: Callable[[Any], str]) -> Rule:
    """A NAMESPACE-scoped rule (``namespace`` field) whose calls are audited, naming ``target``."""
    return Rule(Scope.NAMESPACE, permission, _ns("namespace"), audit=True, target=target)


def command_namespaces(req: Any) -> set[str]:
    """The namespaces a RespondWorkflowTaskCompleted's commands name (signal/cancel external, child); "" = own."""
    out = set()
    for cmd in req.commands:
        for attrs in ("signal_external_workflow_execution_command_attributes",
                      "request_cancel_external_workflow_execution_command_attributes",
                      "start_child_workflow_execution_command_attributes"):
            if cmd.HasField(attrs):
                out.add(getattr(cmd, attrs).namespace)
    out.discard("")
    return out


READ, WORK, WRITE = Permission.READ, Permission.WORK, Permission.WRITE

POLICY: dict[str, Rule] = {
    # system and namespaces
    "GetSystemInfo": Rule(Scope.PUBLIC),
    "CreateNamespace": Rule(Scope.SYSTEM_ADMIN, audit=True, target=lambda r: f"namespace/{r.name}"),
    "DescribeNamespace": _in_ns(READ, "name"),
    "ListNamespaces": Rule(Scope.AUTHENTICATED),
    "UpdateNamespace": _admin_of("name"),
    "DeleteNamespace": _admin_of("name"),
    "AddSearchAttributes": _admin_of("namespace"),
    # clients: reading
    "DescribeWorkflowExecution": _in_ns(READ),
    "GetWorkflowExecutionHistory": _in_ns(READ),
    "ListWorkflowExecutions": _in_ns(READ),
    "CountWorkflowExecutions": _in_ns(READ),
    "QueryWorkflow": _in_ns(READ),
    # clients: writing
    "StartWorkflowExecution": _in_ns(WRITE),
    "SignalWithStartWorkflowExecution": _in_ns(WRITE, "start.namespace"),
    "SignalWorkflowExecution": _in_ns(WRITE),
    "UpdateWorkflowExecution": _in_ns(WRITE),
    # ending a run: audited (ids and reason; never the details payload)
    "RequestCancelWorkflowExecution": _audited(WRITE, _workflow),
    "TerminateWorkflowExecution": _audited(WRITE, _workflow),
    # a repair that ends a run and makes another: audited like an admin action
    "ResetWorkflowExecution": _audited(WRITE, _workflow),
    # schedules (docs/SECURITY.md: writer for changes, reader to look); changes (trigger, backfill, pause
    # included) are audited
    "CreateSchedule": _audited(WRITE, _schedule),
    "UpdateSchedule": _audited(WRITE, _schedule),
    "PatchSchedule": _audited(WRITE, _schedule),
    "DeleteSchedule": _audited(WRITE, _schedule),
    "DescribeSchedule": _in_ns(READ),
    "ListSchedules": _in_ns(READ),
    # worker deployments: reader to look; routing and overrides decide which code runs: the namespace admin's
    "DescribeWorkerDeployment": _in_ns(READ),
    "ListWorkerDeployments": _in_ns(READ),
    "SetWorkerDeploymentCurrentVersion": _audited(Permission.ADMIN, _deployment),
    "SetWorkerDeploymentRampingVersion": _audited(Permission.ADMIN, _deployment),
    "UpdateWorkflowExecutionOptions": _audited(Permission.ADMIN, _workflow),
    # erasure (issue 26): the namespace admin erases (audited: ids, query and reason, never data); readers look
    "DeleteWorkflowExecution": Rule(Scope.NAMESPACE, Permission.ADMIN, _ns("namespace"), audit=True,
                                    target=lambda r: f"workflow/{r.namespace}/{r.workflow_execution.workflow_id}"),
    "StartBatchOperation": Rule(Scope.NAMESPACE, Permission.ADMIN, _ns("namespace"), audit=True,
                                target=lambda r: f"batch/{r.namespace}/{r.job_id}"),
    "DescribeBatchOperation": _in_ns(READ),
    "ListBatchOperations": _in_ns(READ),
    # Nexus endpoints (issue 30; docs/NEXUS.md): the target namespace's admin creates, updates and deletes (the
    # registry checks admin of an endpoint's current target, which only it can look up); anyone authenticated looks
    "CreateNexusEndpoint": Rule(Scope.NAMESPACE, Permission.ADMIN, _ns("spec.target.worker.namespace"), audit=True,
                                target=lambda r: f"nexus_endpoint/{r.spec.name}"),
    "UpdateNexusEndpoint": Rule(Scope.NAMESPACE, Permission.ADMIN, _ns("spec.target.worker.namespace"), audit=True,
                                target=lambda r: f"nexus_endpoint/{r.id}"),
    "DeleteNexusEndpoint": Rule(Scope.AUTHENTICATED, audit=True, target=lambda r: f"nexus_endpoint/{r.id}"),
    "GetNexusEndpoint": Rule(Scope.AUTHENTICATED),
    "ListNexusEndpoints": Rule(Scope.AUTHENTICATED),
    "PollNexusTaskQueue": _in_ns(WORK),
    "RespondNexusTaskCompleted": _by_token(WORK),
    "RespondNexusTaskFailed": _by_token(WORK),
    # workers
    "PollWorkflowTaskQueue": _in_ns(WORK),
    "PollActivityTaskQueue": _in_ns(WORK),
    "RespondWorkflowTaskCompleted": Rule(Scope.TASK_TOKEN, Permission.WORK, acts_on=command_namespaces),
    "RespondWorkflowTaskFailed": _by_token(WORK),
    "RespondQueryTaskCompleted": _by_token(WORK),
    "RespondActivityTaskCompleted": _by_token(WORK),
    "RespondActivityTaskFailed": _by_token(WORK),
    "RespondActivityTaskCanceled": _by_token(WORK),
    "RecordActivityTaskHeartbeat": _by_token(WORK),
    # API keys (who may manage which key is decided by the handler: _key_admin.py)
    "CreateApiKey": Rule(Scope.AUTHENTICATED, audit=True, target=lambda r: f"api_key/{r.name}"),
    "ListApiKeys": Rule(Scope.AUTHENTICATED),
    "RevokeApiKey": Rule(Scope.AUTHENTICATED, audit=True, target=lambda r: f"api_key/{r.id}"),
}

#: Every RPC of the service, in proto order.
SERVICE_RPCS = tuple(m.name for m in svc.DESCRIPTOR.services_by_name["WorkflowService"].methods)


def rule_for(rpc: str) -> Rule:
    """The rule of ``rpc``.

    Raises:
        KeyError: the RPC has no rule (a new RPC must be added to ``POLICY``; until then it is refused).
    """
    return POLICY[rpc]


__all__ = ["POLICY", "Rule", "SERVICE_RPCS", "Scope", "command_namespaces", "rule_for"]
