"""kill -9 the dev server while a schedule fires every second: after restarts, every due second has exactly one run.

``SCHEDULES`` schedules (interval 1 s, ALLOW_ALL, the default one-year catch-up window) start
``fchain3`` runs named ``s{i}-{second}``; the server gets SIGKILL at random moments (a start may
be committed while the schedule's record is not) and is restarted on the same file. The
schedules end ``SPAN_S`` after their creation (``end_at``). Afterwards every nominal second in
(create, end] has exactly one run per schedule (no second lost, none with two runs), each
completed, and each schedule counts exactly that many actions.

``SPINDLE_FAULT_SEED`` sets the seed.
"""

from __future__ import annotations

import asyncio
import collections
import os
import random
import time

from datetime import datetime, timezone
from pathlib import Path

import grpc
import pytest

from fault_helpers import DevServer, WorkerProc
from fault_workloads import TASK_QUEUE

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.api import service_pb2_grpc
from spindle.converter import DataConverter

pytestmark = pytest.mark.timeout(300)

SPAN_S = 25     # the schedules act for this long after their creation
KILLS = 8
SCHEDULES = 8   # several, so that a kill often lands while one of them is starting runs


def stamp(second: int) -> str:
    return datetime.fromtimestamp(second, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


async def _call(server: DevServer, fn: str, req: object, timeout: float = 5.0) -> object:
    async with grpc.aio.insecure_channel(server.address) as ch:
        return await getattr(service_pb2_grpc.WorkflowServiceStub(ch), fn)(req, timeout=timeout)


async def _runs(server: DevServer, i: int) -> list[svc.WorkflowExecutionInfo]:
    out: list[svc.WorkflowExecutionInfo] = []
    token = b""
    while True:
        r = await _call(server, "ListWorkflowExecutions", svc.ListWorkflowExecutionsRequest(
            namespace="default", query=f"ScheduledById = 'every-second-{i}'", page_size=1000, next_page_token=token))
        out.extend(r.executions)  # type: ignore[attr-defined]
        token = r.next_page_token  # type: ignore[attr-defined]
        if not token:
            return out


async def test_kill9_while_a_schedule_fires_every_second(tmp_path: Path) -> None:
    seed = int(os.environ.get("SPINDLE_FAULT_SEED", str(int(time.time()))))
    rng = random.Random(seed)
    print(f"seed {seed}")
    server = DevServer(tmp_path / "sched.db").start()
    worker = WorkerProc(server.address, tmp_path / "worker.log").start()
    try:
        created_ms = int(time.time() * 1000)
        end_s = created_ms // 1000 + SPAN_S
        for i in range(SCHEDULES):
            await _call(server, "CreateSchedule", svc.CreateScheduleRequest(
                namespace="default", schedule_id=f"every-second-{i}", request_id=f"create-{i}",
                schedule=pb.Schedule(
                    spec=pb.ScheduleSpec(intervals=[pb.ScheduleIntervalSpec(every_ms=1000)], end_at_ms=end_s * 1000),
                    action=pb.ScheduleActionStartWorkflow(workflow_id=f"s{i}", workflow_type="fchain3",
                                                          task_queue=TASK_QUEUE,
                                                          input=DataConverter.default.to_payloads([1])),
                    policies=pb.SchedulePolicies(overlap_policy=pb.SCHEDULE_OVERLAP_POLICY_ALLOW_ALL))))
        first_s = int(time.time() * 1000) // 1000 + 1  # every schedule's first second (the last was created then)
        kills = 0
        while kills < KILLS and time.time() < end_s - 2:
            # every other kill right after a restart, while the schedules catch up on the seconds missed meanwhile
            await asyncio.sleep(rng.uniform(0.5, 2.0) if kills % 2 == 0 else rng.uniform(0.0, 0.3))
            server.kill()
            kills += 1
            await asyncio.sleep(rng.uniform(0.0, 1.0))  # down for a while: seconds come due meanwhile
            server.start()
            if not worker.alive() or worker.address != server.address:
                worker.stop()
                worker = WorkerProc(server.address, tmp_path / "worker.log").start()
        assert kills >= 3, f"only {kills} kills happened before the schedule ended"
        seconds = list(range(created_ms // 1000 + 1, end_s + 1))

        async def done() -> bool:
            for i in range(SCHEDULES):
                runs = await _runs(server, i)
                if len(runs) < len(seconds) - (first_s - seconds[0]) or not all(
                        r.status == pb.WORKFLOW_EXECUTION_STATUS_COMPLETED for r in runs):
                    return False
            return True

        deadline = time.time() + 120
        while time.time() < deadline and not (time.time() > end_s + 2 and await done()):
            await asyncio.sleep(0.5)
        for i in range(SCHEDULES):
            runs = await _runs(server, i)
            per_id = collections.Counter(r.execution.workflow_id for r in runs)
            doubled = {k: n for k, n in per_id.items() if n > 1}
            # schedule i was created at most a second after the first: its first action is one of these two
            expected = {f"s{i}-{stamp(s)}" for s in seconds if s >= first_s}
            missing = sorted(expected - set(per_id))
            extra = sorted(set(per_id) - expected - {f"s{i}-{stamp(seconds[0])}"})
            assert not doubled, f"seed {seed}: actions started twice: {doubled}"
            assert not missing, f"seed {seed}: due seconds without a run: {missing}"
            assert not extra, f"seed {seed}: runs outside the schedule's span: {extra}"
            assert all(r.status == pb.WORKFLOW_EXECUTION_STATUS_COMPLETED for r in runs)
            d = await _call(server, "DescribeSchedule", svc.DescribeScheduleRequest(
                namespace="default", schedule_id=f"every-second-{i}"))
            assert d.info.action_count == len(per_id), (seed, i, d.info.action_count, len(per_id))  # type: ignore[attr-defined]
            assert not d.info.running_workflows  # type: ignore[attr-defined]
    finally:
        worker.stop()
        if server.alive():
            server.stop()
