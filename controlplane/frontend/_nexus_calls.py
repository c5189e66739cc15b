"""The frontend's handlers of the Nexus RPCs (issue 30; docs/NEXUS.md): the endpoint registry and the handler
worker's task queue.

Wire-first stage: every RPC is authorized by the servicer (``auth._rpc_policy``) and checked here for its
input; the registry store and Nexus task dispatch are not built yet, so the answers are: List = no endpoints,
Get = NOT_FOUND, Poll = an empty task (the long poll expired), writes = FAILED_PRECONDITION
(Respond* with a valid token: NOT_FOUND, no such task). Nothing is written.
"""

from __future__ import annotations

from spindle.api import service_pb2 as svc
from spindle.controlplane.config import ServerConfig
from spindle.controlplane.errors import FailedPrecondition, NotFound
from spindle.controlplane.namespaces import Namespace

from ._validate import check_name


class NexusCalls:
    """Nexus endpoint registry and Nexus task calls (stage 1: authorized, validated, not yet served)."""

    def __init__(self, config: ServerConfig) -> None:
        self.config = config

    async def create_endpoint(self, req: svc.CreateNexusEndpointRequest, ns: Namespace | None, deadline: float | None
                              ) -> svc.CreateNexusEndpointResponse:
        raise FailedPrecondition("CreateNexusEndpoint: the Nexus endpoint registry is not available on this server yet")

    async def get_endpoint(self, req: svc.GetNexusEndpointRequest, ns: Namespace | None, deadline: float | None
                           ) -> svc.GetNexusEndpointResponse:
        check_name(req.id, "id", self.config)
        raise NotFound(f"id: no Nexus endpoint {req.id!r}")

    async def list_endpoints(self, req: svc.ListNexusEndpointsRequest, ns: Namespace | None, deadline: float | None
                             ) -> svc.ListNexusEndpointsResponse:
        return svc.ListNexusEndpointsResponse()

    async def update_endpoint(self, req: svc.UpdateNexusEndpointRequest, ns: Namespace | None, deadline: float | None
                              ) -> svc.UpdateNexusEndpointResponse:
        raise FailedPrecondition("UpdateNexusEndpoint: the Nexus endpoint registry is not available on this server yet")

    async def delete_endpoint(self, req: svc.DeleteNexusEndpointRequest, ns: Namespace | None, deadline: float | None
                              ) -> svc.DeleteNexusEndpointResponse:
        raise FailedPrecondition("DeleteNexusEndpoint: the Nexus endpoint registry is not available on this server yet")

    async def poll_task(self, req: svc.PollNexusTaskQueueRequest, ns: Namespace | None, deadline: float | None
                        ) -> svc.PollNexusTaskQueueResponse:
        return svc.PollNexusTaskQueueResponse()

    async def task_completed(self, req: svc.RespondNexusTaskCompletedRequest, ns: Namespace | None,
                             deadline: float | None) -> svc.RespondNexusTaskCompletedResponse:
        raise NotFound("task_token: no such Nexus task (it completed, timed out or was canceled)")

    async def task_failed(self, req: svc.RespondNexusTaskFailedRequest, ns: Namespace | None, deadline: float | None
                          ) -> svc.RespondNexusTaskFailedResponse:
        raise NotFound("task_token: no such Nexus task (it completed, timed out or was canceled)")
