"""Interceptors written the temporalio way carry headers from the client to the workflow,
its activities and its children, and see every activity call.

Each interceptor here is what a temporalio user writes (``temporalio.client.Interceptor``,
``temporalio.worker.Interceptor`` and their inbound/outbound classes), against ``spindle``.
"""

from __future__ import annotations

import contextvars
import uuid

from datetime import timedelta
from typing import Any

import pytest

from spindle import activity, workflow
from spindle.client import Client, OutboundInterceptor, SignalWorkflowInput, StartWorkflowInput
from spindle.client import Interceptor as ClientInterceptor
from spindle.converter import DataConverter
from spindle.testing import Replayer
from spindle.worker import (
    ActivityInboundInterceptor,
    ExecuteActivityInput,
    ExecuteWorkflowInput,
    Interceptor,
    StartActivityInput,
    StartChildWorkflowInput,
    Worker,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
    WorkflowOutboundInterceptor,
)

KEY = "tenant"
conv = DataConverter.default

#: What the activity interceptor found in the running attempt's header.
tenant_of_activity: contextvars.ContextVar[str] = contextvars.ContextVar("tenant_of_activity", default="")


class _ClientOutbound(OutboundInterceptor):
    def __init__(self, next: OutboundInterceptor, seen: list[str]) -> None:
        super().__init__(next)
        self.seen = seen

    async def start_workflow(self, input: StartWorkflowInput) -> Any:
        self.seen.append(f"start {input.workflow}")
        input.headers[KEY] = conv.to_payload("acme")
        return await super().start_workflow(input)

    async def signal_workflow(self, input: SignalWorkflowInput) -> None:
        self.seen.append(f"signal {input.signal}")
        await super().signal_workflow(input)


class TenantClientInterceptor(ClientInterceptor):
    def __init__(self) -> None:
        self.seen: list[str] = []

    def intercept_client(self, next: OutboundInterceptor) -> OutboundInterceptor:
        return _ClientOutbound(next, self.seen)


class _WorkflowOutbound(WorkflowOutboundInterceptor):
    def __init__(self, next: WorkflowOutboundInterceptor, root: _WorkflowInbound) -> None:
        super().__init__(next)
        self.root = root

    def start_activity(self, input: StartActivityInput) -> Any:
        input.headers[KEY] = conv.to_payload(self.root.tenant)
        return super().start_activity(input)

    async def start_child_workflow(self, input: StartChildWorkflowInput) -> Any:
        input.headers[KEY] = conv.to_payload(self.root.tenant)
        return await super().start_child_workflow(input)


class _WorkflowInbound(WorkflowInboundInterceptor):
    tenant = ""

    def init(self, outbound: WorkflowOutboundInterceptor) -> None:
        super().init(_WorkflowOutbound(outbound, self))

    async def execute_workflow(self, input: ExecuteWorkflowInput) -> Any:
        self.tenant = conv.from_payload(input.headers[KEY], str) if KEY in input.headers else "none"
        return await super().execute_workflow(input)


class _ActivityInbound(ActivityInboundInterceptor):
    def __init__(self, next: ActivityInboundInterceptor, calls: list[str]) -> None:
        super().__init__(next)
        self.calls = calls

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        self.calls.append(activity.info().activity_type)
        tenant = conv.from_payload(input.headers[KEY], str) if KEY in input.headers else "none"
        token = tenant_of_activity.set(tenant)
        try:
            return await super().execute_activity(input)
        finally:
            tenant_of_activity.reset(token)


class TenantWorkerInterceptor(Interceptor):
    def __init__(self) -> None:
        self.activity_calls: list[str] = []

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _ActivityInbound(next, self.activity_calls)

    def workflow_interceptor_class(self, input: WorkflowInterceptorClassInput) -> type[WorkflowInboundInterceptor]:
        return _WorkflowInbound


@activity.defn
async def whose(label: str) -> str:
    return f"{label}:{tenant_of_activity.get()}"


@activity.defn
def whose_sync(label: str) -> str:
    return f"{label}:{tenant_of_activity.get()}"


@workflow.defn
class TenantChild:
    @workflow.run
    async def run(self) -> str:
        return await workflow.execute_activity(whose, "child", start_to_close_timeout=timedelta(seconds=10))


@workflow.defn
class TenantParent:
    @workflow.run
    async def run(self) -> list[str]:
        a = await workflow.execute_activity(whose, "first", start_to_close_timeout=timedelta(seconds=10))
        b = await workflow.execute_activity(whose_sync, "second", start_to_close_timeout=timedelta(seconds=10))
        c = await workflow.execute_child_workflow(TenantChild.run)
        return [a, b, c]


async def test_a_header_set_by_the_client_reaches_every_activity_and_the_child() -> None:
    client_icpt = TenantClientInterceptor()
    worker_icpt = TenantWorkerInterceptor()
    client = await Client.connect("embedded::memory:", interceptors=[client_icpt])
    try:
        tq = f"tq-{uuid.uuid4()}"
        async with Worker(client, task_queue=tq, workflows=[TenantParent, TenantChild],
                          activities=[whose, whose_sync], interceptors=[worker_icpt]):
            handle = await client.start_workflow(TenantParent.run, id=f"wf-{uuid.uuid4()}", task_queue=tq)
            assert await handle.result() == ["first:acme", "second:acme", "child:acme"]
        assert client_icpt.seen == ["start TenantParent"]
        assert sorted(worker_icpt.activity_calls) == ["whose", "whose", "whose_sync"]
        history = await handle.fetch_history()
        # the header is in the history: a recorded run replays through the same interceptors
        await Replayer(workflows=[TenantParent], interceptors=[TenantWorkerInterceptor()]).replay_workflow(history)
    finally:
        await client.close()


async def test_without_the_client_interceptor_the_workflow_sees_no_header() -> None:
    client = await Client.connect("embedded::memory:")
    try:
        tq = f"tq-{uuid.uuid4()}"
        async with Worker(client, task_queue=tq, workflows=[TenantParent, TenantChild],
                          activities=[whose, whose_sync], interceptors=[TenantWorkerInterceptor()]):
            result = await client.execute_workflow(TenantParent.run, id=f"wf-{uuid.uuid4()}", task_queue=tq)
        assert result == ["first:none", "second:none", "child:none"]
    finally:
        await client.close()


async def test_interceptors_that_are_not_interceptors_are_refused() -> None:
    with pytest.raises(TypeError, match=r"interceptors=\.\.\.\)\[0\]: expected a spindle.client.Interceptor, got object"):
        await Client.connect("embedded::memory:", interceptors=[object()])
    client = await Client.connect("embedded::memory:")
    try:
        with pytest.raises(TypeError, match=r"Worker\(interceptors=\.\.\.\)\[1\]"):
            Worker(client, task_queue="tq", activities=[whose], interceptors=[TenantWorkerInterceptor(), "x"])
    finally:
        await client.close()
