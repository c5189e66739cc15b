"""Routing for a cluster member's history engine: operations on other shards run on their owners.

A member runs the ordinary ``HistoryEngine``, owning only the shards its leases give it
(``add_shard``/``remove_shard``); calls waiting on a shard that is handed over end with
Unavailable (the engine's ``ShardController.while_owned``). The engine reaches across
shards through its cross-shard port, in five operations (transfer tasks, and the
frontend's start, cancel and terminate): starting a workflow (a child), cancelling or
terminating another workflow (external cancels, parent-close policies), signalling
another workflow, and telling a parent its child closed. ``ClusterCrossShard`` is the
port the member plugs into its engine: it runs a call locally when this member owns the
target's shard, otherwise sends it to the owner over the internal RPC (``_internal``),
retried while the shard is between owners. ``Router`` finds the owner.
"""

from __future__ import annotations

import asyncio

from collections.abc import Awaitable, Callable
from typing import Any

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.controlplane.errors import ShardNotOwned
from spindle.controlplane.history import CrossShard, HistoryEngine
from spindle.controlplane.namespaces import Namespace

from ._leases import ClusterView, LeaseManager, now_ms
from ._peers import NOT_OWNER, Peers, b64, with_retry

#: How long an operation for another shard keeps retrying while the shard has no reachable owner.
CROSS_SHARD_RETRY_SECONDS = 60.0
#: Seconds between two checks, while a forwarded call waits, that its target still holds the shard's lease.
LEASE_CHECK_INTERVAL = 0.25


class Router:
    """Finds the member that owns a shard: this process, or a peer's address."""

    def __init__(self, engine: HistoryEngine, leases: LeaseManager, peers: Peers) -> None:
        self.engine = engine
        self.leases = leases
        self.peers = peers
        self._refreshing: asyncio.Future[ClusterView] | None = None

    async def refresh_view(self) -> ClusterView:
        """Re-read the cluster view; calls made while a read is in flight share it.

        While a member is down every request for its shards retries and refreshes: without
        sharing, hundreds of identical reads reach the store at once and slow the lease
        renewals and claims that end the outage.
        """
        if self._refreshing is None or self._refreshing.done():
            self._refreshing = asyncio.ensure_future(self.leases.refresh_view())
        return await asyncio.shield(self._refreshing)

    def is_local(self, shard_id: int) -> bool:
        return shard_id in self.engine.shards

    async def owner(self, shard_id: int) -> tuple[str, str] | None:
        """None when this process serves the shard, else the owner's (member id, address); Unavailable while it has none."""
        if self.is_local(shard_id):
            return None
        found = self.leases.view.owner_address(shard_id, now_ms())
        if found is None or found[0] == self.leases.member_id:
            view = await self.refresh_view()
            found = view.owner_address(shard_id, now_ms())
        if self.is_local(shard_id):
            return None
        if found is None or found[0] == self.leases.member_id:
            raise ShardNotOwned(f"shard {shard_id} {NOT_OWNER}: it is moving between members; retry")
        return found

    async def moved_from(self, shard_id: int, member_id: str) -> str | None:
        """The member that now holds ``shard_id``'s lease if it is no longer ``member_id``, else None.

        Only a live lease held by another member counts: an expired lease alone does not (its
        holder may just be late renewing, and a call re-sent to it could run twice). While the
        view shows the lease expired, the view is re-read (one read shared by every waiting
        call), so the new owner is seen as soon as it has claimed the shard.
        """
        lease = self.leases.view.leases.get(shard_id)
        now = now_ms()
        if lease is not None and lease.owner == member_id and lease.expiry_ms <= now:
            lease = (await self.refresh_view()).leases.get(shard_id)
        if lease is not None and lease.owner and lease.owner != member_id and lease.expiry_ms > now_ms():
            return lease.owner
        return None

    async def refresh(self) -> None:
        await self.refresh_view()

    async def run(self, shard_id: int, local: Callable[[], Awaitable[Any]],
                  remote: Callable[[str, float], Awaitable[Any]], *, timeout: float) -> Any:
        """``local()`` if this process owns the shard, else ``remote(address, seconds_left)``; retried on Unavailable.

        A call forwarded to the owner follows the lease: when the latest cluster view shows
        another member holding the shard (the owner was paused or cut off past its lease), the
        call is abandoned and sent to the new owner, instead of waiting for the old one to answer.
        The old owner's write, if it ever runs, is fenced by the new owner's range id; operations
        are retried with their request ids, so the new owner applies each once.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout

        async def attempt() -> Any:
            found = await self.owner(shard_id)
            if found is None:
                return await local()
            member_id, address = found
            call = asyncio.ensure_future(remote(address, max(0.1, deadline - loop.time())))
            try:
                while True:
                    done, _ = await asyncio.wait((call,), timeout=LEASE_CHECK_INTERVAL)
                    if done:
                        return call.result()
                    moved_to = await self.moved_from(shard_id, member_id)
                    if moved_to is not None:
                        raise ShardNotOwned(f"shard {shard_id} moved from {member_id} to {moved_to} while a call to "
                                            f"{member_id} waited; retrying at {moved_to}")
            finally:
                if not call.done():
                    call.cancel()

        return await with_retry(attempt, deadline=deadline, on_retry=self.refresh)


class ClusterCrossShard:
    """The engine's cross-shard port on a cluster member: run where the target's shard is owned.

    Each call runs on ``local`` (the engine's ``local_cross_shard``) when this member owns
    the target's shard, else on the owner over the internal RPC (which runs it on its own
    ``local_cross_shard``), retried while the shard is between owners.
    """

    def __init__(self, router: Router, local: CrossShard) -> None:
        self.router = router
        self.local = local

    def _shard_of(self, namespace_id: str, workflow_id: str) -> int:
        return self.router.engine.shard_id_of(namespace_id, workflow_id)

    async def _run(self, shard_id: int, payload: dict[str, Any], local: Callable[[], Awaitable[Any]]) -> Any:
        async def remote(address: str, left: float) -> Any:
            return await self.router.peers.call(address, payload, timeout=left)

        return await self.router.run(shard_id, local, remote, timeout=CROSS_SHARD_RETRY_SECONDS)

    async def start_workflow(self, ns: Namespace, req: svc.StartWorkflowExecutionRequest, *,
                             parent: pb.ParentExecutionInfo | None = None) -> tuple[str, bool]:
        out = await self._run(
            self._shard_of(ns.id, req.workflow_id),
            {"op": "start_workflow", "ns": ns.name, "req": b64(req.SerializeToString()),
             "parent": b64(parent.SerializeToString()) if parent is not None else None},
            lambda: self.local.start_workflow(ns, req, parent=parent))
        if isinstance(out, dict):
            return str(out["run_id"]), bool(out["started"])
        return out

    async def request_cancel(self, ns: Namespace, execution: pb.WorkflowExecution, identity: str, reason: str,
                             external: tuple[int, pb.WorkflowExecution] | None = None) -> None:
        ext = [external[0], b64(external[1].SerializeToString())] if external is not None else None
        await self._run(
            self._shard_of(ns.id, execution.workflow_id),
            {"op": "request_cancel", "ns": ns.name, "execution": b64(execution.SerializeToString()),
             "identity": identity, "reason": reason, "external": ext},
            lambda: self.local.request_cancel(ns, execution, identity, reason, external))

    async def terminate(self, ns: Namespace, execution: pb.WorkflowExecution, reason: str, details: pb.Payloads,
                        identity: str) -> None:
        await self._run(
            self._shard_of(ns.id, execution.workflow_id),
            {"op": "terminate", "ns": ns.name, "execution": b64(execution.SerializeToString()), "reason": reason,
             "details": b64(details.SerializeToString()), "identity": identity},
            lambda: self.local.terminate(ns, execution, reason, details, identity))

    async def signal(self, ns: Namespace, target: pb.WorkflowExecution, name: str, payloads: pb.Payloads,
                     header: pb.Header, request_id: str, source: pb.WorkflowExecution) -> None:
        await self._run(
            self._shard_of(ns.id, target.workflow_id),
            {"op": "deliver_external_signal", "ns": ns.name, "target": b64(target.SerializeToString()), "name": name,
             "payloads": b64(payloads.SerializeToString()), "header": b64(header.SerializeToString()),
             "request_id": request_id, "source": b64(source.SerializeToString())},
            lambda: self.local.signal(ns, target, name, payloads, header, request_id, source))

    async def notify_parent(self, pns: Namespace, parent: pb.ParentExecutionInfo, close: pb.HistoryEvent, *,
                            child_namespace: str, child: pb.WorkflowExecution, first_run_id: str,
                            workflow_type: str) -> None:
        await self._run(
            self._shard_of(pns.id, parent.execution.workflow_id),
            {"op": "notify_parent", "ns": pns.name, "parent": b64(parent.SerializeToString()),
             "close": b64(close.SerializeToString()), "child_namespace": child_namespace,
             "child": b64(child.SerializeToString()), "first_run_id": first_run_id, "workflow_type": workflow_type},
            lambda: self.local.notify_parent(pns, parent, close, child_namespace=child_namespace, child=child,
                                             first_run_id=first_run_id, workflow_type=workflow_type))

    async def schedule_run_closed(self, ns: Namespace, schedule_id: str, execution: pb.WorkflowExecution) -> None:
        await self._run(
            self._shard_of(ns.id, schedule_id),
            {"op": "schedule_run_closed", "ns": ns.name, "schedule_id": schedule_id,
             "execution": b64(execution.SerializeToString())},
            lambda: self.local.schedule_run_closed(ns, schedule_id, execution))


__all__ = ["CROSS_SHARD_RETRY_SECONDS", "LEASE_CHECK_INTERVAL", "ClusterCrossShard", "Router"]
