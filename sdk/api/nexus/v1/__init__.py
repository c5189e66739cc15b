"""Nexus endpoint messages, where Temporal code imports them from (``temporalio.api.nexus.v1``).

``spindle.api.nexus.v1.EndpointSpec(name=..., target=EndpointTarget(worker=EndpointTarget.Worker(namespace=...,
task_queue=...)))`` is Spindle's wire message (``spindle.api.messages_pb2``), to pass in a
``spindle.api.operatorservice.v1.CreateNexusEndpointRequest``. Spindle adds ``EndpointSpec.allowed_caller_namespaces``
(docs/NEXUS.md); endpoint targets are always a worker (a task queue of a namespace of the same server).
"""

from spindle.api.messages_pb2 import Endpoint, EndpointSpec, EndpointTarget

__all__ = ["Endpoint", "EndpointSpec", "EndpointTarget"]
