"""Decorators and definitions, context errors, runtime guards, the static determinism check, the logger."""

from __future__ import annotations

import datetime
import logging
import random
import time
import uuid

from datetime import timedelta

import pytest

from _runtime_history import History, kinds, result_of

from spindle import workflow
from spindle._workflow.defn import WorkflowDefinition
from spindle._workflow.determinism_check import check_source, check_workflow
from spindle._workflow.instance import WorkflowInstance
from spindle.exceptions import WorkflowContextError


def new(defn: object) -> WorkflowInstance:
    return WorkflowInstance(defn, workflow_id="wf", run_id="run-1", task_queue="q")


@workflow.defn(name="Greeter", check_determinism=False)
class Greeter:
    @workflow.run
    async def run(self, name: str) -> str:
        return f"hi {name}"

    @workflow.signal(name="rename")
    def set_name(self, name: str) -> None: ...

    @workflow.query
    def status(self) -> str:
        return ""

    @workflow.update
    def change(self, x: int) -> int:
        return x

    @change.validator
    def _v(self, x: int) -> None: ...


def test_class_definition_has_names_handlers_and_hints() -> None:
    d = WorkflowDefinition.from_target(Greeter)
    assert (d.name, d.cls, d.check_determinism) == ("Greeter", Greeter, False)
    assert WorkflowDefinition.from_target(Greeter.run) is d
    assert (set(d.signals), set(d.queries), set(d.updates)) == ({"rename"}, {"status"}, {"change"})
    assert d.updates["change"].validator is not None and d.updates["change"].validator.fn is Greeter._v
    assert (d.arg_types, d.return_type) == ((str,), str)
    assert d.signals["rename"].handler.arg_types == (str,)


def test_function_definition() -> None:
    @workflow.defn
    async def fn_style(a: int, b: str = "x") -> list[int]:
        return [a]

    d = WorkflowDefinition.from_target(fn_style)
    assert (d.name, d.cls, d.arg_types, d.return_type, d.check_determinism) == (
        "fn_style", None, (int, str), list[int], True)


def test_undecorated_targets_and_bad_definitions_raise_type_error() -> None:
    class Plain:
        async def run(self) -> None: ...

    with pytest.raises(TypeError, match="Plain is not a workflow: decorate"):
        WorkflowDefinition.from_target(Plain)
    with pytest.raises(TypeError, match="needs exactly one @workflow.run method"):
        workflow.defn(Plain)
    with pytest.raises(TypeError, match="must be 'async def'"):
        workflow.defn(lambda: None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="must be a plain 'def'"):
        class Q:
            @workflow.query
            async def q(self) -> None: ...
    with pytest.raises(TypeError, match="two signal handlers named 'x'"):
        @workflow.defn
        class Dup:
            @workflow.run
            async def run(self) -> None: ...

            @workflow.signal(name="x")
            def a(self) -> None: ...

            @workflow.signal(name="x")
            def b(self) -> None: ...


def test_workflow_api_outside_a_workflow_raises_context_error() -> None:
    with pytest.raises(WorkflowContextError, match=r"workflow.now\(\) can only be called from workflow code"):
        workflow.now()
    with pytest.raises(WorkflowContextError):
        workflow.info()
    with pytest.raises(WorkflowContextError):
        workflow.start_activity("a", start_to_close_timeout=timedelta(seconds=1))
    with pytest.raises(WorkflowContextError):
        workflow.get_version("c", 1, 2)
    assert workflow.in_workflow() is False


async def test_guards_do_not_affect_code_outside_workflows() -> None:
    # Running on pytest's asyncio loop (not a workflow loop): everything works.
    assert time.time() > 0 and random.random() < 1 and uuid.uuid4().version == 4
    assert datetime.datetime.now().year >= 2024 and datetime.date.today().year >= 2024


def test_guards_raise_inside_workflow_code() -> None:
    @workflow.defn(check_determinism=False)
    async def cheats() -> list[str]:
        out = []
        for call in (time.time, random.random, uuid.uuid4, datetime.datetime.now, datetime.datetime.utcnow,
                     lambda: time.sleep(0)):
            try:
                call()
                out.append("allowed")
            except WorkflowContextError as e:
                out.append(str(e).split(" is not deterministic")[0])
        logging.getLogger("test").info("stdlib callers (logging stamps records with time.time) still work")
        return out

    assert result_of(new(cheats).activate(History("cheats").next_task())) == [
        "time.time()", "random.random()", "uuid.uuid4()", "datetime.now()", "datetime.utcnow()", "time.sleep()"]


def test_workflow_random_and_uuid_are_seeded_by_run_id() -> None:
    @workflow.defn
    async def rnd() -> list[object]:
        return [workflow.random().randint(0, 10**9), str(workflow.uuid4())]

    a = result_of(new(rnd).activate(History("rnd").next_task()))
    b = result_of(new(rnd).activate(History("rnd").next_task()))
    c = result_of(WorkflowInstance(rnd, run_id="other").activate(History("rnd").next_task()))
    assert a == b and a != c and uuid.UUID(a[1]).version == 4


def test_logger_is_silent_during_replay_and_tags_records(caplog: pytest.LogCaptureFixture) -> None:
    @workflow.defn
    async def chatty() -> None:
        workflow.logger.info("step %s", workflow.info().get_current_history_length())
        await workflow.sleep(1)
        workflow.logger.info("step %s", workflow.info().get_current_history_length())

    h = History("chatty")
    inst = new(chatty)
    cmds = inst.activate(h.next_task())
    h.complete(cmds)
    h.timer_fired("1")
    h.next_task()
    caplog.set_level(logging.INFO, logger="spindle.workflow")
    assert kinds(new(chatty).activate(h.events)) == ["COMPLETE_WORKFLOW_EXECUTION"]
    records = [r for r in caplog.records if r.name == "spindle.workflow"]
    assert [r.getMessage().split(" (")[0] for r in records] == ["step 8"]  # step 3 was replayed: silent
    assert (records[0].workflow_id, records[0].run_id) == ("wf", "run-1")  # type: ignore[attr-defined]


SOURCE = '''
import os, time
import random as rnd
from datetime import datetime
from uuid import uuid4
import requests
import threading

async def wf():
    t = time.time()
    x = rnd.choice([1, 2])
    d = datetime.now()
    u = uuid4()
    key = os.environ["KEY"]
    with open("f") as fh:
        pass
    requests.get("http://x")
    threading.Thread(target=print).start()
    time.sleep(1)
    return workflow.now(), workflow.random().random()
'''


def test_static_check_flags_each_non_deterministic_call_with_line_and_alternative() -> None:
    found = check_source(SOURCE, filename="wf.py")
    assert [(f.line, f.call) for f in found] == [
        (10, "time.time()"), (11, "random.choice()"), (12, "datetime.datetime.now()"), (13, "uuid.uuid4()"),
        (14, "os.environ"), (15, "open()"), (17, "requests.get()"), (18, "threading.Thread()"),
        (19, "time.sleep()")]
    assert str(found[0]) == ("wf.py:10: time.time() is not deterministic in workflow code; "
                             "instead: workflow.now() (workflow time)")
    assert "workflow.sleep" in found[-1].alternative


def test_check_workflow_reads_the_definition_source() -> None:
    @workflow.defn
    async def clean() -> None:
        await workflow.sleep(1)

    @workflow.defn(check_determinism=False)
    async def dirty() -> float:
        return time.time()

    assert check_workflow(clean) == []
    (f,) = check_workflow(dirty)
    assert f.file.endswith("test_definitions_guards.py") and f.call == "time.time()"
    assert f.line == dirty.__code__.co_firstlineno + 2  # decorator, def, then the call


@pytest.mark.parametrize("clock", ["time", "monotonic", "monotonic_ns", "perf_counter", "perf_counter_ns"])
def test_a_clock_read_in_workflow_code_fails_the_task(clock: str) -> None:
    @workflow.defn(check_determinism=False)
    async def reads_clock() -> float:
        return float(getattr(time, clock)())

    with pytest.raises(WorkflowContextError, match=rf"time\.{clock}\(\) is not deterministic"):
        new(reads_clock).activate(History("reads_clock").next_task())
    assert time.monotonic() > 0 and time.perf_counter_ns() > 0  # outside a workflow loop: unchanged
