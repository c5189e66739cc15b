"""The interpreter's scheduling logic, run against a fake executor on a plain loop."""

from __future__ import annotations

import asyncio
import textwrap

from collections.abc import Callable, Mapping
from typing import Any

import pytest

from spindle import dsl
from spindle.dsl._model import ActivityCall, ChildWorkflowCall
from spindle.dsl._scheduler import DagFailed, DagRun, StepError, trigger_allows


class ActivityFailed(Exception):
    """What the fake executor raises for a failing activity."""


class FakeExecutor:
    """Runs 'activities' as local functions and records what happened."""

    def __init__(self, activities: Mapping[str, Callable[..., Any]] | None = None,
                 signals: Mapping[str, Any] | None = None) -> None:
        self.activities = dict(activities or {})
        self.signals = dict(signals or {})
        self.calls: list[tuple[str, str, list[Any]]] = []
        self.children: list[tuple[str, str, list[Any]]] = []
        self.slept: list[float] = []
        self.running = 0
        self.max_running = 0
        self.cancelled: list[str] = []

    async def run_activity(self, call: ActivityCall, args: list[Any], *, activity_id: str) -> Any:
        self.calls.append((activity_id, call.activity, args))
        self.running += 1
        self.max_running = max(self.max_running, self.running)
        try:
            await asyncio.sleep(0)
            result = self.activities[call.activity](*args)
            if asyncio.iscoroutine(result):
                result = await result
            return result
        except asyncio.CancelledError:
            self.cancelled.append(activity_id)
            raise
        finally:
            self.running -= 1

    async def run_child(self, call: ChildWorkflowCall, args: list[Any], *, workflow_id: str) -> Any:
        self.children.append((workflow_id, call.workflow, args))
        return {"child": call.workflow, "args": args}

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        await asyncio.sleep(0)

    async def wait_for_signal(self, name: str, timeout: float | None) -> Any:
        await asyncio.sleep(0)
        if name not in self.signals:
            raise StepError(f"timed out waiting for signal {name!r}")
        return self.signals[name]

    def info(self) -> Mapping[str, Any]:
        return {"id": "wf-1", "run_id": "run-1", "type": "t", "now": "2024-01-01T00:00:00+00:00"}

    def is_step_failure(self, error: BaseException) -> bool:
        return isinstance(error, (ActivityFailed, StepError, dsl._expressions.ExpressionError))

    def describe(self, error: BaseException) -> tuple[str, str]:
        return str(error), type(error).__name__


def _load(text: str) -> dsl.DslWorkflow:
    return dsl.load(textwrap.dedent(text).strip("\n") + "\n")


async def _run(text: str, executor: FakeExecutor, inputs: Mapping[str, Any] | None = None) -> tuple[dict[str, Any], DagRun]:
    wf = _load(text)
    run = DagRun(wf.dag, wf.check_inputs(inputs), executor)
    return await run.run(), run


def _fail(message: str) -> Callable[..., Any]:
    def activity(*_: Any) -> Any:
        raise ActivityFailed(message)

    return activity


async def test_linear_steps_pass_results_and_outputs() -> None:
    executor = FakeExecutor({"extract": lambda d: [1, 2, 3], "total": lambda rows: sum(rows)})
    outputs, run = await _run(
        """
        name: w
        inputs:
          date: {type: string, required: true}
        steps:
          - id: extract
            activity: extract
            args: ["${{ inputs.date }}"]
          - id: total
            activity: total
            depends_on: [extract]
            args: ["${{ steps.extract.result }}"]
        outputs:
          total: "${{ steps.total.result }}"
          label: "total for ${{ inputs.date }} is ${{ steps.total.result }}"
        """,
        executor,
        {"date": "2024-05-01"},
    )
    assert outputs == {"total": 6, "label": "total for 2024-05-01 is 6"}
    assert executor.calls == [("extract", "extract", ["2024-05-01"]), ("total", "total", [[1, 2, 3]])]
    assert run.completion_order == ["extract", "total"]


async def test_independent_steps_run_in_parallel() -> None:
    both_started = asyncio.Event()
    started: list[str] = []

    async def step(name: str) -> str:
        started.append(name)
        if len(started) == 2:
            both_started.set()
        await asyncio.wait_for(both_started.wait(), 1)
        return name

    executor = FakeExecutor({"step": step})
    outputs, _ = await _run(
        """
        name: w
        steps:
          - {id: a, activity: step, args: [a]}
          - {id: b, activity: step, args: [b]}
          - {id: c, activity: step, args: [c], depends_on: [a, b]}
        outputs: {c: "${{ steps.c.result }}"}
        """,
        executor,
    )
    assert outputs == {"c": "c"}
    assert executor.max_running == 2


async def test_mapping_args_are_one_object_argument() -> None:
    executor = FakeExecutor({"f": lambda req: req["x"] * 2})
    outputs, _ = await _run(
        """
        name: w
        steps:
          - {id: a, activity: f, args: {x: 21}}
        outputs: {a: "${{ steps.a.result }}"}
        """,
        executor,
    )
    assert outputs == {"a": 42}
    assert executor.calls == [("a", "f", [{"x": 21}])]


async def test_when_false_skips_the_step_and_its_dependants() -> None:
    executor = FakeExecutor({"f": lambda: "ran"})
    outputs, run = await _run(
        """
        name: w
        inputs:
          publish: {type: boolean, default: false}
        steps:
          - {id: gate, activity: f, when: "${{ inputs.publish }}"}
          - {id: after, activity: f, depends_on: [gate]}
          - {id: cleanup, activity: f, depends_on: [gate], trigger_rule: all_done}
        outputs:
          gate: "${{ steps.gate.result }}"
          status: "${{ steps.after.status }}"
          cleanup: "${{ steps.cleanup.result }}"
        """,
        executor,
    )
    assert outputs == {"gate": None, "status": "skipped", "cleanup": "ran"}
    assert [c[0] for c in executor.calls] == ["cleanup"]
    assert run.outcomes["gate"].status == "skipped"


async def test_on_failure_continue_marks_failed_with_null_result() -> None:
    executor = FakeExecutor({"bad": _fail("boom"), "f": lambda x: f"got {x}"})
    outputs, _ = await _run(
        """
        name: w
        steps:
          - {id: flaky, activity: bad, on_failure: continue}
          - {id: next, activity: f, depends_on: [flaky], args: ["${{ steps.flaky.result }}"]}
          - {id: strict, activity: f, depends_on: [flaky], trigger_rule: all_success, args: [x]}
          - {id: alarm, activity: f, depends_on: [flaky], trigger_rule: one_failed, args: ["${{ steps.flaky.error }}"]}
        outputs:
          status: "${{ steps.flaky.status }}"
          next: "${{ steps.next.result }}"
          strict: "${{ steps.strict.status }}"
          alarm: "${{ steps.alarm.result }}"
        """,
        executor,
    )
    assert outputs == {"status": "failed", "next": "got None", "strict": "skipped", "alarm": "got boom"}


async def test_on_failure_handler_sees_the_error_and_can_continue() -> None:
    executor = FakeExecutor({"bad": _fail("card declined"), "fallback": lambda msg: f"fallback after {msg}"})
    outputs, _ = await _run(
        """
        name: w
        steps:
          - id: charge
            activity: bad
            on_failure:
              activity: fallback
              args: ["${{ error.message }}"]
              then: continue
        outputs:
          result: "${{ steps.charge.result }}"
          status: "${{ steps.charge.status }}"
        """,
        executor,
    )
    assert outputs == {"result": "fallback after card declined", "status": "failed"}
    assert executor.calls[-1][0] == "charge.on_failure"


async def test_on_failure_handler_then_fail_fails_the_run() -> None:
    executor = FakeExecutor({"bad": _fail("nope"), "undo": lambda: None})
    with pytest.raises(DagFailed, match=r"^step 'a' failed: nope$"):
        await _run(
            """
            name: w
            steps:
              - {id: a, activity: bad, on_failure: {activity: undo}}
            """,
            executor,
        )
    assert [c[0] for c in executor.calls] == ["a", "a.on_failure"]


async def test_failure_compensates_completed_steps_in_reverse_completion_order() -> None:
    executor = FakeExecutor({"ok": lambda name: name, "bad": _fail("out of stock"), "undo": lambda name: f"undone {name}"})
    with pytest.raises(DagFailed) as caught:
        await _run(
            """
            name: w
            steps:
              - {id: reserve, activity: ok, args: [reserve]}
              - {id: charge, activity: ok, args: [charge], depends_on: [reserve]}
              - {id: never, activity: ok, args: [never], depends_on: [ship]}
              - {id: ship, activity: bad, depends_on: [charge]}
            compensate:
              - {step: reserve, activity: undo, args: ["${{ steps.reserve.result }}"]}
              - {step: charge, activity: undo, args: ["${{ steps.charge.result }}"]}
              - {step: never, activity: undo, args: [never]}
            """,
            executor,
        )
    error = caught.value
    assert error.step == "ship"
    assert error.compensated == ["charge", "reserve"]
    assert str(error) == "step 'ship' failed: out of stock (compensated: charge, reserve)"
    assert [c[0] for c in executor.calls] == [
        "reserve", "charge", "ship", "compensate.charge", "compensate.reserve",
    ]


async def test_a_failing_compensation_does_not_stop_the_others() -> None:
    executor = FakeExecutor({"ok": lambda: 1, "bad": _fail("boom"), "undo_bad": _fail("undo broke"), "undo": lambda: 0})
    with pytest.raises(DagFailed) as caught:
        await _run(
            """
            name: w
            steps:
              - {id: a, activity: ok}
              - {id: b, activity: ok, depends_on: [a]}
              - {id: c, activity: bad, depends_on: [b]}
            compensate:
              - {step: a, activity: undo}
              - {step: b, activity: undo_bad}
            """,
            executor,
        )
    assert caught.value.compensated == ["a"]
    assert caught.value.compensation_errors == ["b: undo broke"]


async def test_a_fatal_failure_cancels_running_steps() -> None:
    forever = asyncio.Event()

    async def slow() -> None:
        await forever.wait()

    executor = FakeExecutor({"slow": slow, "bad": _fail("boom")})
    with pytest.raises(DagFailed):
        await _run(
            """
            name: w
            steps:
              - {id: slow, activity: slow}
              - {id: bad, activity: bad}
            """,
            executor,
        )
    assert executor.cancelled == ["slow"]


async def test_for_each_results_in_order_and_max_parallel() -> None:
    async def square(n: int, index: int) -> int:
        await asyncio.sleep(0.001 * (5 - n))  # finish out of order
        return n * n + index * 0

    executor = FakeExecutor({"square": square})
    outputs, _ = await _run(
        """
        name: w
        inputs:
          numbers: {type: array, default: [1, 2, 3, 4, 5]}
        steps:
          - id: squares
            activity: square
            for_each: "${{ inputs.numbers }}"
            max_parallel: 2
            args: ["${{ item }}", "${{ index }}"]
        outputs: {squares: "${{ steps.squares.result }}"}
        """,
        executor,
    )
    assert outputs == {"squares": [1, 4, 9, 16, 25]}
    assert executor.max_running == 2
    assert [c[0] for c in executor.calls] == [f"squares[{i}]" for i in range(5)]


async def test_for_each_over_a_non_list_fails_the_step_clearly() -> None:
    executor = FakeExecutor({"f": lambda x: x})
    with pytest.raises(DagFailed, match=r"^step 'each' failed: for_each must evaluate to a list, got str 'eu'$"):
        await _run(
            """
            name: w
            inputs:
              regions: {type: string, default: eu}
            steps:
              - {id: each, activity: f, for_each: "${{ inputs.regions }}", args: ["${{ item }}"]}
            """,
            executor,
        )


async def test_for_each_item_failure_fails_the_step() -> None:
    def maybe(n: int) -> int:
        if n == 3:
            raise ActivityFailed("three")
        return n

    executor = FakeExecutor({"maybe": maybe})
    outputs, _ = await _run(
        """
        name: w
        steps:
          - {id: each, activity: maybe, for_each: [1, 2, 3, 4], args: ["${{ item }}"], on_failure: continue}
        outputs: {each: "${{ steps.each.result }}", status: "${{ steps.each.status }}"}
        """,
        executor,
    )
    assert outputs == {"each": None, "status": "failed"}


async def test_set_sleep_signal_fail_and_child_steps() -> None:
    executor = FakeExecutor(signals={"approve": "yes"})
    with pytest.raises(DagFailed, match=r"^step 'stop' failed: rejected: yes$"):
        await _run(
            """
            name: w
            steps:
              - {id: values, set: {n: "${{ 2 * 21 }}", s: "n=${{ 2 * 21 }}", id: "${{ workflow.id }}"}}
              - {id: nap, sleep: 90s, depends_on: [values]}
              - {id: approval, wait_for_signal: approve, timeout: 1d, depends_on: [nap]}
              - {id: child, workflow: other, args: {n: "${{ steps.values.result.n }}"}, depends_on: [approval]}
              - {id: stop, fail: "rejected: ${{ steps.approval.result }}", depends_on: [child]}
            """,
            executor,
        )
    assert executor.slept == [90.0]
    assert executor.children == [("wf-1/child", "other", [{"n": 42}])]


async def test_set_values_and_workflow_info() -> None:
    outputs, _ = await _run(
        """
        name: w
        steps:
          - {id: values, set: {n: "${{ 2 * 21 }}", s: "n=${{ 2 * 21 }}", id: "${{ workflow.id }}"}}
        outputs: {values: "${{ steps.values.result }}"}
        """,
        FakeExecutor(),
    )
    assert outputs == {"values": {"n": 42, "s": "n=42", "id": "wf-1"}}


async def test_signal_timeout_fails_the_step() -> None:
    with pytest.raises(DagFailed, match=r"^step 'approval' failed: timed out waiting for signal 'approve'$"):
        await _run(
            """
            name: w
            steps:
              - {id: approval, wait_for_signal: approve, timeout: 1h}
            """,
            FakeExecutor(),
        )


async def test_expression_error_at_run_time_fails_the_step() -> None:
    with pytest.raises(DagFailed, match=r"^step 'a' failed: expression 'inputs.cfg.missing' failed: "):
        await _run(
            """
            name: w
            inputs:
              cfg: {type: object, default: {}}
            steps:
              - {id: a, set: {x: "${{ inputs.cfg.missing }}"}}
            """,
            FakeExecutor(),
        )


async def test_two_hundred_steps_and_a_thousand_item_fan_out() -> None:
    lines = ["name: big", "steps:", "  - {id: s0, activity: inc, args: [0]}"]
    for i in range(1, 200):
        lines.append(f"  - {{id: s{i}, activity: inc, depends_on: [s{i - 1}], args: ['${{{{ steps.s{i - 1}.result }}}}']}}")
    lines.append("  - {id: fan, activity: inc, depends_on: [s199], for_each: '${{ range(1000) | list }}', args: ['${{ item }}']}")
    lines.append("outputs: {last: '${{ steps.s199.result }}', total: '${{ steps.fan.result | sum }}'}")
    executor = FakeExecutor({"inc": lambda n: n + 1})
    outputs, _ = await _run("\n".join(lines), executor)
    assert outputs == {"last": 200, "total": sum(range(1, 1001))}


@pytest.mark.parametrize(
    ("rule", "statuses", "runs"),
    [
        ("none_skipped", ["completed", "failed"], True),
        ("none_skipped", ["completed", "skipped"], False),
        ("all_success", ["completed", "failed"], False),
        ("all_done", ["skipped", "failed"], True),
        ("one_success", ["skipped", "completed"], True),
        ("one_success", ["skipped", "failed"], False),
        ("one_failed", ["completed", "failed"], True),
        ("none_failed", ["completed", "skipped"], True),
        ("none_failed", ["failed"], False),
        ("one_failed", [], True),
    ],
)
def test_trigger_rules(rule: str, statuses: list[str], runs: bool) -> None:
    assert trigger_allows(rule, statuses) is runs


async def test_the_observer_hears_every_step_start_and_end_in_order() -> None:
    heard: list[tuple[str, str, dict[str, Any]]] = []
    wf = _load("""
        name: observed
        steps:
          - {id: a, activity: ok, args: [1]}
          - {id: b, set: {x: 1}, depends_on: [a], when: "${{ steps.a.result == 2 }}"}
          - {id: c, activity: ok, depends_on: [b], args: [2]}
          - {id: d, activity: bad, depends_on: [a], on_failure: continue}
          - id: e
            activity: bad
            depends_on: [d]
            trigger_rule: all_done
            on_failure: {activity: ok, args: [3], then: continue}
          - {id: f, sleep: 1s, depends_on: [e]}
        """)
    executor = FakeExecutor({"ok": lambda n: n, "bad": _fail("nope")})
    run = DagRun(wf.dag, wf.check_inputs(None), executor, lambda s, st, d: heard.append((s, st, dict(d))))
    await run.run()
    by_step: dict[str, list[str]] = {}
    for step, status, _ in heard:
        by_step.setdefault(step, []).append(status)
    assert by_step == {"a": ["started", "completed"], "b": ["skipped"], "c": ["skipped"],
                       "d": ["started", "failed"], "e": ["started", "failed"], "f": ["started", "completed"]}
    details = {(s, st): d for s, st, d in heard}
    assert details[("b", "skipped")] == {"reason": "when"}
    assert details[("c", "skipped")] == {"reason": "trigger_rule"}
    assert details[("d", "failed")] == {"error": "nope"}
    assert details[("e", "failed")] == {"error": "nope", "handled": True}


async def test_the_observer_hears_the_failure_that_fails_the_run() -> None:
    heard: list[tuple[str, str]] = []
    wf = _load("""
        name: observed_fail
        steps:
          - {id: a, activity: ok, args: [1]}
          - {id: b, fail: "stop ${{ steps.a.result }}", depends_on: [a]}
          - {id: c, activity: ok, args: [2], depends_on: [b]}
        """)
    run = DagRun(wf.dag, {}, FakeExecutor({"ok": lambda n: n}), lambda s, st, d: heard.append((s, st)))
    with pytest.raises(DagFailed, match="stop 1"):
        await run.run()
    assert heard == [("a", "started"), ("a", "completed"), ("b", "started"), ("b", "failed")]
