"""The SDK's reading of a throttled call's retry delay, and its retries (without a server)."""

from __future__ import annotations

import asyncio

import grpc
import grpc.aio
import pytest

from spindle.api import RETRY_AFTER_KEY
from spindle.client._retry_delay import call_with_retries, retry_delay, throttled_wait
from spindle.controlplane.errors import retry_after_metadata
from spindle.worker._polling import POLL_ERROR_MAX_BACKOFF, poll_error_wait


def error(code: grpc.StatusCode, trailing: tuple[tuple[str, str | bytes], ...] = ()) -> grpc.aio.AioRpcError:
    return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), grpc.aio.Metadata(*trailing), details="x")


def throttled(seconds: float) -> grpc.aio.AioRpcError:
    code = grpc.StatusCode.RESOURCE_EXHAUSTED
    return error(code, retry_after_metadata(code, "x", seconds))


def test_the_delay_is_read_from_retry_info_first_then_the_plain_trailer() -> None:
    assert retry_delay(throttled(0.25)) == pytest.approx(0.25)
    only_rich = tuple(kv for kv in retry_after_metadata(grpc.StatusCode.RESOURCE_EXHAUSTED, "x", 1.5)
                      if kv[0] != RETRY_AFTER_KEY)
    assert retry_delay(error(grpc.StatusCode.RESOURCE_EXHAUSTED, only_rich)) == pytest.approx(1.5)
    assert retry_delay(error(grpc.StatusCode.RESOURCE_EXHAUSTED, ((RETRY_AFTER_KEY, "40"),))) == pytest.approx(0.04)
    assert retry_delay(error(grpc.StatusCode.RESOURCE_EXHAUSTED)) is None  # e.g. a payload over the limit
    assert retry_delay(error(grpc.StatusCode.UNAVAILABLE, ((RETRY_AFTER_KEY, "40"),))) is None


def test_waits_are_the_delay_plus_a_bounded_jitter() -> None:
    for attempt in (1, 5, 50):
        w = throttled_wait(throttled(0.1), attempt)
        assert w is not None and 0.1 <= w <= 0.1 + 2.0 + 1e-9
    assert throttled_wait(error(grpc.StatusCode.RESOURCE_EXHAUSTED), 1) is None
    assert all(0.25 <= poll_error_wait(1) <= 0.5 for _ in range(20))
    assert all(poll_error_wait(30, 1.0) <= 1.0 + POLL_ERROR_MAX_BACKOFF for _ in range(20))


async def test_call_with_retries_retries_throttles_only_and_within_its_budget() -> None:
    calls: list[int] = []

    async def twice_throttled(req: int) -> int:
        calls.append(req)
        if len(calls) < 3:
            raise throttled(0.01)
        return req * 2

    assert await call_with_retries(twice_throttled, 21) == 42 and len(calls) == 3

    async def too_large(req: int) -> int:
        calls.append(req)
        raise error(grpc.StatusCode.RESOURCE_EXHAUSTED)

    calls.clear()
    with pytest.raises(grpc.aio.AioRpcError):
        await call_with_retries(too_large, 1)
    assert len(calls) == 1, "a RESOURCE_EXHAUSTED without a delay is not retried"

    async def far_future(req: int) -> int:
        calls.append(req)
        raise throttled(60.0)

    calls.clear()
    with pytest.raises(grpc.aio.AioRpcError):
        await asyncio.wait_for(call_with_retries(far_future, 1, budget=5.0), 2.0)
    assert len(calls) == 1, "a delay past the budget is raised at once, not waited for"
