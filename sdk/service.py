"""Connection settings and the raw service, under the name of Temporal's ``temporalio.service``.

``from spindle.service import TLSConfig`` works as ``from temporalio.service import TLSConfig``
does; :meth:`spindle.client.Client.connect` takes it as ``tls=TLSConfig(...)`` (or ``tls=True``).
:class:`WorkflowService` is the type of ``client.workflow_service``: every RPC of the wire service as
an async method (``await client.workflow_service.describe_worker_deployment(req)``), raising
:class:`RPCError` (``spindle.exceptions.RPCError``) when a call fails.
"""

from spindle.client._tls import TLSConfig
from spindle.client._workflow_service import WorkflowService
from spindle.exceptions import RPCError

__all__ = ["RPCError", "TLSConfig", "WorkflowService"]
