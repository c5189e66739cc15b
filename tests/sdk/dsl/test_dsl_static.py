"""Loading, compiled JSON, expressions and graph renderings, no runtime (schema: test_dsl_schema; CLI: test_dsl_cli)."""

from __future__ import annotations

import json
import textwrap
import xml.dom.minidom

from pathlib import Path
from typing import Any

import pytest

from spindle import dsl
from spindle.dsl import DslError
from spindle.dsl._durations import parse_duration
from spindle.dsl._expressions import ExpressionError, Scope, render, split_template
from spindle.dsl._graph import build_graph, find_cycles
from spindle.dsl._model import dag_from_json

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "reports" / "daily_sales.yaml"


def _doc(text: str) -> str:
    return textwrap.dedent(text).strip("\n") + "\n"


def test_example_loads() -> None:
    wf = dsl.load(EXAMPLE)
    assert wf.name == "daily_sales"
    assert wf.version == 1
    assert wf.task_queue == "analytics"
    assert [s.id for s in wf.dag.steps] == ["extract", "clean", "per_region", "totals", "publish"]
    assert [i.name for i in wf.inputs] == ["date", "regions", "publish"]
    assert wf.file == str(EXAMPLE)


def test_text_and_path_and_string_path_load_the_same_dag() -> None:
    from_path = dsl.load(EXAMPLE)
    from_str = dsl.load(str(EXAMPLE))
    from_text = dsl.load(EXAMPLE.read_text())
    assert from_path.dag == from_str.dag == from_text.dag
    assert from_text.file == "<string>"


def test_compiled_dag_is_plain_json_and_round_trips() -> None:
    wf = dsl.load(EXAMPLE)
    text = json.dumps(wf.dag_json)
    again = dag_from_json(json.loads(text))
    assert again == wf.dag
    assert wf.dag_json["format"] == "spindle.dsl/1"


def test_dag_from_json_rejects_other_formats() -> None:
    with pytest.raises(ValueError, match="not a compiled Spindle DSL workflow"):
        dag_from_json({"format": "something/9", "name": "x", "steps": []})


def test_start_input_checks_and_defaults_inputs() -> None:
    wf = dsl.load(EXAMPLE)
    start = wf.start_input({"date": "2024-05-01"})
    assert start["dag"] == wf.dag_json
    assert start["inputs"] == {"date": "2024-05-01", "regions": ["eu", "us", "apac"], "publish": True}


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ({"date": 20240501}, "input 'date' must be of type string, got integer 20240501"),
        ({}, "missing required input 'date' (string)"),
        ({"date": "d", "regions": "eu"}, "input 'regions' must be of type array, got string 'eu'"),
        ({"date": "d", "publish": "yes"}, "input 'publish' must be of type boolean, got string 'yes'"),
        ({"date": "d", "region": ["eu"]}, "unknown input 'region' (did you mean 'regions'?) (declared: date, regions, publish)"),
    ],
)
def test_wrong_inputs_name_the_input(inputs: dict[str, Any], message: str) -> None:
    wf = dsl.load(EXAMPLE)
    with pytest.raises(DslError) as caught:
        wf.start_input(inputs)
    line = {"date": 14, "regions": 15, "publish": 16}
    named = next((n for n in line if f"input '{n}'" in message), None)
    where = f"{line[named]}:3" if named else "13:1"
    assert str(caught.value) == f"{EXAMPLE}:{where}: {message}"


def test_integer_is_a_number_but_bool_is_not() -> None:
    wf = dsl.load(_doc(
        """
        name: w
        inputs:
          n: {type: number}
          i: {type: integer}
        steps:
          - {id: a, set: {x: 1}}
        """
    ))
    assert wf.check_inputs({"n": 3, "i": 4}) == {"n": 3, "i": 4}
    with pytest.raises(DslError, match="input 'i' must be of type integer, got boolean True"):
        wf.check_inputs({"i": True})
    with pytest.raises(DslError, match="input 'i' must be of type integer, got number 1.5"):
        wf.check_inputs({"i": 1.5})


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("500ms", 0.5), ("90s", 90), ("5m", 300), ("2h", 7200), ("14d", 14 * 86400), ("1h30m", 5400), ("1.5s", 1.5)],
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "5", "5 m", "m5", "5y", "0s", 5])
def test_bad_durations(text: object) -> None:
    with pytest.raises(ValueError, match="bad duration"):
        parse_duration(text)


def _ctx(**inputs: Any) -> dict[str, Any]:
    return {"inputs": Scope(inputs, "inputs"), "steps": Scope({}, "steps"), "workflow": Scope({}, "workflow")}


@pytest.mark.parametrize(
    ("template", "value"),
    [
        ("${{ inputs.n }}", 3),
        ("${{ inputs.xs }}", [1, 2, 3]),
        ("  ${{ inputs.xs | sum }}  ", 6),
        ("n=${{ inputs.n }}", "n=3"),
        ("${{ inputs.n > 2 and 'big' or 'small' }}", "big"),
        ("${{ 'yes' if inputs.flag else 'no' }}", "no"),
        ("flag=${{ inputs.flag }} none=${{ none }} xs=${{ inputs.xs }}", "flag=false none= xs=[1, 2, 3]"),
        ("${{ inputs.rows | selectattr('ok') | map(attribute='v') | list }}", [1]),
        ("${{ {'a': {'b': inputs.n}} }}", {"a": {"b": 3}}),
        ("${{ inputs.items }}", "shadowed-no-more"),
        ("no expression", "no expression"),
    ],
)
def test_render(template: str, value: Any) -> None:
    context = _ctx(n=3, xs=[1, 2, 3], flag=False, rows=[{"ok": True, "v": 1}, {"ok": False, "v": 2}],
                   items="shadowed-no-more")
    assert render(template, context) == value


def test_render_is_deep() -> None:
    assert render({"a": ["${{ inputs.n }}", {"b": "x${{ inputs.n }}"}], "c": 1}, _ctx(n=2)) == {
        "a": [2, {"b": "x2"}], "c": 1,
    }


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("${{ inputs.nope }}", "expression 'inputs.nope' failed: inputs has no 'nope'"),
        ("${{ inputs.xs.append(4) }}", "expression 'inputs.xs.append(4)' failed: access to attribute 'append' of 'list' object is unsafe."),
        ("${{ inputs.n.__class__ }}", "expression 'inputs.n.__class__' failed: access to attribute '__class__' of 'int' object is unsafe."),
        ("${{ 1 / 0 }}", "expression '1 / 0' failed: ZeroDivisionError: division by zero"),
    ],
)
def test_render_errors_are_sandboxed_and_clear(template: str, message: str) -> None:
    with pytest.raises(ExpressionError) as caught:
        render(template, _ctx(n=3, xs=[1, 2, 3]))
    assert str(caught.value) == message


def test_no_nondeterministic_jinja_helpers() -> None:
    with pytest.raises(ExpressionError):
        render("${{ [1, 2] | random }}", _ctx())
    with pytest.raises(ExpressionError):
        render("${{ lipsum() }}", _ctx())


def test_split_template_offsets() -> None:
    parts = split_template("a ${{ x }} b ${{ y }}")
    assert [p if isinstance(p, str) else (p.offset, p.source.strip()) for p in parts] == [
        "a ", (2, "x"), " b ", (13, "y"),
    ]


def test_cycles_are_listed_from_the_first_step_in_dependency_order() -> None:
    wf_text = _doc(
        """
        name: w
        steps:
          - {id: x, activity: f}
          - {id: c, activity: f, depends_on: [b]}
          - {id: a, activity: f, depends_on: [c]}
          - {id: b, activity: f, depends_on: [a]}
          - {id: d, activity: f, depends_on: [d]}
        """
    )
    with pytest.raises(DslError) as caught:
        dsl.load(wf_text)
    assert [str(e) for e in caught.value.errors] == [
        "<string>:4:26: step 'c': depends_on forms a cycle: c -> a -> b -> c (each step depends on the one before it)",
        "<string>:7:26: step 'd': depends on itself",
    ]


def test_graph_is_networkx_with_dependency_edges() -> None:
    wf = dsl.load(EXAMPLE)
    graph = wf.graph()
    assert list(graph.nodes) == ["extract", "clean", "per_region", "totals", "publish"]
    assert list(graph.edges) == [("extract", "clean"), ("clean", "per_region"), ("per_region", "totals"), ("totals", "publish")]
    assert find_cycles(build_graph(wf.dag)) == []


def test_text_rendering() -> None:
    assert dsl.load(EXAMPLE).to_text() == (
        "daily_sales (version 1): 5 steps\n"
        "  extract     activity extract_sales\n"
        "  clean       activity clean_sales          <- extract\n"
        "  per_region  activity summarise_region     <- clean  [for_each ${{ inputs.regions }} (max 4)]\n"
        "  totals      set revenue, orders, regions  <- per_region\n"
        "  publish     activity publish_report       <- totals  [when ${{ inputs.publish }}]\n"
        "outputs: report, revenue, orders, regions\n"
    )


def test_dot_rendering() -> None:
    dot = dsl.load(EXAMPLE).to_dot()
    assert dot.startswith('digraph "daily_sales" {\n  rankdir=LR;')
    assert '"extract" -> "clean";' in dot
    assert '"totals" -> "publish" [style=dashed];' in dot
    assert '"per_region" [label="per_region\\nactivity summarise_region\\nfor_each ${{ inputs.regions }} (max 4)", shape=box3d];' in dot
    assert dot.rstrip().endswith("}")


def test_svg_rendering_is_well_formed_and_layered() -> None:
    wf = dsl.load(_doc(
        """
        name: diamond
        steps:
          - {id: start, activity: f}
          - {id: left, activity: f, depends_on: [start]}
          - {id: right, activity: f, depends_on: [start], when: "${{ true }}"}
          - {id: join, activity: f, depends_on: [left, right]}
        """
    ))
    svg = wf.to_svg()
    document = xml.dom.minidom.parseString(svg)
    groups = document.getElementsByTagName("g")
    assert [g.getAttribute("data-step") for g in groups] == ["start", "left", "right", "join"]
    xs = {
        g.getAttribute("data-step"): float(g.getElementsByTagName("rect")[0].getAttribute("x")) for g in groups
    }
    assert xs["start"] < xs["left"] == xs["right"] < xs["join"]
    assert len(document.getElementsByTagName("path")) == 1 + 4  # arrow marker + 4 edges
