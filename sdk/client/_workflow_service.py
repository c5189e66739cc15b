"""``client.workflow_service``: every RPC of ``spindle.v1.WorkflowService`` as an async method, as in temporalio.

Temporal code calls the raw service as ``await client.workflow_service.describe_worker_deployment(req)``
(``temporalio.service.WorkflowService``); :class:`WorkflowService` has one such method per RPC of the
service descriptor, named in snake_case, each made once when this module is imported. A call goes
through the client's own call path (``Client._rpc``): the client's API key and TLS channel, gRPC errors
mapped to :class:`spindle.exceptions.RPCError` as for every other client call (here never a subclass).
Payloads in these requests and responses are passed as they are: the client's codecs are not applied.
"""

from __future__ import annotations

import datetime
import re

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from google.protobuf.descriptor import MethodDescriptor
from google.protobuf.message import Message

from spindle.api import service_pb2 as svc

__all__ = ["WorkflowService", "rpc_method_name"]

#: The service's descriptor, whose RPCs :class:`WorkflowService` has methods for.
SERVICE = svc.DESCRIPTOR.services_by_name["WorkflowService"]


class _Rpc(Protocol):
    async def _rpc(self, method: str, request: Message, *, timeout: float | None = None, not_found: str = "workflow",
                   **options: Any) -> Any: ...


def rpc_method_name(rpc: str) -> str:
    """The method name of RPC ``rpc``: ``"DescribeWorkerDeployment"`` -> ``"describe_worker_deployment"``."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", rpc).lower()


class WorkflowService:
    """The raw ``WorkflowService`` of one client: ``await service.<rpc_in_snake_case>(request)``.

    Every method has the signature ``(req, *, retry=False, metadata={}, timeout=None) -> response``:

    - ``req``: the RPC's request message (``spindle.api.workflowservice.v1.<Rpc>Request``);
    - ``retry``: when True, the call is repeated while the server is unavailable or throttles it
      (for at most 15 s), as the client does for its own idempotent calls; False: one attempt;
    - ``metadata``: gRPC metadata sent with the call, after the client's API key;
    - ``timeout``: the call's deadline (None: none).

    It returns the RPC's response message and raises :class:`spindle.exceptions.RPCError` (``status`` is the
    gRPC status code's name, e.g. ``"NOT_FOUND"``, ``"INVALID_ARGUMENT"``) when the server refuses the call
    or cannot be reached (always that class itself, as temporalio's ``RPCError``: no subclass by message).
    TypeError if ``req`` is not the RPC's request message.
    """

    def __init__(self, client: _Rpc) -> None:
        self._client = client

    if TYPE_CHECKING:  # the methods are made from the descriptor below
        def __getattr__(self, name: str) -> Callable[..., Awaitable[Any]]: ...


def _make_method(rpc: MethodDescriptor) -> Callable[..., Awaitable[Any]]:
    name = rpc.name
    request_type = getattr(svc, rpc.input_type.name)
    response_name = rpc.output_type.name

    async def call(self: WorkflowService, req: Message, *, retry: bool = False,
                   metadata: Mapping[str, str] = {},  # noqa: B006 - read only; temporalio's signature
                   timeout: datetime.timedelta | None = None) -> Any:
        if not isinstance(req, request_type):
            raise TypeError(f"{rpc_method_name(name)}: expected a {request_type.__name__}, got {type(req).__name__}")
        return await self._client._rpc(name, req, timeout=None if timeout is None else timeout.total_seconds(),
                                       not_found="raw", retry=retry, metadata=tuple(metadata.items()))

    call.__name__ = rpc_method_name(name)
    call.__qualname__ = f"WorkflowService.{call.__name__}"
    call.__doc__ = (f"The RPC ``{name}``: sends a ``{request_type.__name__}``, returns a ``{response_name}``; "
                    "retry, metadata, timeout and errors: :class:`WorkflowService`.")
    return call


for _method in SERVICE.methods:
    setattr(WorkflowService, rpc_method_name(_method.name), _make_method(_method))
del _method
