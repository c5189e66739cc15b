"""SharedStateManager over a multiprocessing manager: heartbeats from a child process reach the
worker in order and all of them before unregister returns; events cross processes."""

from __future__ import annotations

import asyncio
import concurrent.futures
import multiprocessing
import pickle

from collections.abc import Iterator
from typing import Any

import pytest

from spindle.worker import SharedHeartbeatSender, SharedStateManager


@pytest.fixture(scope="module")
def manager() -> Iterator[SharedStateManager]:
    with multiprocessing.Manager() as mgr:
        yield SharedStateManager.create_from_multiprocessing(mgr)


def _send_from_child(sender: SharedHeartbeatSender, token: bytes, n: int) -> None:
    for i in range(n):
        sender.send_heartbeat(token, i, f"step-{i}")


def _set_from_child(event: Any) -> bool:
    event.set()
    return True


async def test_heartbeats_from_a_child_arrive_in_order_before_unregister_returns(manager: SharedStateManager) -> None:
    got: dict[bytes, list[tuple[Any, ...]]] = {b"a": [], b"b": []}
    sender_a = await manager.register_heartbeater(b"a", lambda d: got[b"a"].append(tuple(d)))
    sender_b = await manager.register_heartbeater(b"b", lambda d: got[b"b"].append(tuple(d)))
    pickle.dumps(sender_a)  # it crosses the process boundary
    loop = asyncio.get_running_loop()
    with concurrent.futures.ProcessPoolExecutor(max_workers=2) as pool:
        await asyncio.gather(loop.run_in_executor(pool, _send_from_child, sender_a, b"a", 50),
                             loop.run_in_executor(pool, _send_from_child, sender_b, b"b", 20))
    await manager.unregister_heartbeater(b"a")
    assert got[b"a"] == [(i, f"step-{i}") for i in range(50)]
    await manager.unregister_heartbeater(b"b")
    assert got[b"b"] == [(i, f"step-{i}") for i in range(20)]

    # the reader stops when nothing is registered and starts again for the next one
    again: list[tuple[Any, ...]] = []
    sender = await manager.register_heartbeater(b"c", lambda d: again.append(tuple(d)))
    sender.send_heartbeat(b"c", "x")
    await manager.unregister_heartbeater(b"c")
    assert again == [("x",)]


async def test_an_event_set_in_one_process_is_seen_in_the_other(manager: SharedStateManager) -> None:
    event = manager.new_event()
    assert not event.is_set()
    loop = asyncio.get_running_loop()
    with concurrent.futures.ProcessPoolExecutor(max_workers=1) as pool:
        assert await loop.run_in_executor(pool, _set_from_child, event)
    assert event.is_set()
