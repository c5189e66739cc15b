"""kill -9 a worker in the middle of an activity and in the middle of a workflow task; a second worker finishes.

The first worker process runs with ``FAULT_BLOCK=1``: the activity (or the side effect inside the
workflow task) writes a marker file and then blocks. Once the marker is there the test kills the
worker with SIGKILL and starts a second one (without FAULT_BLOCK). The server must hand the work to
the second worker within the timeouts (activity start-to-close 2 s, workflow task 2 s, sticky
schedule-to-start 1 s), and the history must record the work's result once.
"""

from __future__ import annotations

import asyncio
import time

from datetime import timedelta
from pathlib import Path
from typing import AsyncIterator

import pytest

from fault_helpers import DevServer, WorkerProc, check_history, raw_history
from fault_workloads import TASK_QUEUE, FActBlock, FWftBlock, marker_count
from waiting import until_sync

from spindle.api import messages_pb2 as pb
from spindle.client import Client

pytestmark = pytest.mark.timeout(90)

TASK_TIMEOUT = timedelta(seconds=2)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> "DevServer":
    s = DevServer(tmp_path_factory.mktemp("wk") / "wk.db").start()
    yield s  # type: ignore[misc]
    try:
        assert s.stop() == 0
        bad = [line for line in s.log().splitlines() if " ERROR " in line or "Traceback" in line]
        assert not bad, "server log has errors:\n" + "\n".join(bad[:40])
    finally:
        s.kill()


@pytest.fixture
async def client(server: DevServer) -> AsyncIterator[Client]:
    c = await Client.connect(server.address)
    yield c
    await c.close()


def _count(events: list[pb.HistoryEvent], t: int) -> int:
    return sum(1 for e in events if e.event_type == t)


async def _kill_and_replace(server: DevServer, tmp_path: Path, markers: Path, kind: str, key: str) -> tuple[WorkerProc, float]:
    """Wait for the blocking worker's marker, kill -9 it, start a clean worker. Returns (worker, kill time)."""
    return await asyncio.get_running_loop().run_in_executor(None, _kill_and_replace_sync, server, tmp_path, markers, kind, key)


def _kill_and_replace_sync(server: DevServer, tmp_path: Path, markers: Path, kind: str, key: str) -> tuple[WorkerProc, float]:
    until_sync(lambda: marker_count(str(markers), kind, key) >= 1, f"the {kind} to run", timeout=20)
    time.sleep(0.2)  # well inside it
    return _KILL(server, tmp_path, markers)


def _KILL(server: DevServer, tmp_path: Path, markers: Path) -> tuple[WorkerProc, float]:
    blocked = _BLOCKED.pop()
    blocked.kill()
    killed_at = time.monotonic()
    w2 = WorkerProc(server.address, tmp_path / "worker2.log", env={"FAULT_MARKERS": str(markers)}).start()
    return w2, killed_at


_BLOCKED: list[WorkerProc] = []


def _blocking_worker(server: DevServer, tmp_path: Path, markers: Path) -> WorkerProc:
    w = WorkerProc(server.address, tmp_path / "worker1.log",
                   env={"FAULT_MARKERS": str(markers), "FAULT_BLOCK": "1"}).start()
    _BLOCKED.append(w)
    return w


async def test_kill9_worker_during_activity(server: DevServer, client: Client, tmp_path: Path) -> None:
    markers = tmp_path / "markers"
    markers.mkdir()
    w1 = _blocking_worker(server, tmp_path, markers)
    w2 = None
    try:
        h = await client.start_workflow(FActBlock.run, "act", 41, id="wk-activity", task_queue=TASK_QUEUE,
                                        task_timeout=TASK_TIMEOUT)
        w2, killed_at = await _kill_and_replace(server, tmp_path, markers, "activity", "act")
        assert await asyncio.wait_for(h.result(), 30) == 42
        took = time.monotonic() - killed_at
        print(f"finished {took:.2f} s after the kill")
        # start-to-close 2 s, retry after 0.1 s, worker start about 1 s
        assert took < 8, f"the activity was redone {took:.1f} s after the kill"
        assert marker_count(str(markers), "activity", "act") >= 1
        events = await raw_history(client.stub, "wk-activity")
        assert not check_history(events, what="wk-activity")
        assert _count(events, pb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED) == 1
        assert _count(events, pb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED) == 1
        # Only the final attempt is recorded: the killed one shows as the retried attempt's last failure.
        assert _count(events, pb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT) == 0
        done = next(e for e in events if e.event_type == pb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED)
        started = events[done.activity_task_completed_event_attributes.started_event_id - 1]
        assert started.activity_task_started_event_attributes.attempt == 2
        assert started.activity_task_started_event_attributes.last_failure.HasField("timeout_failure_info")
    finally:
        w1.kill()
        if w2 is not None:
            w2.stop()


@pytest.mark.parametrize("after_activity", [False, True], ids=["first-task", "sticky-task"])
async def test_kill9_worker_during_workflow_task(server: DevServer, client: Client, tmp_path: Path,
                                                 after_activity: bool) -> None:
    markers = tmp_path / "markers"
    markers.mkdir()
    key = f"wft-{after_activity}"
    w1 = _blocking_worker(server, tmp_path, markers)
    w2 = None
    try:
        h = await client.start_workflow(FWftBlock.run, key, after_activity, id=f"wk-{key}", task_queue=TASK_QUEUE,
                                        task_timeout=TASK_TIMEOUT)
        w2, killed_at = await _kill_and_replace(server, tmp_path, markers, "wftask", key)
        assert await asyncio.wait_for(h.result(), 30) == 41 + (1 if after_activity else 0)
        took = time.monotonic() - killed_at
        print(f"finished {took:.2f} s after the kill")
        assert took < 8, f"the workflow task was redone {took:.1f} s after the kill"
        assert marker_count(str(markers), "wftask", key) >= 1
        events = await raw_history(client.stub, f"wk-{key}")
        assert not check_history(events, what=key)
        assert _count(events, pb.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT) >= 1, [pb.EventType.Name(e.event_type) for e in events]
        assert _count(events, pb.EVENT_TYPE_MARKER_RECORDED) == 1  # the side effect is recorded once
        assert _count(events, pb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED) == 1
    finally:
        w1.kill()
        if w2 is not None:
            w2.stop()
