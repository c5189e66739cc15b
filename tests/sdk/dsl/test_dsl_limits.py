"""Hostile documents fail fast with a located DslError (issue 16): YAML and expression limits.

Each case used to hang, eat memory or end in an uncaught ``RecursionError``
traceback; now each is a ``DslError`` with ``FILE:LINE:COLUMN`` (and the step,
where there is one), from ``dsl.load`` and from ``spindle dsl validate``.
"""

from __future__ import annotations

import textwrap

from pathlib import Path

import pytest

from spindle import dsl
from spindle.cli import main
from spindle.dsl import DslError
from spindle.dsl._expressions import MAX_EXPRESSION_BRACKETS, MAX_EXPRESSION_DEPTH
from spindle.dsl._parser import MAX_ALIAS_NODES, MAX_YAML_DEPTH

#: 437 bytes that expanded to 9**9 strings ("billion laughs"): 56 s and 1.49 GB before.
BILLION_LAUGHS = textwrap.dedent(
    """\
    name: lol
    a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
    b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
    c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
    d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
    e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
    f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
    g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
    h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
    i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
    steps: [{id: a, set: {x: *i}}]
    """
)


def _error(text: str) -> DslError:
    with pytest.raises(DslError) as caught:
        dsl.load(text)
    return caught.value


def test_billion_laughs_is_refused_at_the_alias_that_goes_over() -> None:
    assert len(BILLION_LAUGHS.encode()) < 440
    error = _error(BILLION_LAUGHS)
    assert str(error) == (
        f"<string>:6:8: aliases expand to more than {MAX_ALIAS_NODES} nodes (alias *d adds 7381); "
        "write the repeated parts out, or use fewer aliases"
    )


def test_spindle_dsl_validate_reports_billion_laughs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "lol.yaml"
    path.write_text(BILLION_LAUGHS)
    assert main(["dsl", "validate", str(path)]) == 1
    assert capsys.readouterr().err == (
        f"{path}:6:8: aliases expand to more than {MAX_ALIAS_NODES} nodes (alias *d adds 7381); "
        "write the repeated parts out, or use fewer aliases\n"
    )


def test_aliases_within_the_limit_still_work() -> None:
    wf = dsl.load(textwrap.dedent(
        """\
        name: w
        steps:
          - id: a
            activity: f
            retry: &policy {maximum_attempts: 3, initial_interval: 1s}
          - id: b
            activity: g
            retry: *policy
            args: &args [1, 2, {k: v}]
          - id: c
            set: {x: *args}
        """
    ))
    assert wf.dag.steps[1].kind.retry == wf.dag.steps[0].kind.retry
    assert wf.dag.steps[2].kind.values == {"x": [1, 2, {"k": "v"}]}


def test_merge_keys_merge_and_explicit_keys_win() -> None:
    wf = dsl.load(textwrap.dedent(
        """\
        name: w
        steps:
          - &base {id: a, activity: f, args: [1], start_to_close: 5s}
          - {<<: *base, id: b, args: [2]}
        """
    ))
    a, b = wf.dag.steps
    assert (b.kind.activity, b.kind.args, b.kind.start_to_close) == ("f", [2], 5.0)
    assert a.kind.args == [1]


def test_recursive_alias_is_a_located_error() -> None:
    error = _error("name: w\nsteps: &a [*a]\n")
    assert str(error) == "<string>:2:12: recursive alias *a: it is inside the node &a names"


def test_recursive_alias_in_a_step() -> None:
    error = _error("name: w\nsteps:\n  - &s {id: a, set: {x: *s}}\n")
    assert str(error) == "<string>:3:25: step 'a': recursive alias *s: it is inside the node &s names"


def test_ten_thousand_levels_of_block_nesting() -> None:
    body = "".join("  " * (i + 2) + f"k{i}:\n" for i in range(10_000)) + "  " * 10_002 + "v\n"
    error = _error("name: w\nsteps:\n- id: a\n  set:\n" + body)
    assert error.reason == f"the document nests more than {MAX_YAML_DEPTH} levels deep"
    # the mapping 101 levels deep is the value of k96, starting on the line of k97
    assert (error.line, error.column, error.step) == (MAX_YAML_DEPTH + 2, 2 * MAX_YAML_DEPTH - 1, "a")


def test_ten_thousand_levels_of_flow_nesting() -> None:
    error = _error("name: w\nsteps:\n- {id: a, set: {x: " + "[" * 10_000 + "]" * 10_000 + "}}\n")
    assert error.reason == f"the document nests more than {MAX_YAML_DEPTH} levels deep"
    assert (error.file, error.line, error.step) == ("<string>", 3, "a")


def test_nesting_within_the_limit_loads() -> None:
    depth = MAX_YAML_DEPTH - 6  # the document, steps, the step, set and x take the rest
    wf = dsl.load("name: w\nsteps:\n- {id: a, set: {x: " + "[" * depth + "]" * depth + "}}\n")
    value = wf.dag.steps[0].kind.values["x"]
    for _ in range(depth - 1):
        (value,) = value
    assert value == []


def test_alias_expansion_counts_towards_the_depth() -> None:
    nested = "[" * 60 + "]" * 60
    error = _error(f"name: w\nx: &deep {nested}\nsteps:\n- {{id: a, set: {{x: [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[*deep]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}}}}\n")
    assert error.reason == f"the document nests more than {MAX_YAML_DEPTH} levels deep (with alias *deep expanded)"
    assert error.line == 4


def _expression_doc(expression: str) -> str:
    return "name: w\nsteps:\n- id: a\n  set: {x: '${{ " + expression + " }}'}\n"


def test_five_thousand_nested_parentheses() -> None:
    error = _error(_expression_doc("(" * 5000 + "1" + ")" * 5000))
    assert str(error) == (
        f"<string>:4:13: step 'a': expression does not parse: brackets nested 5000 deep; expressions may "
        f"nest at most {MAX_EXPRESSION_BRACKETS}"
    )


def test_deep_operator_chains_are_refused_not_a_recursion_error() -> None:
    for expression in ("+".join(["1"] * 5000), "not " * 5000 + "true", "x" + "|abs" * 5000, "-" * 5000 + "1"):
        error = _error(_expression_doc(expression))
        assert str(error) == (
            f"<string>:4:13: step 'a': expression does not parse: the expression nests more than "
            f"{MAX_EXPRESSION_DEPTH} operations deep"
        ), expression[:20]


def test_expressions_at_the_nesting_limits_load_and_run() -> None:
    from spindle.dsl._expressions import Scope, evaluate

    brackets = "(" * MAX_EXPRESSION_BRACKETS + "1" + ")" * MAX_EXPRESSION_BRACKETS
    chain = "+".join(["1"] * MAX_EXPRESSION_DEPTH)
    dsl.load(_expression_doc(brackets))
    dsl.load(_expression_doc(chain))
    assert evaluate(brackets, {"inputs": Scope({})}) == 1
    assert evaluate(chain, {"inputs": Scope({})}) == MAX_EXPRESSION_DEPTH


def test_an_integer_literal_too_long_for_python() -> None:
    error = _error(_expression_doc("1" * 5000))
    assert str(error) == "<string>:4:13: step 'a': expression does not parse: a number literal has too many digits"


def test_expression_end_is_found_past_braces_and_strings() -> None:
    wf = dsl.load(
        "name: w\nsteps:\n- id: a\n  set: {x: \"${{ {'a': {'b': '}}'}}}}\", y: \"${{ {'k': 1}}}\"}\n"
    )
    (site_x, site_y) = [site.expression.source.strip() for site in wf.dag.steps[0].source.sites]
    assert (site_x, site_y) == ("{'a': {'b': '}}'}}", "{'k': 1}")


# --- step and input names never collide with Python attributes ------------------------


@pytest.mark.parametrize("name", ["label", "to_plain", "_data", "items", "keys", "get", "__class__", "format"])
def test_any_step_id_can_be_referenced(name: str) -> None:
    from spindle.dsl._expressions import Scope, evaluate

    wf = dsl.load(textwrap.dedent(
        f"""\
        name: w
        inputs:
          {name}: {{type: integer, default: 5}}
        steps:
          - id: {name}
            set: {{v: "${{{{ inputs.{name} }}}}"}}
          - id: after
            depends_on: [{name}]
            set: {{v: "${{{{ steps.{name}.result.v }}}}", s: "${{{{ steps['{name}'].status }}}}"}}
        """
    ))
    assert wf.dag.steps[1].depends_on == (name,)
    outcome = Scope({"result": {"v": 5}, "status": "completed", "error": None}, f"steps.{name}")
    context = {"inputs": Scope({name: 5}, "inputs"), "steps": Scope({name: outcome}, "steps")}
    assert evaluate(f"inputs.{name}", context) == 5
    assert evaluate(f"steps.{name}.result.v", context) == 5
    assert evaluate(f"steps['{name}'].status", context) == "completed"


def test_scope_attributes_are_not_reachable() -> None:
    from spindle.dsl._expressions import ExpressionError, Scope, evaluate

    context = {"steps": Scope({}, "steps"), "inputs": Scope({"a": 1}, "inputs")}
    for expression in ("steps.label", "inputs.to_plain", "steps['label']", "inputs._data"):
        with pytest.raises(ExpressionError, match="has no"):
            evaluate(expression, context)


def test_a_mapping_key_wins_over_a_method_of_the_same_name() -> None:
    from spindle.dsl._expressions import Scope, evaluate

    context = {"inputs": Scope({"row": {"items": 3, "keys": [1], "n": 1}}, "inputs")}
    assert evaluate("inputs.row.items + inputs.row.keys[0]", context) == 4
    assert evaluate("inputs.row.values() | list | length", context) == 3
