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
  ``notify_parent``: the engine's cross-shard operations (``_engine.ClusterCrossShard``
  sends them; they run on this member's ``engine.local_cross_shard``).
- ``stats`` and ``probe_write``: observability and the fencing test (``probe_write``
  attempts a harmless write to a shard with a given range id and reports how the
  store answered).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import grpc

from spindle.controlplane.api import messages_pb2 as pb
from spindle.controlplane.api import service_pb2 as svc
from spindle.controlplane.errors import ServiceError, Unavailable
from spindle.controlplane.frontend import FrontendService
from spindle.controlplane.history import HistoryEngine
from spindle.controlplane.matching import KIND_WORKFLOW, TaskRef
from spindle.controlplane.store import Mutation, StoreError

from ._peers import METHOD, NOT_OWNER, b64, unb64

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


class InternalService:
    """Serves the internal operations of one member."""

    def __init__(self, frontend: FrontendService, engine: HistoryEngine, member_id: str,
                 stats: Callable[[], dict[str, Any]]) -> None:
        self.frontend = frontend
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
        try:
            payload = json.loads(raw)
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
        fn: Callable[[dict[str, Any], float | None], Awaitable[dict[str, Any]]] | None = getattr(self, f"op_{op}", None)
        if fn is None:
            raise ServiceError(f"unknown internal operation {op!r}")
        return await fn(p, remaining)

    # ------------------------------------------------------------------ forwarded frontend RPCs
    async def op_forward(self, p: dict[str, Any], remaining: float | None) -> dict[str, Any]:
        rpc = str(p["rpc"])
        req = _request_type(rpc)()
        req.ParseFromString(unb64(p["request"]))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + remaining if remaining is not None else None
        resp = await getattr(self.frontend, rpc)(req, deadline)
        return {"response": b64(resp.SerializeToString())}

    # ------------------------------------------------------------------ polls
    async def op_reserve(self, p: dict[str, Any], remaining: float | None) -> dict[str, Any]:
        kind = int(p["kind"])
        timeout = max(0.0, min(float(p["timeout"]), (remaining or 1e9) - 0.2))
        if kind == KIND_WORKFLOW and p.get("identity"):  # start admission counts this namespace's workers
            self.engine.note_workflow_poller(str(p["ns_id"]), str(p["identity"]))
        ref = await self.engine.matching.poll(str(p["ns_id"]), str(p["queue"]), kind, timeout,
                                              sticky=bool(p.get("sticky")), rate=float(p.get("rate") or 0.0))
        if ref is None:
            return {}
        return {"id": self.hold(ref, str(p["queue"]), kind, bool(p.get("sticky")))}

    def hold(self, ref: TaskRef, queue: str, kind: int, sticky: bool) -> str:
        """Keep ``ref`` under a new reservation id until started or given back (or expired)."""
        rid = f"{self.member_id}:{next(self._ids)}"
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
        self.give_back(str(p["id"]))
        return {}

    async def start_reserved(self, rid: str, identity: str) -> Any:
        """Record a reserved task as started; the poll response, or None if the task went stale."""
        res = self._reservations.pop(rid, None)
        if res is None:
            return None
        if res.timer is not None:
            res.timer.cancel()
        ref = res.ref
        try:
            return await self.engine.start_polled(ref, res.queue, res.kind, identity, sticky=res.sticky)
        except Unavailable as e:  # the shard moved: its new owner re-dispatches the task from the store
            log.info("reserved task of %s dropped: %s", ref.workflow_id, e)
        return None

    async def op_start(self, p: dict[str, Any], remaining: float | None) -> dict[str, Any]:
        resp = await self.start_reserved(str(p["id"]), str(p.get("identity", "")))
        if resp is None:
            return {}
        return {"response": b64(resp.SerializeToString())}

    # ------------------------------------------------------------------ cross-shard engine operations
    def _ns(self, name: str) -> Any:
        return self.engine.namespaces.get(name)

    def _require_owner(self, ns_id: str, workflow_id: str) -> None:
        sid = self.engine.shard_id_of(ns_id, workflow_id)
        if sid not in self.engine.shards:
            raise Unavailable(f"shard {sid} {NOT_OWNER}")

    async def op_start_workflow(self, p: dict[str, Any], remaining: float | None) -> dict[str, Any]:
        ns = self._ns(p["ns"])
        req = svc.StartWorkflowExecutionRequest.FromString(unb64(p["req"]))
        parent = pb.ParentExecutionInfo.FromString(unb64(p["parent"])) if p.get("parent") else None
        self._require_owner(ns.id, req.workflow_id)
        run_id, started = await self.engine.local_cross_shard.start_workflow(ns, req, parent=parent)
        return {"run_id": run_id, "started": started}

    async def op_request_cancel(self, p: dict[str, Any], remaining: float | None) -> dict[str, Any]:
        ns = self._ns(p["ns"])
        ex = pb.WorkflowExecution.FromString(unb64(p["execution"]))
        ext = p.get("external")
        external = (int(ext[0]), pb.WorkflowExecution.FromString(unb64(ext[1]))) if ext else None
        self._require_owner(ns.id, ex.workflow_id)
        await self.engine.local_cross_shard.request_cancel(ns, ex, p["identity"], p["reason"], external)
        return {}

    async def op_terminate(self, p: dict[str, Any], remaining: float | None) -> dict[str, Any]:
        ns = self._ns(p["ns"])
        ex = pb.WorkflowExecution.FromString(unb64(p["execution"]))
        self._require_owner(ns.id, ex.workflow_id)
        await self.engine.local_cross_shard.terminate(ns, ex, p["reason"], pb.Payloads.FromString(unb64(p["details"])),
                                                      p["identity"])
        return {}

    async def op_deliver_external_signal(self, p: dict[str, Any], remaining: float | None) -> dict[str, Any]:
        ns = self._ns(p["ns"])
        target = pb.WorkflowExecution.FromString(unb64(p["target"]))
        self._require_owner(ns.id, target.workflow_id)
        await self.engine.local_cross_shard.signal(
            ns, target, p["name"], pb.Payloads.FromString(unb64(p["payloads"])),
            pb.Header.FromString(unb64(p["header"])), p["request_id"], pb.WorkflowExecution.FromString(unb64(p["source"])))
        return {}

    async def op_notify_parent(self, p: dict[str, Any], remaining: float | None) -> dict[str, Any]:
        ns = self._ns(p["ns"])
        parent = pb.ParentExecutionInfo.FromString(unb64(p["parent"]))
        self._require_owner(ns.id, parent.execution.workflow_id)
        await self.engine.local_cross_shard.notify_parent(
            ns, parent, pb.HistoryEvent.FromString(unb64(p["close"])),
            child_namespace=p["child_namespace"], child=pb.WorkflowExecution.FromString(unb64(p["child"])),
            first_run_id=p["first_run_id"], workflow_type=p["workflow_type"])
        return {}

    # ------------------------------------------------------------------ observability and tests
    async def op_stats(self, p: dict[str, Any], remaining: float | None) -> dict[str, Any]:
        return self._stats()

    async def op_probe_write(self, p: dict[str, Any], remaining: float | None) -> dict[str, Any]:
        """Write to ``shard_id`` with ``range_id`` (default: the one this member last held) and report the outcome."""
        shard_id = int(p["shard_id"])
        range_id = int(p["range_id"])
        try:
            await self.engine.store.apply(Mutation(shard_id=shard_id, range_id=range_id, transfer_delete=[0]))
        except StoreError as e:
            return {"error": type(e).__name__, "message": str(e)}
        return {"error": None}


__all__ = ["InternalService", "RESERVATION_TTL"]
