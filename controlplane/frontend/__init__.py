"""The frontend: request validation and routing, exposed over gRPC or in-process."""

from .service import RPC_NAMES, FrontendService

__all__ = ["RPC_NAMES", "FrontendService"]
