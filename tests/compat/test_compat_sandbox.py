"""``spindle.worker.workflow_sandbox``: the runner and restrictions temporalio workers pass.

Spindle has no import sandbox: the runner is Spindle's normal one, and the restrictions are read
by the worker's static determinism check (a module left unrestricted is not reported)."""

from __future__ import annotations

import dataclasses
import os
import uuid

from collections.abc import AsyncIterator

import pytest

from spindle import workflow
from spindle.testing import Replayer, WorkflowEnvironment
from spindle.worker import Worker, WorkflowDeterminismCheckError
from spindle.worker.workflow_sandbox import (
    SandboxedWorkflowRunner,
    SandboxRestrictions,
    UnsandboxedWorkflowRunner,
)


@workflow.defn
class PidWorkflow:
    @workflow.run
    async def run(self) -> int:
        return os.getpid()


@workflow.defn
class Greeting:
    @workflow.run
    async def run(self, name: str) -> str:
        with workflow.unsafe.imports_passed_through():
            import json
        return json.dumps({"hello": name})


@pytest.fixture
async def env() -> AsyncIterator[WorkflowEnvironment]:
    async with await WorkflowEnvironment.start_time_skipping() as e:
        yield e


def _os_unrestricted() -> SandboxedWorkflowRunner:
    return SandboxedWorkflowRunner(restrictions=dataclasses.replace(
        SandboxRestrictions.default,
        invalid_module_members=SandboxRestrictions.invalid_module_members_default.with_child_unrestricted("os")))


async def test_default_restrictions_keep_the_determinism_check(env: WorkflowEnvironment) -> None:
    for runner in (None, SandboxedWorkflowRunner(), UnsandboxedWorkflowRunner(),
                   SandboxedWorkflowRunner(restrictions=SandboxRestrictions.default.with_passthrough_modules("os"))):
        with pytest.raises(WorkflowDeterminismCheckError, match=r"os\.getpid"):
            Worker(env.client, task_queue="tq", workflows=[PidWorkflow], workflow_runner=runner)


async def test_with_child_unrestricted_lets_the_module_through(env: WorkflowEnvironment) -> None:
    tq = f"sandbox-{uuid.uuid4().hex[:6]}"
    async with Worker(env.client, task_queue=tq, workflows=[PidWorkflow], workflow_runner=_os_unrestricted()):
        assert await env.client.execute_workflow(PidWorkflow.run, id=f"pid-{tq}", task_queue=tq) == os.getpid()


def test_deleting_a_child_from_the_default_matcher_unrestricts_it() -> None:
    children = dict(SandboxRestrictions.invalid_module_members_default.children)
    del children["datetime"]
    runner = SandboxedWorkflowRunner(restrictions=dataclasses.replace(
        SandboxRestrictions.default,
        invalid_module_members=dataclasses.replace(SandboxRestrictions.invalid_module_members_default,
                                                   children=children)))
    assert runner.unrestricted_modules() == {"datetime"}
    assert _os_unrestricted().unrestricted_modules() == {"os"}
    assert SandboxRestrictions.default.with_passthrough_all_modules().unrestricted_modules() == frozenset()


async def test_a_bad_runner_or_executor_is_refused(env: WorkflowEnvironment) -> None:
    with pytest.raises(TypeError, match=r"workflow_runner=...\) takes a spindle.worker.workflow_sandbox runner"):
        Worker(env.client, task_queue="tq", workflows=[Greeting], workflow_runner="sandboxed")
    with pytest.raises(TypeError, match=r"workflow_task_executor=...\) takes a concurrent.futures executor"):
        Worker(env.client, task_queue="tq", workflows=[Greeting], workflow_task_executor=4)


async def test_a_history_made_under_the_sandboxed_runner_replays(env: WorkflowEnvironment) -> None:
    tq = f"sandbox-{uuid.uuid4().hex[:6]}"
    runner = SandboxedWorkflowRunner(restrictions=SandboxRestrictions.default.with_passthrough_modules("json"))
    async with Worker(env.client, task_queue=tq, workflows=[Greeting], workflow_runner=runner):
        handle = await env.client.start_workflow(Greeting.run, "ann", id=f"g-{tq}", task_queue=tq)
        assert await handle.result() == '{"hello": "ann"}'
    history = await handle.fetch_history()
    await Replayer(workflows=[Greeting]).replay_workflow(history)
