"""The gRPC face of a frontend: the servicer every RPC goes through, and the server options.

Both ways of serving the control plane use it: one process on a SQLite file
(:mod:`spindle.controlplane.server`) and a cluster member
(:mod:`spindle.controlplane.cluster`). It knows the frontend's calling convention
(``await frontend.<Rpc>(request, deadline)``, raising :class:`ServiceError`) and
nothing of how the frontend was assembled.

It is also the one place where every call over the network is authenticated and
authorized (:class:`spindle.controlplane.auth.Authorizer`), before the frontend sees the
request, and where admin actions are written to the audit log. The in-process stub
(:mod:`spindle.controlplane.embedded`) does not pass here: it serves the user's own
process, which could open the database file anyway, so it is unrestricted.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from typing import Any

import grpc

from spindle.api import service_pb2 as svc
from spindle.api import service_pb2_grpc
from spindle.controlplane._long_polls import LongPollLimiter, long_poll_key, peer_host
from spindle.controlplane._malformed import MalformedRequest, lenient_deserializer
from spindle.controlplane._metrics import ServerMetrics
from spindle.controlplane.auth import ANONYMOUS, Authorizer, Principal, audit, rule_for
from spindle.controlplane.auth._audit import DenialAudit, request_details
from spindle.controlplane.auth._principal import reset_current_principal, set_current_principal
from spindle.controlplane.errors import InvalidArgument, ServiceError
from spindle.controlplane.frontend import RPC_NAMES, FrontendService

__all__ = ["GRPC_OPTIONS", "MAX_DETAILS_BYTES", "add_to_server", "clip_details", "make_servicer", "peer_subject"]

# Same logger as before this moved out of server.py, so operators' log filters keep working.
log = logging.getLogger("spindle.server")
_perf = time.perf_counter

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



def peer_subject(context: grpc.aio.ServicerContext) -> str | None:
    """The subject of the client certificate the TLS layer verified for this call (mTLS), or None."""
    try:
        values = (context.auth_context() or {}).get("x509_subject") or []
    except Exception:  # noqa: BLE001 - no TLS: no subject
        return None
    for v in values:
        return v.decode(errors="replace") if isinstance(v, bytes) else str(v)
    return None


def _anonymous_view(rpc: str, resp: Any) -> Any:
    """What a caller without credentials may see of a public RPC's answer (the server version only)."""
    if rpc == "GetSystemInfo":
        return svc.GetSystemInfoResponse(server_version=resp.server_version)
    return resp


#: The long-poll slot of a call that is not a long poll (one shared no-op context, not one per call).
_NO_SLOT = contextlib.nullcontext()


def make_servicer(frontend: FrontendService, authorizer: Authorizer | None = None,
                  long_polls: LongPollLimiter | None = None,
                  metrics: ServerMetrics | None = None,
                  denials: DenialAudit | None = None) -> service_pb2_grpc.WorkflowServiceServicer:
    """A gRPC servicer whose every RPC goes through one pipeline (:func:`_pipeline`) to the frontend's method.

    ``authorizer`` None serves every caller as the anonymous system admin (authentication
    off); the actions whose rule says ``audit`` are audited either way, and denials
    (UNAUTHENTICATED, PERMISSION_DENIED) of any RPC through ``denials`` (aggregated per
    principal or address; one is made when None is given). ``long_polls`` caps the long polls in
    flight (``spindle.controlplane._long_polls``): a call over a cap gets RESOURCE_EXHAUSTED.
    ``metrics`` (optional) counts every call by method and status code and times it.

    Raises:
        KeyError: an RPC of the service has no access rule (``spindle.controlplane.auth._rpc_policy``).
    """

    class Servicer(service_pb2_grpc.WorkflowServiceServicer):
        pass

    denials = denials if denials is not None else DenialAudit()
    for name in RPC_NAMES:
        rule = rule_for(name)  # every RPC must have one: fail at start, not at the first call
        setattr(Servicer, name, _pipeline(name, getattr(frontend, name), rule.audit, rule.target, authorizer,
                                          long_polls, metrics, denials, rule.namespace))
    return Servicer()


#: The outcomes of a caller that is not let in: audited for every RPC, aggregated (``DenialAudit``).
_DENIALS = frozenset({grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED})


def _denial(denials: DenialAudit, name: str, request: Any, principal: Principal | None, peer: str,
            target: Any, namespace: Any, e: ServiceError) -> None:
    """Count (and maybe write) a denial of ``name`` for the principal, or for the peer's address without one."""
    where = ""
    if not isinstance(request, MalformedRequest):
        with contextlib.suppress(Exception):  # a request the rule cannot read is still a denial
            where = target(request) if target is not None else (
                f"namespace/{namespace(request)}" if namespace is not None else "")
    details = None if isinstance(request, MalformedRequest) else (lambda: request_details(request))
    if principal is not None:
        denials.denied(f"principal {principal.id}", str(principal), name, where, f"{e.code.name}: {e.message}",
                       details)
    else:
        host = peer_host(peer)
        denials.denied(f"unauthenticated {host}", "unauthenticated", name, where, f"{e.code.name}: {e.message}",
                       details, host)


def _pipeline(name: str, method: Any, audited: bool, target: Any, authorizer: Authorizer | None,
              long_polls: LongPollLimiter | None, metrics: ServerMetrics | None, denials: DenialAudit,
              namespace: Any = None) -> Any:
    """The servicer method of RPC ``name``; every call goes through these steps (hot path: one coroutine per call):

    1. authenticate the caller (``authorizer``; None: the anonymous system admin);
    2. a request that did not parse (:class:`MalformedRequest`) is INVALID_ARGUMENT;
    3. authorize the call by the RPC's access rule;
    4. hold a long-poll slot (polls and history waits; RESOURCE_EXHAUSTED over a cap);
    5. run the frontend's ``method(request, deadline)`` as the caller (``current_principal``);
    6. audit the actions whose rule says ``audit`` (allowed or not; denials of any RPC go to
       ``denials``, aggregated), and answer an anonymous caller only what it may see;
    7. a ``ServiceError`` becomes its status, message (clipped) and trailing metadata; anything
       else is logged and INTERNAL;
    8. count and time the call by method and status code (``metrics``).
    """

    async def serve(self: Any, request: Any, context: grpc.aio.ServicerContext) -> Any:
        t0 = _perf() if metrics is not None else 0.0
        code = "OK"
        try:
            remaining = context.time_remaining()
            loop = asyncio.get_running_loop()
            started = loop.time()
            deadline = started + remaining if remaining is not None else None
            principal: Principal | None = ANONYMOUS
            try:
                if authorizer is not None:
                    principal = None
                    subject = peer_subject(context) if authorizer.wants_certificate else None
                    principal = await authorizer.authenticate(context.invocation_metadata(), subject)
                if isinstance(request, MalformedRequest):  # did not parse (add_to_server): nothing to authorize
                    raise InvalidArgument(request.message())
                if authorizer is not None:
                    await authorizer.authorize(name, request, principal)
                slot = None if long_polls is None else long_poll_key(
                    name, request, principal.id if principal is not None else None, context.peer())
                with long_polls.hold(*slot, name) if slot is not None and long_polls is not None else _NO_SLOT:
                    token = set_current_principal(principal)
                    try:
                        resp = await method(request, deadline)
                    finally:
                        reset_current_principal(token)
                if audited:
                    audit(principal, name, target(request), "ok", request_details(request))
                return resp if principal is not None else _anonymous_view(name, resp)
            except ServiceError as e:
                if e.code in _DENIALS:
                    _denial(denials, name, request, principal, context.peer(), target, namespace, e)
                elif audited and not isinstance(request, MalformedRequest):
                    audit(principal, name, target(request), f"{e.code.name}: {e.message}", request_details(request))
                await context.abort(e.code, clip_details(e.message), trailing_metadata=e.trailing_metadata())
            except asyncio.CancelledError:
                log.info("%s cancelled after %.2f s (client went away or its deadline passed)", name,
                         loop.time() - started)
                raise
            except Exception as e:  # noqa: BLE001 - reported as INTERNAL, logged with its stack
                log.exception("%s failed", name)
                if audited:
                    audit(principal, name, target(request), f"INTERNAL: {type(e).__name__}", request_details(request))
                await context.abort(grpc.StatusCode.INTERNAL, clip_details(f"{name}: internal error: {type(e).__name__}: {e}"))
        except asyncio.CancelledError:
            code = "CANCELLED"
            raise
        except BaseException:  # context.abort raises once the status is set
            c = context.code()
            code = c.name if isinstance(c, grpc.StatusCode) else "UNKNOWN"
            raise
        finally:
            if metrics is not None:
                metrics.rpc(name, code, _perf() - t0)

    serve.__name__ = serve.__qualname__ = name
    return serve


def add_to_server(servicer: service_pb2_grpc.WorkflowServiceServicer, server: grpc.aio.Server) -> None:
    """Serve ``servicer``'s WorkflowService on ``server``, with requests that do not parse answered INVALID_ARGUMENT.

    Like the generated ``add_WorkflowServiceServicer_to_server``, except for the request
    deserializer: grpcio would answer a request that fails to parse (a string that is not
    UTF-8, messages nested deeper than protobuf allows) with UNKNOWN before any handler ran;
    here it reaches the handler as a :class:`MalformedRequest` naming the field, and the
    caller gets INVALID_ARGUMENT.
    """
    service = svc.DESCRIPTOR.services_by_name["WorkflowService"]
    handlers = {}
    for m in service.methods:
        request_cls = getattr(svc, m.input_type.name)
        response_cls = getattr(svc, m.output_type.name)
        handlers[m.name] = grpc.unary_unary_rpc_method_handler(
            getattr(servicer, m.name), request_deserializer=lenient_deserializer(request_cls),
            response_serializer=response_cls.SerializeToString)
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(service.full_name, handlers),))
    # as the generated code does: registered methods skip grpcio's generic handler lookup per call (hot path)
    server.add_registered_method_handlers(service.full_name, handlers)
