"""The Nexus endpoint registry over the wire (issue 30; docs/NEXUS.md): Temporal's Create/Get/List/Update/
DeleteNexusEndpoint with versions, unique names and the input rules; every refusal changes nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from versioned_wire import NS, control_plane

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc

pytestmark = pytest.mark.timeout(60)


def spec(name: str = "orders", ns: str = NS, queue: str = "orders-q", callers: tuple[str, ...] = ()) -> pb.EndpointSpec:
    return pb.EndpointSpec(name=name, target=pb.EndpointTarget(worker=pb.EndpointTarget.Worker(
        namespace=ns, task_queue=queue)), allowed_caller_namespaces=list(callers))


@pytest.fixture
async def stub(tmp_path: Path) -> AsyncIterator[Any]:
    async with control_plane(tmp_path / "cp.db") as (_cp, wire, _address):
        await wire.stub.CreateNamespace(svc.CreateNamespaceRequest(name="callers"), timeout=10)
        yield wire.stub


async def refused(call: Any, code: grpc.StatusCode) -> str:
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await call
    assert info.value.code() == code, info.value.details()
    return str(info.value.details())


async def names(stub: Any) -> list[str]:
    return [e.spec.name for e in (await stub.ListNexusEndpoints(svc.ListNexusEndpointsRequest(), timeout=10)).endpoints]


async def test_create_get_list_update_delete(stub: Any) -> None:
    made = (await stub.CreateNexusEndpoint(svc.CreateNexusEndpointRequest(spec=spec(callers=("callers",))),
                                           timeout=10)).endpoint
    assert made.id and made.version == 1 and made.created_time_ms > 0
    got = (await stub.GetNexusEndpoint(svc.GetNexusEndpointRequest(id=made.id), timeout=10)).endpoint
    assert got == made and list(got.spec.allowed_caller_namespaces) == ["callers"]
    assert await names(stub) == ["orders"]
    by_name = await stub.ListNexusEndpoints(svc.ListNexusEndpointsRequest(name="orders"), timeout=10)
    assert [e.id for e in by_name.endpoints] == [made.id]

    updated = (await stub.UpdateNexusEndpoint(svc.UpdateNexusEndpointRequest(
        id=made.id, version=1, spec=spec("orders2", queue="q2")), timeout=10)).endpoint
    assert updated.version == 2 and updated.spec.target.worker.task_queue == "q2"
    assert updated.created_time_ms == made.created_time_ms
    # a stale version is refused and changes nothing
    detail = await refused(stub.UpdateNexusEndpoint(svc.UpdateNexusEndpointRequest(
        id=made.id, version=1, spec=spec("stale")), timeout=10), grpc.StatusCode.FAILED_PRECONDITION)
    assert "version 2" in detail
    await refused(stub.DeleteNexusEndpoint(svc.DeleteNexusEndpointRequest(id=made.id, version=1), timeout=10),
                  grpc.StatusCode.FAILED_PRECONDITION)
    assert await names(stub) == ["orders2"]
    await stub.DeleteNexusEndpoint(svc.DeleteNexusEndpointRequest(id=made.id, version=2), timeout=10)
    assert await names(stub) == []
    await refused(stub.GetNexusEndpoint(svc.GetNexusEndpointRequest(id=made.id), timeout=10),
                  grpc.StatusCode.NOT_FOUND)


async def test_names_are_unique(stub: Any) -> None:
    await stub.CreateNexusEndpoint(svc.CreateNexusEndpointRequest(spec=spec("a")), timeout=10)
    b = (await stub.CreateNexusEndpoint(svc.CreateNexusEndpointRequest(spec=spec("b")), timeout=10)).endpoint
    detail = await refused(stub.CreateNexusEndpoint(svc.CreateNexusEndpointRequest(spec=spec("a")), timeout=10),
                           grpc.StatusCode.ALREADY_EXISTS)
    assert "'a'" in detail
    await refused(stub.UpdateNexusEndpoint(svc.UpdateNexusEndpointRequest(id=b.id, version=1, spec=spec("a")),
                                           timeout=10), grpc.StatusCode.ALREADY_EXISTS)
    assert await names(stub) == ["a", "b"]


@pytest.mark.parametrize(("bad", "field"), [
    (spec("1starts-with-digit"), "spec.name"),
    (spec("has space"), "spec.name"),
    (spec("x" * 201), "spec.name"),
    (spec(""), "spec.name"),
    (spec(ns=""), "spec.target.worker.namespace"),
    (spec(ns="no-such-ns"), "spec.target.worker.namespace"),
    (spec(queue=""), "spec.target.worker.task_queue"),
    (spec(callers=("no-such-ns",)), "spec.allowed_caller_namespaces"),
    (spec(callers=("callers", "callers")), "spec.allowed_caller_namespaces"),
    (pb.EndpointSpec(name="no_target"), "spec.target.worker"),
])
async def test_bad_specs_are_refused_naming_the_field(stub: Any, bad: pb.EndpointSpec, field: str) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stub.CreateNexusEndpoint(svc.CreateNexusEndpointRequest(spec=bad), timeout=10)
    assert info.value.code() in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND)
    assert str(info.value.details()).startswith(field), info.value.details()
    assert await names(stub) == []


async def test_names_temporal_accepts_are_accepted(stub: Any) -> None:
    for name in ("_x", "my-endpoint", "A_1-b", "x" * 200):
        await stub.CreateNexusEndpoint(svc.CreateNexusEndpointRequest(spec=spec(name)), timeout=10)
    assert len(await names(stub)) == 4


async def test_list_pages(stub: Any) -> None:
    for n in ("c", "a", "b"):
        await stub.CreateNexusEndpoint(svc.CreateNexusEndpointRequest(spec=spec(n)), timeout=10)
    first = await stub.ListNexusEndpoints(svc.ListNexusEndpointsRequest(page_size=2), timeout=10)
    assert [e.spec.name for e in first.endpoints] == ["a", "b"] and first.next_page_token
    rest = await stub.ListNexusEndpoints(svc.ListNexusEndpointsRequest(page_size=2,
                                                                        next_page_token=first.next_page_token),
                                         timeout=10)
    assert [e.spec.name for e in rest.endpoints] == ["c"] and not rest.next_page_token


async def test_an_idle_nexus_poll_waits_out_its_long_poll(tmp_path: Path) -> None:
    """No Nexus task is dispatched yet: a poll must still wait like an idle queue's, or workers spin on it."""
    import asyncio

    async with control_plane(tmp_path / "cp.db", long_poll_timeout=1.0) as (_cp, wire, _address):
        loop = asyncio.get_running_loop()
        began = loop.time()
        resp = await wire.stub.PollNexusTaskQueue(svc.PollNexusTaskQueueRequest(namespace=NS, task_queue="q"),
                                                  timeout=10)
        assert not resp.task_token and loop.time() - began >= 0.9
