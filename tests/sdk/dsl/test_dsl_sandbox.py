"""Expressions cannot escape the sandbox, hang a worker or return a non-value (issue 16).

Unit tests call ``evaluate`` with the exact inputs of the issue; the end-to-end
tests run them as steps on a real worker and check that each fails its *step*
(a ``DslStepFailed`` naming it, no task retry loop), that the worker goes on
serving and that a good workflow then completes on it.
"""

from __future__ import annotations

import asyncio
import textwrap
import time
import uuid

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from spindle import dsl
from spindle.dsl._expressions import ExpressionError, Scope, evaluate, render
from spindle.dsl._sandbox import MAX_BATCH, MAX_INT_BITS, MAX_RESULT_SIZE, MAX_VALUE_NESTING, MAX_VALUE_SIZE, MAX_WORK


def _ctx(**inputs: Any) -> dict[str, Any]:
    return {"inputs": Scope(inputs, "inputs"), "steps": Scope({}, "steps"), "workflow": Scope({}, "workflow")}


def _fails(expression: str, **inputs: Any) -> str:
    started = time.process_time()
    with pytest.raises(ExpressionError) as caught:
        evaluate(expression, _ctx(**inputs))
    assert time.process_time() - started < 30  # a guard against a hang, not a speed target
    return str(caught.value)


# --- escaping the sandbox ------------------------------------------------------------


def test_format_through_attr_does_not_reach_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPINDLE_TEST_SECRET", "s3cr3t-value")
    for target in ("inputs", "inputs.row", "'text'"):
        source = f'("{{0.__init__.__globals__[jinja2].utils.os.environ[SPINDLE_TEST_SECRET]}}"|attr("format"))({target})'
        message = _fails(source, row={"a": 1})
        assert "s3cr3t" not in message
        assert "has no '__init__'" in message or "is unsafe" in message


@pytest.mark.parametrize(
    ("expression", "what"),
    [
        ("'%s' % range", "function range"),
        ("'%(a)s' % {'a': dict}", "function dict"),
        ("range ~ ''", "function range"),
        ("range | string", "function range"),
        ("range | pprint", "function range"),
        ("'{}'.format(range)", "function range"),
        ("'abc'.upper | string", "method str.upper"),
        ("'x' ~ inputs.row.keys", "method dict.keys"),
    ],
)
def test_a_function_cannot_be_printed(expression: str, what: str) -> None:
    assert _fails(expression, row={"a": 1}) == (
        f"expression '{expression}' failed: {what} is a function, not a value (call it, or leave it out)"
    )


@pytest.mark.parametrize(
    ("expression", "what"),
    [("'...'.format_map", "method str.format_map"), ("range", "function range"), ("inputs.row.get", "method dict.get")],
)
def test_an_expression_returning_a_function_fails(expression: str, what: str) -> None:
    assert _fails(expression, row={}) == f"expression '{expression}' failed: the value is {what}, a function, not data"


@pytest.mark.parametrize(
    ("expression", "method"),
    [("'x'.translate({})", "str.translate"), ("(5).to_bytes(10, 'big')", "int.to_bytes"),
     ("'a'.encode()", "str.encode"), ("'a'.expandtabs(1000000)", "str.expandtabs")],
)
def test_only_allow_listed_methods_can_be_called(expression: str, method: str) -> None:
    assert _fails(expression) == f"expression '{expression}' failed: method {method} is not available in expressions"


def test_allow_listed_methods_and_globals_work() -> None:
    context = _ctx(name="ada", row={"a": 1, "b": 2})
    assert evaluate("inputs.name.upper() ~ '-' ~ '{}:{}'.format(1, 2)", context) == "ADA-1:2"
    assert evaluate("', '.join(inputs.row.keys() | list) ~ ' ' ~ inputs.row.get('b')", context) == "a, b 2"
    assert evaluate("dict(x=range(3) | list)", context) == {"x": [0, 1, 2]}
    assert evaluate("inputs.row.values() | sum", context) == 3


# --- work and size limits ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "reason"),
    [
        ("9**(9**9)", f"operator '**': the result would have more than {MAX_INT_BITS} bits"),
        ("'a'*10**9", f"operator '*' would produce a value of more than {MAX_VALUE_SIZE:,} characters"),
        ("(range(100000)|list)*100000", f"operator '*' would produce a value of more than {MAX_VALUE_SIZE:,} characters"),
        ("[range(100000)|list]*1000", f"operator '*' would produce a value of more than {MAX_VALUE_SIZE:,} characters"),
        ("'%0999999999d' % 1", f"operator '%' would produce a value of more than {MAX_VALUE_SIZE:,} characters"),
        ("'{:>999999999}'.format(1)", f"str.format() would produce a value of more than {MAX_VALUE_SIZE:,} characters"),
        ("'a'.center(10**9)", f"str.center() width 1,000,000,000 is over {MAX_VALUE_SIZE:,}"),
        ("'a'|center(10**9)", f"filter 'center' width 1,000,000,000 is over {MAX_VALUE_SIZE:,}"),
        ("('a'*100000)|replace('a', 'a'*100000)",
         f"filter 'replace' would produce a value of more than {MAX_VALUE_SIZE:,} characters"),
        ("[1]|batch(10**9, 0)|list", f"filter 'batch' count 1,000,000,000 is over {MAX_BATCH:,}"),
        ("[1]|slice(200000)|list", f"filter 'slice' count 200,000 is over {MAX_BATCH:,}"),
        ("'xx'|replace(old='x', new='y'*600000)",  # arguments by keyword are checked too
         f"filter 'replace' would produce a value of more than {MAX_VALUE_SIZE:,} characters"),
        ("('x'*600000)|wordwrap(1)", f"filter 'wordwrap' would produce a value of more than {MAX_VALUE_SIZE:,} characters"),
        ("('x'*1000000)|tojson", f"filter 'tojson' would produce a value of more than {MAX_VALUE_SIZE:,} characters"),
        ("range(100000)|batch(1)|sum(start=[])", "filter 'sum' adds numbers only: start must be a number"),
        ("(2**4000)*(2**4000)", f"an integer of more than {MAX_INT_BITS} bits"),
        ("range(100000)|map('center', 1000)|list|length",
         f"too much work: more than {MAX_WORK:,} units (each operation costs 1 plus the size of its result; "
         "the last was filter 'center')"),
    ],
)
def test_expensive_expressions_are_refused_by_size_not_time(expression: str, reason: str) -> None:
    message = _fails(expression)
    assert message == f"expression '{expression}' is over a limit: {reason}"
    assert _fails(expression) == message  # deterministic: the same refusal every time


def test_result_size_and_nesting_are_limited() -> None:
    big = "x" * (MAX_VALUE_SIZE - 10)
    assert len(evaluate("inputs.big", _ctx(big=big))) == len(big)  # passing a value on is fine
    message = _fails("[" + ", ".join(["inputs.big"] * 11) + "]", big=big)
    assert message.endswith(f"is over a limit: the value is bigger than {MAX_RESULT_SIZE:,} characters")
    deep: Any = []
    for _ in range(MAX_VALUE_NESTING + 5):
        deep = [deep]
    assert _fails("inputs.deep", deep=deep).endswith(
        f"is over a limit: a value nested more than {MAX_VALUE_NESTING} levels deep")


def test_results_are_json_data() -> None:
    context = _ctx(row={"b": 2, "a": 1})
    assert evaluate("inputs.row.items() | list", context) == [["b", 2], ["a", 1]]
    assert evaluate("inputs.row | dictsort", context) == [["a", 1], ["b", 2]]
    assert evaluate("(1, 'x')", context) == [1, "x"]
    assert evaluate("'<b>' | escape", context) == "&lt;b&gt;"
    assert type(evaluate("'<b>' | escape", context)) is str
    assert evaluate("range(3)", context) == [0, 1, 2]


def test_interpolated_text_is_limited_too() -> None:
    big = "x" * (MAX_VALUE_SIZE - 10)
    template = "a" + "${{ inputs.big }}" * 11
    with pytest.raises(ExpressionError) as caught:
        render(template, _ctx(big=big))
    assert str(caught.value) == (
        f"the text {template[:60]!r}... is over a limit: it would be longer than {MAX_RESULT_SIZE:,} characters"
    )


def test_interpolation_uses_the_same_sandbox() -> None:
    with pytest.raises(ExpressionError, match="the value is function range, a function, not data"):
        render("value: ${{ range }}", _ctx())


# --- end to end: the step fails, the worker goes on -----------------------------------------

pytest.importorskip("spindle.controlplane.embedded")

from spindle.client import Client  # noqa: E402
from spindle.exceptions import ApplicationError, WorkflowFailureError  # noqa: E402
from spindle.worker import Worker  # noqa: E402 - grouped with the tests that use it

HOSTILE = {
    "power": "${{ 9**(9**9) }}",
    "repeat": "${{ 'a'*10**9 }}",
    "list_repeat": "${{ (range(100000)|list)*100000 }}",
    "function": "${{ '...'.format_map }}",
    "leak": "${{ '%s' % range }}",
}


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[Client]:
    connected = await Client.connect("embedded:" + str(tmp_path / "spindle.db"))
    try:
        yield connected
    finally:
        await connected.close()


def _workflow(name: str, value: str) -> dsl.DslWorkflow:
    return dsl.load(textwrap.dedent(
        f"""\
        name: {name}
        steps:
          - id: ok
            set: {{v: 1}}
          - id: evil
            depends_on: [ok]
            set: {{v: "{value}"}}
        outputs: {{v: "${{{{ steps.evil.result.v }}}}"}}
        """
    ))


async def test_hostile_expressions_fail_their_step_and_the_worker_goes_on(client: Client) -> None:
    queue = f"sandbox-{uuid.uuid4().hex[:8]}"
    hostile = {key: _workflow(f"hostile_{key}", value) for key, value in HOSTILE.items()}
    good = _workflow("good", "${{ 6 * 7 }}")
    async with Worker(client, task_queue=queue, workflows=[*hostile.values(), good]):
        for key, wf in hostile.items():
            handle = await client.start_workflow(wf, {}, id=f"hostile-{key}", task_queue=queue)
            with pytest.raises(WorkflowFailureError) as caught:
                await asyncio.wait_for(handle.result(), 60)
            cause = caught.value.cause
            assert isinstance(cause, ApplicationError)
            assert cause.type == "DslStepFailed"
            assert cause.non_retryable
            assert str(cause).startswith(f"step 'evil' failed: expression '{HOSTILE[key][4:-3]}' ")
            history = await handle.fetch_history()
            types = [event.event_type for event in history.events]
            assert "WorkflowTaskFailed" not in types  # failed by the workflow, not a task retry loop
            assert types[-1] == "WorkflowExecutionFailed"
        # the same worker still serves, and a good workflow completes on it
        handle = await client.start_workflow(good, {}, id="good-after", task_queue=queue)
        assert await asyncio.wait_for(handle.result(), 60) == {"v": 42}


async def test_on_failure_continue_applies_to_a_refused_expression(client: Client) -> None:
    queue = f"sandbox-{uuid.uuid4().hex[:8]}"
    wf = dsl.load(textwrap.dedent(
        """\
        name: tolerant
        steps:
          - id: evil
            set: {v: "${{ 'a'*10**9 }}"}
            on_failure: continue
          - id: report
            depends_on: [evil]
            set: {status: "${{ steps.evil.status }}", error: "${{ steps.evil.error }}"}
        outputs: {report: "${{ steps.report.result }}"}
        """
    ))
    async with Worker(client, task_queue=queue, workflows=[wf]):
        handle = await client.start_workflow(wf, {}, id="tolerant", task_queue=queue)
        result = await asyncio.wait_for(handle.result(), 60)
    assert result == {"report": {
        "status": "failed",
        "error": f"expression ''a'*10**9' is over a limit: operator '*' would produce a value of more than "
                 f"{MAX_VALUE_SIZE:,} characters",
    }}


async def test_steps_and_inputs_named_like_attributes_run(client: Client) -> None:
    queue = f"sandbox-{uuid.uuid4().hex[:8]}"
    wf = dsl.load(textwrap.dedent(
        """\
        name: named
        inputs:
          items: {type: integer, default: 2}
          label: {type: string, default: "x"}
        steps:
          - id: label
            set: {v: "${{ inputs.items * 10 }}"}
          - id: to_plain
            depends_on: [label]
            set: {v: "${{ steps.label.result.v + 1 }}", name: "${{ inputs.label }}"}
        outputs: {label: "${{ steps.label.result.v }}", to_plain: "${{ steps.to_plain.result }}"}
        """
    ))
    async with Worker(client, task_queue=queue, workflows=[wf]):
        handle = await client.start_workflow(wf, {"items": 4}, id="named", task_queue=queue)
        assert await asyncio.wait_for(handle.result(), 60) == {"label": 40, "to_plain": {"v": 41, "name": "x"}}
