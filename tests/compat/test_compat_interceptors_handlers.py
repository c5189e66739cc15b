"""Workflow inbound interceptors see signals, queries and updates (temporalio's ``handle_signal``,
``handle_query``, ``handle_update_validator``, ``handle_update_handler``) with the headers the
client's interceptor sent, live and on replay, and may change what the handler gets."""

from __future__ import annotations

import uuid

from datetime import timedelta
from typing import Any

import pytest

from spindle import activity, workflow
from spindle.client import (
    Client,
    OutboundInterceptor,
    QueryWorkflowInput,
    SignalWorkflowInput,
    StartWorkflowUpdateInput,
)
from spindle.client import (
    Interceptor as ClientInterceptor,
)
from spindle.converter import DataConverter
from spindle.exceptions import WorkflowUpdateFailedError
from spindle.testing import Replayer
from spindle.worker import (
    HandleQueryInput,
    HandleSignalInput,
    HandleUpdateInput,
    Interceptor,
    Worker,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
)

conv = DataConverter.default
KEY = "caller"


class _CallerOutbound(OutboundInterceptor):
    def __init__(self, next: OutboundInterceptor, root: "CallerInterceptor") -> None:
        super().__init__(next)
        self.root = root

    async def signal_workflow(self, input: SignalWorkflowInput) -> None:
        input.headers[KEY] = conv.to_payload("alice")
        await super().signal_workflow(input)

    async def query_workflow(self, input: QueryWorkflowInput) -> Any:
        input.headers[KEY] = conv.to_payload("bob")
        return await super().query_workflow(input)

    async def start_workflow_update(self, input: StartWorkflowUpdateInput) -> Any:
        if self.root.enabled:
            input.headers[KEY] = conv.to_payload("carol")
        return await super().start_workflow_update(input)


class CallerInterceptor(ClientInterceptor):
    def __init__(self) -> None:
        self.enabled = True  # False: updates go without the caller header

    def intercept_client(self, next: OutboundInterceptor) -> OutboundInterceptor:
        return _CallerOutbound(next, self)


#: (what, name, caller, replaying) for every call the workflow interceptor saw, in this process.
seen: list[tuple[str, str, str, bool]] = []


def _caller(headers: Any) -> str:
    return conv.from_payload(headers[KEY], str) if KEY in headers else "nobody"


class _Inbound(WorkflowInboundInterceptor):
    """Tags each signal's and update's argument with its caller; refuses updates from nobody."""

    async def handle_signal(self, input: HandleSignalInput) -> None:
        who = _caller(input.headers)
        seen.append(("signal", input.signal, who, workflow.unsafe.is_replaying()))
        input.args = [f"{input.args[0]}@{who}"]
        await super().handle_signal(input)

    async def handle_query(self, input: HandleQueryInput) -> Any:
        seen.append(("query", input.query, _caller(input.headers), workflow.unsafe.is_replaying()))
        return await super().handle_query(input)

    def handle_update_validator(self, input: HandleUpdateInput) -> None:
        who = _caller(input.headers)
        seen.append(("validate", input.update, who, workflow.unsafe.is_replaying()))
        if who == "nobody":
            raise ValueError("updates need a caller")
        super().handle_update_validator(input)

    async def handle_update_handler(self, input: HandleUpdateInput) -> Any:
        who = _caller(input.headers)
        seen.append(("update", input.update, who, workflow.unsafe.is_replaying()))
        input.args = [f"{input.args[0]}@{who}"]
        return await super().handle_update_handler(input)


class CallerWorkerInterceptor(Interceptor):
    def workflow_interceptor_class(self, input: WorkflowInterceptorClassInput) -> type[WorkflowInboundInterceptor]:
        return _Inbound


@activity.defn
async def noop() -> None:
    return None


@workflow.defn
class Ledger:
    def __init__(self) -> None:
        self.items: list[str] = []
        self.done = False

    @workflow.signal
    def add(self, item: str) -> None:  # sync: runs at once, as without interceptors
        self.items.append(item)

    @workflow.signal
    async def add_later(self, item: str) -> None:
        await workflow.execute_activity(noop, start_to_close_timeout=timedelta(seconds=10))
        self.items.append(item)

    @workflow.signal
    def finish(self, _: str) -> None:
        self.done = True

    @workflow.query
    def contents(self) -> list[str]:
        return list(self.items)

    @workflow.update
    def add_checked(self, item: str) -> int:
        self.items.append(item)
        return len(self.items)

    @add_checked.validator
    def _check(self, item: str) -> None:
        if not item:
            raise ValueError("empty item")

    @workflow.run
    async def run(self) -> list[str]:
        await workflow.wait_condition(lambda: self.done and len(self.items) >= 3)
        return self.items


async def test_signals_queries_and_updates_go_through_the_inbound_interceptor() -> None:
    seen.clear()
    caller = CallerInterceptor()
    client = await Client.connect("embedded::memory:", interceptors=[caller])
    try:
        tq = f"tq-{uuid.uuid4()}"
        async with Worker(client, task_queue=tq, workflows=[Ledger], activities=[noop],
                          interceptors=[CallerWorkerInterceptor()]):
            handle = await client.start_workflow(Ledger.run, id=f"wf-{uuid.uuid4()}", task_queue=tq)
            await handle.signal(Ledger.add, "a")
            await handle.signal(Ledger.add_later, "b")
            assert await handle.execute_update(Ledger.add_checked, "c") >= 2
            caller.enabled = False
            with pytest.raises(WorkflowUpdateFailedError):  # the validator (intercepted) refuses: no caller
                await handle.execute_update(Ledger.add_checked, "d")
            caller.enabled = True
            with pytest.raises(WorkflowUpdateFailedError):  # the workflow's own validator still runs
                await handle.execute_update(Ledger.add_checked, "")
            await handle.signal(Ledger.finish, "")
            result = await handle.result()
            assert sorted(result) == ["a@alice", "b@alice", "c@carol"]
            assert await handle.query(Ledger.contents) == result
        history = await handle.fetch_history()
    finally:
        await client.close()

    live = [s for s in seen if not s[3]]
    assert ("signal", "add", "alice", False) in live and ("signal", "add_later", "alice", False) in live
    assert ("signal", "finish", "alice", False) in live
    assert ("validate", "add_checked", "carol", False) in live and ("update", "add_checked", "carol", False) in live
    assert ("validate", "add_checked", "nobody", False) in live
    assert ("query", "contents", "bob", False) in seen or ("query", "contents", "bob", True) in seen
    assert sum(1 for s in live if s[0] == "update") == 1  # refused updates never reach the handler

    # replaying the history through the same interceptor rebuilds the same state (headers are recorded)
    seen.clear()
    await Replayer(workflows=[Ledger], interceptors=[CallerWorkerInterceptor()]).replay_workflow(history)
    assert {s[:3] for s in seen} >= {("signal", "add", "alice"), ("signal", "add_later", "alice"),
                                     ("update", "add_checked", "carol")}
    assert all(s[3] for s in seen)


async def test_a_history_made_without_interceptors_replays_with_them() -> None:
    client = await Client.connect("embedded::memory:")
    try:
        tq = f"tq-{uuid.uuid4()}"
        async with Worker(client, task_queue=tq, workflows=[Ledger], activities=[noop]):
            handle = await client.start_workflow(Ledger.run, id=f"wf-{uuid.uuid4()}", task_queue=tq)
            await handle.signal(Ledger.add, "a")
            await handle.signal(Ledger.add_later, "b")
            await handle.execute_update(Ledger.add_checked, "c")
            await handle.signal(Ledger.finish, "")
            assert sorted(await handle.result()) == ["a", "b", "c"]
        history = await handle.fetch_history()
    finally:
        await client.close()

    class PassThrough(Interceptor):
        def workflow_interceptor_class(self, input: WorkflowInterceptorClassInput) -> type[WorkflowInboundInterceptor]:
            return WorkflowInboundInterceptor

    await Replayer(workflows=[Ledger], interceptors=[PassThrough()]).replay_workflow(history)


@workflow.defn
class LateHandler:
    """Registers its signal handler only after a first signal arrived: that one waited in the buffer."""

    def __init__(self) -> None:
        self.items: list[str] = []
        self.ready = False

    @workflow.signal
    def arm(self, _: str) -> None:
        self.ready = True

    @workflow.run
    async def run(self) -> list[str]:
        await workflow.wait_condition(lambda: self.ready)
        workflow.set_signal_handler("late", lambda item: self.items.append(item))
        await workflow.wait_condition(lambda: len(self.items) >= 2)
        return self.items


async def test_a_buffered_signal_reaches_the_interceptor_with_its_headers() -> None:
    seen.clear()
    client = await Client.connect("embedded::memory:", interceptors=[CallerInterceptor()])
    try:
        tq = f"tq-{uuid.uuid4()}"
        async with Worker(client, task_queue=tq, workflows=[LateHandler], interceptors=[CallerWorkerInterceptor()]):
            handle = await client.start_workflow(LateHandler.run, id=f"wf-{uuid.uuid4()}", task_queue=tq)
            await handle.signal("late", "early")  # no handler yet: buffered
            await handle.signal(LateHandler.arm, "")
            async for event in handle.watch_history():  # the handler is registered once "arm" was handled
                if event.event_type == "WorkflowTaskCompleted" and event.event_id > 7:
                    break
            await handle.signal("late", "on time")
            assert await handle.result() == ["early@alice", "on time@alice"]
    finally:
        await client.close()
    assert [s[:3] for s in seen if s[1] == "late" and not s[3]] == [("signal", "late", "alice")] * 2
