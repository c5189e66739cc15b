"""The standard ``grpc.health.v1.Health`` service on the public port (load balancers, orchestrators).

A process is SERVING once it owns at least one shard and its store answers; until then,
and whenever either stops being true, it is NOT_SERVING. Both the overall status (service
``""``) and the WorkflowService's are reported. The check runs in the background every
``interval`` seconds, so a health probe never waits on the store.
"""

from __future__ import annotations

import asyncio
import logging

from collections.abc import Awaitable, Callable

import grpc

from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from spindle.api import service_pb2 as svc

__all__ = ["WORKFLOW_SERVICE", "HealthReporter"]

log = logging.getLogger("spindle.server")

#: The service name the WorkflowService's health is reported under.
WORKFLOW_SERVICE = svc.DESCRIPTOR.services_by_name["WorkflowService"].full_name

_SERVING = health_pb2.HealthCheckResponse.SERVING
_NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


class HealthReporter:
    """Keeps the health status of a server up to date from ``shards_owned`` and ``store_answers``.

    ``add_to(server)`` registers the service (NOT_SERVING); ``start()`` begins checking;
    ``stop()`` ends the checks and reports NOT_SERVING (a draining process).
    """

    def __init__(self, shards_owned: Callable[[], int], store_answers: Callable[[], Awaitable[object]], *,
                 interval: float = 2.0, store_timeout: float = 5.0, service_name: str = WORKFLOW_SERVICE) -> None:
        self.servicer = health.aio.HealthServicer()
        self._shards_owned = shards_owned
        self._store_answers = store_answers
        self._interval = interval
        self._store_timeout = store_timeout
        self._names = ("", service_name)
        self._task: asyncio.Task[None] | None = None
        self.serving = False

    async def add_to(self, server: grpc.aio.Server) -> None:
        """Register the Health service on ``server``, NOT_SERVING until the first check passes."""
        health_pb2_grpc.add_HealthServicer_to_server(self.servicer, server)
        await self._set(False)

    async def _set(self, serving: bool) -> None:
        for name in self._names:
            await self.servicer.set(name, _SERVING if serving else _NOT_SERVING)
        if serving != self.serving:
            log.info("health: %s", "SERVING" if serving else "NOT_SERVING")
        self.serving = serving

    async def check(self) -> bool:
        """Check now and update the status; True when SERVING."""
        ok = self._shards_owned() > 0
        if ok:
            try:
                await asyncio.wait_for(self._store_answers(), self._store_timeout)
            except Exception as e:  # noqa: BLE001 - any failure of the store means not serving
                log.warning("health: the store does not answer: %s", e)
                ok = False
        await self._set(ok)
        return ok

    async def _run(self) -> None:
        while True:
            await self.check()
            await asyncio.sleep(self._interval)

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="spindle-health")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None
        await self._set(False)
