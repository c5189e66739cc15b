"""The frontend's handlers of system, namespace and API-key RPCs.

Each handler takes ``(request, ns, deadline)`` as :class:`~.service.FrontendService`'s
pipeline calls it: the request already passed the field rules; ``ns`` is the namespace
the pipeline looked up (DescribeNamespace, DeleteNamespace), else None.
"""

from __future__ import annotations

import logging

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.controlplane._paging import token_position
from spindle.controlplane.auth import ApiKeyAdmin, current_principal
from spindle.controlplane.config import ServerConfig
from spindle.controlplane.errors import FailedPrecondition, InvalidArgument, NotFound
from spindle.controlplane.history import HistoryEngine
from spindle.controlplane.namespaces import Namespace, NamespaceRegistry
from spindle.controlplane.store import Store

from ._payload_intake import PayloadIntake
from ._rate_limit import NamespaceRateLimiter

#: The server version GetSystemInfo reports.
VERSION = "0.1.0"

log = logging.getLogger("spindle.frontend")


class NamespaceCalls:
    """GetSystemInfo, the namespace RPCs and the API-key RPCs (who may manage which key: ``auth._key_admin``)."""

    def __init__(self, store: Store, config: ServerConfig, namespaces: NamespaceRegistry, engine: HistoryEngine,
                 payloads: PayloadIntake, rate_limiter: NamespaceRateLimiter, key_admin: ApiKeyAdmin) -> None:
        self.store = store
        self.config = config
        self.namespaces = namespaces
        self.engine = engine
        self.payloads = payloads
        self.rate_limiter = rate_limiter
        self.key_admin = key_admin

    async def system_info(self, req: svc.GetSystemInfoRequest, ns: None, deadline: float | None
                          ) -> svc.GetSystemInfoResponse:
        return svc.GetSystemInfoResponse(server_version=VERSION, store=self.store.name, num_shards=self.config.num_shards)

    async def create(self, req: svc.CreateNamespaceRequest, ns: None, deadline: float | None
                     ) -> svc.CreateNamespaceResponse:
        created = await self.namespaces.create(req)
        return svc.CreateNamespaceResponse(namespace_info=created.to_proto())

    async def describe(self, req: svc.DescribeNamespaceRequest, ns: Namespace, deadline: float | None
                       ) -> svc.DescribeNamespaceResponse:
        return svc.DescribeNamespaceResponse(namespace_info=ns.to_proto())

    async def list(self, req: svc.ListNamespacesRequest, ns: None, deadline: float | None) -> svc.ListNamespacesResponse:
        principal = current_principal()  # only the namespaces the caller holds a grant on (all: system_admin)
        all_ns = [n for n in self.namespaces.all() if principal is None or principal.sees_namespace(n.name)]
        start = token_position(req.next_page_token, default=0, minimum=0)
        if req.page_size < 0:
            raise InvalidArgument(f"page_size: must not be negative, got {req.page_size}")
        size = req.page_size or 100
        page = all_ns[start:start + size]
        token = str(start + size).encode() if start + size < len(all_ns) else b""
        return svc.ListNamespacesResponse(namespaces=[n.to_proto() for n in page], next_page_token=token)

    async def update(self, req: svc.UpdateNamespaceRequest, ns: None, deadline: float | None
                     ) -> svc.UpdateNamespaceResponse:
        if "search_attributes" in req.update_mask or not req.update_mask:
            current = self.namespaces.get(req.name, "name")
            removed = set(current.search_attributes) - set(req.search_attributes)
            if removed and req.update_mask:
                raise FailedPrecondition(f"search_attributes: removing registered attributes ({', '.join(sorted(removed))}) "
                                         "is not supported; existing executions may carry them")
        principal = current_principal()  # limits are the operator's: only a system admin (or no auth) raises them
        updated = await self.namespaces.update(req, may_raise_limits=principal is None or principal.system_admin)
        return svc.UpdateNamespaceResponse(namespace_info=updated.to_proto())

    async def delete(self, req: svc.DeleteNamespaceRequest, ns: Namespace, deadline: float | None
                     ) -> svc.DeleteNamespaceResponse:
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
        changed_keys = await self.namespaces.delete(req.name)  # its grants went in the same transaction
        self.key_admin.keys.refresh(changed_keys)  # at once here; other members within auth.key_cache_ttl
        self.rate_limiter.forget(ns.id)
        await self._delete_blobs(ns)
        return svc.DeleteNamespaceResponse(terminated_executions=terminated)

    async def _delete_blobs(self, ns: Namespace) -> None:
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

    async def add_search_attributes(self, req: svc.AddSearchAttributesRequest, ns: None, deadline: float | None
                                    ) -> svc.AddSearchAttributesResponse:
        await self.namespaces.add_search_attributes(req.namespace, dict(req.search_attributes))
        return svc.AddSearchAttributesResponse()

    async def create_api_key(self, req: svc.CreateApiKeyRequest, ns: None, deadline: float | None
                             ) -> svc.CreateApiKeyResponse:
        return await self.key_admin.create(req, current_principal())

    async def list_api_keys(self, req: svc.ListApiKeysRequest, ns: None, deadline: float | None
                            ) -> svc.ListApiKeysResponse:
        return await self.key_admin.list(req, current_principal())

    async def revoke_api_key(self, req: svc.RevokeApiKeyRequest, ns: None, deadline: float | None
                             ) -> svc.RevokeApiKeyResponse:
        return await self.key_admin.revoke(req, current_principal())


__all__ = ["NamespaceCalls", "VERSION"]
