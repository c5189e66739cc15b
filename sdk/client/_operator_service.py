"""``client.operator_service``: Temporal's OperatorService calls that Spindle serves (the Nexus endpoint
registry), as async methods, as in temporalio.

Temporal code calls ``await client.operator_service.create_nexus_endpoint(CreateNexusEndpointRequest(spec=...))``
(``temporalio.service.OperatorService``). Spindle serves these RPCs on its one ``WorkflowService``, so each method
here is the same-named method of ``client.workflow_service``: the same signature ``(req, *, retry=False,
metadata={}, timeout=None)``, the same errors (:class:`spindle.exceptions.RPCError`, TypeError for a request of
another RPC). Temporal's other OperatorService calls (search attributes, namespaces, clusters) are not here: use
``client.workflow_service`` or the client's own methods.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from spindle.client._workflow_service import WorkflowService

__all__ = ["OPERATOR_RPCS", "OperatorService", "services"]

#: The OperatorService methods Spindle has (temporalio's names).
OPERATOR_RPCS = ("create_nexus_endpoint", "get_nexus_endpoint", "list_nexus_endpoints", "update_nexus_endpoint",
                 "delete_nexus_endpoint")


class OperatorService:
    """The operator calls of one client: ``await client.operator_service.create_nexus_endpoint(req)`` and the
    other ``*_nexus_endpoint(s)`` calls (:data:`OPERATOR_RPCS`)."""

    def __init__(self, workflow_service: Any) -> None:
        self._service = workflow_service

    def __getattr__(self, name: str) -> Callable[..., Awaitable[Any]]:
        if name not in OPERATOR_RPCS:
            raise AttributeError(f"OperatorService has no call {name!r}; Spindle serves {', '.join(OPERATOR_RPCS)}")
        method: Callable[..., Awaitable[Any]] = getattr(self._service, name)
        return method


def services(client: Any) -> tuple[WorkflowService, OperatorService]:
    """A client's ``workflow_service`` and its ``operator_service`` (which sends its calls through the former)."""
    workflow_service = WorkflowService(client)
    return workflow_service, OperatorService(workflow_service)
