"""Idempotent calls ride out a server restart; others fail at once."""

from __future__ import annotations

from typing import Any

import grpc
import pytest

from spindle.api import service_pb2 as svc
from spindle.client import Client
from spindle.exceptions import RPCError


class _FlakyStub:
    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.calls: list[tuple[str, Any]] = []

    def __getattr__(self, name: str) -> Any:
        async def call(request: Any, **_: Any) -> Any:
            self.calls.append((name, request))
            if len(self.calls) <= self.failures:
                raise grpc.aio.AioRpcError(grpc.StatusCode.UNAVAILABLE, grpc.aio.Metadata(), grpc.aio.Metadata(),
                                           details="server restarting")
            return svc.SignalWorkflowExecutionResponse()

        return call


async def test_signal_is_retried_with_the_same_request_id() -> None:
    stub = _FlakyStub(failures=2)
    client = Client(stub, namespace="default")
    await client.get_workflow_handle("w").signal("go", 1)
    assert [n for n, _ in stub.calls] == ["SignalWorkflowExecution"] * 3
    ids = {r.request_id for _, r in stub.calls}
    assert len(ids) == 1 and ids != {""}  # one request id: the server records the signal once


async def test_non_idempotent_calls_are_not_retried() -> None:
    stub = _FlakyStub(failures=1)
    client = Client(stub, namespace="default")
    with pytest.raises(RPCError) as err:
        await client.get_workflow_handle("w").terminate("r")
    assert err.value.status == "UNAVAILABLE" and len(stub.calls) == 1
