"""The frontend's handlers of the worker-deployment RPCs (worker build versioning, issue 25).

Describe and list read a namespace's deployments (``reader``); setting the current or ramping
version and a run's versioning override are the namespace admin's (``auth._rpc_policy``).
A version's drainage is counted from visibility: the open executions pinned to it.
"""

from __future__ import annotations

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.controlplane.deployments import DeploymentDoc, check_deployment_name, version_key
from spindle.controlplane.errors import InvalidArgument
from spindle.controlplane.history import HistoryEngine
from spindle.controlplane.namespaces import Namespace

from ._visibility_calls import VisibilityCalls

_STATUS = svc.WorkerDeploymentVersionStatus
_DRAIN = svc.VersionDrainageStatus


def _token(token: bytes) -> int | None:
    if not token:
        return None
    try:
        return int(token.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        raise InvalidArgument("conflict_token: not a token this server issued (describe the deployment again)") \
            from None


def _version(name: str, build: str) -> pb.WorkerDeploymentVersion:
    return pb.WorkerDeploymentVersion(deployment_name=name, build_id=build)


def routing_config(doc: DeploymentDoc) -> svc.RoutingConfig:
    rc = svc.RoutingConfig(ramping_version_percentage=doc.ramp_pct,
                           current_version_changed_time_ms=doc.current_changed_ms,
                           ramping_version_changed_time_ms=doc.ramping_changed_ms)
    if doc.current:
        rc.current_deployment_version.CopyFrom(_version(doc.name, doc.current))
    if doc.ramping:
        rc.ramping_deployment_version.CopyFrom(_version(doc.name, doc.ramping))
    return rc


class DeploymentCalls:
    """Describe, list and route a namespace's worker deployments; set a run's versioning override."""

    def __init__(self, engine: HistoryEngine, visibility: VisibilityCalls) -> None:
        self.engine = engine
        self.visibility = visibility

    async def _open_pinned(self, ns: Namespace, key: str) -> int:
        quoted = key.replace("'", "''")  # a build id is free text: quoted as the filter language quotes
        q = (f"ExecutionStatus = 'Running' AND TemporalWorkerDeploymentVersion = '{quoted}' "
             "AND TemporalWorkflowVersioningBehavior = 'Pinned'")
        resp = await self.visibility.count(svc.CountWorkflowExecutionsRequest(namespace=ns.name, query=q), ns, None)
        return resp.count

    async def describe(self, req: svc.DescribeWorkerDeploymentRequest, ns: Namespace, deadline: float | None
                       ) -> svc.DescribeWorkerDeploymentResponse:
        check_deployment_name(req.deployment_name, "deployment_name")
        doc, version = await self.engine.deployments.get(ns.id, req.deployment_name)
        info = svc.WorkerDeploymentInfo(name=doc.name, create_time_ms=doc.created_ms, routing_config=routing_config(doc),
                                        last_modifier_identity=doc.modifier)
        for build, v in sorted(doc.versions.items(), key=lambda kv: kv[1].created_ms):
            s = svc.WorkerDeploymentVersionSummary(deployment_version=_version(doc.name, build),
                                                   create_time_ms=v.created_ms, last_poller_time_ms=v.last_poll_ms,
                                                   task_queues=sorted({q.partition(":")[2] for q in v.task_queues}))
            if build == doc.current:
                s.status = _STATUS.WORKER_DEPLOYMENT_VERSION_STATUS_CURRENT
            elif build == doc.ramping:
                s.status = _STATUS.WORKER_DEPLOYMENT_VERSION_STATUS_RAMPING
            else:
                s.open_pinned_executions = await self._open_pinned(ns, version_key(doc.name, build))
                if s.open_pinned_executions:
                    s.status, s.drainage_status = (_STATUS.WORKER_DEPLOYMENT_VERSION_STATUS_DRAINING,
                                                   _DRAIN.VERSION_DRAINAGE_STATUS_DRAINING)
                elif v.was_active:
                    s.status, s.drainage_status = (_STATUS.WORKER_DEPLOYMENT_VERSION_STATUS_DRAINED,
                                                   _DRAIN.VERSION_DRAINAGE_STATUS_DRAINED)
                else:
                    s.status = _STATUS.WORKER_DEPLOYMENT_VERSION_STATUS_INACTIVE
            info.version_summaries.append(s)
        return svc.DescribeWorkerDeploymentResponse(conflict_token=str(version).encode(), worker_deployment_info=info)

    async def list(self, req: svc.ListWorkerDeploymentsRequest, ns: Namespace, deadline: float | None
                   ) -> svc.ListWorkerDeploymentsResponse:
        size = req.page_size or 100
        after = req.next_page_token.decode("utf-8", "replace") if req.next_page_token else ""
        docs = await self.engine.deployments.list(ns.id, after, size)
        resp = svc.ListWorkerDeploymentsResponse(worker_deployments=[
            svc.WorkerDeploymentSummary(name=d.name, create_time_ms=d.created_ms, routing_config=routing_config(d))
            for d, _ in docs])
        if len(docs) == size:
            resp.next_page_token = docs[-1][0].name.encode()
        return resp

    async def set_current(self, req: svc.SetWorkerDeploymentCurrentVersionRequest, ns: Namespace,
                          deadline: float | None) -> svc.SetWorkerDeploymentCurrentVersionResponse:
        check_deployment_name(req.deployment_name, "deployment_name")
        version, prev = await self.engine.deployments.set_current(
            ns.id, req.deployment_name, req.build_id, identity=req.identity, expected=_token(req.conflict_token),
            allow_no_pollers=req.allow_no_pollers)
        resp = svc.SetWorkerDeploymentCurrentVersionResponse(conflict_token=str(version).encode())
        if prev:
            resp.previous_deployment_version.CopyFrom(_version(req.deployment_name, prev))
        return resp

    async def set_ramping(self, req: svc.SetWorkerDeploymentRampingVersionRequest, ns: Namespace,
                          deadline: float | None) -> svc.SetWorkerDeploymentRampingVersionResponse:
        check_deployment_name(req.deployment_name, "deployment_name")
        if not req.build_id and req.percentage:
            raise InvalidArgument("percentage: must be 0 when build_id is empty (which stops the ramp)")
        version, (prev, prev_pct) = await self.engine.deployments.set_ramping(
            ns.id, req.deployment_name, req.build_id, req.percentage, identity=req.identity,
            expected=_token(req.conflict_token), allow_no_pollers=req.allow_no_pollers)
        resp = svc.SetWorkerDeploymentRampingVersionResponse(conflict_token=str(version).encode(),
                                                             previous_percentage=prev_pct)
        if prev:
            resp.previous_deployment_version.CopyFrom(_version(req.deployment_name, prev))
        return resp

    async def update_options(self, req: svc.UpdateWorkflowExecutionOptionsRequest, ns: Namespace,
                             deadline: float | None) -> svc.UpdateWorkflowExecutionOptionsResponse:
        return await self.engine.update_options(ns, req)


__all__ = ["DeploymentCalls", "routing_config"]
