"""The static determinism check accepts safe code: each false positive it had, and the true catches next to it.

The workflows are module-level so that the checker resolves this module's imports,
as it does for user code. The older catches are in test_definitions_guards.py.
"""

from __future__ import annotations

import ast
import datetime
import functools
import gc
import http
import http.client
import pathlib
import secrets
import time
import urllib.parse
import urllib.request

from datetime import datetime as dt
from pathlib import Path, PurePosixPath

from spindle import workflow
from spindle._workflow.determinism_check import check_source, check_workflow


def calls(defn: object) -> list[str]:
    return [f.call for f in check_workflow(defn)]


# ---------------------------------------------------------------------- side_effect


@workflow.defn
class TokenWorkflow:
    @workflow.run
    async def run(self) -> list[str]:
        def make_token() -> str:
            return secrets.token_urlsafe(32)

        return [
            workflow.side_effect(lambda: secrets.token_urlsafe(32)),
            workflow.side_effect(make_token),
            workflow.side_effect(functools.partial(secrets.token_hex, 16)),
            workflow.side_effect(self.stamp),
            workflow.side_effect(fn=lambda: str(dt.now())),
        ]

    def stamp(self) -> str:
        return str(time.time())


@workflow.defn
class LeakyTokenWorkflow:
    @workflow.run
    async def run(self) -> list[str]:
        def make_token() -> str:
            return secrets.token_urlsafe(32)

        recorded = workflow.side_effect(make_token)
        return [recorded, make_token(), secrets.token_hex(4)]  # the direct call is not recorded


def test_the_function_given_to_side_effect_is_not_checked() -> None:
    assert calls(TokenWorkflow) == []


def test_side_effect_functions_called_directly_are_still_caught() -> None:
    assert calls(LeakyTokenWorkflow) == ["secrets.token_urlsafe()", "secrets.token_hex()"]


# ---------------------------------------------------------------------- modules: pure parts allowed


@workflow.defn
class PureStdlibWorkflow:
    @workflow.run
    async def run(self, base: str) -> list[str]:
        query = urllib.parse.urlencode({"q": "spindle"})
        status = http.HTTPStatus(404).phrase
        path = PurePosixPath("/data") / "reports" / "q1.csv"
        local = Path("reports") / "q1.csv"  # path arithmetic touches no file
        return [query, status, str(path), local.suffix, urllib.parse.urljoin(base, "x")]


@workflow.defn
class IoWorkflow:
    @workflow.run
    async def run(self, report: Path) -> list[str]:
        body = urllib.request.urlopen("https://example.com").read()
        conn = http.client.HTTPConnection("example.com")
        text = Path("notes.txt").read_text()
        out = pathlib.Path("out")
        exists = out.exists()
        lines = (report.parent / "x.csv").open().readlines()
        here = Path.cwd()
        return [str(body), str(conn), text, str(exists), str(lines), str(here)]


def test_pure_parts_of_io_modules_are_accepted() -> None:
    assert calls(PureStdlibWorkflow) == []


def test_calls_that_do_io_are_caught() -> None:
    assert calls(IoWorkflow) == ["urllib.request.urlopen()", "http.client.HTTPConnection()", ".read_text()",
                                 "Path.exists()", "Path.open()", "pathlib.Path.cwd()"]


# ---------------------------------------------------------------------- clocks: arguments matter


@workflow.defn
class ClockWorkflow:
    @workflow.run
    async def run(self) -> list[object]:
        now = workflow.now().timestamp()
        return [time.gmtime(now), time.strftime("%Y", time.gmtime(now)), time.asctime(time.gmtime(now)),
                time.gmtime(), time.gmtime(None), time.strftime("%Y"), time.localtime(now), time.ctime()]


def test_clock_functions_given_a_time_are_pure() -> None:
    found = check_workflow(ClockWorkflow)
    assert [f.call for f in found] == ["time.gmtime()", "time.gmtime()", "time.strftime()",
                                       "time.localtime(secs) (the worker's local time zone)", "time.ctime()"]
    assert "workflow.now()" in found[0].alternative and "time.gmtime(secs)" in found[3].alternative


# ---------------------------------------------------------------------- reachability


@workflow.defn
class StarterHelpersWorkflow:
    def __init__(self) -> None:
        self.events: list[str] = []

    @workflow.run
    async def run(self, started_at: str) -> list[str]:
        await workflow.wait_condition(self._ready)
        return [started_at, *self.events, self._describe()]

    @workflow.signal
    def add(self, item: str) -> None:
        self.events.append(self._normalise(item))

    @workflow.query
    def size(self) -> int:
        return len(self.events)

    def _ready(self) -> bool:
        return bool(self.events)

    def _describe(self) -> str:
        return StarterHelpersWorkflow._fmt(len(self.events))

    @staticmethod
    def _fmt(n: int) -> str:
        return f"{n} events"

    @staticmethod
    def _normalise(item: str) -> str:
        return item.strip()

    @staticmethod
    def make_input() -> str:  # called by the starter, never by the workflow
        return datetime.datetime.now().isoformat()

    @classmethod
    def from_env(cls) -> StarterHelpersWorkflow:  # starter side too
        _ = time.time()
        return cls()


@workflow.defn
class ReachableHelpersWorkflow:
    def __init__(self) -> None:
        self.created = time.time()  # __init__ runs in the workflow

    @workflow.run
    async def run(self) -> str:
        return self._step_one()

    def _step_one(self) -> str:
        return self._step_two()  # reached through another helper

    def _step_two(self) -> str:
        return str(dt.now())

    @workflow.signal
    def poke(self) -> None:
        self._from_signal()

    def _from_signal(self) -> None:
        time.sleep(1)

    @workflow.query
    def status(self) -> str:
        return type(self)._static_from_query() + ReachableHelpersWorkflow._static_from_query()

    @staticmethod
    def _static_from_query() -> str:
        return str(secrets.randbelow(3))

    @workflow.update
    def change(self, x: int) -> int:
        return x

    @change.validator
    def _check(self, x: int) -> None:
        self._validate_helper(x)

    def _validate_helper(self, x: int) -> None:
        if time.monotonic() > x:
            raise ValueError("late")

    @property
    def age(self) -> float:  # reached from nowhere
        return time.time() - self.created


def test_methods_the_workflow_never_runs_are_not_checked() -> None:
    assert calls(StarterHelpersWorkflow) == []


def test_methods_reached_from_run_handlers_validators_and_init_are_checked() -> None:
    found = check_workflow(ReachableHelpersWorkflow)
    assert sorted(f.call for f in found) == sorted([
        "time.time()", "datetime.datetime.now()", "time.sleep()", "secrets.randbelow()", "time.monotonic()"])
    lines = {f.call: f.line for f in found}
    source_line = ReachableHelpersWorkflow._step_two.__code__.co_firstlineno + 1
    assert lines["datetime.datetime.now()"] == source_line


# ---------------------------------------------------------------------- sandbox_unrestricted


@workflow.defn
class UnrestrictedWorkflow:
    @workflow.run
    async def run(self) -> list[float]:
        with workflow.unsafe.sandbox_unrestricted():
            wall = time.time()
        return [wall, time.time()]


def test_sandbox_unrestricted_blocks_are_an_explicit_opt_out() -> None:
    (f,) = check_workflow(UnrestrictedWorkflow)
    assert f.call == "time.time()" and f.line == UnrestrictedWorkflow.run.__code__.co_firstlineno + 4


def test_check_source_still_checks_every_function_of_a_snippet() -> None:
    src = '''
import time
from spindle import workflow

class W:
    @staticmethod
    def helper():
        return time.time()

    async def run(self):
        return workflow.side_effect(lambda: time.time())
'''
    assert [(f.line, f.call) for f in check_source(src)] == [(8, "time.time()")]


class _ParsesWhenCollected:
    def __del__(self) -> None:
        ast.parse("a + b")  # as traceback formatting does when a finalizer logs an exception


def test_a_parse_in_a_finalizer_does_not_break_the_check() -> None:
    # CPython 3.11 (gh-106905): a nested parse from a GC finalizer made the outer one raise SystemError
    threshold = gc.get_threshold()
    gc.set_threshold(1)
    try:
        for _ in range(5):
            for _ in range(50):
                cycle = _ParsesWhenCollected()
                cycle.self = cycle  # type: ignore[attr-defined]
            del cycle
            assert check_workflow(ReachableHelpersWorkflow) != []
    finally:
        gc.set_threshold(*threshold)
        gc.collect()  # the cycles' finalizers parse: run them now, not inside the next parse (pytest's own)
