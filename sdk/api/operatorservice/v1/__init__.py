"""The Nexus endpoint calls' request and response messages, where Temporal code imports them from
(``temporalio.api.operatorservice.v1``), to pass to ``client.operator_service.<rpc>(req)``.

Spindle serves these RPCs on its one ``WorkflowService`` (``spindle.api.service_pb2``); see
:class:`spindle.client.OperatorService` and docs/NEXUS.md.
"""

from spindle.api.service_pb2 import (
    CreateNexusEndpointRequest,
    CreateNexusEndpointResponse,
    DeleteNexusEndpointRequest,
    DeleteNexusEndpointResponse,
    GetNexusEndpointRequest,
    GetNexusEndpointResponse,
    ListNexusEndpointsRequest,
    ListNexusEndpointsResponse,
    UpdateNexusEndpointRequest,
    UpdateNexusEndpointResponse,
)

__all__ = [
    "CreateNexusEndpointRequest",
    "CreateNexusEndpointResponse",
    "DeleteNexusEndpointRequest",
    "DeleteNexusEndpointResponse",
    "GetNexusEndpointRequest",
    "GetNexusEndpointResponse",
    "ListNexusEndpointsRequest",
    "ListNexusEndpointsResponse",
    "UpdateNexusEndpointRequest",
    "UpdateNexusEndpointResponse",
]
