"""Temporal-style usage of start policies, start errors and the dev namespace (issue 13), against spindle.

Written as a Temporal user writes them (``WorkflowIDConflictPolicy.TERMINATE_EXISTING``,
``WorkflowAlreadyStartedError.run_id``, the dev server's ``Custom*Field`` search
attributes), in the test environment a Temporal test would use.
"""

from __future__ import annotations

import asyncio
import uuid

from datetime import datetime, timedelta, timezone

import pytest

from spindle import workflow
from spindle.client import WorkflowExecutionStatus
from spindle.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from spindle.exceptions import RPCError, TerminatedError, WorkflowAlreadyStartedError, WorkflowFailureError
from spindle.testing import WorkflowEnvironment
from spindle.worker import Worker


@workflow.defn
class GreetingWorkflow:
    def __init__(self) -> None:
        self.done = False

    @workflow.run
    async def run(self, name: str) -> str:
        await workflow.wait_condition(lambda: self.done)
        return f"Hello, {name}!"

    @workflow.signal
    def finish(self) -> None:
        self.done = True


@workflow.defn
class SearchAttributesWorkflow:
    @workflow.run
    async def run(self) -> None:
        await workflow.sleep(timedelta(seconds=2))
        workflow.upsert_search_attributes({"CustomKeywordField": "new-value", "CustomIntField": 7})


def _q() -> str:
    return "compat-" + uuid.uuid4().hex[:8]


async def test_terminate_existing_replaces_the_running_run() -> None:
    async with await WorkflowEnvironment.start_time_skipping() as env:
        q = _q()
        async with Worker(env.client, task_queue=q, workflows=[GreetingWorkflow]):
            first = await env.client.start_workflow(GreetingWorkflow.run, "first", id="greeting", task_queue=q)
            second = await env.client.start_workflow(
                GreetingWorkflow.run, "second", id="greeting", task_queue=q,
                id_conflict_policy=WorkflowIDConflictPolicy.TERMINATE_EXISTING)
            assert second.result_run_id != first.result_run_id
            with pytest.raises(WorkflowFailureError) as err:
                await first.result(follow_runs=False)
            assert isinstance(err.value.cause, TerminatedError)
            old_run = env.client.get_workflow_handle("greeting", run_id=first.result_run_id)
            assert (await old_run.describe()).status is WorkflowExecutionStatus.TERMINATED
            current = env.client.get_workflow_handle("greeting")
            assert (await current.describe()).run_id == second.result_run_id
            await current.signal(GreetingWorkflow.finish)
            assert await second.result() == "Hello, second!"


async def test_terminate_existing_ignores_the_reuse_policy_for_a_running_run() -> None:
    """As in Temporal: the reuse policy governs closed runs; the conflict policy governs the running one."""
    async with await WorkflowEnvironment.start_time_skipping() as env:
        q = _q()
        first = await env.client.start_workflow(GreetingWorkflow.run, "a", id="g2", task_queue=q)
        second = await env.client.start_workflow(
            GreetingWorkflow.run, "b", id="g2", task_queue=q,
            id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY,
            id_conflict_policy=WorkflowIDConflictPolicy.TERMINATE_EXISTING)
        old_run = env.client.get_workflow_handle("g2", run_id=first.result_run_id)
        assert (await old_run.describe()).status is WorkflowExecutionStatus.TERMINATED
        assert (await second.describe()).status is WorkflowExecutionStatus.RUNNING
        # nothing running now that it is terminated: the reuse policy decides (a terminated run counts as failed)
        await second.terminate("done")
        third = await env.client.start_workflow(
            GreetingWorkflow.run, "c", id="g2", task_queue=q,
            id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY,
            id_conflict_policy=WorkflowIDConflictPolicy.TERMINATE_EXISTING)
        assert (await third.describe()).status is WorkflowExecutionStatus.RUNNING


async def test_terminate_existing_with_reject_duplicate_is_refused() -> None:
    async with await WorkflowEnvironment.start_time_skipping() as env:
        q = _q()
        first = await env.client.start_workflow(GreetingWorkflow.run, "a", id="g3", task_queue=q)
        with pytest.raises(RPCError) as err:
            await env.client.start_workflow(GreetingWorkflow.run, "b", id="g3", task_queue=q,
                                            id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
                                            id_conflict_policy=WorkflowIDConflictPolicy.TERMINATE_EXISTING)
        assert err.value.status == "INVALID_ARGUMENT"
        assert "REJECT_DUPLICATE" in str(err.value) and "TERMINATE_EXISTING" in str(err.value)
        assert (await first.describe()).status is WorkflowExecutionStatus.RUNNING  # nothing changed


async def test_a_retried_terminate_existing_start_does_not_terminate_its_own_run() -> None:
    async with await WorkflowEnvironment.start_time_skipping() as env:
        q = _q()
        await env.client.start_workflow(GreetingWorkflow.run, "a", id="g4", task_queue=q)
        kwargs = dict(id="g4", task_queue=q, id_conflict_policy=WorkflowIDConflictPolicy.TERMINATE_EXISTING,
                      request_id="req-1")
        started = await env.client.start_workflow(GreetingWorkflow.run, "b", **kwargs)
        again = await env.client.start_workflow(GreetingWorkflow.run, "b", **kwargs)  # e.g. a client retry
        assert again.result_run_id == started.result_run_id
        assert (await again.describe()).status is WorkflowExecutionStatus.RUNNING


async def test_workflow_already_started_error_names_the_running_run() -> None:
    async with await WorkflowEnvironment.start_time_skipping() as env:
        q = _q()
        first = await env.client.start_workflow(GreetingWorkflow.run, "a", id="dup", task_queue=q)
        with pytest.raises(WorkflowAlreadyStartedError) as err:
            await env.client.start_workflow(GreetingWorkflow.run, "b", id="dup", task_queue=q)
        assert err.value.run_id == first.result_run_id
        assert err.value.workflow_id == "dup"
        assert err.value.workflow_type == "GreetingWorkflow"
        # a refusal by the id reuse policy names the closed run that holds the id
        await first.terminate("bye")
        with pytest.raises(WorkflowAlreadyStartedError) as err2:
            await env.client.start_workflow(GreetingWorkflow.run, "c", id="dup", task_queue=q,
                                            id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE)
        assert err2.value.run_id == first.result_run_id


async def test_dev_search_attributes_are_registered_in_the_test_environment() -> None:
    async with await WorkflowEnvironment.start_time_skipping() as env:
        q = _q()
        when = datetime(2024, 5, 1, 12, 0, tzinfo=timezone.utc)
        async with Worker(env.client, task_queue=q, workflows=[SearchAttributesWorkflow]):
            handle = await env.client.start_workflow(
                SearchAttributesWorkflow.run, id="sa", task_queue=q,
                search_attributes={"CustomKeywordField": "old-value", "CustomTextField": "some words",
                                   "CustomStringField": "more words", "CustomDoubleField": 1.5,
                                   "CustomBoolField": True, "CustomDatetimeField": when.isoformat(),
                                   "CustomKeywordListField": ["a", "b"], "CustomIntField": 1})
            assert (await handle.describe()).search_attributes["CustomKeywordField"] == "old-value"
            await handle.result()
            desc = await handle.describe()
        assert desc.search_attributes["CustomKeywordField"] == "new-value"
        assert desc.search_attributes["CustomIntField"] == 7

        async def listed() -> list[str]:
            return [w.id async for w in env.client.list_workflows(
                "CustomKeywordField = 'new-value' AND CustomIntField > 5 AND CustomBoolField = true")]

        for _ in range(200):
            if await listed() == ["sa"]:
                break
            await asyncio.sleep(0.02)
        assert await listed() == ["sa"]
        names = set((await env.client.describe_namespace("default")).search_attributes)
        assert {"CustomKeywordField", "CustomStringField", "CustomTextField", "CustomIntField", "CustomDoubleField",
                "CustomBoolField", "CustomDatetimeField", "CustomKeywordListField"} <= names


@workflow.defn
class ListValuedSearchAttributesWorkflow:
    """hello_search_attributes in Temporal's untyped style: every value is a list."""

    @workflow.run
    async def run(self) -> None:
        await workflow.sleep(timedelta(seconds=2))
        workflow.upsert_search_attributes({"CustomKeywordField": ["new-value"], "CustomIntField": []})


async def _count_becomes(env: WorkflowEnvironment, query: str, n: int) -> None:
    """Visibility is written with the next acknowledgement batch: wait (briefly) for the count."""
    for _ in range(100):
        if await env.client.count_workflows(query) == n:
            return
        await asyncio.sleep(0.05)
    assert await env.client.count_workflows(query) == n, query


async def test_single_valued_attributes_given_as_one_element_lists() -> None:
    async with await WorkflowEnvironment.start_time_skipping() as env:
        q = _q()
        async with Worker(env.client, task_queue=q, workflows=[ListValuedSearchAttributesWorkflow]):
            handle = await env.client.start_workflow(
                ListValuedSearchAttributesWorkflow.run, id="sa-lists", task_queue=q,
                search_attributes={"CustomKeywordField": ["old-value"], "CustomIntField": [3]})
            desc = await handle.describe()
            assert (desc.search_attributes["CustomKeywordField"], desc.search_attributes["CustomIntField"]) \
                == ("old-value", 3)
            await _count_becomes(env, "CustomKeywordField = 'old-value' AND CustomIntField = 3", 1)
            await handle.result()
            assert (await handle.describe()).search_attributes.get("CustomKeywordField") == "new-value"
            await _count_becomes(env, "CustomKeywordField = 'new-value'", 1)
            await _count_becomes(env, "CustomIntField = 3", 0)  # [] removed the value

            with pytest.raises(RPCError, match="search_attributes.CustomKeywordField: a Keyword attribute holds one "
                                               "value, got a list of 2") as err:
                await env.client.start_workflow(ListValuedSearchAttributesWorkflow.run, id="sa-two", task_queue=q,
                                                search_attributes={"CustomKeywordField": ["a", "b"]})
            assert err.value.status == "INVALID_ARGUMENT"
            assert await env.client.count_workflows("WorkflowId = 'sa-two'") == 0
