"""Nexus on the server (issue 30; docs/NEXUS.md): the endpoint registry; later, operation dispatch."""

from ._endpoints import NexusEndpointRegistry, check_spec

__all__ = ["NexusEndpointRegistry", "check_spec"]
