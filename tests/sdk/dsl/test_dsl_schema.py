"""``schema.json`` and the loader apply one definition of the language (``spindle.dsl._language``).

The schema is generated from it (and must be current); every YAML workflow in the
repository validates against it; and the schema and the loader agree on documents,
bad and good: on hand-picked ones, on every invalid document of ``test_dsl_errors``,
and on random edits of the examples (a property test). The loader's structural
verdict (``structure_errors``) is exactly the schema's; what a JSON Schema cannot
say (references between steps, cycles, expressions, cron expressions, time zones) only
the loader checks.
"""

from __future__ import annotations

import json
import re
import textwrap

from pathlib import Path
from typing import Any

import pytest
import yaml

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_dsl_errors import CASES

from spindle import dsl
from spindle.dsl._build import structure_errors
from spindle.dsl._parser import parse_yaml
from spindle.dsl._schema import SCHEMA_PATH, document_schema, schema_text

jsonschema = pytest.importorskip("jsonschema")

ROOT = Path(__file__).resolve().parents[3]
VALIDATOR = jsonschema.Draft202012Validator(json.loads(SCHEMA_PATH.read_text(encoding="utf-8")))


def _doc(text: str) -> str:
    return textwrap.dedent(text).strip("\n") + "\n"


def _schema_errors(text: str) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in VALIDATOR.iter_errors(yaml.safe_load(text))]


def _loader_errors(text: str) -> list[str]:
    try:
        dsl.load(text)
    except dsl.DslError as error:
        return [str(e) for e in error.errors]
    return []


def _structure(text: str) -> list[str]:
    return [str(e) for e in structure_errors(parse_yaml(text, "<string>"), "<string>")]


# --- the file ---------------------------------------------------------------------


def test_schema_json_is_generated_from_the_language_definition() -> None:
    assert SCHEMA_PATH.read_text(encoding="utf-8") == schema_text(), (
        "sdk/dsl/schema.json is not current: run .venv/bin/python -m spindle.dsl._schema --write")


def test_schema_is_a_valid_draft_2020_12_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(document_schema())


def test_the_hand_written_checks_hold_no_key_list_enum_pattern_or_limit_of_the_language() -> None:
    """They are in _language.py (the shapes in _shapes.py / _shape_maps.py); a copy here would drift."""
    for name in ("_build.py", "_schedule_block.py", "_validate.py"):
        source = (ROOT / "sdk" / "dsl" / name).read_text(encoding="utf-8")
        for rule in ("A-Za-z", "ms|s|m|h|d", "all_success", "buffer_one", '"integer"', ">= 1", "< 1", "< 0",
                     '"start_to_close", "', "HEADER_KEYS", "_KEYS = ("):
            assert rule not in source, (name, rule)


# --- documents that must validate ----------------------------------------------------


def _workflow_files() -> list[Path]:
    found = []
    for folder in ("examples", "tests"):
        for path in sorted((ROOT / folder).rglob("*.y*ml")):
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
            if isinstance(data, dict) and "steps" in data:
                found.append(path)
    return found


WORKFLOW_FILES = _workflow_files()


def test_the_repository_has_yaml_workflows_to_check() -> None:
    names = {path.relative_to(ROOT).as_posix() for path in WORKFLOW_FILES}
    assert {"examples/reports/daily_sales.yaml", "tests/sdk/dsl/fixtures/every_kind.yaml",
            "tests/sdk/dsl/fixtures/saga.yaml", "tests/widgets/fixtures/dsl.yaml"} <= names


@pytest.mark.parametrize("path", WORKFLOW_FILES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_yaml_workflow_in_the_repository_validates_against_the_schema(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert _schema_errors(text) == []
    dsl.load(path)


def _readme_blocks() -> list[str]:
    readme = (ROOT / "sdk" / "dsl" / "README.md").read_text(encoding="utf-8")
    return re.findall(r"```yaml\n(.*?)```", readme, flags=re.S)


@pytest.mark.parametrize("block", _readme_blocks())
def test_the_readme_examples_validate_against_the_schema(block: str) -> None:
    fragment = yaml.safe_load(textwrap.dedent(block))
    document: dict[str, Any] = {"name": "w", "steps": [{"id": "a", "activity": "f"}]}
    if isinstance(fragment, list):  # steps
        document["steps"] = fragment
    else:
        document.update(fragment)
    assert list(VALIDATOR.iter_errors(document)) == []


# --- the schema and the loader agree ---------------------------------------------------

#: test_dsl_errors cases a JSON Schema cannot see: YAML syntax and duplicate keys (a YAML
#: parser reads them before any schema), references between steps, cycles, expressions.
BEYOND_THE_SCHEMA = {
    "yaml_syntax_in_step", "yaml_syntax_in_header", "duplicate_key", "duplicate_step_id", "unknown_depends_on",
    "cycle_listed_in_order", "self_dependency", "expression_does_not_parse", "unterminated_expression",
    "expression_unknown_step", "expression_step_not_upstream", "expression_unknown_input", "item_outside_for_each",
    "item_in_when", "unknown_filter", "error_outside_handler", "compensate_unknown_step", "output_unknown_step",
    "workflow_unknown_field", "step_field_unknown",
}


@pytest.mark.parametrize(("name", "document"), [c[:2] for c in CASES], ids=[c[0] for c in CASES])
def test_the_schema_refuses_each_invalid_document_it_can_see(name: str, document: str) -> None:
    text = _doc(document)
    assert _loader_errors(text)
    if name in ("yaml_syntax_in_step", "yaml_syntax_in_header", "duplicate_key"):
        return  # the YAML parser's: a schema sees a document only once it is parsed
    assert bool(_schema_errors(text)) == (name not in BEYOND_THE_SCHEMA), _schema_errors(text)
    assert bool(_structure(text)) == (name not in BEYOND_THE_SCHEMA)


HEADER = "name: w\nsteps:\n"
STEP = HEADER + "  - id: a\n"

#: (document, what the loader says): each a rule of the definition, refused by both.
REFUSED = [
    ("name: 9w\nsteps: [{id: a, activity: f}]\n", "'name' '9w' must start with a letter or '_'"),
    ("name: w\nversion: [1]\nsteps: [{id: a, activity: f}]\n", "'version' must be a number or a string, got a list"),
    ("name: w\ntask_queue: '  '\nsteps: [{id: a, activity: f}]\n", "'task_queue' must not be empty"),
    ("name: w\ninputs: {1x: string}\nsteps: [{id: a, activity: f}]\n", "input name '1x' must be an identifier"),
    ("name: w\ninputs: {x: 5}\nsteps: [{id: a, activity: f}]\n",
     "input 'x' must be a mapping or a type name, got integer 5"),
    ("name: w\ninputs: {x: {default: 1}}\nsteps: [{id: a, activity: f}]\n", "input 'x' has no 'type' (one of string"),
    ("name: w\ninputs: {x: {type: string, required: true, default: a}}\nsteps: [{id: a, activity: f}]\n",
     "input 'x' is required and has a default: drop one of them"),
    ("name: w\ninputs: {x: {type: integer, default: 1.5}}\nsteps: [{id: a, activity: f}]\n",
     "the default of input 'x' must be of type integer, got number 1.5"),
    ("name: w\ninputs: {x: {type: string, required: 1}}\nsteps: [{id: a, activity: f}]\n",
     "'required' of input 'x' must be true or false"),
    ("name: w\nsteps: []\n", "'steps' is empty: a workflow needs at least one step"),
    ("name: w\noutputs: [1]\nsteps: [{id: a, activity: f}]\n", "'outputs' must be a mapping, got a list"),
    (STEP + "    activity: ''\n", "'activity' must not be empty"),
    (STEP + "    sleep: 0s\n", "'sleep': bad duration '0s': must be greater than zero"),
    (STEP + "    sleep: 5\n", "'sleep': bad duration 5"),
    (STEP + "    activity: f\n    heartbeat: 1y\n", "'heartbeat': bad duration '1y'"),
    (STEP + "    activity: f\n    retry: {maximum_attempts: -1}\n", "'maximum_attempts' must be at least 0 (0 = unlimited)"),
    (STEP + "    activity: f\n    retry: {backoff_coefficient: 0.5}\n", "'backoff_coefficient' must be at least 1"),
    (STEP + "    activity: f\n    retry: {non_retryable_error_types: E}\n",
     "'non_retryable_error_types' must be a list of error type names, got string 'E'"),
    (STEP + "    workflow: child\n    retry: {maximum_attempts: 1}\n", "'retry' does not apply to a workflow step"),
    (STEP + "    set: [1]\n", "'set' must be a mapping, got a list"),
    (STEP + "    fail: {message: x}\n", "'fail' (the failure message) must be a string, got a mapping"),
    (STEP + "    activity: f\n    depends_on: 5\n", "'depends_on' must be a step id or a list of step ids, got integer 5"),
    (STEP + "    activity: f\n  - id: b\n    activity: f\n    depends_on: [a, a]\n", "'depends_on' lists 'a' twice"),
    (STEP + "    activity: f\n    when: 'yes'\n", "'when' must be true/false or exactly one '${{ ... }}' expression"),
    (STEP + "    activity: f\n    for_each: 3\n", "'for_each' must be a list or a '${{ ... }}' expression, got integer 3"),
    (STEP + "    activity: f\n    for_each: [1]\n    max_parallel: 0\n", "'max_parallel' must be at least 1"),
    (STEP + "    activity: f\n    on_failure: {activity: g, then: stop}\n",
     "'then' must be 'fail' or 'continue', got 'stop'"),
    (STEP + "    activity: f\n    on_failure: {activity: g, when: true}\n", "'when' is not allowed in 'on_failure'"),
    (STEP + "    activity: f\ncompensate:\n  - activity: g\n", "a 'compensate' entry needs 'step: ID'"),
    (STEP + "    activity: f\ncompensate:\n  - {step: a, activity: g, trigger_rule: all_done}\n",
     "'trigger_rule' is not allowed in a 'compensate' entry"),
    (STEP + "    activity: f\nschedule: {cron: []}\n", "'schedule.cron' must not be an empty list"),
    (STEP + "    activity: f\nschedule: {interval: 1h/0s}\n", "'schedule.interval': bad duration '0s'"),
    (STEP + "    activity: f\nschedule: {cron: '@daily', overlap: Buffer-One}\n",
     "'schedule.overlap': unknown policy 'Buffer-One'"),
    (STEP + "    activity: f\nschedule: {cron: '@daily', jitter: soon}\n", "'schedule.jitter': bad duration 'soon'"),
    (STEP + "    activity: f\nschedule: {cron: '@daily', id: '${{ x }}'}\n",
     "'schedule.id' must be a plain value, not an expression"),
]


@pytest.mark.parametrize(("document", "says"), REFUSED, ids=[says[:40] for _, says in REFUSED])
def test_the_schema_and_the_loader_refuse_the_same_documents(document: str, says: str) -> None:
    errors = _loader_errors(document)
    assert any(says in error for error in errors), errors
    assert _structure(document), "the loader's structural check should refuse it"
    assert _schema_errors(document), "the schema should refuse it"


#: Valid documents near the edges of the rules: both accept them.
ACCEPTED = [
    "name: a.b-c_1\nversion: 1.5\nsteps: [{id: _a1, activity: f}]\n",
    STEP + "    sleep: ' 1h30m '\n",
    STEP + "    activity: f\n    retry: {maximum_attempts: 0, backoff_coefficient: 1, non_retryable_error_types: []}\n",
    STEP + "    activity: f\n    for_each: [1, 2]\n    max_parallel: 2.0\n",
    STEP + "    activity: f\n  - id: b\n    activity: f\n    depends_on: a\n    trigger_rule: all_done\n",
    STEP + "    activity: f\n    when: \"${{ true }}\"\n    on_failure: {sleep: 1s, id: h, then: continue}\n",
    "name: w\ninputs: {n: {type: integer, default: 2.0}, s: string, o: {type: object, default: {}}}\n"
    "steps: [{id: a, activity: f}]\n",
    STEP + "    activity: f\ncompensate: [{step: a, workflow: undo, workflow_id: \"${{ workflow.id }}-undo\"}]\n",
    STEP + "    activity: f\nschedule: {interval: [1h, 1d/6h], overlap: allow_all, jitter: 500ms}\n",
]


@pytest.mark.parametrize("document", ACCEPTED)
def test_the_schema_and_the_loader_accept_the_same_documents(document: str) -> None:
    assert _loader_errors(document) == []
    assert _schema_errors(document) == []


# --- random edits of the examples ------------------------------------------------------

BASES = [yaml.safe_load(path.read_text(encoding="utf-8")) for path in WORKFLOW_FILES[:4]] + [{
    "name": "every_key",
    "version": "2",
    "task_queue": "q",
    "inputs": {"d": "string", "n": {"type": "integer", "default": 3, "description": "n"}},
    "steps": [
        {"id": "a", "activity": "f", "args": {"x": 1}, "task_queue": "q", "start_to_close": "5s",
         "schedule_to_close": "1m", "schedule_to_start": "1m", "heartbeat": "10s",
         "retry": {"maximum_attempts": 3, "initial_interval": "1s", "backoff_coefficient": 2,
                   "maximum_interval": "1m", "non_retryable_error_types": ["E"]}},
        {"id": "b", "workflow": "w", "depends_on": "a", "workflow_id": "x", "execution_timeout": "1h",
         "on_failure": {"sleep": "1s", "then": "continue", "description": "d"}},
        {"id": "c", "wait_for_signal": "s", "timeout": "1d", "for_each": [1], "max_parallel": 1,
         "when": True, "trigger_rule": "all_done", "on_failure": "continue", "description": "d"},
    ],
    "compensate": [{"step": "a", "id": "undo", "fail": "x", "description": "d"}],
    "schedule": {"id": "x", "cron": ["0 6 * * *"], "interval": "1h/15m", "time_zone": "UTC",
                 "inputs": {"d": "x"}, "overlap": "skip", "jitter": "30s"},
}]

#: Values an edit puts somewhere: each kind of JSON value, and strings near the rules.
VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from([0.5, 2.0, -1.0]),
    st.sampled_from(["", " ", "x", "a-b", "9a", "A.b", "${{ 1 }}", "a ${{ 1 }}", "5s", "0s", "1h30m", " 2m ", "5 s",
                     "1.5h", "1h/15m", "1h/0s", "string", "integer", "fail", "continue", "all_done", "skip",
                     "buffer_one", "0 6 * * *"]),
    st.lists(st.sampled_from(["a", "b", 1, None, "5s"]), max_size=3),
    st.dictionaries(st.sampled_from(["activity", "type", "x", "id", "step", "cron", "sleep"]),
                    st.sampled_from(["f", "string", 1, "5s", "a"]), max_size=2),
)
KEYS = st.sampled_from([
    "name", "version", "description", "task_queue", "inputs", "outputs", "steps", "compensate", "schedule", "id",
    "activity", "workflow", "sleep", "wait_for_signal", "set", "fail", "args", "retry", "start_to_close", "timeout",
    "workflow_id", "depends_on", "when", "trigger_rule", "for_each", "max_parallel", "on_failure", "then", "step",
    "type", "required", "default", "maximum_attempts", "backoff_coefficient", "cron", "interval", "overlap", "bogus",
])


def _places(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _places(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _places(item, (*path, index))
    return found


@st.composite
def edited_documents(draw: st.DrawFn) -> str:
    document = json.loads(json.dumps(draw(st.sampled_from(BASES)), default=str))
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(_places(document)))
        target = document
        for key in path[:-1]:
            target = target[key]
        action = draw(st.sampled_from(["replace", "delete", "add"]))
        if action == "add":
            place = target if not path else target[path[-1]]
            if isinstance(place, dict):
                place[draw(KEYS)] = draw(VALUES)
        elif path and action == "delete" and isinstance(target, dict):
            del target[path[-1]]
        elif path:
            target[path[-1]] = draw(VALUES)
    return yaml.safe_dump(document, sort_keys=False)


@settings(max_examples=400, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(edited_documents())
def test_the_schema_and_the_loader_agree_on_edited_documents(text: str) -> None:
    schema, structure = _schema_errors(text), _structure(text)
    assert bool(schema) == bool(structure), (text, schema, structure)
    if schema:
        assert _loader_errors(text)
