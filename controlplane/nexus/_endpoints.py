"""The Nexus endpoint registry (issue 30; docs/NEXUS.md): named endpoints, each routing operations to a task
queue of a namespace of this server, and the namespaces allowed to call it.

Temporal's model: an endpoint has an id (server-made), a version (bumped by every write; an update or a
delete must name the current one) and a spec {name, description, target.worker{namespace, task_queue}}.
Spindle adds ``allowed_caller_namespaces``: the namespaces whose workflows may call the endpoint besides the
target namespace itself (empty = only the target namespace).

Who may (``auth._rpc_policy`` plus the checks here): creating needs ``admin`` on the target namespace;
updating needs ``admin`` on the current and the new target; deleting needs ``admin`` on the target;
``system_admin`` may do all; reading needs any valid credentials.
"""

from __future__ import annotations

import uuid

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.controlplane._resource_rules import (
    NEXUS_ENDPOINT_DESCRIPTION_MAX_BYTES,
    NEXUS_ENDPOINT_MAX_ALLOWED_CALLERS,
    NEXUS_ENDPOINT_NAME_RE,
)
from spindle.controlplane.auth import Permission, Principal, require_permission
from spindle.controlplane.clock import Clock
from spindle.controlplane.errors import AlreadyExists, FailedPrecondition, InvalidArgument, NotFound
from spindle.controlplane.namespaces import NamespaceRegistry
from spindle.controlplane.store import ConditionFailedError, Store
from spindle.controlplane.store._interface import NexusEndpointRow

#: Most endpoints one ListNexusEndpoints page holds (and the default page size).
MAX_PAGE_SIZE = 1000


def check_spec(spec: pb.EndpointSpec, namespaces: NamespaceRegistry, max_id_length: int) -> None:
    """Raise InvalidArgument naming the field unless ``spec`` is a valid endpoint spec of this server.

    The target namespace and every allowed caller namespace must exist; the task queue is required.
    """
    if not NEXUS_ENDPOINT_NAME_RE.match(spec.name):
        raise InvalidArgument(f"spec.name: {spec.name!r} is not a Nexus endpoint name (1-200 letters, digits, '_' "
                              "or '-', starting with a letter or '_')")
    if len(spec.description.SerializeToString()) > NEXUS_ENDPOINT_DESCRIPTION_MAX_BYTES:
        raise InvalidArgument(f"spec.description: larger than {NEXUS_ENDPOINT_DESCRIPTION_MAX_BYTES} bytes")
    if spec.target.WhichOneof("variant") != "worker":
        raise InvalidArgument("spec.target.worker: required (an endpoint targets a task queue of a namespace of "
                              "this server; external targets are not supported)")
    worker = spec.target.worker
    if not worker.namespace:
        raise InvalidArgument("spec.target.worker.namespace: required")
    if not worker.task_queue:
        raise InvalidArgument("spec.target.worker.task_queue: required")
    if len(worker.task_queue) > max_id_length:
        raise InvalidArgument(f"spec.target.worker.task_queue: longer than {max_id_length} characters")
    namespaces.get(worker.namespace, "spec.target.worker.namespace")
    callers = list(spec.allowed_caller_namespaces)
    if len(callers) > NEXUS_ENDPOINT_MAX_ALLOWED_CALLERS:
        raise InvalidArgument(f"spec.allowed_caller_namespaces: {len(callers)} namespaces, at most "
                              f"{NEXUS_ENDPOINT_MAX_ALLOWED_CALLERS}")
    if len(set(callers)) != len(callers):
        raise InvalidArgument("spec.allowed_caller_namespaces: a namespace is listed twice")
    for name in callers:
        namespaces.get(name, "spec.allowed_caller_namespaces")


class NexusEndpointRegistry:
    """Create, read, update and delete Nexus endpoints in the store; resolve one by name for a caller."""

    def __init__(self, store: Store, namespaces: NamespaceRegistry, clock: Clock, max_id_length: int) -> None:
        self.store = store
        self.namespaces = namespaces
        self.clock = clock
        self.max_id_length = max_id_length

    async def create(self, spec: pb.EndpointSpec) -> pb.Endpoint:
        """Store a new endpoint (version 1).

        Raises:
            InvalidArgument: the spec is not valid (see :func:`check_spec`).
            AlreadyExists: an endpoint has that name.
        """
        check_spec(spec, self.namespaces, self.max_id_length)
        now = self.clock.now_ms()
        ep = pb.Endpoint(version=1, id=uuid.uuid4().hex, spec=spec, created_time_ms=now, last_modified_time_ms=now)
        try:
            await self.store.create_nexus_endpoint(NexusEndpointRow(ep.id, spec.name, 0, ep.SerializeToString()))
        except ConditionFailedError:
            raise AlreadyExists(f"spec.name: a Nexus endpoint named {spec.name!r} exists already") from None
        return ep

    async def get(self, endpoint_id: str) -> pb.Endpoint:
        """The endpoint of ``endpoint_id``; NotFound if there is none."""
        row = await self.store.get_nexus_endpoint(endpoint_id)
        if row is None:
            raise NotFound(f"id: no Nexus endpoint {endpoint_id!r}")
        return _endpoint(row)

    async def by_name(self, name: str) -> pb.Endpoint | None:
        """The endpoint named ``name``, or None."""
        row = await self.store.get_nexus_endpoint(name=name)
        return _endpoint(row) if row is not None else None

    async def list(self, req: svc.ListNexusEndpointsRequest) -> svc.ListNexusEndpointsResponse:
        """One page of endpoints ordered by name (``name``: only that endpoint)."""
        if req.name:
            ep = await self.by_name(req.name)
            return svc.ListNexusEndpointsResponse(endpoints=[ep] if ep is not None else [])
        size = req.page_size or MAX_PAGE_SIZE
        if size > MAX_PAGE_SIZE:
            raise InvalidArgument(f"page_size: {size} is above {MAX_PAGE_SIZE}")
        try:
            after = req.next_page_token.decode()
        except UnicodeDecodeError:
            raise InvalidArgument("next_page_token: not a token this server made") from None
        rows = await self.store.list_nexus_endpoints(after_name=after, limit=size + 1)
        more = len(rows) > size
        rows = rows[:size]
        return svc.ListNexusEndpointsResponse(endpoints=[_endpoint(r) for r in rows],
                                              next_page_token=rows[-1].name.encode() if more else b"")

    async def update(self, req: svc.UpdateNexusEndpointRequest, principal: Principal | None) -> pb.Endpoint:
        """Replace the spec of the endpoint at version ``req.version``.

        Raises:
            NotFound: no such endpoint. PermissionDenied: the caller does not administer its current target.
            FailedPrecondition: the version is not the current one. AlreadyExists: the new name is taken.
            InvalidArgument: the new spec is not valid.
        """
        row = await self.store.get_nexus_endpoint(req.id)
        if row is None:
            raise NotFound(f"id: no Nexus endpoint {req.id!r}")
        old = _endpoint(row)
        if principal is not None:
            require_permission("UpdateNexusEndpoint", principal, Permission.ADMIN, old.spec.target.worker.namespace,
                               " (the endpoint's current target)")
        check_spec(req.spec, self.namespaces, self.max_id_length)
        if req.version != old.version:
            raise FailedPrecondition(f"version: the endpoint is at version {old.version}, not {req.version}")
        new = pb.Endpoint(version=old.version + 1, id=old.id, spec=req.spec, created_time_ms=old.created_time_ms,
                          last_modified_time_ms=self.clock.now_ms())
        try:
            await self.store.update_nexus_endpoint(NexusEndpointRow(new.id, req.spec.name, 0, new.SerializeToString()),
                                                   old.version)
        except ConditionFailedError:
            if req.spec.name != old.spec.name and await self.by_name(req.spec.name) is not None:
                raise AlreadyExists(f"spec.name: a Nexus endpoint named {req.spec.name!r} exists already") from None
            raise FailedPrecondition(f"version: the endpoint changed since version {req.version}") from None
        return new

    async def delete(self, req: svc.DeleteNexusEndpointRequest, principal: Principal | None) -> None:
        """Delete the endpoint at version ``req.version`` (operations already scheduled keep running).

        Raises:
            NotFound: no such endpoint. PermissionDenied: the caller does not administer its target.
            FailedPrecondition: the version is not the current one.
        """
        row = await self.store.get_nexus_endpoint(req.id)
        if row is None:
            raise NotFound(f"id: no Nexus endpoint {req.id!r}")
        ep = _endpoint(row)
        if principal is not None:
            require_permission("DeleteNexusEndpoint", principal, Permission.ADMIN, ep.spec.target.worker.namespace)
        if req.version != ep.version:
            raise FailedPrecondition(f"version: the endpoint is at version {ep.version}, not {req.version}")
        try:
            await self.store.delete_nexus_endpoint(req.id, req.version)
        except ConditionFailedError:
            raise FailedPrecondition(f"version: the endpoint changed since version {req.version}") from None


def caller_allowed(ep: pb.Endpoint, caller_namespace: str) -> bool:
    """Whether workflows of ``caller_namespace`` may call ``ep``: its target namespace or an allowed caller."""
    spec = ep.spec
    return caller_namespace == spec.target.worker.namespace or caller_namespace in spec.allowed_caller_namespaces


def _endpoint(row: NexusEndpointRow) -> pb.Endpoint:
    ep = pb.Endpoint.FromString(row.data)
    ep.version = row.version
    return ep


__all__ = ["MAX_PAGE_SIZE", "NexusEndpointRegistry", "caller_allowed", "check_spec"]
