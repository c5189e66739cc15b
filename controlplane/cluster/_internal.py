"""The internal RPC a member serves to its peers.

Operations (``{"op": ...}``):

- ``forward``: a frontend RPC whose workflow lives on a shard of this member; run
  by the local frontend, never forwarded again (so stale views cannot loop).
- ``reserve`` / ``start`` / ``give_back``: the remote half of a worker's poll
  (see ``_frontend``): ``reserve`` long-polls this member's matching and holds the
  task it gets under a reservation id; ``start`` records the task as started and
  returns the poll response; ``give_back`` (or the reservation's expiry) puts the
  task back at the front of its queue.
- ``start_workflow``, ``request_cancel``, ``terminate``, ``deliver_external_signal``,
  ``notify_parent``, ``schedule_run_closed``: the engine's cross-shard operations (``_engine.ClusterCrossShard``
  sends them; they run on this member's ``engine.local_cross_shard``).
- ``stats`` and ``probe_write``: observability and the fencing test (``probe_write``
  attempts a harmless write to a shard with a given range id and reports how the
  store answered).

Who can call it: it is served on the member's internal listener only (``_node``), which
requires the cluster CA's certificates when ``internal.tls`` is set and is bound to
loopback otherwise; the public listener does not serve it. Without ``internal.tls`` a call
must also carry the cluster's member token (``_peers.MEMBER_TOKEN_HEADER``), or it is
refused with UNAUTHENTICATED before anything runs: loopback alone would let any local
process run operations that skip API keys. What it accepts: every
operation checks its parameters (a missing or mistyped one is INVALID_ARGUMENT naming it),
and the requests it runs pass the frontend's own checks: ``forward`` runs the frontend
method itself, ``start_workflow`` runs ``check_start_request`` (ids, timeouts, payload
size, search attributes) and the other cross-shard operations check their ids and
payloads with the frontend's ``require_id`` / ``check_payloads``, identities and reasons with
``check_name`` / ``check_text`` (the rules of ``_field_rules``). A member holding a
certificate can do what the engine can do; nothing it sends gets past the limits a
client's request would meet.
"""

from __future__ import annotations

import asyncio
import binascii
import hmac
import itertools
import json
import logging
import math
import secrets

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import grpc

from google.protobuf.message import DecodeError, Message

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.controlplane.errors import InvalidArgument, ServiceError, ShardNotOwned, Unavailable
from spindle.controlplane.frontend import RPC_NAMES, FrontendService
from spindle.controlplane.frontend._validate import (
    check_name,
    check_payloads,
    check_start_request,
    check_text,
    require_id,
)
from spindle.controlplane.history import HistoryEngine
from spindle.controlplane.matching import KIND_ACTIVITY, KIND_WORKFLOW, TaskRef
from spindle.controlplane.store import Mutation, StoreError

from ._peers import MEMBER_TOKEN_HEADER, METHOD, NOT_OWNER, b64, unb64

log = logging.getLogger("spindle.cluster")

#: Seconds a reserved task waits for ``start`` before it goes back to its queue.
RESERVATION_TTL = 5.0


@dataclass
class Reservation:
    """A task taken from this member's matching for a poll that arrived at another member."""

    ref: TaskRef
    queue: str
    kind: int
    sticky: bool
    timer: asyncio.TimerHandle | None = None


def _request_type(rpc: str) -> Any:
    method = svc.DESCRIPTOR.services_by_name["WorkflowService"].methods_by_name[rpc]
    return getattr(svc, method.input_type.name)


# ---------------------------------------------------------------------- reading an operation's parameters
def _get(p: dict[str, Any], key: str, types: type | tuple[type, ...], what: str) -> Any:
    if p.get(key) is None:
        raise InvalidArgument(f"{key}: required")
    v = p[key]
    if isinstance(v, bool) or not isinstance(v, types):  # JSON true/false are never a number or a string here
        raise InvalidArgument(f"{key}: expected {what}, got {type(v).__name__}")
    return v


def _str(p: dict[str, Any], key: str) -> str:
    return str(_get(p, key, str, "a string"))


def _int(p: dict[str, Any], key: str) -> int:
    return int(_get(p, key, int, "an integer"))


def _number(p: dict[str, Any], key: str, default: float | None = None) -> float:
    if default is not None and p.get(key) is None:
        return default
    v = float(_get(p, key, (int, float), "a number"))
    if not math.isfinite(v) or v < 0:
        raise InvalidArgument(f"{key}: must be a finite number >= 0, got {v}")
    return v


def _text(p: dict[str, Any], key: str) -> str:
    """An optional free-text parameter (identity, reason: the frontend takes them as they come)."""
    v = p.get(key)
    if v is None:
        return ""
    if not isinstance(v, str):
        raise InvalidArgument(f"{key}: expected a string, got {type(v).__name__}")
    return v


def _bytes(p: dict[str, Any], key: str) -> bytes:
    try:
        return unb64(_str(p, key))
    except (binascii.Error, ValueError):
        raise InvalidArgument(f"{key}: not base64") from None


def _msg(p: dict[str, Any], key: str, cls: type[Message]) -> Any:
    try:
        return cls.FromString(_bytes(p, key))
    except DecodeError:
        raise InvalidArgument(f"{key}: not a serialized {cls.DESCRIPTOR.name}") from None


def _carries(context: grpc.aio.ServicerContext, header: str, token: str) -> bool:
    """Whether the call's metadata holds ``header`` with the value ``token`` (compared in constant time)."""
    for key, value in context.invocation_metadata() or ():
        if key == header and isinstance(value, str) and hmac.compare_digest(value.encode(), token.encode()):
            return True
    return False


class InternalService:
    """Serves the internal operations of one member."""

    def __init__(self, frontend: FrontendService, engine: HistoryEngine, member_id: str,
                 stats: Callable[[], dict[str, Any]], *, require_token: bytes = b"") -> None:
        """``require_token``: the member token a call must carry (empty: none asked, the listener has mutual TLS)."""
        self.frontend = frontend
        self._expected = (MEMBER_TOKEN_HEADER, require_token.hex()) if require_token else None
        self.engine = engine
        self.member_id = member_id
        self._stats = stats
        self._reservations: dict[str, Reservation] = {}
        self._ids = itertools.count(1)

    # ------------------------------------------------------------------ gRPC plumbing
    def handler(self) -> grpc.GenericRpcHandler:
        """A generic handler for ``METHOD`` (bytes in, bytes out)."""
        service, method = METHOD.lstrip("/").split("/")
        return grpc.method_handlers_generic_handler(service, {method: grpc.unary_unary_rpc_method_handler(self._serve)})

    async def _serve(self, raw: bytes, context: grpc.aio.ServicerContext) -> bytes:
        remaining = context.time_remaining()
        if self._expected is not None and not _carries(context, *self._expected):
            await context.abort(grpc.StatusCode.UNAUTHENTICATED,
                                "not a member of this cluster: the internal listener takes calls only from members "
                                "(they carry the cluster's member token)")
        try:
            try:
                payload = json.loads(raw)
            except ValueError:
                raise InvalidArgument("the request is not a JSON object") from None
            if not isinstance(payload, dict):
                raise InvalidArgument("the request is not a JSON object")
            out = await self.dispatch(payload, remaining)
            return json.dumps(out).encode()
        except ServiceError as e:
            await context.abort(e.code, e.message, trailing_metadata=e.trailing_metadata())
        except asyncio.CancelledError:
            raise
        except Exception as e:  # noqa: BLE001 - reported as INTERNAL with its type
            log.exception("internal call failed")
            await context.abort(grpc.StatusCode.INTERNAL, f"internal error: {type(e).__name__}: {e}")
        return b""  # unreachable: abort raises

    async def dispatch(self, p: dict[str, Any], remaining: float | None) -> dict[str, Any]:
        op = p.get("op")
        fn: Callable[[dict[str, Any], float | None], Awaitable[dict[str, Any]]] | None = (
            getattr(self, f"op_{op}", None) if isinstance(op, str) and op.isidentifier() else None)
        if fn is None:
            raise InvalidArgument(f"op: unknown internal operation {str(op)[:100]!r}")
        return await fn(p, remaining)

    # ------------------------------------------------------------------ forwarded frontend RPCs
    async def op_forward(self, p: dict[str, Any], remaining: float | None) -> dict[str, Any]:
        rpc = _str(p, "rpc")
        if rpc not in RPC_NAMES:
            raise InvalidArgument(f"rpc: {rpc[:100]!r} is not a WorkflowService method")
        req = _msg(p, "request", _request_type(rpc))  # the frontend method checks it as it would a client's
        loop = asyncio.get_running_loop()
        deadline = loop.time() + remaining if remaining is not None else None
        resp = await getattr(self.frontend, rpc)(req, deadline)
        return {"response": b64(resp.SerializeToString())}

    # ------------------------------------------------------------------ polls
    async def op_reserve(self, p: dict[str, Any], remaining: float | None) -> dict[str, Any]:
        kind = _int(p, "kind")
        if kind not in (KIND_WORKFLOW, KIND_ACTIVITY):
            raise InvalidArgument(f"kind: {kind} is not a workflow ({KIND_WORKFLOW}) or activity ({KIND_ACTIVITY}) task")
        ns_id, queue = _str(p, "ns_id"), _str(p, "queue")
        require_id(ns_id, "ns_id", self.frontend.config)
        require_id(queue, "queue", self.frontend.config)
        timeout = max(0.0, min(_number(p, "timeout"), self.frontend.config.long_poll_timeout,
                               (remaining or 1e9) - 0.2))
        if kind == KIND_WORKFLOW and p.get("identity"):  # start admission counts this namespace's workers
            self.engine.note_workflow_poller(ns_id, _str(p, "identity"))
        sticky = bool(p.get("sticky"))
        opts = pb.WorkerDeploymentOptions(version=pb.WorkerDeploymentVersion(
            deployment_name=_text(p, "deployment"), build_id=_text(p, "build")), use_worker_versioning=bool(p.get("deployment")))
        deployment, build = await self.engine.deployments.poller(ns_id, opts, "deployment")
        ref = await self.engine.matching.poll(ns_id, queue, kind, timeout, sticky=sticky, rate=_number(p, "rate", 0.0),
                                              deployment=deployment, build=build)
        if ref is None:
            return {}
        return {"id": self.hold(ref, queue, kind, sticky)}

    def hold(self, ref: TaskRef, queue: str, kind: int, sticky: bool) -> str:
        """Keep ``ref`` under a new reservation id until started or given back (or expired).

        The id carries 128 random bits: only the member that reserved the task can start it
        (a counter alone would let any caller start the task someone else reserved).
        """
        rid = f"{self.member_id}:{next(self._ids)}:{secrets.token_urlsafe(16)}"
        res = Reservation(ref, queue, kind, sticky)
        res.timer = asyncio.get_running_loop().call_later(RESERVATION_TTL, self.give_back, rid)
        self._reservations[rid] = res
        return rid

    def give_back(self, rid: str) -> None:
        """Return a reserved task to the front of its queue (a no-op once started)."""
        res = self._reservations.pop(rid, None)
        if res is None:
            return
        if res.timer is not None:
            res.timer.cancel()
        self.engine.matching.queue(res.ref.namespace_id, res.queue, res.kind, sticky=res.sticky).push(res.ref, front=True)

    async def op_give_back(self, p: dict[str, Any], remaining: float | None) -> dict[str, Any]:
        self.give_back(_str(p, "id"))
        return {}

    async def start_reserved(self, rid: str, identity: str, version: str = "") -> Any:
        """Record a reserved task as started; the poll response, or None if the task went stale."""
        res = self._reservations.pop(rid, None)
        if res is None:
            return None
        if res.timer is not None:
            res.timer.cancel()
        ref = res.ref
        try:
            return await self.engine.start_polled(ref, res.queue, res.kind, identity, sticky=res.sticky, version=version)
        except Unavailable as e:  # the shard moved: its new owner re-dispatches the task from the store
            log.info("reserved task of %s dropped: %s", ref.workflow_id, e)
        return None

    async def op_start(self, p: dict[str, Any], remaining: float | None) -> dict[str, Any]:
        resp = await self.start_reserved(_str(p, "id"), _text(p, "identity"), _text(p, "version"))
        if resp is None:
            return {}
        return {"response": b64(resp.SerializeToString())}

    # ------------------------------------------------------------------ cross-shard engine operations
    def _ns(self, p: dict[str, Any], key: str = "ns") -> Any:
        return self.engine.namespaces.get(_str(p, key), key)

    def _require_owner(self, ns_id: str, workflow_id: str) -> None:
        sid = self.engine.shard_id_of(ns_id, workflow_id)
        if sid not in self.engine.shards:
            raise ShardNotOwned(f"shard {sid} {NOT_OWNER}")

    def _check_id(self, value: str, field: str) -> None:
        require_id(value, field, self.frontend.config)

    def _identity_and_reason(self, p: dict[str, Any]) -> tuple[str, str]:
        """The optional identity and reason, held to the frontend's rules for those fields (``_field_rules``)."""
        identity, reason = _text(p, "identity"), _text(p, "reason")
        check_name(identity, "identity", self.frontend.config)
        check_text(reason, "reason")
        return identity, reason

    async def op_start_workflow(self, p: dict[str, Any], remaining: float | None) -> dict[str, Any]:
        ns = self._ns(p)
        req = _msg(p, "req", svc.StartWorkflowExecutionRequest)
        parent = _msg(p, "parent", pb.ParentExecutionInfo) if p.get("parent") else None
        check_start_request(req, ns, self.frontend.config)
        if parent is not None:
            self._check_id(parent.execution.workflow_id, "parent.execution.workflow_id")
        self._require_owner(ns.id, req.workflow_id)
        run_id, started = await self.engine.local_cross_shard.start_workflow(ns, req, parent=parent)
        return {"run_id": run_id, "started": started}

    async def op_request_cancel(self, p: dict[str, Any], remaining: float | None) -> dict[str, Any]:
        ns = self._ns(p)
        ex = _msg(p, "execution", pb.WorkflowExecution)
        self._check_id(ex.workflow_id, "execution.workflow_id")
        ext = p.get("external")
        external = None
        if ext is not None:
            if not isinstance(ext, list) or len(ext) != 2 or not isinstance(ext[0], int) or not isinstance(ext[1], str):
                raise InvalidArgument("external: expected [initiated event id, execution]")
            external = (int(ext[0]), _msg({"external": ext[1]}, "external", pb.WorkflowExecution))
            self._check_id(external[1].workflow_id, "external.workflow_id")
        identity, reason = self._identity_and_reason(p)
        self._require_owner(ns.id, ex.workflow_id)
        await self.engine.local_cross_shard.request_cancel(ns, ex, identity, reason, external)
        return {}

    async def op_terminate(self, p: dict[str, Any], remaining: float | None) -> dict[str, Any]:
        ns = self._ns(p)
        ex = _msg(p, "execution", pb.WorkflowExecution)
        self._check_id(ex.workflow_id, "execution.workflow_id")
        details = _msg(p, "details", pb.Payloads)
        check_payloads(self.frontend.config, "details", details)
        identity, reason = self._identity_and_reason(p)
        self._require_owner(ns.id, ex.workflow_id)
        await self.engine.local_cross_shard.terminate(ns, ex, reason, details, identity)
        return {}

    async def op_deliver_external_signal(self, p: dict[str, Any], remaining: float | None) -> dict[str, Any]:
        ns = self._ns(p)
        target = _msg(p, "target", pb.WorkflowExecution)
        source = _msg(p, "source", pb.WorkflowExecution)
        name = _str(p, "name")
        self._check_id(target.workflow_id, "target.workflow_id")
        self._check_id(source.workflow_id, "source.workflow_id")
        self._check_id(name, "name")
        payloads, header = _msg(p, "payloads", pb.Payloads), _msg(p, "header", pb.Header)
        check_payloads(self.frontend.config, "payloads", payloads, header)
        request_id = _text(p, "request_id")
        check_name(request_id, "request_id", self.frontend.config)
        self._require_owner(ns.id, target.workflow_id)
        await self.engine.local_cross_shard.signal(ns, target, name, payloads, header, request_id, source)
        return {}

    async def op_notify_parent(self, p: dict[str, Any], remaining: float | None) -> dict[str, Any]:
        ns = self._ns(p)
        parent = _msg(p, "parent", pb.ParentExecutionInfo)
        child = _msg(p, "child", pb.WorkflowExecution)
        close = _msg(p, "close", pb.HistoryEvent)
        self._check_id(parent.execution.workflow_id, "parent.execution.workflow_id")
        self._check_id(child.workflow_id, "child.workflow_id")
        child_namespace = _str(p, "child_namespace")
        first_run_id, workflow_type = _text(p, "first_run_id"), _text(p, "workflow_type")
        check_name(first_run_id, "first_run_id", self.frontend.config)
        check_name(workflow_type, "workflow_type", self.frontend.config)
        self._require_owner(ns.id, parent.execution.workflow_id)
        await self.engine.local_cross_shard.notify_parent(
            ns, parent, close, child_namespace=child_namespace, child=child, first_run_id=first_run_id,
            workflow_type=workflow_type)
        return {}

    async def op_schedule_run_closed(self, p: dict[str, Any], remaining: float | None) -> dict[str, Any]:
        ns = self._ns(p)
        schedule_id = _str(p, "schedule_id")
        self._check_id(schedule_id, "schedule_id")
        ex = _msg(p, "execution", pb.WorkflowExecution)
        self._check_id(ex.workflow_id, "execution.workflow_id")
        self._require_owner(ns.id, schedule_id)
        await self.engine.local_cross_shard.schedule_run_closed(ns, schedule_id, ex)
        return {}

    # ------------------------------------------------------------------ observability and tests
    async def op_stats(self, p: dict[str, Any], remaining: float | None) -> dict[str, Any]:
        return self._stats()

    async def op_probe_write(self, p: dict[str, Any], remaining: float | None) -> dict[str, Any]:
        """Write to ``shard_id`` with ``range_id`` (default: the one this member last held) and report the outcome."""
        shard_id, range_id = _int(p, "shard_id"), _int(p, "range_id")
        if not 0 <= shard_id < self.frontend.config.num_shards:
            raise InvalidArgument(f"shard_id: {shard_id} is not a shard (0..{self.frontend.config.num_shards - 1})")
        try:
            await self.engine.store.apply(Mutation(shard_id=shard_id, range_id=range_id, transfer_delete=[0]))
        except StoreError as e:
            return {"error": type(e).__name__, "message": str(e)}
        return {"error": None}


__all__ = ["InternalService", "RESERVATION_TTL"]
