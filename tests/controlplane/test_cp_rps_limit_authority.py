"""Security issue 26, finding 3: a namespace admin must not lift its own namespace's request rate limit.

Limits are the operator's: only a system admin raises ``rps_limit`` (up to the cap,
``namespace_rps_limit_max``, which defaults to the server's ``namespace_rps_limit``); a
namespace admin may lower it. A refused change changes nothing.
"""

from __future__ import annotations

import sys

from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest

from spindle.api import service_pb2 as svc
from spindle.controlplane._resource_rules import raises_rate
from spindle.controlplane.config import ServerConfig
from spindle.controlplane.namespaces import rps_limit_cap

sys.path.insert(0, str(Path(__file__).parent))
from _auth_world import World, bearer, make_world  # noqa: E402


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[World]:
    w = await make_world(tmp_path)  # the server's defaults: namespace_rps_limit 2400, no namespace_rps_limit_max
    try:
        yield w
    finally:
        await w.close()


def set_rps(limit: float) -> svc.UpdateNamespaceRequest:
    return svc.UpdateNamespaceRequest(name="ns-a", update_mask=["rps_limit"], rps_limit=limit)


async def rps_of(w: World) -> float:
    return (await w.ok("DescribeNamespace", svc.DescribeNamespaceRequest(name="ns-a"))).namespace_info.rps_limit


async def test_a_namespace_admin_cannot_raise_its_limit_but_may_lower_it(world: World) -> None:
    w = world
    await w.ok("UpdateNamespace", set_rps(5))  # the operator's value
    for asked in (0, 1e9, 5.5):
        status, details = await w.call("UpdateNamespace", set_rps(asked), bearer(w.keys["a:admin"]))
        assert status == grpc.StatusCode.PERMISSION_DENIED, (asked, status, details)
        assert "rps_limit" in details and "system admin" in details and "now 5 requests per second" in details
        assert await rps_of(w) == 5, "a refused change changes nothing"
    # other fields in the same request do not slip through either
    status, _ = await w.call("UpdateNamespace", svc.UpdateNamespaceRequest(
        name="ns-a", update_mask=["rps_limit", "description"], rps_limit=0, description="mine"), bearer(w.keys["a:admin"]))
    assert status == grpc.StatusCode.PERMISSION_DENIED
    ns = (await w.ok("DescribeNamespace", svc.DescribeNamespaceRequest(name="ns-a"))).namespace_info
    assert ns.description != "mine" and ns.rps_limit == 5
    # lowering, and keeping the same value, are the namespace admin's to do
    assert (await w.ok("UpdateNamespace", set_rps(2), "a:admin")).namespace_info.rps_limit == 2
    assert (await w.ok("UpdateNamespace", set_rps(2), "a:admin")).namespace_info.rps_limit == 2
    status, details = await w.call("UpdateNamespace", set_rps(3), bearer(w.keys["a:admin"]))  # back up: a raise
    assert status == grpc.StatusCode.PERMISSION_DENIED and "now 2 requests per second" in details
    # a namespace admin's other updates, which leave rps_limit alone, still work
    await w.ok("UpdateNamespace", svc.UpdateNamespaceRequest(name="ns-a", update_mask=["description"],
                                                             description="team a"), "a:admin")
    assert await rps_of(w) == 2


async def test_a_system_admin_raises_up_to_the_cap(world: World) -> None:
    w = world
    await w.ok("UpdateNamespace", set_rps(5))
    assert (await w.ok("UpdateNamespace", set_rps(2400))).namespace_info.rps_limit == 2400  # the cap: namespace_rps_limit
    for over in (2400.5, 0):  # over the cap, and unlimited
        status, details = await w.call("UpdateNamespace", set_rps(over), bearer(w.keys["admin"]))
        assert status == grpc.StatusCode.INVALID_ARGUMENT, (over, status, details)
        assert "rps_limit" in details and "2400" in details and "namespace_rps_limit_max" in details
    assert await rps_of(w) == 2400
    status, _ = await w.call("CreateNamespace", svc.CreateNamespaceRequest(name="ns-big", rps_limit=1e9),
                             bearer(w.keys["admin"]))
    assert status == grpc.StatusCode.INVALID_ARGUMENT


async def test_the_limit_a_namespace_admin_could_not_lift_still_holds(world: World) -> None:
    """The 200-call burst of the finding: after the refused raise, a burst is held to the operator's limit."""
    w = world
    await w.ok("UpdateNamespace", set_rps(5))
    await w.call("UpdateNamespace", set_rps(0), bearer(w.keys["a:admin"]))
    codes = [(await w.call("CountWorkflowExecutions", svc.CountWorkflowExecutionsRequest(namespace="ns-a"),
                           bearer(w.keys["a:admin"])))[0] for _ in range(40)]
    passed = codes.count(grpc.StatusCode.OK)
    assert 5 <= passed <= 8, codes  # a full second's worth, plus what refilled meanwhile
    assert codes.count(grpc.StatusCode.RESOURCE_EXHAUSTED) == 40 - passed


def test_the_rules() -> None:
    assert raises_rate(5, 6) and raises_rate(5, 0) and not raises_rate(5, 5) and not raises_rate(5, 1)
    assert not raises_rate(0, 0) and not raises_rate(0, 1e9)  # nothing allows more than unlimited
    assert rps_limit_cap(ServerConfig()) == 2400  # the default cap is the default limit, not unlimited
    assert rps_limit_cap(ServerConfig(namespace_rps_limit_max=5000)) == 5000
    assert rps_limit_cap(ServerConfig(namespace_rps_limit=0)) == 0  # an operator who wants no limits at all
