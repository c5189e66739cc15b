"""The typed AST of a YAML workflow, and its plain-JSON form.

The JSON form (``dag_to_json`` / ``dag_from_json``) is what travels in a DSL
execution's input, so it must stay readable by later versions of this module:
``FORMAT`` names its version and new fields must have defaults.
"""

from __future__ import annotations

import datetime
import hashlib
import json

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, ClassVar, Literal, Union

from spindle.dsl._errors import Pos
from spindle.dsl._expressions import Expression

__all__ = [
    "ScheduleBlock",
    "json_type",
    "value_matches",
    "FORMAT",
    "INPUT_TYPES",
    "TRIGGER_RULES",
    "ActivityCall",
    "ChildWorkflowCall",
    "Compensation",
    "ExprSite",
    "Fail",
    "InputSpec",
    "OnFailure",
    "Retry",
    "SetValues",
    "Sleep",
    "Source",
    "Step",
    "StepKind",
    "WaitForSignal",
    "WorkflowDag",
    "dag_from_json",
    "dag_to_json",
    "definition_hash",
]

#: Version tag of the JSON form of a DAG.
FORMAT = "spindle.dsl/1"

InputType = Literal["string", "integer", "number", "boolean", "array", "object"]
INPUT_TYPES: tuple[str, ...] = ("string", "integer", "number", "boolean", "array", "object")

#: When a step runs, given its upstream steps' outcomes (README.md, "Trigger rules").
TRIGGER_RULES: tuple[str, ...] = (
    "none_skipped",
    "all_success",
    "all_done",
    "one_success",
    "one_failed",
    "none_failed",
)


@dataclass(frozen=True)
class ExprSite:
    """An expression found in the document: under which key, and where."""

    key: str
    expression: Expression
    pos: Pos


def value_matches(value: Any, type_name: str) -> bool:
    """True if ``value`` (JSON data) is of the DSL input type ``type_name``."""
    if type_name == "string":
        return isinstance(value, str)
    if type_name == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if type_name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if type_name == "boolean":
        return isinstance(value, bool)
    if type_name == "array":
        return isinstance(value, list)
    if type_name == "object":
        return isinstance(value, dict)
    return False


def json_type(value: Any) -> str:
    """The DSL type name of a JSON value, for error messages."""
    for name in ("boolean", "integer", "number", "string", "array", "object"):
        if value_matches(value, name):
            return name
    return "null" if value is None else type(value).__name__


@dataclass(frozen=True)
class Source:
    """Where a step (or the header) is in its file. Not part of the compiled DAG."""

    pos: Pos
    key_pos: Mapping[str, Pos] = field(default_factory=dict)
    sites: tuple[ExprSite, ...] = ()

    def where(self, key: str) -> Pos:
        """Position of ``key``, or of the whole mapping when the key is absent."""
        return self.key_pos.get(key, self.pos)


@dataclass(frozen=True)
class InputSpec:
    """A declared input: its JSON type, and whether it is required or defaulted."""

    name: str
    type: str
    required: bool = False
    default: Any = None
    has_default: bool = False
    description: str | None = None


@dataclass(frozen=True)
class Retry:
    """A retry policy; durations in seconds, ``None`` = the SDK's default."""

    maximum_attempts: int | None = None
    initial_interval: float | None = None
    backoff_coefficient: float | None = None
    maximum_interval: float | None = None
    non_retryable_error_types: tuple[str, ...] = ()


@dataclass(frozen=True)
class ActivityCall:
    """``activity: NAME``: run an activity by its registered name."""

    KIND: ClassVar[str] = "activity"
    activity: str
    args: Any = None
    task_queue: str | None = None
    retry: Retry | None = None
    start_to_close: float | None = None
    schedule_to_close: float | None = None
    schedule_to_start: float | None = None
    heartbeat: float | None = None


@dataclass(frozen=True)
class ChildWorkflowCall:
    """``workflow: TYPE``: run a child workflow (Python or YAML) by its type name.

    ``retry`` is always ``None`` in a DAG built now (``load`` refuses it: a child
    workflow has no retry policy); it stays in the JSON form so that DAGs
    compiled by earlier versions still read, and such a step fails when it runs.
    """

    KIND: ClassVar[str] = "workflow"
    workflow: str
    args: Any = None
    task_queue: str | None = None
    workflow_id: str | None = None
    retry: Retry | None = None
    execution_timeout: float | None = None


@dataclass(frozen=True)
class Sleep:
    """``sleep: DURATION``: a durable timer."""

    KIND: ClassVar[str] = "sleep"
    seconds: float


@dataclass(frozen=True)
class WaitForSignal:
    """``wait_for_signal: NAME``: the signal's payload is the result; timeout fails."""

    KIND: ClassVar[str] = "wait_for_signal"
    signal: str
    timeout: float | None = None


@dataclass(frozen=True)
class SetValues:
    """``set: {...}``: compute values; the result is the evaluated mapping."""

    KIND: ClassVar[str] = "set"
    values: dict[str, Any]


@dataclass(frozen=True)
class Fail:
    """``fail: MESSAGE``: fail the step with this (interpolated) message."""

    KIND: ClassVar[str] = "fail"
    message: str


StepKind = Union[ActivityCall, ChildWorkflowCall, Sleep, WaitForSignal, SetValues, Fail]
KIND_CLASSES: dict[str, type[Any]] = {
    cls.KIND: cls for cls in (ActivityCall, ChildWorkflowCall, Sleep, WaitForSignal, SetValues, Fail)
}


@dataclass(frozen=True)
class OnFailure:
    """What a step's failure does.

    ``action`` is ``fail`` (the workflow fails), ``continue`` (the step is marked
    failed with a null result and the workflow goes on) or ``handle`` (``handler``
    runs, then ``then`` decides between ``fail`` and ``continue``).
    """

    action: Literal["fail", "continue", "handle"] = "fail"
    handler: Step | None = None
    then: Literal["fail", "continue"] = "fail"


@dataclass(frozen=True)
class Step:
    """One node of the DAG."""

    id: str
    kind: StepKind
    depends_on: tuple[str, ...] = ()
    when: Any = None
    trigger_rule: str = "none_skipped"
    for_each: Any = None
    max_parallel: int | None = None
    on_failure: OnFailure = OnFailure()
    description: str | None = None
    source: Source | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Compensation:
    """A workflow-level ``compensate`` entry: undo ``step`` if it completed."""

    step: str
    body: Step


@dataclass(frozen=True)
class ScheduleBlock:
    """A document's optional ``schedule:`` block: when ``spindle dsl schedule`` starts it.

    Not part of the compiled DAG (an execution does not carry it and it does not change
    the definition hash): it says when to start the workflow, not what it does.
    ``intervals`` are ``(every, offset)`` in whole seconds.
    """

    id: str | None = None
    cron: tuple[str, ...] = ()
    intervals: tuple[tuple[int, int], ...] = ()
    time_zone: str | None = None
    inputs: dict[str, Any] | None = None
    overlap: str | None = None
    jitter: float | None = None
    pos: Pos | None = field(default=None, compare=False)


@dataclass(frozen=True)
class WorkflowDag:
    """A whole YAML workflow, validated."""

    name: str
    steps: tuple[Step, ...]
    version: str | int | None = None
    description: str | None = None
    task_queue: str | None = None
    inputs: tuple[InputSpec, ...] = ()
    outputs: dict[str, Any] = field(default_factory=dict)
    compensate: tuple[Compensation, ...] = ()
    file: str | None = field(default=None, compare=False)
    source: Source | None = field(default=None, compare=False, repr=False)
    #: The ``schedule:`` block, if any (not part of the compiled DAG or its hash).
    schedule: ScheduleBlock | None = field(default=None, compare=False)

    def step(self, step_id: str) -> Step:
        """The step with this id (``KeyError`` if none)."""
        for step in self.steps:
            if step.id == step_id:
                return step
        raise KeyError(step_id)

    @property
    def input_names(self) -> tuple[str, ...]:
        """Declared input names, in order."""
        return tuple(spec.name for spec in self.inputs)


# --- JSON form -------------------------------------------------------------


def _retry_to_json(retry: Retry | None) -> dict[str, Any] | None:
    if retry is None:
        return None
    data = {f.name: getattr(retry, f.name) for f in fields(retry)}
    data["non_retryable_error_types"] = list(retry.non_retryable_error_types)
    return data


def _retry_from_json(data: Mapping[str, Any] | None) -> Retry | None:
    if data is None:
        return None
    values = dict(data)
    values["non_retryable_error_types"] = tuple(values.get("non_retryable_error_types") or ())
    return Retry(**values)


def _kind_to_json(kind: StepKind) -> dict[str, Any]:
    data: dict[str, Any] = {"type": kind.KIND}
    for f in fields(kind):
        value = getattr(kind, f.name)
        data[f.name] = _retry_to_json(value) if f.name == "retry" else value
    return data


def _kind_from_json(data: Mapping[str, Any]) -> StepKind:
    values = dict(data)
    cls = KIND_CLASSES[values.pop("type")]
    if "retry" in values:
        values["retry"] = _retry_from_json(values["retry"])
    kind: StepKind = cls(**values)
    return kind


def _step_to_json(step: Step) -> dict[str, Any]:
    on_failure: dict[str, Any] = {"action": step.on_failure.action, "then": step.on_failure.then}
    if step.on_failure.handler is not None:
        on_failure["handler"] = _step_to_json(step.on_failure.handler)
    return {
        "id": step.id,
        "kind": _kind_to_json(step.kind),
        "depends_on": list(step.depends_on),
        "when": step.when,
        "trigger_rule": step.trigger_rule,
        "for_each": step.for_each,
        "max_parallel": step.max_parallel,
        "on_failure": on_failure,
        "description": step.description,
    }


def _step_from_json(data: Mapping[str, Any]) -> Step:
    failure = data.get("on_failure") or {}
    handler = failure.get("handler")
    return Step(
        id=data["id"],
        kind=_kind_from_json(data["kind"]),
        depends_on=tuple(data.get("depends_on") or ()),
        when=data.get("when"),
        trigger_rule=data.get("trigger_rule", "none_skipped"),
        for_each=data.get("for_each"),
        max_parallel=data.get("max_parallel"),
        on_failure=OnFailure(
            action=failure.get("action", "fail"),
            handler=_step_from_json(handler) if handler is not None else None,
            then=failure.get("then", "fail"),
        ),
        description=data.get("description"),
    )


def dag_to_json(dag: WorkflowDag) -> dict[str, Any]:
    """The DAG as plain JSON data (what an execution's input carries).

    Values YAML gives as other types become JSON too, the way the data
    converter would send them: dates and timestamps as ISO 8601 text, anything
    else as its ``str``. So the DAG a worker loaded and the DAG it receives in a
    start input compare (and hash) equal.
    """
    encoded = json.dumps(_dag_to_data(dag), default=_json_default, ensure_ascii=False)
    data: dict[str, Any] = json.loads(encoded)
    return data


def _json_default(value: Any) -> Any:
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    return str(value)


#: Fields of the JSON form left out of :func:`definition_hash` (where, not what).
_UNHASHED = ("file", "positions")


def definition_hash(dag_json: Mapping[str, Any]) -> str:
    """``sha256:<hex>`` of a compiled DAG's content: what the workflow does.

    The hash covers every field of the JSON form except where the document was
    (``file``, ``positions``): the same YAML loaded from another path, or with
    other comments and blank lines, has the same hash; any change to a step, an
    input, an output or the header changes it. Keys are sorted, so the order of
    a mapping does not matter.

    Histories record it (``workflow.patched("dsl-definition/<hash>")``), so it is
    part of the history format, like :data:`FORMAT`: what it covers and how it
    is encoded must not change for a given DAG.

    Raises:
        ValueError: ``dag_json`` is not JSON data (or nests too deeply to encode).
    """
    content = {key: value for key, value in dag_json.items() if key not in _UNHASHED}
    try:
        encoded = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError, RecursionError) as error:
        raise ValueError(f"not JSON data: {error}") from None
    return "sha256:" + hashlib.sha256(encoded.encode()).hexdigest()


def _dag_to_data(dag: WorkflowDag) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "name": dag.name,
        "version": dag.version,
        "description": dag.description,
        "task_queue": dag.task_queue,
        "inputs": [
            {f.name: getattr(spec, f.name) for f in fields(spec)} for spec in dag.inputs
        ],
        "steps": [_step_to_json(step) for step in dag.steps],
        "outputs": dag.outputs,
        "compensate": [
            {"step": comp.step, "body": _step_to_json(comp.body)} for comp in dag.compensate
        ],
        "file": dag.file,
        "positions": _positions(dag),
    }


def _positions(dag: WorkflowDag) -> dict[str, list[int]]:
    """``inputs.<name>`` and ``steps.<id>`` -> [line, column], for messages and widgets."""
    found: dict[str, list[int]] = {}
    if dag.source is not None:
        for key, pos in dag.source.key_pos.items():
            if key.startswith("inputs."):
                found[key] = [pos.line, pos.column]
    for step in dag.steps:
        if step.source is not None:
            found[f"steps.{step.id}"] = [step.source.pos.line, step.source.pos.column]
    return found


def dag_from_json(data: Mapping[str, Any]) -> WorkflowDag:
    """Rebuild a DAG from ``dag_to_json`` output.

    Raises:
        ValueError: ``data`` is not a DAG of a format this version understands.
    """
    if not isinstance(data, Mapping) or data.get("format") != FORMAT:
        found = data.get("format") if isinstance(data, Mapping) else type(data).__name__
        raise ValueError(f"not a compiled Spindle DSL workflow (format {found!r}, want {FORMAT!r})")
    positions = {key: Pos(*value) for key, value in (data.get("positions") or {}).items()}
    steps = tuple(_step_from_json(step) for step in data["steps"])
    steps = tuple(
        replace(step, source=Source(positions[f"steps.{step.id}"]))
        if f"steps.{step.id}" in positions
        else step
        for step in steps
    )
    return WorkflowDag(
        name=data["name"],
        version=data.get("version"),
        description=data.get("description"),
        task_queue=data.get("task_queue"),
        inputs=tuple(InputSpec(**spec) for spec in data.get("inputs") or ()),
        steps=steps,
        outputs=dict(data.get("outputs") or {}),
        compensate=tuple(
            Compensation(step=comp["step"], body=_step_from_json(comp["body"]))
            for comp in data.get("compensate") or ()
        ),
        file=data.get("file"),
        source=Source(Pos(1, 1), {k: v for k, v in positions.items() if k.startswith("inputs.")}),
    )
