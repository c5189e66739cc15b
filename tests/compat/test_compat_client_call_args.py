"""Temporal's ``arg=`` / ``args=[...]`` keywords and ``request_eager_start`` on the client, against a real server.

temporalio's ``start_workflow``, ``execute_workflow``, ``handle.signal``, ``handle.query``,
``execute_update`` and ``start_update`` take one argument as ``arg=`` or several as
``args=[...]``; giving both raises ``ValueError("Cannot have arg and args")``. Spindle also
takes them positionally; mixing forms is refused before any request.
"""

from __future__ import annotations

import pytest

from spindle import workflow
from spindle.client import WorkflowUpdateStage
from spindle.testing import WorkflowEnvironment
from spindle.worker import Worker


@workflow.defn
class Greeter:
    def __init__(self) -> None:
        self.names: list[str] = []
        self.done = False

    @workflow.run
    async def run(self, greeting: str, punctuation: str = "!") -> str:
        await workflow.wait_condition(lambda: self.done)
        return f"{greeting}, {' and '.join(self.names)}{punctuation}"

    @workflow.signal
    def add(self, name: str, times: int = 1) -> None:
        self.names.extend([name] * times)

    @workflow.query
    def count(self, prefix: str, suffix: str = "") -> str:
        return f"{prefix}{len(self.names)}{suffix}"

    @workflow.update
    def finish(self, last: str, times: int = 1) -> int:
        self.names.extend([last] * times)
        self.done = True
        return len(self.names)


async def test_arg_and_args_keywords_reach_run_signal_query_and_update() -> None:
    async with await WorkflowEnvironment.start_local() as env:
        async with Worker(env.client, task_queue="tq", workflows=[Greeter]):
            handle = await env.client.start_workflow(Greeter.run, arg="Hello", id="one", task_queue="tq",
                                                     request_eager_start=True)
            await handle.signal(Greeter.add, arg="Ada")
            await handle.signal(Greeter.add, args=["Bo", 2])
            assert await handle.query(Greeter.count, arg="n=") == "n=3"
            assert await handle.query(Greeter.count, args=["n=", "."]) == "n=3."
            update = await handle.start_update(Greeter.finish, arg="Cy", wait_for_stage=WorkflowUpdateStage.COMPLETED)
            assert await update.result() == 4
            assert await handle.result() == "Hello, Ada and Bo and Bo and Cy!"


@workflow.defn
class Echo:
    @workflow.run
    async def run(self, a: str, b: str = "") -> str:
        return a + b


async def test_execute_update_takes_args_and_execute_workflow_takes_arg() -> None:
    async with await WorkflowEnvironment.start_local() as env:
        async with Worker(env.client, task_queue="tq", workflows=[Greeter, Echo]):
            assert await env.client.execute_workflow(Echo.run, arg="x", id="e1", task_queue="tq") == "x"
            assert await env.client.execute_workflow(Echo.run, args=["x", "y"], id="e2", task_queue="tq") == "xy"
            handle = await env.client.start_workflow(Greeter.run, args=["Hi", "?"], id="two", task_queue="tq")
            assert await handle.execute_update(Greeter.finish, args=["Di", 2]) == 2
            assert await handle.result() == "Hi, Di and Di?"


async def test_conflicting_argument_forms_are_refused_before_any_request() -> None:
    async with await WorkflowEnvironment.start_local() as env:
        client = env.client
        with pytest.raises(ValueError, match="^Cannot have arg and args$"):
            await client.start_workflow(Greeter.run, arg="a", args=["b"], id="bad", task_queue="tq")
        with pytest.raises(ValueError, match="either positionally or as args"):
            await client.start_workflow(Greeter.run, "a", arg="b", id="bad", task_queue="tq")
        with pytest.raises(ValueError, match="either positionally or as args"):
            await client.execute_workflow(Greeter.run, "a", args=["b"], id="bad", task_queue="tq")
        with pytest.raises(TypeError, match="args must be a sequence"):
            await client.start_workflow(Greeter.run, args="ab", id="bad", task_queue="tq")
        assert [w.id async for w in client.list_workflows("")] == []

        handle = client.get_workflow_handle("nobody")
        with pytest.raises(ValueError, match="^Cannot have arg and args$"):
            await handle.signal(Greeter.add, arg="a", args=["b"])
        with pytest.raises(ValueError, match="^Cannot have arg and args$"):
            await handle.query(Greeter.count, arg="a", args=["b"])
        with pytest.raises(ValueError, match="^Cannot have arg and args$"):
            await handle.execute_update(Greeter.finish, arg="a", args=["b"])
        with pytest.raises(ValueError, match="either positionally or as args"):
            await handle.start_update(Greeter.finish, "a", arg="b", wait_for_stage=WorkflowUpdateStage.COMPLETED)
