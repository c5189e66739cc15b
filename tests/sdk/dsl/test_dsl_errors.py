"""Invalid documents: each error names the file, line, column and step exactly."""

from __future__ import annotations

import textwrap

from pathlib import Path

import pytest

from spindle import dsl
from spindle.dsl import DslError

# (test id, document, the exact message of the error `load` raises)
CASES: list[tuple[str, str, str]] = [
    (
        "yaml_syntax_in_step",
        """
        name: w
        steps:
          - id: a
            activity: [foo
        """,
        "<string>:5:1: step 'a': YAML syntax error: while parsing a flow sequence, expected ',' or ']', "
        "but got '<stream end>'",
    ),
    (
        "yaml_syntax_in_header",
        """
        name: w
        version: "1
        steps: []
        """,
        "<string>:4:1: YAML syntax error: while scanning a quoted scalar, found unexpected end of stream",
    ),
    (
        "not_a_mapping",
        """
        - id: a
          activity: foo
        """,
        "<string>:1:1: the document must be a mapping, got a list",
    ),
    (
        "unknown_header_key",
        """
        name: w
        taskqueue: q
        steps:
          - id: a
            activity: foo
        """,
        "<string>:2:1: unknown key 'taskqueue' in the workflow header (did you mean 'task_queue'?)",
    ),
    (
        "missing_name",
        """
        steps:
          - id: a
            activity: foo
        """,
        "<string>:1:1: missing 'name' (the workflow type name)",
    ),
    (
        "steps_not_a_list",
        """
        name: w
        steps:
          a: {activity: foo}
        """,
        "<string>:3:3: 'steps' must be a list, got a mapping",
    ),
    (
        "unknown_step_key_did_you_mean",
        """
        name: w
        steps:
          - id: a
            activity: foo
          - id: b
            activity: bar
            dependson: [a]
        """,
        "<string>:7:5: step 'b': unknown key 'dependson' in a step (did you mean 'depends_on'?)",
    ),
    (
        "misspelt_kind_key",
        """
        name: w
        steps:
          - id: a
            activty: foo
        """,
        "<string>:4:5: step 'a': unknown key 'activty' (did you mean 'activity'?)",
    ),
    (
        "option_of_another_kind",
        """
        name: w
        steps:
          - id: a
            activity: foo
            timeout: 1h
        """,
        "<string>:5:5: step 'a': 'timeout' does not apply to an activity step (it is an option of wait_for_signal)",
    ),
    (
        "no_kind",
        """
        name: w
        steps:
          - id: a
            args: [1]
        """,
        "<string>:3:5: step 'a': a step needs exactly one of activity, workflow, sleep, wait_for_signal, set, "
        "fail; found none",
    ),
    (
        "two_kinds",
        """
        name: w
        steps:
          - id: a
            activity: foo
            sleep: 5s
        """,
        "<string>:5:5: step 'a': a step needs exactly one of activity, workflow, sleep, wait_for_signal, set, "
        "fail; found both 'activity' and 'sleep'",
    ),
    (
        "missing_id",
        """
        name: w
        steps:
          - activity: foo
        """,
        "<string>:3:5: step #1 has no 'id'",
    ),
    (
        "bad_step_id",
        """
        name: w
        steps:
          - id: load-data
            activity: foo
        """,
        "<string>:3:9: step 'load-data': step id 'load-data' must be an identifier (letters, digits, '_'; not "
        "starting with a digit) so that expressions can say steps.<id>",
    ),
    (
        "duplicate_step_id",
        """
        name: w
        steps:
          - id: a
            activity: foo
          - id: a
            activity: bar
        """,
        "<string>:5:5: step 'a': duplicate step id (first defined at line 3)",
    ),
    (
        "unknown_depends_on",
        """
        name: w
        steps:
          - id: extract
            activity: foo
          - id: b
            activity: bar
            depends_on: [extrct]
        """,
        "<string>:7:18: step 'b': depends_on names unknown step 'extrct' (did you mean 'extract'?)",
    ),
    (
        "cycle_listed_in_order",
        """
        name: w
        steps:
          - id: a
            activity: foo
            depends_on: [c]
          - id: b
            activity: foo
            depends_on: [a]
          - id: c
            activity: foo
            depends_on: [b]
        """,
        "<string>:5:5: step 'a': depends_on forms a cycle: a -> b -> c -> a (each step depends on the one "
        "before it)",
    ),
    (
        "self_dependency",
        """
        name: w
        steps:
          - id: a
            activity: foo
            depends_on: [a]
        """,
        "<string>:5:5: step 'a': depends on itself",
    ),
    (
        "expression_does_not_parse",
        """
        name: w
        steps:
          - id: a
            activity: foo
            args: ["${{ inputs.x + }}"]
        """,
        "<string>:5:13: step 'a': expression does not parse: unexpected 'end of template'",
    ),
    (
        "unterminated_expression",
        """
        name: w
        steps:
          - id: a
            set: {x: "total: ${{ 1 + 2"}
        """,
        "<string>:4:22: step 'a': unterminated expression: ${{ without }}",
    ),
    (
        "expression_unknown_step",
        """
        name: w
        steps:
          - id: extract
            activity: foo
          - id: b
            activity: bar
            depends_on: [extract]
            args: ["${{ steps.extrat.result }}"]
        """,
        "<string>:8:13: step 'b': in 'args': unknown step 'extrat' (did you mean 'extract'?)",
    ),
    (
        "expression_step_not_upstream",
        """
        name: w
        steps:
          - id: a
            activity: foo
          - id: b
            activity: bar
            args: ["${{ steps.a.result }}"]
        """,
        "<string>:7:13: step 'b': in 'args': steps.a cannot be used here: it is not upstream of this step: add "
        "it to depends_on (directly or through a step this one depends on)",
    ),
    (
        "expression_unknown_input",
        """
        name: w
        inputs:
          date: {type: string}
        steps:
          - id: a
            activity: foo
            args: {day: "day ${{ inputs.dat }}"}
        """,
        "<string>:7:22: step 'a': in 'args': unknown input 'dat' (did you mean 'date'?) (inputs: date)",
    ),
    (
        "item_outside_for_each",
        """
        name: w
        steps:
          - id: a
            activity: foo
            args: ["${{ item }}"]
        """,
        "<string>:5:13: step 'a': in 'args': 'item' is only available in a step with for_each",
    ),
    (
        "item_in_when",
        """
        name: w
        steps:
          - id: a
            activity: foo
            for_each: [1, 2]
            when: "${{ index > 0 }}"
            args: ["${{ item }}"]
        """,
        "<string>:6:12: step 'a': in 'when': 'index' is not available in for_each or when (they are evaluated "
        "once per step)",
    ),
    (
        "unknown_filter",
        """
        name: w
        inputs:
          xs: {type: array}
        steps:
          - id: a
            set: {n: "${{ inputs.xs | lenght }}"}
        """,
        "<string>:6:15: step 'a': unknown filter 'lenght' (did you mean 'length'?)",
    ),
    (
        "bad_duration",
        """
        name: w
        steps:
          - id: nap
            sleep: 5 minutes
        """,
        "<string>:4:12: step 'nap': 'sleep': bad duration '5 minutes': expected a number followed by ms, s, m, "
        "h or d, e.g. 500ms, 90s, 2h, 14d or 1h30m",
    ),
    (
        "bad_timeout_duration",
        """
        name: w
        steps:
          - id: approve
            wait_for_signal: approve
            timeout: 10x
        """,
        "<string>:5:14: step 'approve': 'timeout': bad duration '10x': expected a number followed by ms, s, m, "
        "h or d, e.g. 500ms, 90s, 2h, 14d or 1h30m",
    ),
    (
        "unknown_input_type",
        """
        name: w
        inputs:
          n: {type: integr}
        steps:
          - id: a
            activity: foo
        """,
        "<string>:3:13: input 'n' has unknown type 'integr' (did you mean 'integer'?); use one of string, "
        "integer, number, boolean, array, object",
    ),
    (
        "default_of_wrong_type",
        """
        name: w
        inputs:
          regions: {type: array, default: eu}
        steps:
          - id: a
            activity: foo
        """,
        "<string>:3:35: the default of input 'regions' must be of type array, got string 'eu'",
    ),
    (
        "retry_unknown_key",
        """
        name: w
        steps:
          - id: a
            activity: foo
            retry: {maximum_attempts: 3, initial_intervl: 1s}
        """,
        "<string>:5:34: step 'a': unknown key 'initial_intervl' in 'retry' (did you mean 'initial_interval'?)",
    ),
    (
        "args_scalar",
        """
        name: w
        steps:
          - id: a
            activity: foo
            args: hello
        """,
        "<string>:5:11: step 'a': 'args' must be a list (positional arguments) or a mapping (one object "
        "argument), got string 'hello'",
    ),
    (
        "max_parallel_without_for_each",
        """
        name: w
        steps:
          - id: a
            activity: foo
            max_parallel: 3
        """,
        "<string>:5:5: step 'a': 'max_parallel' needs 'for_each'",
    ),
    (
        "for_each_not_a_list_or_expression",
        """
        name: w
        steps:
          - id: a
            activity: foo
            for_each: regions
        """,
        "<string>:5:15: step 'a': 'for_each' must be a list or exactly one '${{ ... }}' expression, got "
        "'regions'",
    ),
    (
        "bad_on_failure",
        """
        name: w
        steps:
          - id: a
            activity: foo
            on_failure: ignore
        """,
        "<string>:5:17: step 'a': 'on_failure' must be 'fail', 'continue' or a step mapping (activity, "
        "workflow, ...), got 'ignore'",
    ),
    (
        "on_failure_handler_bad_key",
        """
        name: w
        steps:
          - id: a
            activity: foo
            on_failure:
              activity: undo
              depends_on: [a]
        """,
        "<string>:7:7: step 'a': 'depends_on' is not allowed in 'on_failure'",
    ),
    (
        "error_outside_handler",
        """
        name: w
        steps:
          - id: a
            fail: "${{ error.message }}"
        """,
        "<string>:4:12: step 'a': in 'fail': 'error' is only available in an on_failure handler",
    ),
    (
        "trigger_rule_unknown",
        """
        name: w
        steps:
          - id: a
            activity: foo
          - id: b
            activity: foo
            depends_on: [a]
            trigger_rule: all_sucess
        """,
        "<string>:8:19: step 'b': unknown trigger_rule 'all_sucess' (did you mean 'all_success'?); use one of "
        "none_skipped, all_success, all_done, one_success, one_failed, none_failed",
    ),
    (
        "compensate_unknown_step",
        """
        name: w
        steps:
          - id: reserve
            activity: foo
        compensate:
          - step: reserv
            activity: release
        """,
        "<string>:6:5: step 'reserv': 'compensate' names unknown step 'reserv' (did you mean 'reserve'?)",
    ),
    (
        "output_unknown_step",
        """
        name: w
        steps:
          - id: a
            activity: foo
        outputs:
          report: "${{ steps.publish.result }}"
        """,
        "<string>:6:12: in 'outputs.report': unknown step 'publish'",
    ),
    (
        "workflow_unknown_field",
        """
        name: w
        steps:
          - id: a
            set: {when: "${{ workflow.started }}"}
        """,
        "<string>:4:18: step 'a': in 'set': workflow has no 'started' (use id, run_id, type, task_queue, "
        "namespace, attempt, now)",
    ),
    (
        "step_field_unknown",
        """
        name: w
        steps:
          - id: a
            activity: foo
          - id: b
            depends_on: [a]
            set: {x: "${{ steps.a.output }}"}
        """,
        "<string>:7:15: step 'b': in 'set': steps.a has no 'output' (use result, status, error)",
    ),
    (
        "duplicate_key",
        """
        name: w
        steps:
          - id: a
            activity: foo
            activity: bar
        """,
        "<string>:5:5: step 'a': duplicate key 'activity' (first at line 4)",
    ),
    (
        "expression_in_activity_name",
        """
        name: w
        steps:
          - id: a
            activity: "${{ inputs.name }}"
        """,
        "<string>:4:15: step 'a': 'activity' must be a plain value, not an expression",
    ),
]


def _doc(text: str) -> str:
    return textwrap.dedent(text).strip("\n") + "\n"


@pytest.mark.parametrize(("document", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_invalid_document_error_message(document: str, message: str) -> None:
    with pytest.raises(DslError) as caught:
        dsl.load(_doc(document))
    assert str(caught.value) == message


def _case(name: str) -> str:
    return next(doc for case_name, doc, _ in CASES if case_name == name)


def test_there_are_at_least_twenty_invalid_documents() -> None:
    assert len(CASES) >= 20


def test_error_parts_are_attributes() -> None:
    with pytest.raises(DslError) as caught:
        dsl.load(_doc(_case('unknown_step_key_did_you_mean')))
    error = caught.value
    assert isinstance(error, ValueError)
    assert (error.file, error.line, error.column, error.step) == ("<string>", 7, 5, "b")
    assert error.reason == "unknown key 'dependson' in a step (did you mean 'depends_on'?)"


def test_error_names_the_file_path(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text(_doc(_case('unknown_depends_on')))
    with pytest.raises(DslError) as caught:
        dsl.load(path)
    assert str(caught.value) == (
        f"{path}:7:18: step 'b': depends_on names unknown step 'extrct' (did you mean 'extract'?)"
    )
    with pytest.raises(DslError) as caught_str:
        dsl.load(str(path))
    assert str(caught_str.value).startswith(f"{path}:7:18: step 'b': ")


def test_all_errors_are_collected_in_document_order() -> None:
    document = _doc(
        """
        name: w
        steps:
          - id: a
            activity: foo
            dependson: [x]
          - id: b
            activity: foo
            retries: 3
        """
    )
    with pytest.raises(DslError) as caught:
        dsl.load(document)
    assert [str(e) for e in caught.value.errors] == [
        "<string>:5:5: step 'a': unknown key 'dependson' in a step (did you mean 'depends_on'?)",
        "<string>:8:5: step 'b': unknown key 'retries' in a step (did you mean 'retry'?)",
    ]


def test_empty_document() -> None:
    with pytest.raises(DslError, match=r"^<string>:1:1: the document is empty$"):
        dsl.load("# nothing\n")


def test_missing_file_is_an_os_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        dsl.load(tmp_path / "nope.yaml")
