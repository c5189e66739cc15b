"""Signals (class and function style, buffering), queries, updates, wait_condition."""

from __future__ import annotations

from datetime import timedelta

import pytest

from _runtime_history import History, decode, kinds, payloads, result_of

from spindle import workflow
from spindle._workflow.instance import WorkflowInstance
from spindle._workflow.replay import replay
from spindle.api import messages_pb2 as pb
from spindle.exceptions import ApplicationError, QueryFailedError, WorkflowContextError

T = timedelta(seconds=10)


def new(defn: object) -> WorkflowInstance:
    return WorkflowInstance(defn, workflow_id="wf-1", run_id="run-1", task_queue="q")


@workflow.defn(name="Approval")
class ApprovalWorkflow:
    def __init__(self) -> None:
        self.items: list[str] = []
        self.approved = False

    @workflow.run
    async def run(self, needed: int) -> list[str]:
        await workflow.wait_condition(lambda: self.approved and len(self.items) >= needed)
        return self.items

    @workflow.signal
    def add(self, item: str) -> None:
        self.items.append(item)

    @workflow.signal(name="approve")
    async def approve_async(self) -> None:
        self.approved = True

    @workflow.query
    def count(self, prefix: str) -> str:
        return f"{prefix}{len(self.items)}"

    @workflow.query
    def sneaky(self) -> None:
        workflow.start_activity("x", start_to_close_timeout=T)


def test_class_style_signals_and_wait_condition() -> None:
    h = History("Approval", 2)
    h.signal("add", "a")  # delivered in the first task, before run starts
    inst = new(ApprovalWorkflow)
    assert inst.activate(h.next_task()) == []
    h.complete([])
    h.signal("add", "b")
    assert inst.activate(h.next_task()) == []
    h.complete([])
    h.signal("approve")
    assert result_of(inst.activate(h.next_task())) == ["a", "b"]


def test_queries_read_state_and_cannot_issue_commands() -> None:
    h = History("Approval", 5)
    h.signal("add", "a")
    inst = new(ApprovalWorkflow)
    inst.activate(h.next_task())
    assert decode(inst.query(pb.WorkflowQuery(query_type="count", query_args=payloads("n=")))) == ["n=1"]
    with pytest.raises(QueryFailedError, match="not allowed in a query handler") as ei:
        inst.query(pb.WorkflowQuery(query_type="sneaky"))
    assert isinstance(ei.value.__cause__, WorkflowContextError)
    with pytest.raises(QueryFailedError, match="no query handler 'nope' .*known: count, sneaky"):
        inst.query(pb.WorkflowQuery(query_type="nope"))
    # The refused command left no trace.
    h.complete([])
    h.signal("add", "b")
    assert inst.activate(h.next_task()) == []


@workflow.defn
async def approval(order_id: str) -> str:
    first = await workflow.wait_for_signal("decision", timeout=timedelta(hours=1))
    if first is None:
        return f"{order_id}:timeout"
    second = await workflow.wait_for_signal("decision")
    return f"{order_id}:{first}:{second}"


def test_function_style_wait_for_signal_consumes_buffered_signals_in_order() -> None:
    h = History("approval", "o1")
    h.signal("decision", "yes")
    h.signal("decision", "really")
    inst = new(approval)
    assert result_of(inst.activate(h.next_task())) == "o1:yes:really"


def test_wait_for_signal_timeout_returns_none() -> None:
    h = History("approval", "o2")
    inst = new(approval)
    cmds = inst.activate(h.next_task())
    assert kinds(cmds) == ["START_TIMER"]
    assert cmds[0].start_timer_command_attributes.start_to_fire_timeout_ms == 3_600_000
    h.complete(cmds)
    h.timer_fired("1")
    assert result_of(inst.activate(h.next_task())) == "o2:timeout"


def test_signal_before_timeout_cancels_the_timer() -> None:
    h = History("approval", "o3")
    inst = new(approval)
    h.complete(inst.activate(h.next_task()))
    h.signal("decision", "no")
    cmds = inst.activate(h.next_task())
    assert kinds(cmds) == ["CANCEL_TIMER"]
    h.complete(cmds)
    h.signal("decision", "final")
    assert result_of(inst.activate(h.next_task())) == "o3:no:final"


def test_signals_without_handler_are_buffered_until_a_handler_is_set() -> None:
    @workflow.defn
    async def late_handler() -> list[str]:
        got: list[str] = []
        await workflow.sleep(1)
        workflow.set_signal_handler("late", got.append)
        return got

    h = History("late_handler")
    h.signal("late", "early-1")
    inst = new(late_handler)
    cmds = inst.activate(h.next_task())
    h.complete(cmds)
    h.signal("late", "early-2")
    h.timer_fired("1")
    assert result_of(inst.activate(h.next_task())) == ["early-1", "early-2"]


def test_wait_condition_timeout_raises_builtin_timeout_error() -> None:
    @workflow.defn
    async def cond() -> str:
        try:
            await workflow.wait_condition(lambda: False, timeout=timedelta(seconds=3))
        except TimeoutError as e:
            return type(e).__module__ + ":" + str(e)
        return "?"

    h = History("cond")
    inst = new(cond)
    cmds = inst.activate(h.next_task())
    assert kinds(cmds) == ["START_TIMER"]
    h.complete(cmds)
    h.timer_fired("1")
    assert result_of(inst.activate(h.next_task())) == "spindle.exceptions:wait_condition timed out after 3s"


@workflow.defn
class Account:
    def __init__(self) -> None:
        self.balance = 0
        self.done = False

    @workflow.run
    async def run(self) -> int:
        await workflow.wait_condition(lambda: self.done)
        return self.balance

    @workflow.signal
    def close(self) -> None:
        self.done = True

    @workflow.update
    async def deposit(self, amount: int) -> int:
        await workflow.execute_activity("audit", amount, start_to_close_timeout=T)
        self.balance += amount
        return self.balance

    @deposit.validator
    def _check(self, amount: int) -> None:
        if amount <= 0:
            raise ApplicationError(f"amount must be positive, got {amount}")

    @workflow.update
    def peek_and_schedule(self) -> int:
        return self.balance


def test_update_validator_rejects_without_changing_state() -> None:
    h = History("Account")
    inst = new(Account)
    cmds = inst.activate(h.next_task(), updates=[h.update_request("u1", "deposit", -5),
                                                 h.update_request("u2", "withdraw", 1)])
    assert kinds(cmds) == ["REJECT_UPDATE", "REJECT_UPDATE"]
    r1, r2 = (c.reject_update_command_attributes for c in cmds)
    assert (r1.update_id, r1.failure.message) == ("u1", "amount must be positive, got -5")
    assert r2.update_id == "u2" and "no update handler 'withdraw'" in r2.failure.message


def test_update_accepted_then_completed_after_its_activity() -> None:
    h = History("Account")
    inst = new(Account)
    h.complete(inst.activate(h.next_task()))
    cmds = inst.activate(h.next_task(), updates=[h.update_request("u1", "deposit", 7)])
    assert kinds(cmds) == ["ACCEPT_UPDATE", "SCHEDULE_ACTIVITY_TASK"]
    h.complete(cmds)
    h.activity_completed("1")
    cmds = inst.activate(h.next_task())
    assert kinds(cmds) == ["COMPLETE_UPDATE"]
    assert decode(cmds[0].complete_update_command_attributes.success) == [7]
    h.complete(cmds)
    cmds = inst.activate(h.next_task(), updates=[h.update_request("u2", "peek_and_schedule")])
    assert kinds(cmds) == ["ACCEPT_UPDATE", "COMPLETE_UPDATE"]
    h.complete(cmds)
    h.signal("close")
    cmds = inst.activate(h.next_task())
    assert result_of(cmds) == 7
    h.complete(cmds)
    # Replay: the accepted update is re-run from its UpdateAccepted event, without its validator.
    replay(Account, h.events, workflow_id="wf-1", run_id="run-1")
