"""Disk full: the store refuses writes with a clear UNAVAILABLE, nothing is corrupted, work resumes when space returns.

Two ways to run out of space: an injected SQLITE_FULL (the store's fault_hook raises
``sqlite3.OperationalError("database or disk is full")`` for every batch), and, when this process
may mount one (root), a real 8 MiB tmpfs filled up with a ballast file.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess

from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import grpc
import pytest

from fault_helpers import check_db, check_history, raw_history
from fault_workloads import TASK_QUEUE, FChain3, fsigwait
from test_store_faults import Env, open_env, worker

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.exceptions import RPCError

pytestmark = pytest.mark.timeout(120)


def _full(stage: str, muts: Any) -> None:
    if stage == "before_commit":
        raise sqlite3.OperationalError("database or disk is full")


async def _signal(env: Env, wid: str, value: str, request_id: str) -> None:
    await env.cp.stub.SignalWorkflowExecution(svc.SignalWorkflowExecutionRequest(
        namespace="default", workflow_execution=pb.WorkflowExecution(workflow_id=wid), signal_name="go",
        input=env.client.data_converter.to_payloads([value]), identity="disk-full-test", request_id=request_id))


async def _run_out_of_space(env: Env, make_full: Callable[[], None], make_room: Callable[[], None], tag: str) -> None:
    async with worker(env.client):
        # work in flight before the disk fills: chains and signal waiters
        running = [await env.client.start_workflow(FChain3.run, i, id=f"{tag}-c{i}", task_queue=TASK_QUEUE,
                                                   task_timeout=timedelta(seconds=2)) for i in range(10)]
        waiters = [await env.client.start_workflow(fsigwait, 1, id=f"{tag}-s{i}", task_queue=TASK_QUEUE,
                                                   task_timeout=timedelta(seconds=2)) for i in range(3)]
        await asyncio.sleep(0.3)
        make_full()
        # a start: refused, clearly
        errors: list[BaseException] = []
        for i in range(20):
            try:
                await env.client.start_workflow(FChain3.run, 100 + i, id=f"{tag}-late{i}", task_queue=TASK_QUEUE,
                                                request_id=f"{tag}-late{i}", task_timeout=timedelta(seconds=2))
            except RPCError as e:
                errors.append(e)
                break
        assert errors, "no write was refused: the disk never filled"
        e = errors[0]
        assert e.status == "UNAVAILABLE", e
        assert "store refused the write" in str(e) and "full" in str(e), str(e)
        refused_at = i
        # a signal: refused too, and not applied
        with pytest.raises(grpc.aio.AioRpcError) as ei:
            await _signal(env, f"{tag}-s0", "x", f"{tag}-sig0")
        assert ei.value.code() == grpc.StatusCode.UNAVAILABLE and "full" in (ei.value.details() or "")
        assert not any(ev.event_type == pb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
                       for ev in await raw_history(env.cp.stub, f"{tag}-s0"))
        await asyncio.sleep(1.0)  # the worker's completions fail meanwhile
        make_room()
        # service resumes: the refused start and signal go through now, and everything completes
        late = [await env.client.start_workflow(FChain3.run, 100 + i, id=f"{tag}-late{i}", task_queue=TASK_QUEUE,
                                                request_id=f"{tag}-late{i}", task_timeout=timedelta(seconds=2))
                for i in range(refused_at + 1)]
        for i, h in enumerate(waiters):
            await _signal(env, h.id, f"v{i}", f"{tag}-sig{i}")
        results = await asyncio.wait_for(asyncio.gather(*(h.result() for h in running + late)), 60)
        assert results == [i + 3 for i in range(10)] + [100 + i + 3 for i in range(refused_at + 1)]
        assert await asyncio.wait_for(asyncio.gather(*(h.result() for h in waiters)), 30) == [["v0"], ["v1"], ["v2"]]
        for h in running + late + waiters:
            problems = check_history(await raw_history(env.cp.stub, h.id), what=h.id)
            assert not problems, problems


async def test_injected_sqlite_full(tmp_path: Path) -> None:
    env = await open_env(str(tmp_path / "full.db"))
    try:
        def full() -> None:
            env.store.fault_hook = _full

        def room() -> None:
            env.store.fault_hook = None

        await _run_out_of_space(env, full, room, "inj")
    finally:
        env.store.fault_hook = None
        await env.cp.stop()
    assert check_db(env.path) == []


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    d = tmp_path / "small"
    d.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(d)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here ({r.stderr.strip() or r.returncode}); the injected test covers it")
    try:
        yield d
    finally:
        subprocess.run(["umount", "-l", str(d)], capture_output=True)


async def test_real_full_filesystem(small_fs: Path) -> None:
    db = str(small_fs / "full.db")
    ballast = small_fs / "ballast"
    env = await open_env(db)
    env.store.fault_hook = None
    try:
        def full() -> None:
            # fill the file system to the last byte
            fd = os.open(ballast, os.O_WRONLY | os.O_CREAT, 0o644)
            try:
                for size in (65536, 512, 1):
                    while True:
                        try:
                            if os.write(fd, b"\0" * size) < size:
                                break
                        except OSError:
                            break
            finally:
                os.close(fd)

        def room() -> None:
            os.unlink(ballast)

        await _run_out_of_space(env, full, room, "fs")
    finally:
        await env.cp.stop()
    assert check_db(db) == []
