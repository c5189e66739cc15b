"""The static determinism check flags what depends on the worker's world (issue 25, section 3).

A replay test runs on a machine like the one that recorded the history, so these pass it
and break on another worker: the environment, config files, the log level, the local time
zone, values read at import, a set's order, clocks reached sideways. Each rule has its true
catch and the safe neighbour that must not be flagged. The workflows are module-level so that
the checker resolves this module's imports and names, as it does for user code.
"""

from __future__ import annotations

import configparser
import datetime
import functools
import importlib
import inspect
import json
import logging
import os
import os as o
import pathlib
import random
import sys
import time
import tomllib
import uuid

from datetime import date, timezone
from datetime import datetime as dt
from os import environ, getenv
from time import monotonic as mono
from time import perf_counter

import pytest

from _world_helpers import REGION, RETRIES, calls_stamp, pure_label, region_label, stamp

from spindle import workflow
from spindle._workflow.determinism_check import Finding, check_workflow

logger = logging.getLogger(__name__)
_clock = functools.partial(time.time)
_now = functools.partial(dt.now)
_rng = random.Random()
_clock_rng = random.Random(time.time())
_fixed_rng = random.Random(42)
_LIMIT = 10


def calls(defn: object) -> list[str]:
    return [f.call for f in check_workflow(defn)]


def line_of(text: str) -> int:
    """The number of the first line of this module that contains ``text``."""
    lines = inspect.getsource(sys.modules[__name__]).splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


# ---------------------------------------------------------------------- 1. environment and config files


@workflow.defn
class EnvWorkflow:
    @workflow.run
    async def run(self) -> list[object]:
        return [os.environ["A"], os.environ.get("B"), environ["C"], getenv("D"), o.getenv("E"), o.environ["F"],
                os.getenv("G", "x"), dict(os.environ), sys.argv[1:]]


@workflow.defn
class ConfigFileWorkflow:
    @workflow.run
    async def run(self) -> list[object]:
        cfg = configparser.ConfigParser()
        cfg.read("app.ini")
        direct = configparser.ConfigParser().read_file(open("b.ini"))
        with open("settings.toml", "rb") as fh:
            settings = tomllib.load(fh)
        loaded = tomllib.loads(pathlib.Path("s.toml").read_text())
        data = json.load(open("data.json"))
        return [cfg, direct, settings, loaded, data]


@workflow.defn
class ConfigAsInputWorkflow:
    @workflow.run
    async def run(self, region: str, raw: str) -> list[object]:
        cfg = configparser.ConfigParser()
        cfg.read_string(raw)  # the content came in as the workflow's input
        return [region, cfg["a"]["b"], tomllib.loads("a = 1"), json.loads(raw), RETRIES, _LIMIT]


def test_environment_is_flagged_in_every_form() -> None:
    found = check_workflow(EnvWorkflow)
    assert [f.call for f in found] == ["os.environ", "os.environ", "os.environ", "os.getenv()", "os.getenv()",
                                       "os.environ", "os.getenv()", "os.environ", "sys.argv"]
    assert all("workflow argument" in f.alternative for f in found)
    assert {f.line for f in found} == {EnvWorkflow.run.__code__.co_firstlineno + 2,
                                      EnvWorkflow.run.__code__.co_firstlineno + 3}


def test_config_file_reads_are_flagged() -> None:
    assert calls(ConfigFileWorkflow) == ["ConfigParser.read()", "ConfigParser.read_file()", "open()", "open()",
                                         "tomllib.load()", ".read_text()", "json.load()", "open()"]


def test_configuration_passed_as_input_is_accepted() -> None:
    assert calls(ConfigAsInputWorkflow) == []


# ---------------------------------------------------------------------- 2. the log level


@workflow.defn
class LogLevelWorkflow:
    @workflow.run
    async def run(self) -> int:
        n = 0
        if logger.isEnabledFor(logging.DEBUG):
            n += 1
        if logging.getLogger().level <= logging.INFO:
            n += 1
        if logger.getEffectiveLevel() > 10 or logging.root.level or logger.level:
            n += 1
        if workflow.logger.isEnabledFor(logging.INFO):
            n += 1
        return n


@workflow.defn
class LoggingWorkflow:
    @workflow.run
    async def run(self, level: int) -> int:
        logger.info("starting")
        workflow.logger.debug("details %s", level)
        return level if level > logging.INFO else 0  # the level came in as input


def test_branches_on_the_log_level_are_flagged() -> None:
    found = check_workflow(LogLevelWorkflow)
    assert [f.call for f in found] == [
        "logger.isEnabledFor() (the worker's log level)", "logger.level (the worker's log level)",
        "logger.getEffectiveLevel() (the worker's log level)", "logger.level (the worker's log level)",
        "logger.level (the worker's log level)", "logger.isEnabledFor() (the worker's log level)"]
    assert "log level differs per worker" in found[0].alternative


def test_logging_without_a_level_branch_is_accepted() -> None:
    assert calls(LoggingWorkflow) == []


# ---------------------------------------------------------------------- 3. the local time zone


@workflow.defn
class LocalTimeWorkflow:
    @workflow.run
    async def run(self, ts: float) -> list[object]:
        return [dt.fromtimestamp(ts), datetime.datetime.fromtimestamp(ts, None), date.fromtimestamp(ts),
                time.localtime(ts), time.mktime(time.gmtime(ts)), workflow.now().astimezone(),
                time.strftime("%H"), time.timezone]


@workflow.defn
class UtcTimeWorkflow:
    @workflow.run
    async def run(self, ts: float) -> list[object]:
        return [dt.fromtimestamp(ts, tz=timezone.utc), datetime.datetime.fromtimestamp(ts, timezone.utc),
                time.gmtime(ts), time.strftime("%H", time.gmtime(ts)), workflow.now().astimezone(timezone.utc),
                dt.fromisoformat("2024-01-01T00:00:00+00:00")]


def test_local_time_conversions_are_flagged() -> None:
    found = check_workflow(LocalTimeWorkflow)
    assert [f.call for f in found] == [
        "datetime.datetime.fromtimestamp(ts) without tz (the worker's local time zone)",
        "datetime.datetime.fromtimestamp(ts) without tz (the worker's local time zone)",
        "datetime.date.fromtimestamp()", "time.localtime(secs) (the worker's local time zone)", "time.mktime()",
        ".astimezone() (the worker's local time zone)", "time.strftime()",
        "time.timezone (the worker's local time zone)"]
    assert "tz=timezone.utc" in found[0].alternative


def test_conversions_given_a_zone_are_accepted() -> None:
    assert calls(UtcTimeWorkflow) == []


# ---------------------------------------------------------------------- 4. clocks read at import


@workflow.defn
class ClassClockWorkflow:
    started = time.time()
    unused = time.time()  # never read by the workflow
    label = "clock"

    @workflow.run
    async def run(self) -> list[object]:
        return [self.started, self.label, _clock(), _now()]


@workflow.defn
class WorkflowTimeWorkflow:
    started: float = 0.0

    @workflow.run
    async def run(self) -> list[object]:
        self.started = workflow.now().timestamp()
        return [self.started, workflow.side_effect(_clock), _LIMIT]


def test_clock_reads_at_import_are_flagged_where_the_workflow_uses_them() -> None:
    found = check_workflow(ClassClockWorkflow)
    assert [f.call for f in found] == [
        "ClassClockWorkflow.started (class attribute: time.time(), evaluated at import)",
        f"_clock (time.time (referenced, to be called later), evaluated at import, line {line_of('_clock =')})",
        f"_now (datetime.datetime.now (referenced, to be called later), evaluated at import, line "
        f"{line_of('_now =')})"]
    assert found[0].line == line_of("started = time.time()")


def test_workflow_time_and_recorded_clocks_are_accepted() -> None:
    assert calls(WorkflowTimeWorkflow) == []


# ---------------------------------------------------------------------- 5. a set's order


@workflow.defn
class SetOrderWorkflow:
    def __init__(self) -> None:
        self.pending: set[str] = set()

    @workflow.run
    async def run(self, names: list[str]) -> list[str]:
        out = []
        for x in {"a", "b"}:
            out.append(x)
        for n in set(names):
            out.append(n)
        frozen = frozenset(names)
        out += [y for y in frozen]
        out += list(self.pending)
        return [", ".join(set(names)), *out]


@workflow.defn
class SortedSetWorkflow:
    def __init__(self) -> None:
        self.pending: set[str] = set()

    @workflow.run
    async def run(self, names: list[str]) -> list[object]:
        out = [x for x in sorted({"a", "b"})]
        for n in sorted(set(names)):
            out.append(n)
        for i in {3, 1, 2}:  # ints hash to themselves: the same order in every process
            out.append(str(i))
        seen = set(names)
        return [out, "a" in seen, len(seen), any(s.startswith("a") for s in seen), sorted(self.pending)]


def test_iterating_a_set_of_strings_is_flagged() -> None:
    found = check_workflow(SetOrderWorkflow)
    assert [f.call for f in found] == [
        "iteration over a set literal", "iteration over set(...)", "iteration over frozen (a set)",
        "iteration over self.pending (a set)", "iteration over set(...)"]
    assert found[0].alternative.startswith("sorted(...)")


def test_sorted_sets_membership_and_sets_of_ints_are_accepted() -> None:
    assert calls(SortedSetWorkflow) == []


# ---------------------------------------------------------------------- 6. getattr on a module


@workflow.defn
class GetattrWorkflow:
    @workflow.run
    async def run(self, name: str) -> list[object]:
        return [getattr(time, "time")(), getattr(uuid, "uuid4")(), getattr(random, name)(),  # noqa: B009
                importlib.import_module("time").time()]


@workflow.defn
class GetattrSafeWorkflow:
    @workflow.run
    async def run(self) -> list[object]:
        return [getattr(time, "gmtime")(0), getattr(self, "helper")(), getattr(uuid, "NAMESPACE_DNS")]  # noqa: B009

    def helper(self) -> int:
        return 1


def test_getattr_on_time_uuid_random_is_flagged() -> None:
    assert calls(GetattrWorkflow) == ["getattr(time, 'time')", "getattr(uuid, 'uuid4')",
                                      "getattr(random, <a computed name>)", "time.time()"]


def test_getattr_of_pure_names_is_accepted() -> None:
    assert calls(GetattrSafeWorkflow) == []


# ---------------------------------------------------------------------- 7. monotonic clocks


@workflow.defn
class MonotonicWorkflow:
    @workflow.run
    async def run(self) -> list[object]:
        clock = time.perf_counter_ns
        return [time.monotonic(), time.monotonic_ns(), mono(), perf_counter(), clock()]


def test_monotonic_clocks_are_flagged_in_every_form() -> None:
    assert calls(MonotonicWorkflow) == ["time.perf_counter_ns (referenced, to be called later)", "time.monotonic()",
                                        "time.monotonic_ns()", "time.monotonic()", "time.perf_counter()"]


# ---------------------------------------------------------------------- 8. random.Random instances


@workflow.defn
class SharedRngWorkflow:
    @workflow.run
    async def run(self) -> list[object]:
        local = random.Random()
        clocked = random.Random(time.time_ns())
        return [_rng.randint(0, 9), _clock_rng.random(), _fixed_rng.random(), local.random(), clocked.random()]


@workflow.defn
class SeededRngWorkflow:
    def __init__(self) -> None:
        self.seed = 0

    @workflow.run
    async def run(self, seed: int) -> list[object]:
        self.seed = seed
        a = random.Random(workflow.random().randint(0, 2**32))
        b = random.Random(seed)
        c = random.Random(self.seed)
        d = random.Random(x=seed + 1)
        return [a.random(), b.random(), c.random(), d.random(), random.Random(7).random()]

    @workflow.signal
    def reseed(self, seed: int) -> None:
        self.seed = random.Random(seed).randint(0, 100)


def test_unseeded_clock_seeded_and_module_level_random_instances_are_flagged() -> None:
    found = check_workflow(SharedRngWorkflow)
    shared = "a random.Random instance made at import"
    assert [f.call for f in found] == [
        "random.Random() (unseeded: seeded from the operating system)",
        "random.Random(seeded from time.time_ns())", "time.time_ns()",
        f"_rng ({shared}, line {line_of('_rng =')})", f"_clock_rng ({shared}, line {line_of('_clock_rng =')})",
        f"_fixed_rng ({shared}, line {line_of('_fixed_rng =')})"]
    assert all(f.line > SharedRngWorkflow.run.__code__.co_firstlineno for f in found)  # where the workflow uses them


def test_random_seeded_from_input_or_workflow_random_is_accepted() -> None:
    assert calls(SeededRngWorkflow) == []


# ---------------------------------------------------------------------- helpers in the user's modules


def _local_helper(n: int) -> str:
    return f"{n}:{uuid.uuid4()}"


def _pure_helper(n: int) -> int:
    return n * 2


@workflow.defn
class HelperWorkflow:
    @workflow.run
    async def run(self) -> list[object]:
        return [_local_helper(1), stamp("a"), region_label(), REGION, self._twice()]

    def _twice(self) -> str:
        return stamp("b") + _local_helper(2)  # each helper is checked once


@workflow.defn
class PureHelperWorkflow:
    @workflow.run
    async def run(self) -> list[object]:
        return [_pure_helper(1), pure_label("a"), calls_stamp(), RETRIES]


def _helper_line(fn: object, offset: int = 1) -> int:
    return fn.__code__.co_firstlineno + offset  # type: ignore[attr-defined]


def test_helpers_in_the_users_modules_are_followed_one_level() -> None:
    found = check_workflow(HelperWorkflow)
    run_line = HelperWorkflow.run.__code__.co_firstlineno + 2
    own, followed = found[:1], found[1:]
    assert [f.call for f in own] == ["_world_helpers.REGION (os.getenv(), evaluated at import, line 8)"]
    assert [(f.file.rsplit("/", 1)[-1], f.line, f.call) for f in followed] == [
        ("test_determinism_check_world.py", _helper_line(_local_helper), "uuid.uuid4()"),
        ("_world_helpers.py", _helper_line(stamp), "time.time()"),
        ("_world_helpers.py", _helper_line(region_label), "os.environ")]
    assert followed[0].via.endswith(f"test_determinism_check_world.py:{run_line}")
    assert "the call _world_helpers.stamp() at " in followed[1].via
    assert "(reached from the call" in str(followed[1])


def test_pure_helpers_and_helpers_two_levels_down_are_not_flagged() -> None:
    assert calls(PureHelperWorkflow) == []


@pytest.mark.parametrize(("folder", "followed"), [("site-packages", False), ("myproject", True)])
def test_only_the_users_own_modules_are_followed(tmp_path: pathlib.Path, folder: str, followed: bool,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    lib = tmp_path / folder
    lib.mkdir()
    tag = f"helper_{folder.replace('-', '_')}"
    (lib / f"{tag}_mod.py").write_text("import time\n\ndef stamp():\n    return time.time()\n")
    (tmp_path / f"{tag}_wf.py").write_text(
        "from spindle import workflow\n"
        f"from {tag}_mod import stamp\n\n"
        "@workflow.defn(check_determinism=False)\n"
        "class W:\n"
        "    @workflow.run\n"
        "    async def run(self) -> float:\n"
        "        return stamp()\n")
    monkeypatch.syspath_prepend(str(lib))
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module(f"{tag}_wf")
    try:
        found: list[Finding] = check_workflow(module.W)
    finally:
        for name in (f"{tag}_wf", f"{tag}_mod"):
            sys.modules.pop(name, None)
    assert [(f.line, f.call) for f in found] == ([(4, "time.time()")] if followed else [])
