"""The frontend's handlers of the Nexus RPCs (issue 30; docs/NEXUS.md): the endpoint registry and the handler
worker's task queue.

Each handler takes ``(request, ns, deadline)`` as :class:`~.service.FrontendService`'s pipeline calls it. Who
may call them is the servicer's (``auth._rpc_policy``), plus, for an update or a delete, ``admin`` on the
endpoint's current target namespace (checked here, since the request names only the endpoint's id).

Not served yet: Nexus task dispatch. A poll waits out its long poll (``long_poll_timeout``, ending before the
caller's deadline) and answers an empty task, as an idle queue's poll does, so a worker's poll loop does not
spin; the answers are NOT_FOUND (no such task); nothing is written.
"""

from __future__ import annotations

import asyncio

from spindle.api import service_pb2 as svc
from spindle.controlplane.auth import current_principal
from spindle.controlplane.config import ServerConfig
from spindle.controlplane.errors import NotFound
from spindle.controlplane.namespaces import Namespace
from spindle.controlplane.nexus import NexusEndpointRegistry

from ._validate import require_id
from ._worker_calls import poll_timeout


class NexusCalls:
    """Nexus endpoint registry calls (served) and Nexus task calls (authorized and validated; not yet served)."""

    def __init__(self, config: ServerConfig, endpoints: NexusEndpointRegistry) -> None:
        self.config = config
        self.endpoints = endpoints

    async def create_endpoint(self, req: svc.CreateNexusEndpointRequest, ns: Namespace | None, deadline: float | None
                              ) -> svc.CreateNexusEndpointResponse:
        return svc.CreateNexusEndpointResponse(endpoint=await self.endpoints.create(req.spec))

    async def get_endpoint(self, req: svc.GetNexusEndpointRequest, ns: Namespace | None, deadline: float | None
                           ) -> svc.GetNexusEndpointResponse:
        require_id(req.id, "id", self.config)
        return svc.GetNexusEndpointResponse(endpoint=await self.endpoints.get(req.id))

    async def list_endpoints(self, req: svc.ListNexusEndpointsRequest, ns: Namespace | None, deadline: float | None
                             ) -> svc.ListNexusEndpointsResponse:
        return await self.endpoints.list(req)

    async def update_endpoint(self, req: svc.UpdateNexusEndpointRequest, ns: Namespace | None, deadline: float | None
                              ) -> svc.UpdateNexusEndpointResponse:
        require_id(req.id, "id", self.config)
        return svc.UpdateNexusEndpointResponse(endpoint=await self.endpoints.update(req, current_principal()))

    async def delete_endpoint(self, req: svc.DeleteNexusEndpointRequest, ns: Namespace | None, deadline: float | None
                              ) -> svc.DeleteNexusEndpointResponse:
        require_id(req.id, "id", self.config)
        await self.endpoints.delete(req, current_principal())
        return svc.DeleteNexusEndpointResponse()

    async def poll_task(self, req: svc.PollNexusTaskQueueRequest, ns: Namespace | None, deadline: float | None
                        ) -> svc.PollNexusTaskQueueResponse:
        require_id(req.task_queue, "task_queue", self.config)
        await asyncio.sleep(poll_timeout(self.config, deadline))
        return svc.PollNexusTaskQueueResponse()

    async def task_completed(self, req: svc.RespondNexusTaskCompletedRequest, ns: Namespace | None,
                             deadline: float | None) -> svc.RespondNexusTaskCompletedResponse:
        raise NotFound("task_token: no such Nexus task (it completed, timed out or was canceled)")

    async def task_failed(self, req: svc.RespondNexusTaskFailedRequest, ns: Namespace | None, deadline: float | None
                          ) -> svc.RespondNexusTaskFailedResponse:
        raise NotFound("task_token: no such Nexus task (it completed, timed out or was canceled)")
