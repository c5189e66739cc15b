"""Who may manage a Nexus endpoint (docs/SECURITY.md): the admin of its target namespace, for its current target
and for the new one; anyone authenticated reads. The auth matrix covers each RPC against each role; these are
the cases only the registry can decide (it alone knows an endpoint's current target)."""

from __future__ import annotations

import importlib.util
import sys

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc


def _auth_world() -> Any:
    """tests/controlplane/_auth_world.py (servers with keys of each role), loaded by path (no sys.path change)."""
    spec = importlib.util.spec_from_file_location("auth_world_for_nexus",
                                                  Path(__file__).resolve().parents[1] / "_auth_world.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (its dataclasses look their module up)
    spec.loader.exec_module(module)
    return module


_world = _auth_world()
QA, World, bearer, make_world = _world.QA, _world.World, _world.bearer, _world.make_world

pytestmark = pytest.mark.timeout(120)
PD = grpc.StatusCode.PERMISSION_DENIED


def spec(name: str, ns: str, callers: tuple[str, ...] = ()) -> pb.EndpointSpec:
    return pb.EndpointSpec(name=name, target=pb.EndpointTarget(worker=pb.EndpointTarget.Worker(
        namespace=ns, task_queue=QA)), allowed_caller_namespaces=list(callers))


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[Any]:
    w = await make_world(tmp_path)
    try:
        yield w
    finally:
        await w.close()


async def test_the_admin_of_another_namespace_cannot_take_an_endpoint_over(world: Any) -> None:
    w = world
    before = w.snapshot()
    # b's admin retargets a's endpoint to ns-b: it administers the new target, not the current one
    status, detail = await w.call("UpdateNexusEndpoint", svc.UpdateNexusEndpointRequest(
        id=w.endpoint_id, version=1, spec=spec("a_endpoint", "ns-b")), bearer(w.keys["b:admin"]))
    assert status == PD and "'ns-a'" in detail and "current target" in detail, detail
    # a's admin may not point its endpoint at ns-b's queue either
    status, detail = await w.call("UpdateNexusEndpoint", svc.UpdateNexusEndpointRequest(
        id=w.endpoint_id, version=1, spec=spec("a_endpoint", "ns-b")), bearer(w.keys["a:admin"]))
    assert status == PD and "'ns-b'" in detail, detail
    status, detail = await w.call("DeleteNexusEndpoint", svc.DeleteNexusEndpointRequest(id=w.endpoint_id, version=1),
                                  bearer(w.keys["b:admin"]))
    assert status == PD and "'ns-a'" in detail, detail
    assert w.snapshot() == before


async def test_a_target_admin_lets_another_namespace_call_and_everyone_reads(world: Any) -> None:
    w = world
    made = (await w.ok("CreateNexusEndpoint", svc.CreateNexusEndpointRequest(spec=spec("shared", "ns-a", ("ns-b",))),
                       who="a:admin")).endpoint
    for who in ("b:writer", "a:reader", "b:admin"):
        got = await w.ok("GetNexusEndpoint", svc.GetNexusEndpointRequest(id=made.id), who=who)
        assert list(got.endpoint.spec.allowed_caller_namespaces) == ["ns-b"]
        listed = await w.ok("ListNexusEndpoints", svc.ListNexusEndpointsRequest(), who=who)
        assert {e.spec.name for e in listed.endpoints} == {"a_endpoint", "shared"}
    await w.ok("DeleteNexusEndpoint", svc.DeleteNexusEndpointRequest(id=made.id, version=1), who="a:admin")
