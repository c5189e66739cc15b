"""The gRPC face of a frontend: the servicer every RPC goes through, and the server options.

Both ways of serving the control plane use it: one process on a SQLite file
(:mod:`spindle.controlplane.server`) and a cluster member
(:mod:`spindle.controlplane.cluster`). It knows the frontend's calling convention
(``await frontend.<Rpc>(request, deadline)``, raising :class:`ServiceError`) and
nothing of how the frontend was assembled.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import grpc

from spindle.controlplane.api import service_pb2_grpc
from spindle.controlplane.errors import ServiceError
from spindle.controlplane.frontend import RPC_NAMES, FrontendService

__all__ = ["GRPC_OPTIONS", "MAX_DETAILS_BYTES", "clip_details", "make_servicer"]

# Same logger as before this moved out of server.py, so operators' log filters keep working.
log = logging.getLogger("spindle.server")

GRPC_OPTIONS = [
    ("grpc.max_receive_message_length", 64 * 1024 * 1024),
    ("grpc.max_send_message_length", 64 * 1024 * 1024),
    ("grpc.so_reuseport", 0),
    # gRPC core cancels calls that wait unaccepted beyond 1,000 by default; thousands of
    # concurrent long polls (workers, handle.result()) are normal here.
    ("grpc.server.max_pending_requests", 20_000),
    ("grpc.server.max_pending_requests_hard_limit", 40_000),
]


#: Longest error message sent (UTF-8 bytes). Messages quote the offending value; a 300 KB name
#: would go out whole in the grpc-message trailer, which clients refuse beyond 16 KiB of
#: metadata (they see RESOURCE_EXHAUSTED "received metadata size exceeds hard limit"
#: instead of the real status).
MAX_DETAILS_BYTES = 2048


def clip_details(message: str) -> str:
    """``message`` cut to MAX_DETAILS_BYTES of UTF-8 (on a character boundary), saying how much was cut."""
    raw = message.encode()
    if len(raw) <= MAX_DETAILS_BYTES:
        return message
    head = raw[:MAX_DETAILS_BYTES].decode(errors="ignore")
    return f"{head}... ({len(message) - len(head)} more characters)"



def make_servicer(frontend: FrontendService) -> service_pb2_grpc.WorkflowServiceServicer:
    """A gRPC servicer whose every RPC calls the frontend and maps ServiceError to its status."""

    class Servicer(service_pb2_grpc.WorkflowServiceServicer):
        pass

    for name in RPC_NAMES:
        method = getattr(frontend, name)

        async def handler(self: Any, request: Any, context: grpc.aio.ServicerContext, _m: Any = method,
                          _name: str = name) -> Any:
            remaining = context.time_remaining()
            loop = asyncio.get_running_loop()
            started = loop.time()
            deadline = loop.time() + remaining if remaining is not None else None
            try:
                return await _m(request, deadline)
            except ServiceError as e:
                await context.abort(e.code, clip_details(e.message), trailing_metadata=e.trailing_metadata())
            except asyncio.CancelledError:
                log.info("%s cancelled after %.2f s (client went away or its deadline passed)", _name,
                         loop.time() - started)
                raise
            except Exception as e:  # noqa: BLE001 - reported as INTERNAL, logged with its stack
                log.exception("%s failed", _name)
                await context.abort(grpc.StatusCode.INTERNAL, clip_details(f"{_name}: internal error: {type(e).__name__}: {e}"))

        setattr(Servicer, name, handler)
    return Servicer()
