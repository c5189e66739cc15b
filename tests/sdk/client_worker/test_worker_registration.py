"""Worker construction: explicit registration, duplicate names, the determinism check."""

from __future__ import annotations

import time

import pytest

from _cw_fakes import FakeClient, FakeStub

from spindle import activity, workflow
from spindle.worker import Worker, WorkflowDeterminismCheckError


@workflow.defn
class Clean:
    @workflow.run
    async def run(self) -> str:
        return "ok"


@workflow.defn
class UsesWallClock:
    @workflow.run
    async def run(self) -> float:
        return time.time()


@workflow.defn(check_determinism=False)
class OptedOut:
    @workflow.run
    async def run(self) -> float:
        return time.time()


@activity.defn
async def act() -> None: ...


@activity.defn(name="act")
async def act_again() -> None: ...


def client() -> FakeClient:
    return FakeClient(FakeStub())


def test_determinism_findings_are_listed() -> None:
    with pytest.raises(WorkflowDeterminismCheckError) as ei:
        Worker(client(), task_queue="q", workflows=[Clean, UsesWallClock])
    assert "UsesWallClock" in str(ei.value) and "time.time" in str(ei.value)
    assert list(ei.value.findings) == ["UsesWallClock"]
    Worker(client(), task_queue="q", workflows=[Clean, OptedOut])


def test_registration_errors() -> None:
    with pytest.raises(ValueError, match="at least one"):
        Worker(client(), task_queue="q")
    with pytest.raises(ValueError, match="task_queue"):
        Worker(client(), task_queue="", activities=[act])
    with pytest.raises(ValueError, match="'act'"):
        Worker(client(), task_queue="q", activities=[act, act_again])
    with pytest.raises(ValueError, match="'Clean'"):
        Worker(client(), task_queue="q", workflows=[Clean, Clean.run])
    with pytest.raises(TypeError, match="activity.defn"):
        Worker(client(), task_queue="q", activities=[print])
    with pytest.raises(TypeError, match="workflow"):
        Worker(client(), task_queue="q", workflows=[object])


async def test_worker_runs_and_shuts_down_without_a_server_task() -> None:
    w = Worker(client(), task_queue="q", workflows=[Clean], activities=[act])
    assert w.sticky_task_queue.startswith("q/sticky/")
    async with w:
        pass
    with pytest.raises(RuntimeError, match="only once"):
        await w.run()
