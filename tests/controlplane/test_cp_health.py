"""grpc.health.v1.Health on the public port, asked with the standard health client (grpc_health.v1)."""

from __future__ import annotations

import asyncio

from pathlib import Path

import grpc
import pytest

from grpc_health.v1 import health_pb2, health_pb2_grpc

from spindle.controlplane._health import WORKFLOW_SERVICE
from spindle.controlplane.server import ControlPlane, serve
from spindle.controlplane.store.sqlite import SqliteStore

pytestmark = pytest.mark.timeout(60)

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


async def health_status(address: str, service: str = "") -> int:
    async with grpc.aio.insecure_channel(address) as ch:
        resp = await health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
        return resp.status


async def wait_status(address: str, want: int, service: str = "", timeout: float = 15.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while (got := await health_status(address, service)) != want:
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"health of {service!r}: {got}, wanted {want}")
        await asyncio.sleep(0.1)


async def test_serving_once_started_and_not_serving_when_the_store_stops_answering(tmp_path: Path) -> None:
    cp = ControlPlane(SqliteStore(str(tmp_path / "h.db")))
    await cp.start()
    server, port = await serve(cp, "127.0.0.1", 0)
    address = f"127.0.0.1:{port}"
    try:
        await wait_status(address, SERVING)
        assert await health_status(address, WORKFLOW_SERVICE) == SERVING
        assert WORKFLOW_SERVICE == "spindle.v1.WorkflowService"
        await cp.store.close()  # the store no longer answers
        assert await cp.health.check() is False
        assert await health_status(address, "") == NOT_SERVING
        assert await health_status(address, WORKFLOW_SERVICE) == NOT_SERVING
    finally:
        await server.stop(0)
        await cp.health.stop()


async def test_health_needs_no_credentials(tmp_path: Path) -> None:
    """Load balancers probe without an API key: the Health service is not behind the authorizer."""
    from spindle.controlplane.auth import AuthSettings

    cp = ControlPlane(SqliteStore(str(tmp_path / "a.db")), auth=AuthSettings(mode="api_keys"))
    await cp.start()
    server, port = await serve(cp, "127.0.0.1", 0)
    try:
        await wait_status(f"127.0.0.1:{port}", SERVING)
    finally:
        await server.stop(0)
        await cp.stop()
