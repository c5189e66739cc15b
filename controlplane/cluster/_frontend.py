"""The frontend of a cluster member: routes each RPC to the member that can answer it.

- RPCs about one workflow (start, signal, query, update, cancel, terminate,
  describe, history, delete) and task completions (their task token names the workflow)
  run on the member that owns the workflow id's shard: locally, or forwarded over
  the internal RPC (retried while the shard moves between members).
- Worker polls are fanned out. Matching is local to the member that owns the
  workflow (a task is dispatched where its history lives, as in one process), so a
  poll that arrives at one member polls its own matching and *reserves* on every
  live peer at once. The first task found wins and is started on the member that
  holds it; tasks reserved elsewhere in the meantime are given back to the front
  of their queue. A reservation that nobody starts (the polling member died)
  goes back by itself after a few seconds. Workers therefore need the address of
  one member only (or of a load balancer in front of all of them).
- Everything else (namespaces, visibility list/count, system info) is answered
  locally from the shared store.
"""

from __future__ import annotations

import asyncio
import logging

from typing import Any

from spindle.api import service_pb2 as svc
from spindle.controlplane.deployments import version_key
from spindle.controlplane.errors import NotFound, Unavailable
from spindle.controlplane.frontend import FrontendService
from spindle.controlplane.frontend._validate import check_request, require_id, task_rate, validated
from spindle.controlplane.history._tokens import BadTokenError
from spindle.controlplane.matching import KIND_ACTIVITY, KIND_WORKFLOW

from ._engine import Router
from ._internal import InternalService
from ._peers import b64, unb64

log = logging.getLogger("spindle.cluster")

#: RPC name -> how to find (namespace name, workflow id) in its request.
_BY_WORKFLOW: dict[str, Any] = {
    "StartWorkflowExecution": lambda r: (r.namespace, r.workflow_id),
    "SignalWithStartWorkflowExecution": lambda r: (r.start.namespace, r.start.workflow_id),
    "SignalWorkflowExecution": lambda r: (r.namespace, r.workflow_execution.workflow_id),
    "QueryWorkflow": lambda r: (r.namespace, r.execution.workflow_id),
    "UpdateWorkflowExecution": lambda r: (r.namespace, r.workflow_execution.workflow_id),
    "RequestCancelWorkflowExecution": lambda r: (r.namespace, r.workflow_execution.workflow_id),
    "TerminateWorkflowExecution": lambda r: (r.namespace, r.workflow_execution.workflow_id),
    "ResetWorkflowExecution": lambda r: (r.namespace, r.workflow_execution.workflow_id),
    "UpdateWorkflowExecutionOptions": lambda r: (r.namespace, r.workflow_execution.workflow_id),
    "DescribeWorkflowExecution": lambda r: (r.namespace, r.execution.workflow_id),
    "GetWorkflowExecutionHistory": lambda r: (r.namespace, r.execution.workflow_id),
    "DeleteWorkflowExecution": lambda r: (r.namespace, r.workflow_execution.workflow_id),
    # an erasure job runs on the owner of the shard its job id hashes to (controlplane/erasure)
    "StartBatchOperation": lambda r: (r.namespace, r.job_id),
    # a schedule lives on the shard of its schedule id (hashed as a workflow id would be)
    "CreateSchedule": lambda r: (r.namespace, r.schedule_id),
    "UpdateSchedule": lambda r: (r.namespace, r.schedule_id),
    "PatchSchedule": lambda r: (r.namespace, r.schedule_id),
    "DeleteSchedule": lambda r: (r.namespace, r.schedule_id),
}
_BY_TOKEN = ("RespondWorkflowTaskCompleted", "RespondWorkflowTaskFailed", "RespondQueryTaskCompleted",
             "RespondActivityTaskCompleted", "RespondActivityTaskFailed", "RespondActivityTaskCanceled",
             "RecordActivityTaskHeartbeat")
#: Upper bound on how long a routed request waits for its shard to get an owner.
ROUTE_TIMEOUT = 30.0


@validated  # its own methods (the polls) check requests as the frontend's do
class ClusterFrontend:
    """Duck-types ``FrontendService`` (``make_servicer`` accepts it): routes, then delegates."""

    def __init__(self, inner: FrontendService, router: Router, internal: InternalService) -> None:
        self.inner = inner
        self.router = router
        self.internal = internal
        for rpc in _BY_WORKFLOW:
            setattr(self, rpc, self._routed(rpc, self._key_by_workflow))
        for rpc in _BY_TOKEN:
            setattr(self, rpc, self._routed(rpc, self._key_by_token))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)  # everything answered locally

    # ------------------------------------------------------------------ routing keys
    async def _namespace_id(self, name: str) -> str | None:
        namespaces = self.inner.namespaces
        try:
            return namespaces.get(name).id
        except NotFound:
            await namespaces.load()  # created on another member since we last looked
            try:
                return namespaces.get(name).id
            except NotFound:
                return None  # the local frontend reports it properly

    async def _key_by_workflow(self, rpc: str, req: Any) -> tuple[str, str] | None:
        ns_name, workflow_id = _BY_WORKFLOW[rpc](req)
        ns_id = await self._namespace_id(ns_name)
        if ns_id is None or not workflow_id:
            return None
        return ns_id, workflow_id

    async def _key_by_token(self, rpc: str, req: Any) -> tuple[str, str] | None:
        try:
            tok = self.inner.engine.tokens.verify(req.task_token)
        except BadTokenError:
            return None  # the local frontend rejects it with INVALID_ARGUMENT
        return tok.namespace_id, tok.workflow_id

    def _routed(self, rpc: str, key: Any) -> Any:
        async def call(req: Any, deadline: float | None) -> Any:
            check_request(rpc, req, self.inner.config)  # before routing: a bad request goes nowhere
            found = await key(rpc, req)
            local = getattr(self.inner, rpc)
            if found is None:
                return await local(req, deadline)
            shard_id = self.inner.engine.shard_id_of(*found)
            loop = asyncio.get_running_loop()
            budget = ROUTE_TIMEOUT if deadline is None else max(0.1, deadline - loop.time())

            async def remote(address: str, left: float) -> Any:
                out = await self.router.peers.call(address, {"op": "forward", "rpc": rpc,
                                                             "request": b64(req.SerializeToString())}, timeout=left)
                return _response_type(rpc).FromString(unb64(out["response"]))

            return await self.router.run(shard_id, lambda: local(req, deadline), remote, timeout=budget)

        call.__name__ = rpc
        return call

    # ------------------------------------------------------------------ polls
    async def PollWorkflowTaskQueue(self, req: svc.PollWorkflowTaskQueueRequest, deadline: float | None
                                    ) -> svc.PollWorkflowTaskQueueResponse:
        resp = await self._poll(req, deadline, KIND_WORKFLOW, sticky=req.sticky, rate=0.0)
        return resp if resp is not None else svc.PollWorkflowTaskQueueResponse()

    async def PollActivityTaskQueue(self, req: svc.PollActivityTaskQueueRequest, deadline: float | None
                                    ) -> svc.PollActivityTaskQueueResponse:
        rate = task_rate(req.max_tasks_per_second, self.inner.config)  # clamped to the server's floor and ceiling
        resp = await self._poll(req, deadline, KIND_ACTIVITY, sticky=False, rate=rate)
        return resp if resp is not None else svc.PollActivityTaskQueueResponse()

    async def _poll(self, req: Any, deadline: float | None, kind: int, *, sticky: bool, rate: float) -> Any:
        await self._namespace_id(req.namespace)  # (re)loads namespaces created on other members
        ns = self.inner.namespaces.get(req.namespace)  # NotFound / InvalidArgument as the frontend would say
        require_id(req.task_queue, "task_queue", self.inner.config)
        identity = req.identity or "anonymous"
        if kind == KIND_WORKFLOW:  # start admission counts the workers of a namespace (here and on each peer)
            self.inner.engine.note_workflow_poller(ns.id, identity)
        # a versioned poller gets only its build's tasks
        deployment, build = await self.inner.engine.deployments.poller(ns.id, req.deployment_options,
                                                                       "deployment_options.version")
        version = version_key(deployment, build) if deployment else ""
        loop = asyncio.get_running_loop()
        end = loop.time() + self.inner._poll_timeout(deadline)
        while True:
            remaining = end - loop.time()
            if remaining <= 0:
                return None
            got = await self._reserve_anywhere(ns.id, req.task_queue, kind, remaining, sticky=sticky, rate=rate,
                                               identity=identity, deployment=deployment, build=build)
            if got is None:
                return None
            address, rid = got
            if address is None:
                resp = await self.internal.start_reserved(rid, req.identity, version)
            else:
                try:
                    out = await self.router.peers.call(address, {"op": "start", "id": rid, "identity": req.identity,
                                                                 "version": version}, timeout=10.0)
                except Unavailable:
                    continue  # the peer died: its reservation dies with it; its shards' tasks come back from the store
                resp = _response_type("PollWorkflowTaskQueue" if kind == KIND_WORKFLOW else "PollActivityTaskQueue"
                                      ).FromString(unb64(out["response"])) if out.get("response") else None
            if resp is not None:
                return resp

    async def _reserve_anywhere(self, ns_id: str, queue: str, kind: int, timeout: float, *, sticky: bool,
                                rate: float, identity: str = "", deployment: str = "", build: str = ""
                                ) -> tuple[str | None, str] | None:
        """Reserve the first task any member has for the queue: (member address or None for here, reservation id).

        One reserve call per live peer is kept running for the whole poll: a peer
        that joins (or comes back from a pause) during a long poll is added at the
        next membership check, and a failed peer is retried while it stays live.
        """
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout

        async def local() -> tuple[str | None, str] | None:
            ref = await self.inner.engine.matching.poll(ns_id, queue, kind, timeout, sticky=sticky, rate=rate,
                                                        deployment=deployment, build=build)
            return None if ref is None else (None, self.internal.hold(ref, queue, kind, sticky))

        async def remote(address: str) -> tuple[str | None, str] | None:
            left = max(0.0, end - loop.time())
            try:
                out = await self.router.peers.call(
                    address, {"op": "reserve", "ns_id": ns_id, "queue": queue, "kind": kind, "sticky": sticky,
                              "rate": rate, "timeout": left, "identity": identity, "deployment": deployment,
                              "build": build}, timeout=left + 5.0)
            except Unavailable:
                await asyncio.sleep(min(left, 1.0))  # a dead peer: do not spin; its shards move to the living
                return None
            return (address, str(out["id"])) if out.get("id") else None

        tasks: list[asyncio.Future[tuple[str | None, str] | None]] = [asyncio.ensure_future(local())]
        polling: dict[str, asyncio.Future[tuple[str | None, str] | None]] = {}
        winner: tuple[str | None, str] | None = None
        check_every = max(0.2, self.router.leases.interval)
        try:
            while winner is None and loop.time() < end:
                for address in self._peer_addresses():
                    running = polling.get(address)
                    if running is None or running.done():
                        polling[address] = asyncio.ensure_future(remote(address))
                        tasks.append(polling[address])
                pending = [t for t in tasks if not t.done()]
                if not pending:
                    break
                done, _ = await asyncio.wait(pending, timeout=min(check_every, max(0.0, end - loop.time())),
                                             return_when=asyncio.FIRST_COMPLETED)
                for t in done:
                    if t.cancelled():
                        continue
                    if t.exception() is not None:
                        log.warning("poll of a peer failed: %s", t.exception())
                    elif winner is None and t.result() is not None:
                        winner = t.result()
                if tasks[0].done() and winner is None:
                    break  # the local long poll timed out: so does this poll
        finally:
            for t in tasks:
                if not t.done():
                    t.cancel()
            for t in tasks:  # every other reservation goes back to its queue
                try:
                    res = await t
                except (asyncio.CancelledError, Exception):  # noqa: BLE001 - only reservations matter here
                    continue
                if res is not None and res is not winner:
                    self._give_back(res)
        return winner

    def _give_back(self, res: tuple[str | None, str]) -> None:
        address, rid = res
        if address is None:
            self.internal.give_back(rid)
            return

        async def send() -> None:
            try:
                await self.router.peers.call(address, {"op": "give_back", "id": rid}, timeout=5.0)
            except Exception as e:  # noqa: BLE001 - the reservation then expires by itself
                log.info("give back to %s failed: %s", address, e)

        asyncio.ensure_future(send())

    def _peer_addresses(self) -> list[str]:
        from ._leases import now_ms

        leases = self.router.leases
        now = now_ms()
        return sorted({m.address for m in leases.view.members.values()
                       if m.member_id != leases.member_id and now - m.heartbeat_ms < leases.ttl_ms})


def _response_type(rpc: str) -> Any:
    method = svc.DESCRIPTOR.services_by_name["WorkflowService"].methods_by_name[rpc]
    return getattr(svc, method.output_type.name)


__all__ = ["ClusterFrontend", "ROUTE_TIMEOUT"]
