"""The history engine of a cluster member: operations on other shards run on their owners.

``ClusterEngine`` is the ordinary ``HistoryEngine`` that owns only the shards its
leases give it (``add_shard``/``remove_shard``). The engine reaches across shards
in five places, all while processing a transfer task or a namespace deletion:
starting a child (``start_workflow``), cancelling or terminating another workflow
(``request_cancel``, ``terminate``: external cancels and parent-close policies),
signalling another workflow (``deliver_external_signal``) and telling a parent its
child closed (``notify_parent``). Each is overridden here: run locally when this
process owns the target's shard, otherwise sent to the owner over the internal
RPC, retried while the shard is between owners.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from spindle.controlplane.api import messages_pb2 as pb
from spindle.controlplane.api import service_pb2 as svc
from spindle.controlplane.errors import Unavailable
from spindle.controlplane.history import HistoryEngine
from spindle.controlplane.namespaces import Namespace

from ._leases import LeaseManager, now_ms
from ._peers import NOT_OWNER, Peers, b64, with_retry

#: How long an operation for another shard keeps retrying while the shard has no reachable owner.
CROSS_SHARD_RETRY_SECONDS = 60.0


class Router:
    """Finds the member that owns a shard: this process, or a peer's address."""

    def __init__(self, engine: HistoryEngine, leases: LeaseManager, peers: Peers) -> None:
        self.engine = engine
        self.leases = leases
        self.peers = peers

    def is_local(self, shard_id: int) -> bool:
        return shard_id in self.engine.shards

    async def owner_address(self, shard_id: int) -> str | None:
        """None when this process owns the shard, else the owner's address; Unavailable while it has none."""
        if self.is_local(shard_id):
            return None
        found = self.leases.view.owner_address(shard_id, now_ms())
        if found is None or found[0] == self.leases.member_id:
            view = await self.leases.refresh_view()
            found = view.owner_address(shard_id, now_ms())
        if self.is_local(shard_id):
            return None
        if found is None or found[0] == self.leases.member_id:
            raise Unavailable(f"shard {shard_id} {NOT_OWNER}: it is moving between members; retry")
        return found[1]

    async def refresh(self) -> None:
        await self.leases.refresh_view()

    async def run(self, shard_id: int, local: Callable[[], Awaitable[Any]],
                  remote: Callable[[str, float], Awaitable[Any]], *, timeout: float) -> Any:
        """``local()`` if this process owns the shard, else ``remote(address, seconds_left)``; retried on Unavailable."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout

        async def attempt() -> Any:
            address = await self.owner_address(shard_id)
            if address is None:
                return await local()
            return await remote(address, max(0.1, deadline - loop.time()))

        return await with_retry(attempt, deadline=deadline, on_retry=self.refresh)


class ClusterEngine(HistoryEngine):
    """A HistoryEngine whose cross-shard operations reach the shards' owners (set ``router`` before use).

    Calls that wait (history long polls, queries, updates) end with Unavailable when
    their shard is handed over meanwhile, so the caller retries at the new owner
    instead of waiting on state this process no longer changes.
    """

    router: Router

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._released: dict[int, asyncio.Event] = {}

    async def add_shard(self, shard_id: int, range_id: int) -> None:
        self._released[shard_id] = asyncio.Event()
        await super().add_shard(shard_id, range_id)

    async def remove_shard(self, shard_id: int) -> None:
        ev = self._released.pop(shard_id, None)
        if ev is not None:
            ev.set()
        await super().remove_shard(shard_id)

    async def _while_owned(self, namespace_id: str, workflow_id: str, call: Awaitable[Any]) -> Any:
        """Await ``call`` unless the workflow's shard is handed over first (then Unavailable: retry elsewhere)."""
        sid = self.shard_id_of(namespace_id, workflow_id)
        if sid not in self.shards:
            if asyncio.iscoroutine(call):
                call.close()
            raise Unavailable(f"shard {sid} {NOT_OWNER}")
        released = self._released.get(sid)
        if released is None:  # owned since start (a single member): never handed over
            return await call
        task = asyncio.ensure_future(call)
        gone = asyncio.ensure_future(released.wait())
        try:
            await asyncio.wait({task, gone}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            gone.cancel()
            if not task.done():
                task.cancel()
        if not task.cancelled() and task.done():
            return task.result()
        raise Unavailable(f"shard {sid} was handed over while waiting; retry")

    async def get_history(self, ns: Namespace, req: svc.GetWorkflowExecutionHistoryRequest,
                          deadline: float) -> svc.GetWorkflowExecutionHistoryResponse:
        return await self._while_owned(ns.id, req.execution.workflow_id, super().get_history(ns, req, deadline))

    async def query(self, ns: Namespace, req: svc.QueryWorkflowRequest) -> svc.QueryWorkflowResponse:
        return await self._while_owned(ns.id, req.execution.workflow_id, super().query(ns, req))

    async def update(self, ns: Namespace, req: svc.UpdateWorkflowExecutionRequest) -> svc.UpdateWorkflowExecutionResponse:
        return await self._while_owned(ns.id, req.workflow_execution.workflow_id, super().update(ns, req))

    async def _remote(self, shard_id: int, payload: dict[str, Any], local: Callable[[], Awaitable[Any]]) -> Any:
        async def remote(address: str, left: float) -> Any:
            return await self.router.peers.call(address, payload, timeout=left)

        return await self.router.run(shard_id, local, remote, timeout=CROSS_SHARD_RETRY_SECONDS)

    async def start_workflow(self, ns: Namespace, req: svc.StartWorkflowExecutionRequest, *,
                             parent: pb.ParentExecutionInfo | None = None,
                             signal: tuple[str, pb.Payloads, pb.Header] | None = None) -> tuple[str, bool]:
        sid = self.shard_id_of(ns.id, req.workflow_id)
        if signal is not None:  # signal-with-start comes from the frontend, which already routed it
            return await super().start_workflow(ns, req, parent=parent, signal=signal)
        out = await self._remote(
            sid, {"op": "start_workflow", "ns": ns.name, "req": b64(req.SerializeToString()),
                  "parent": b64(parent.SerializeToString()) if parent is not None else None},
            lambda: super(ClusterEngine, self).start_workflow(ns, req, parent=parent))
        if isinstance(out, dict):
            return str(out["run_id"]), bool(out["started"])
        return out  # type: ignore[no-any-return]

    async def request_cancel(self, ns: Namespace, execution: pb.WorkflowExecution, identity: str, reason: str,
                             external: tuple[int, pb.WorkflowExecution] | None = None) -> None:
        ext = [external[0], b64(external[1].SerializeToString())] if external is not None else None
        await self._remote(
            self.shard_id_of(ns.id, execution.workflow_id),
            {"op": "request_cancel", "ns": ns.name, "execution": b64(execution.SerializeToString()),
             "identity": identity, "reason": reason, "external": ext},
            lambda: super(ClusterEngine, self).request_cancel(ns, execution, identity, reason, external))

    async def terminate(self, ns: Namespace, execution: pb.WorkflowExecution, reason: str, details: pb.Payloads,
                        identity: str) -> None:
        await self._remote(
            self.shard_id_of(ns.id, execution.workflow_id),
            {"op": "terminate", "ns": ns.name, "execution": b64(execution.SerializeToString()), "reason": reason,
             "details": b64(details.SerializeToString()), "identity": identity},
            lambda: super(ClusterEngine, self).terminate(ns, execution, reason, details, identity))

    async def deliver_external_signal(self, tns: Namespace, target: pb.WorkflowExecution, name: str,
                                      payloads: pb.Payloads, header: pb.Header, request_id: str,
                                      source: pb.WorkflowExecution) -> None:
        await self._remote(
            self.shard_id_of(tns.id, target.workflow_id),
            {"op": "deliver_external_signal", "ns": tns.name, "target": b64(target.SerializeToString()), "name": name,
             "payloads": b64(payloads.SerializeToString()), "header": b64(header.SerializeToString()),
             "request_id": request_id, "source": b64(source.SerializeToString())},
            lambda: super(ClusterEngine, self).deliver_external_signal(tns, target, name, payloads, header, request_id,
                                                                       source))

    async def notify_parent(self, pns: Namespace, parent: pb.ParentExecutionInfo, close: pb.HistoryEvent, *,
                            child_namespace: str, child: pb.WorkflowExecution, first_run_id: str,
                            workflow_type: str) -> None:
        await self._remote(
            self.shard_id_of(pns.id, parent.execution.workflow_id),
            {"op": "notify_parent", "ns": pns.name, "parent": b64(parent.SerializeToString()),
             "close": b64(close.SerializeToString()), "child_namespace": child_namespace,
             "child": b64(child.SerializeToString()), "first_run_id": first_run_id, "workflow_type": workflow_type},
            lambda: super(ClusterEngine, self).notify_parent(pns, parent, close, child_namespace=child_namespace,
                                                             child=child, first_run_id=first_run_id,
                                                             workflow_type=workflow_type))


__all__ = ["CROSS_SHARD_RETRY_SECONDS", "ClusterEngine", "Router"]
