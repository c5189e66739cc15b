"""Workflow-side names Temporal code uses, driven through WorkflowInstance with hand-built histories.

``workflow.unsafe``, the logger's record shape, ``@workflow.init``,
``all_handlers_finished``, ``wait`` / ``as_completed``, activity methods, local
activities, ``args=[...]`` and the ``WorkflowInfo`` methods.
"""

from __future__ import annotations

import asyncio
import logging
import time

from datetime import timedelta
from typing import Any

import pytest

from _runtime_history import History, decode, kinds, result_of

from spindle import activity, workflow
from spindle._workflow.instance import WorkflowInstance
from spindle.api import messages_pb2 as pb
from spindle.exceptions import WorkflowContextError

T = timedelta(seconds=10)


def new(defn: object, **kw: Any) -> WorkflowInstance:
    return WorkflowInstance(defn, namespace="ns-1", workflow_id="wf-1", run_id="run-1", task_queue="q", **kw)


def activity_inputs(cmds: list[pb.Command]) -> list[list[Any]]:
    return [decode(c.schedule_activity_task_command_attributes.input) for c in cmds
            if c.command_type == pb.COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK]


# ---------------------------------------------------------------------- workflow.unsafe


def test_unsafe_is_replaying_is_true_only_while_recorded_tasks_rerun() -> None:
    seen: list[bool] = []

    @workflow.defn
    async def replay_aware() -> None:
        seen.append(workflow.unsafe.is_replaying())
        await workflow.sleep(1)
        seen.append(workflow.unsafe.is_replaying())

    h = History("replay_aware")
    inst = new(replay_aware)
    h.complete(inst.activate(h.next_task()))
    h.timer_fired("1")
    assert kinds(inst.activate(h.next_task())) == ["COMPLETE_WORKFLOW_EXECUTION"]
    assert seen == [False, False]  # the cached instance ran each task once, live
    seen.clear()
    new(replay_aware).activate(h.events)  # a fresh instance replays task 1, runs task 2 live
    assert seen == [True, False]
    with pytest.raises(WorkflowContextError, match=r"workflow.unsafe.is_replaying\(\) can only be called"):
        workflow.unsafe.is_replaying()


def test_imports_passed_through_changes_nothing_and_works_at_import_time() -> None:
    with workflow.unsafe.imports_passed_through():  # as at the top of a Temporal workflow module
        import fractions
        assert workflow.unsafe.is_imports_passed_through()
    assert not workflow.unsafe.is_imports_passed_through()

    @workflow.defn
    async def importer() -> list[Any]:
        with workflow.unsafe.imports_passed_through():
            import decimal
            inside = workflow.unsafe.is_imports_passed_through()
        return [inside, workflow.unsafe.in_sandbox(), str(decimal.Decimal("1.5") + 1), str(fractions.Fraction(1, 3))]

    assert result_of(new(importer).activate(History("importer").next_task())) == [True, False, "2.5", "1/3"]
    with pytest.raises(TypeError, match="namespace of static methods"):
        workflow.unsafe()


def test_sandbox_unrestricted_lifts_the_runtime_guards_only_inside_the_block() -> None:
    @workflow.defn(check_determinism=False)
    async def unrestricted() -> list[Any]:
        with workflow.unsafe.sandbox_unrestricted():
            wall_clock = time.time() > 0
            lifted = workflow.unsafe.is_sandbox_unrestricted()
        try:
            time.time()
            after = "allowed"
        except WorkflowContextError:
            after = "guarded"
        return [wall_clock, lifted, workflow.unsafe.is_sandbox_unrestricted(), after]

    assert result_of(new(unrestricted).activate(History("unrestricted").next_task())) == [
        True, True, False, "guarded"]


# ---------------------------------------------------------------------- workflow.logger

DETAILS = {"attempt": 1, "namespace": "ns-1", "run_id": "run-1", "task_queue": "q", "workflow_id": "wf-1",
           "workflow_type": "Chatty"}


@workflow.defn(name="Chatty")
class Chatty:
    def __init__(self) -> None:
        self.done = False

    @workflow.run
    async def run(self) -> None:
        workflow.logger.info("hello %s", "there")
        await workflow.wait_condition(lambda: self.done)

    @workflow.update
    def finish(self, why: str) -> str:
        workflow.logger.warning("finishing: %s", why)
        self.done = True
        return why


def _records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "spindle.workflow"]


def test_logger_records_carry_the_workflow_details_as_temporal_does(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="spindle.workflow")
    h = History("Chatty")
    inst = new(Chatty)
    h.complete(inst.activate(h.next_task()))
    cmds = inst.activate(h.next_task(), updates=[h.update_request("u-7", "finish", "tests pass")])
    assert kinds(cmds) == ["ACCEPT_UPDATE", "COMPLETE_UPDATE", "COMPLETE_WORKFLOW_EXECUTION"]
    first, second = _records(caplog)
    assert first.getMessage() == f"hello there ({DETAILS})"  # temporalio's LoggerAdapter format
    assert first.spindle_workflow == DETAILS  # type: ignore[attr-defined]
    for key, value in DETAILS.items():
        assert getattr(first, key) == value
    assert not hasattr(first, "update_id")
    in_update = {**DETAILS, "update_id": "u-7", "update_name": "finish"}
    assert second.getMessage() == f"finishing: tests pass ({in_update})"
    assert second.spindle_workflow == in_update and second.levelno == logging.WARNING  # type: ignore[attr-defined]


def test_logger_knobs_match_temporal(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="spindle.workflow")
    log = workflow.logger
    assert isinstance(log, workflow.LoggerAdapter) and log.base_logger is logging.getLogger("spindle.workflow")
    try:
        log.workflow_info_on_message = False
        log.workflow_info_on_extra = False
        log.full_workflow_info_on_extra = True
        new(Chatty).activate(History("Chatty").next_task())
        (rec,) = _records(caplog)
        assert rec.getMessage() == "hello there"
        assert not hasattr(rec, "spindle_workflow") and not hasattr(rec, "workflow_id")
        assert isinstance(rec.workflow_info, workflow.WorkflowInfo)  # type: ignore[attr-defined]
        assert rec.workflow_info.workflow_id == "wf-1"  # type: ignore[attr-defined]
    finally:
        log.workflow_info_on_message = log.workflow_info_on_extra = True
        log.full_workflow_info_on_extra = False


def test_logger_is_silent_during_replay_unless_asked(caplog: pytest.LogCaptureFixture) -> None:
    h = History("Chatty")
    inst = new(Chatty)
    h.complete(inst.activate(h.next_task()))
    h.next_task()
    caplog.set_level(logging.INFO, logger="spindle.workflow")
    new(Chatty).activate(h.events)  # task 1 ("hello") is replayed
    assert _records(caplog) == []
    workflow.logger.log_during_replay = True
    try:
        new(Chatty).activate(h.events)
    finally:
        workflow.logger.log_during_replay = False
    assert [r.getMessage().split(" (")[0] for r in _records(caplog)] == ["hello there"]


def test_logger_outside_workflows_logs_plainly(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="spindle.workflow")
    workflow.logger.info("starter side")
    (rec,) = _records(caplog)
    assert rec.getMessage() == "starter side" and not hasattr(rec, "workflow_id")


# ---------------------------------------------------------------------- @workflow.init


@workflow.defn(name="Greeter")
class Greeter:
    @workflow.init
    def __init__(self, name: str, punctuation: str = "!") -> None:
        self.greeting = f"hello {name}{punctuation}"
        self.heard: list[str] = []

    @workflow.run
    async def run(self, who: str, mark: str = "!") -> list[str]:
        await workflow.wait_condition(lambda: bool(self.heard))
        return [self.greeting, *self.heard]

    @workflow.signal
    def hear(self, word: str) -> None:
        self.heard.append(f"{word} after {self.greeting}")  # the signal came with the start: init ran first


def test_init_receives_the_run_arguments_before_any_handler_runs() -> None:
    h = History("Greeter", "ann", "?")
    h.signal("hear", "hi")  # signal-with-start: delivered in the first task
    assert result_of(new(Greeter).activate(h.next_task())) == ["hello ann?", "hi after hello ann?"]
    h2 = History("Greeter", "bob")
    h2.signal("hear", "yo")
    assert result_of(new(Greeter).activate(h2.next_task())) == ["hello bob!", "yo after hello bob!"]


def test_init_parameters_must_match_the_run_method() -> None:
    with pytest.raises(TypeError, match=r"WrongType.__init__\(self, a: 'int'\).* and @workflow.run .*WrongType.run\(self, a: 'str'\)"):
        @workflow.defn
        class WrongType:
            @workflow.init
            def __init__(self, a: int) -> None: ...

            @workflow.run
            async def run(self, a: str) -> None: ...

    for init_params, run_params in (("self", "self, a"), ("self, a, b", "self, a"), ("self, a=1", "self, a=2"),
                                     ("self, *, a", "self, a")):
        ns: dict[str, Any] = {"workflow": workflow}
        exec(f"class W:\n    @workflow.init\n    def __init__({init_params}): pass\n"
             f"    @workflow.run\n    async def run({run_params}): pass\n", ns)
        with pytest.raises(TypeError, match="must take the same parameters"):
            workflow.defn(ns["W"])

    @workflow.defn
    class RenamedOnly:  # names may differ
        @workflow.init
        def __init__(self, x: int, y: str = "s") -> None: ...

        @workflow.run
        async def run(self, count: int, label: str = "s") -> None: ...

    assert workflow.WorkflowDefinition.from_target(RenamedOnly).init_takes_args
    with pytest.raises(TypeError, match="may only decorate __init__"):
        workflow.init(lambda self: None)


# ---------------------------------------------------------------------- all_handlers_finished


@workflow.defn(name="Handlers")
class Handlers:
    def __init__(self) -> None:
        self.started = False
        self.log: list[str] = []

    @workflow.run
    async def run(self) -> list[str]:
        await workflow.wait_condition(lambda: self.started)
        self.log.append(f"run: finished={workflow.all_handlers_finished()}")
        await workflow.wait_condition(workflow.all_handlers_finished)
        self.log.append("run: all handlers finished")
        return self.log

    @workflow.signal
    def ping(self) -> None:  # synchronous handlers never count as running
        self.log.append("ping")

    @workflow.signal
    async def slow_signal(self) -> None:
        self.started = True
        await workflow.sleep(5)
        self.log.append("signal handler done")

    @workflow.update
    async def slow_update(self, x: str) -> str:
        self.started = True
        result = await workflow.execute_activity("echo", x, start_to_close_timeout=T)
        self.log.append("update handler done")
        return str(result)


def test_all_handlers_finished_waits_for_async_signal_and_update_handlers() -> None:
    h = History("Handlers")
    h.signal("ping")
    h.signal("slow_signal")
    inst = new(Handlers)
    cmds = inst.activate(h.next_task(), updates=[h.update_request("u1", "slow_update", "x")])
    assert kinds(cmds) == ["ACCEPT_UPDATE", "START_TIMER", "SCHEDULE_ACTIVITY_TASK"]
    h.complete(cmds)
    h.timer_fired("1")
    assert kinds(inst.activate(h.next_task())) == []  # the update handler still runs
    h.complete([])
    h.activity_completed("1", "x")
    cmds = inst.activate(h.next_task())
    assert kinds(cmds) == ["COMPLETE_UPDATE", "COMPLETE_WORKFLOW_EXECUTION"]
    assert result_of(cmds) == ["ping", "run: finished=False", "signal handler done", "update handler done",
                               "run: all handlers finished"]
    with pytest.raises(WorkflowContextError):
        workflow.all_handlers_finished()


# ---------------------------------------------------------------------- wait / as_completed


@workflow.defn(name="Waiter")
class Waiter:
    @workflow.run
    async def run(self, mode: str) -> Any:
        handles = [workflow.start_activity("work", n, start_to_close_timeout=T) for n in ("a", "b", "c")]
        if mode == "all":
            done, pending = await workflow.wait(handles)
            return [[h.result() for h in done], len(pending)]
        if mode == "first":
            done, pending = await workflow.wait(handles, return_when=asyncio.FIRST_COMPLETED)
            return [[h.result() for h in done], [h.activity_id for h in pending]]
        if mode == "first_exception":
            done, pending = await workflow.wait(handles, return_when=asyncio.FIRST_EXCEPTION)
            return [[h.activity_id for h in done], [h.activity_id for h in pending]]
        if mode == "timeout":
            done, pending = await workflow.wait(handles, timeout=timedelta(seconds=30))
            return [[h.result() for h in done], [h.activity_id for h in pending]]
        if mode == "as_completed":
            return [await next_done for next_done in workflow.as_completed(handles)]
        out: list[str] = []
        try:
            for next_done in workflow.as_completed(handles, timeout=30):
                out.append(await next_done)
        except TimeoutError as e:
            out.append(f"timeout: {e}")
        return out


def _run_waiter(mode: str, finish: list[list[tuple[str, str | None]]], fire_timer: int | None = None
                ) -> tuple[list[str], Any]:
    """Complete activities in the given batches (one workflow task each); return command kinds and the result."""
    h = History("Waiter", mode)
    inst = new(Waiter)
    all_kinds: list[str] = []
    cmds = inst.activate(h.next_task())
    all_kinds += kinds(cmds)
    for i, batch in enumerate(finish):
        h.complete(cmds)
        for activity_id, value in batch:
            if value is None:
                h.activity_failed(activity_id, RuntimeError("boom"))
            else:
                h.activity_completed(activity_id, value)
        if fire_timer is not None and i == fire_timer:
            h.timer_fired("1")
        cmds = inst.activate(h.next_task())
        all_kinds += kinds(cmds)
    return all_kinds, result_of(cmds)


def test_wait_returns_lists_in_the_callers_order() -> None:
    # c finishes first, then a, then b: done is still in the order given
    assert _run_waiter("all", [[("3", "C")], [("1", "A")], [("2", "B")]])[1] == [["A", "B", "C"], 0]
    assert _run_waiter("first", [[("3", "C"), ("2", "B")]])[1] == [["B", "C"], ["1"]]
    assert _run_waiter("first_exception", [[("2", "B")], [("3", None)]])[1] == [["2", "3"], ["1"]]


def test_wait_timeout_is_a_durable_timer_and_leaves_the_rest_pending() -> None:
    kinds_seen, result = _run_waiter("timeout", [[("2", "B")], []], fire_timer=1)
    assert result == [["B"], ["1", "3"]]
    assert kinds_seen.count("START_TIMER") == 1 and "CANCEL_TIMER" not in kinds_seen
    kinds_seen, result = _run_waiter("timeout", [[("1", "A"), ("2", "B"), ("3", "C")]])
    assert result == [["A", "B", "C"], []] and kinds_seen.count("CANCEL_TIMER") == 1


def test_as_completed_yields_in_completion_order_and_times_out() -> None:
    assert _run_waiter("as_completed", [[("3", "C")], [("1", "A")], [("2", "B")]])[1] == ["C", "A", "B"]
    kinds_seen, result = _run_waiter("as_completed_timeout", [[("2", "B")], []], fire_timer=1)
    assert result == ["B", "timeout: workflow.as_completed() timed out after 30s"]


def test_wait_and_as_completed_reject_bad_input() -> None:
    async def go(mode: str) -> Any:
        fut = asyncio.get_running_loop().create_future()
        fut.set_result(1)
        if mode == "empty":
            return await workflow.wait([])
        if mode == "coroutine":
            coro = asyncio.sleep(0)
            try:
                return await workflow.wait([coro])
            finally:
                coro.close()
        if mode == "single":
            return await workflow.wait(fut)  # type: ignore[arg-type]
        if mode == "return_when":
            return await workflow.wait([fut], return_when="SOMETIMES")
        if mode == "as_completed_single":
            return workflow.as_completed(fut)  # type: ignore[arg-type]
        return await workflow.wait([fut], timeout=-1)

    for mode, error, match in (("empty", ValueError, "at least one"), ("coroutine", TypeError, "item 0 is a coroutine"),
                               ("single", TypeError, "not a Future"), ("return_when", ValueError, "SOMETIMES"),
                               ("as_completed_single", TypeError, "not a Future"),
                               ("negative", ValueError, "must not be negative")):
        with pytest.raises(error, match=match):
            asyncio.run(go(mode))


# ---------------------------------------------------------------------- activities: args=, methods, local


class Inventory:
    def __init__(self, stock: dict[str, int]) -> None:
        self.stock = stock

    @activity.defn
    async def count(self, sku: str) -> int:
        return self.stock[sku]


@workflow.defn(name="ActivityForms")
class ActivityForms:
    @workflow.run
    async def run(self) -> list[Any]:
        a = await workflow.execute_activity("add", args=[1, 2], start_to_close_timeout=T)
        b = await workflow.execute_activity_method(Inventory.count, "sku-1", start_to_close_timeout=T)
        c = await workflow.execute_local_activity("add", args=(3, 4), start_to_close_timeout=T,
                                                  local_retry_threshold=timedelta(seconds=5), summary="ignored")
        d = await workflow.execute_local_activity_method(Inventory.count, "sku-2", schedule_to_close_timeout=T)
        return [a, b, c, d]


def test_activity_args_methods_and_local_activities_schedule_regular_activities() -> None:
    h = History("ActivityForms")
    inst = new(ActivityForms)
    scheduled: list[pb.ScheduleActivityTaskCommandAttributes] = []
    cmds = inst.activate(h.next_task())
    for activity_id, value in (("1", 3), ("2", "17"), ("3", 7), ("4", "5")):
        scheduled += [c.schedule_activity_task_command_attributes for c in cmds]
        h.complete(cmds)
        h.activity_completed(activity_id, value)
        cmds = inst.activate(h.next_task())
    assert [(a.activity_type, decode(a.input), a.task_queue, a.heartbeat_timeout_ms) for a in scheduled] == [
        ("add", [1, 2], "", 0), ("count", ["sku-1"], "", 0), ("add", [3, 4], "", 0), ("count", ["sku-2"], "", 0)]
    assert scheduled[3].schedule_to_close_timeout_ms == 10_000
    # the method's return hint (int) decodes "17" and "5"; the local activity runs on the workflow's queue ("")
    assert result_of(cmds) == [3, 17, 7, 5]


def test_activity_and_child_arguments_are_given_one_way() -> None:
    @workflow.defn(check_determinism=False)
    async def misuse(mode: str) -> str:
        try:
            if mode == "both":
                workflow.start_activity("a", 1, args=[2], start_to_close_timeout=T)
            elif mode == "str":
                workflow.start_activity("a", args="abc", start_to_close_timeout=T)  # type: ignore[arg-type]
            elif mode == "threshold":
                workflow.start_local_activity("a", start_to_close_timeout=T, local_retry_threshold=timedelta(-1))
            elif mode == "child":
                await workflow.start_child_workflow("c", 1, args=[2])
            elif mode == "local_no_timeout":
                workflow.start_local_activity("a")
        except (TypeError, ValueError) as e:
            return f"{type(e).__name__}: {e}"
        return "accepted"

    def run(mode: str) -> str:
        return str(result_of(new(misuse).activate(History("misuse", mode).next_task())))

    assert run("both") == ("ValueError: workflow.start_activity(): give the arguments positionally or as "
                           "args=[...], not both")
    assert run("str") == "TypeError: workflow.start_activity(): args must be a list or tuple of arguments, got str"
    assert run("threshold") == "ValueError: start_local_activity: local_retry_threshold must not be negative"
    assert run("child").startswith("ValueError: workflow.start_child_workflow(): give the arguments")
    assert run("local_no_timeout") == ("ValueError: start_local_activity needs start_to_close_timeout or "
                                       "schedule_to_close_timeout (or both)")


def test_child_workflow_args() -> None:
    @workflow.defn
    async def parent() -> None:
        await workflow.start_child_workflow("kid", args=["x", 2], id="kid-1")

    cmds = new(parent).activate(History("parent").next_task())
    assert kinds(cmds) == ["START_CHILD_WORKFLOW_EXECUTION"]
    assert decode(cmds[0].start_child_workflow_execution_command_attributes.input) == ["x", 2]


# ---------------------------------------------------------------------- WorkflowInfo methods


def test_info_history_length_and_continue_as_new_suggestion_are_methods() -> None:
    seen: list[Any] = []

    @workflow.defn
    async def long_running() -> None:
        first = workflow.info()
        seen.append((first.get_current_history_length(), first.is_continue_as_new_suggested()))
        await workflow.sleep(1)
        # an info taken earlier still answers for now, as in Temporal
        seen.append((first.get_current_history_length(), first.is_continue_as_new_suggested()))
        seen.append((workflow.info().get_current_history_length(), workflow.info().is_continue_as_new_suggested()))

    h = History("long_running")
    inst = new(long_running)
    h.complete(inst.activate(h.next_task()))
    h.timer_fired("1")
    events = h.next_task()
    events[-1].workflow_task_started_event_attributes.suggest_continue_as_new = True
    inst.activate(events)
    assert seen == [(3, False), (8, True), (8, True)]
    seen.clear()
    new(long_running).activate(h.events)  # replay sees the same values
    assert seen == [(3, False), (8, True), (8, True)]
    info = inst.workflow_info  # outside workflow code: the snapshot's values
    assert (info.get_current_history_length(), info.is_continue_as_new_suggested()) == (8, True)
    assert not hasattr(info, "history_length") and not hasattr(info, "suggest_continue_as_new")
