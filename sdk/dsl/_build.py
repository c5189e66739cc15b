"""Located YAML tree -> typed AST, checking the shape of every key and value.

Semantic checks that need the whole document (references, cycles, upstream
expressions) are in ``_validate.py``; this module checks each mapping on its own.
"""

from __future__ import annotations

import difflib
import re

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from spindle.dsl._durations import parse_duration
from spindle.dsl._errors import DslError, Pos
from spindle.dsl._expressions import Expression, ExpressionError, split_template, whole_expression
from spindle.dsl._model import (
    INPUT_TYPES,
    json_type,
    value_matches,
    TRIGGER_RULES,
    ActivityCall,
    ChildWorkflowCall,
    Compensation,
    ExprSite,
    Fail,
    InputSpec,
    OnFailure,
    Retry,
    SetValues,
    Sleep,
    Source,
    Step,
    StepKind,
    WaitForSignal,
    WorkflowDag,
)
from spindle.dsl._parser import YMap, YNode, YScalar, YSeq, plain

__all__ = [
    "CHILD_RETRY_ERROR",
    "COMMON_STEP_KEYS",
    "HEADER_KEYS",
    "INPUT_KEYS",
    "KIND_KEYS",
    "KIND_OPTIONS",
    "RETRY_KEYS",
    "build_dag",
    "value_matches",
]

HEADER_KEYS = ("name", "version", "description", "task_queue", "inputs", "outputs", "steps", "compensate",
               "schedule")
INPUT_KEYS = ("type", "required", "default", "description")
KIND_KEYS = ("activity", "workflow", "sleep", "wait_for_signal", "set", "fail")
KIND_OPTIONS: dict[str, tuple[str, ...]] = {
    "activity": (
        "args",
        "task_queue",
        "retry",
        "start_to_close",
        "schedule_to_close",
        "schedule_to_start",
        "heartbeat",
    ),
    # No "retry": a child workflow has no retry policy (workflow.execute_child_workflow takes none).
    "workflow": ("args", "task_queue", "workflow_id", "execution_timeout"),
    "sleep": (),
    "wait_for_signal": ("timeout",),
    "set": (),
    "fail": (),
}
COMMON_STEP_KEYS = (
    "id",
    "description",
    "depends_on",
    "when",
    "trigger_rule",
    "for_each",
    "max_parallel",
    "on_failure",
)
HANDLER_KEYS = ("id", "description", "then")
COMPENSATION_KEYS = ("step", "id", "description")
RETRY_KEYS = (
    "maximum_attempts",
    "initial_interval",
    "backoff_coefficient",
    "maximum_interval",
    "non_retryable_error_types",
)
#: Why ``retry`` is refused on a ``workflow:`` step.
CHILD_RETRY_ERROR = (
    "'retry' does not apply to a workflow step: a child workflow has no retry policy; give the "
    "activities inside the child their own 'retry'"
)
_ALL_OPTIONS = tuple(dict.fromkeys(option for opts in KIND_OPTIONS.values() for option in opts))
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TYPE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
_ARTICLE = {"activity": "an activity", "workflow": "a workflow", "wait_for_signal": "a wait_for_signal"}

T = TypeVar("T")


class _Invalid(Exception):
    """Internal: abandon the value being built (the error is already recorded)."""


def _suggest(key: str, candidates: Iterable[str]) -> str:
    close = difflib.get_close_matches(key, list(candidates), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


class _Builder:
    """Builds one document, collecting every error it finds."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.errors: list[DslError] = []
        self.input_pos: dict[str, Pos] = {}

    # -- error helpers ---------------------------------------------------------

    def error(self, reason: str, pos: Pos, step: str | None = None) -> None:
        self.errors.append(DslError(reason, file=self.file, pos=pos, step=step))

    def fail(self, reason: str, pos: Pos, step: str | None = None) -> _Invalid:
        self.error(reason, pos, step)
        return _Invalid()

    def mapping(self, node: YNode, what: str, step: str | None = None) -> YMap:
        if not isinstance(node, YMap):
            raise self.fail(f"{what} must be a mapping, got {_describe(node)}", node.pos, step)
        return node

    def check_keys(
        self, node: YMap, allowed: Iterable[str], what: str, step: str | None = None,
        misplaced: Callable[[str], str | None] | None = None,
    ) -> None:
        allowed = tuple(allowed)
        for key in node.items:
            if key in allowed:
                continue
            hint = misplaced(key) if misplaced else None
            if hint is not None:
                self.error(hint, node.where(key), step)
            else:
                self.error(f"unknown key {key!r} in {what}{_suggest(key, allowed)}", node.where(key), step)

    def scalar(
        self, node: YNode, what: str, types: tuple[type, ...], step: str | None = None
    ) -> Any:
        value = node.value if isinstance(node, YScalar) else None
        if not isinstance(node, YScalar) or not isinstance(value, types) or (
            isinstance(value, bool) and bool not in types
        ):
            names = " or ".join(_TYPE_WORDS.get(t, t.__name__) for t in types)
            raise self.fail(f"{what} must be {names}, got {_describe(node)}", node.pos, step)
        return value

    def static_string(self, node: YNode, what: str, step: str | None = None) -> str:
        value: str = self.scalar(node, what, (str,), step)
        if "${{" in value:
            raise self.fail(f"{what} must be a plain value, not an expression", node.pos, step)
        if not value.strip():
            raise self.fail(f"{what} must not be empty", node.pos, step)
        return value

    def duration(self, node: YNode, what: str, step: str | None = None) -> float:
        try:
            return parse_duration(node.value if isinstance(node, YScalar) else plain(node))
        except ValueError as exc:
            raise self.fail(f"{what}: {exc}", node.pos, step) from None

    def attempt(self, build: Callable[[], T]) -> T | None:
        try:
            return build()
        except _Invalid:
            return None

    # -- values that may hold expressions ------------------------------------

    def value(self, node: YNode, key: str, sites: list[ExprSite], step: str | None) -> Any:
        """The plain value of ``node``, recording each expression it holds."""
        if isinstance(node, YSeq):
            return [self.value(item, key, sites, step) for item in node.items]
        if isinstance(node, YMap):
            return {k: self.value(v, key, sites, step) for k, v in node.items.items()}
        if isinstance(node.value, str) and "${{" in node.value:
            for expression in self.expressions(node, step):
                sites.append(ExprSite(key, expression, _expression_pos(node, expression.offset)))
        return node.value

    def expressions(self, node: YScalar, step: str | None) -> list[Expression]:
        try:
            parts = split_template(node.value)
        except ExpressionError as exc:
            raise self.fail(str(exc), _expression_pos(node, exc.offset), step) from None
        return [part for part in parts if isinstance(part, Expression)]

    def single_expression(
        self, node: YNode, key: str, sites: list[ExprSite], step: str | None, literal: type, words: str
    ) -> Any:
        """A value that is a literal of type ``literal`` or exactly one ``${{ }}``."""
        if isinstance(node, YScalar) and isinstance(node.value, str):
            self.expressions(node, step)  # records a parse error, if any
            if whole_expression(split_template(node.value)) is None:
                raise self.fail(
                    f"{key!r} must be {words} or exactly one '${{{{ ... }}}}' expression, "
                    f"got {node.value!r}",
                    node.pos,
                    step,
                )
        elif not (isinstance(node, YScalar) and isinstance(node.value, literal)) and not (
            literal is list and isinstance(node, YSeq)
        ):
            raise self.fail(
                f"{key!r} must be {words} or a '${{{{ ... }}}}' expression, got {_describe(node)}",
                node.pos,
                step,
            )
        return self.value(node, key, sites, step)

    # -- the document -----------------------------------------------------------

    def document(self, root: YNode) -> WorkflowDag | None:
        top = self.mapping(root, "the document")
        self.check_keys(top, HEADER_KEYS, "the workflow header")
        sites: list[ExprSite] = []
        name = self.attempt(lambda: self.header_name(top))
        version = None
        if "version" in top.items:
            version = self.attempt(
                lambda: self.scalar(top.items["version"], "'version'", (int, float, str))
            )
        description = self.optional_text(top, "description")
        task_queue = None
        if "task_queue" in top.items:
            task_queue = self.attempt(lambda: self.static_string(top.items["task_queue"], "'task_queue'"))
        inputs = self.attempt(lambda: self.inputs(top.items["inputs"])) if "inputs" in top.items else ()
        steps = self.steps(top)
        outputs: dict[str, Any] = {}
        if "outputs" in top.items:
            outputs = self.attempt(lambda: self.outputs(top.items["outputs"], sites)) or {}
        compensate: tuple[Compensation, ...] = ()
        if "compensate" in top.items:
            compensate = self.attempt(lambda: self.compensations(top.items["compensate"])) or ()
        schedule = None
        if "schedule" in top.items:
            from spindle.dsl._schedule_block import build_schedule_block

            schedule = self.attempt(lambda: build_schedule_block(self, top.items["schedule"], inputs or ()))
        if self.errors or name is None or steps is None:
            return None
        return WorkflowDag(
            name=name,
            version=version,
            description=description,
            task_queue=task_queue,
            inputs=inputs or (),
            steps=steps,
            outputs=outputs,
            compensate=compensate,
            schedule=schedule,
            file=self.file,
            source=Source(
                top.pos,
                {**top.key_pos, **{f"inputs.{k}": v for k, v in self.input_pos.items()}},
                tuple(sites),
            ),
        )

    def optional_text(self, node: YMap, key: str, step: str | None = None) -> str | None:
        if key not in node.items:
            return None
        return self.attempt(lambda: str(self.scalar(node.items[key], f"{key!r}", (str,), step)))

    def header_name(self, top: YMap) -> str:
        if "name" not in top.items:
            raise self.fail("missing 'name' (the workflow type name)", top.pos)
        name = self.static_string(top.items["name"], "'name'")
        if not _TYPE_NAME.fullmatch(name):
            raise self.fail(
                f"'name' {name!r} must start with a letter or '_' and hold only letters, digits, "
                "'_', '.' and '-'",
                top.items["name"].pos,
            )
        return name

    def inputs(self, node: YNode) -> tuple[InputSpec, ...]:
        specs = self.mapping(node, "'inputs'")
        built: list[InputSpec] = []
        for name, spec_node in specs.items.items():
            self.input_pos[name] = specs.where(name)
            spec = self.attempt(lambda: self.input_spec(name, spec_node, specs.where(name)))
            if spec is not None:
                built.append(spec)
        return tuple(built)

    def input_spec(self, name: str, node: YNode, at: Pos) -> InputSpec:
        if not _IDENTIFIER.fullmatch(name):
            raise self.fail(f"input name {name!r} must be an identifier (letters, digits, '_')", at)
        if isinstance(node, YScalar) and isinstance(node.value, str):  # shorthand `date: string`
            node = YMap({"type": node}, node.pos, {"type": node.pos})
        spec = self.mapping(node, f"input {name!r}")
        self.check_keys(spec, INPUT_KEYS, f"input {name!r}")
        if "type" not in spec.items:
            raise self.fail(f"input {name!r} has no 'type' (one of {', '.join(INPUT_TYPES)})", spec.pos)
        type_name = self.scalar(spec.items["type"], f"the type of input {name!r}", (str,))
        if type_name not in INPUT_TYPES:
            raise self.fail(
                f"input {name!r} has unknown type {type_name!r}{_suggest(type_name, INPUT_TYPES)}; "
                f"use one of {', '.join(INPUT_TYPES)}",
                spec.items["type"].pos,
            )
        required = False
        if "required" in spec.items:
            required = self.scalar(spec.items["required"], f"'required' of input {name!r}", (bool,))
        default = None
        if "default" in spec.items:
            default = plain(spec.items["default"])
            if not value_matches(default, type_name):
                raise self.fail(
                    f"the default of input {name!r} must be of type {type_name}, got "
                    f"{json_type(default)} {default!r}",
                    spec.items["default"].pos,
                )
            if required:
                raise self.fail(
                    f"input {name!r} is required and has a default: drop one of them",
                    spec.where("required"),
                )
        return InputSpec(
            name=name,
            type=type_name,
            required=required,
            default=default,
            has_default="default" in spec.items,
            description=self.optional_text(spec, "description"),
        )

    def outputs(self, node: YNode, sites: list[ExprSite]) -> dict[str, Any]:
        outputs = self.mapping(node, "'outputs'")
        return {
            name: self.value(value, f"outputs.{name}", sites, None)
            for name, value in outputs.items.items()
        }

    def steps(self, top: YMap) -> tuple[Step, ...] | None:
        if "steps" not in top.items:
            self.error("missing 'steps' (a list of steps)", top.pos)
            return None
        node = top.items["steps"]
        if not isinstance(node, YSeq):
            self.error(f"'steps' must be a list, got {_describe(node)}", node.pos)
            return None
        if not node.items:
            self.error("'steps' is empty: a workflow needs at least one step", node.pos)
            return None
        built = [self.attempt(lambda: self.step(item, index)) for index, item in enumerate(node.items)]
        return tuple(step for step in built if step is not None)

    def compensations(self, node: YNode) -> tuple[Compensation, ...]:
        if not isinstance(node, YSeq):
            raise self.fail(f"'compensate' must be a list, got {_describe(node)}", node.pos)
        built = [self.attempt(lambda: self.compensation(item)) for item in node.items]
        return tuple(comp for comp in built if comp is not None)

    def compensation(self, node: YNode) -> Compensation:
        entry = self.mapping(node, "a 'compensate' entry")
        if "step" not in entry.items:
            raise self.fail("a 'compensate' entry needs 'step: ID' (the step it undoes)", entry.pos)
        target = self.static_string(entry.items["step"], "'step' of a 'compensate' entry")
        default_id = f"compensate_{target}"
        body = self.body(entry, COMPENSATION_KEYS, default_id, "a 'compensate' entry", for_step=target)
        return Compensation(step=target, body=body)

    def step(self, node: YNode, index: int) -> Step:
        step_map = self.mapping(node, f"step #{index + 1}")
        if "id" not in step_map.items:
            raise self.fail(f"step #{index + 1} has no 'id'", step_map.pos)
        step_id = self.step_id(step_map.items["id"], None)
        return self.body(step_map, COMMON_STEP_KEYS, step_id, "a step", for_step=step_id, top_level=True)

    def step_id(self, node: YNode, step: str | None) -> str:
        step_id = self.scalar(node, "'id'", (str,), step)
        if not _IDENTIFIER.fullmatch(step_id):
            raise self.fail(
                f"step id {step_id!r} must be an identifier (letters, digits, '_'; not starting "
                "with a digit) so that expressions can say steps.<id>",
                node.pos,
                step_id,
            )
        return str(step_id)

    def body(
        self, node: YMap, extra_keys: tuple[str, ...], step_id: str, what: str, *,
        for_step: str, top_level: bool = False,
    ) -> Step:
        """A step, an ``on_failure`` handler or a compensation: one kind plus options."""
        if not top_level and "id" in node.items:
            step_id = self.step_id(node.items["id"], for_step)
        label = step_id if top_level else for_step
        kinds = [key for key in node.items if key in KIND_KEYS]
        if not kinds:
            # A misspelt kind ("activty: ...") is the likeliest cause: point at it.
            known = (*KIND_KEYS, *extra_keys, *_ALL_OPTIONS, *COMMON_STEP_KEYS)
            for key in node.items:
                if key not in known:
                    hint = _suggest(key, KIND_KEYS)
                    if hint:
                        raise self.fail(f"unknown key {key!r}{hint}", node.where(key), label)
            raise self.fail(
                f"{what} needs exactly one of {', '.join(KIND_KEYS)}; found none", node.pos, label
            )
        if len(kinds) > 1:
            raise self.fail(
                f"{what} needs exactly one of {', '.join(KIND_KEYS)}; found both {kinds[0]!r} and {kinds[1]!r}",
                node.where(kinds[1]),
                label,
            )
        kind_key = kinds[0]
        options = KIND_OPTIONS[kind_key]

        def misplaced(key: str) -> str | None:
            if key == "retry" and kind_key == "workflow":
                return CHILD_RETRY_ERROR
            if key in _ALL_OPTIONS:
                owners = [kind for kind, opts in KIND_OPTIONS.items() if key in opts]
                return (
                    f"{key!r} does not apply to {_ARTICLE.get(kind_key, 'a ' + kind_key)} step "
                    f"(it is an option of {' and '.join(owners)})"
                )
            if key in COMMON_STEP_KEYS and not top_level:
                return f"{key!r} is not allowed in {what}"
            return None

        self.check_keys(node, (*KIND_KEYS, *extra_keys, *options), what, label, misplaced)
        sites: list[ExprSite] = []
        kind = self.kind(node, kind_key, sites, label)
        depends_on: tuple[str, ...] = ()
        when: Any = None
        trigger_rule = "none_skipped"
        for_each: Any = None
        max_parallel: int | None = None
        on_failure = OnFailure()
        if top_level:
            depends_on = self.attempt(lambda: self.depends_on(node, label)) or ()
            if "when" in node.items:
                when = self.attempt(
                    lambda: self.single_expression(node.items["when"], "when", sites, label, bool, "true/false")
                )
            if "trigger_rule" in node.items:
                trigger_rule = self.attempt(lambda: self.trigger_rule(node.items["trigger_rule"], label)) or trigger_rule
            if "for_each" in node.items:
                for_each = self.attempt(
                    lambda: self.single_expression(node.items["for_each"], "for_each", sites, label, list, "a list")
                )
            if "max_parallel" in node.items:
                max_parallel = self.attempt(lambda: self.max_parallel(node, label))
            if "on_failure" in node.items:
                on_failure = self.attempt(lambda: self.on_failure(node.items["on_failure"], label)) or on_failure
        description = self.optional_text(node, "description", label)
        key_pos = dict(node.key_pos)
        deps_node = node.items.get("depends_on")
        if isinstance(deps_node, YSeq):
            key_pos.update({f"depends_on[{i}]": item.pos for i, item in enumerate(deps_node.items)})
        elif deps_node is not None:
            key_pos["depends_on[0]"] = deps_node.pos
        source = Source(node.pos, key_pos, tuple(sites))
        step = Step(
            id=step_id,
            kind=kind,
            depends_on=depends_on,
            when=when,
            trigger_rule=trigger_rule,
            for_each=for_each,
            max_parallel=max_parallel,
            on_failure=on_failure,
            description=description,
            source=source,
        )
        return step

    def kind(self, node: YMap, kind_key: str, sites: list[ExprSite], step: str) -> StepKind:
        value = node.items[kind_key]
        what = f"{kind_key!r}"

        def duration(key: str) -> float | None:
            if key not in node.items:
                return None
            return self.attempt(lambda: self.duration(node.items[key], f"{key!r}", step))

        def args() -> Any:
            if "args" not in node.items:
                return None
            args_node = node.items["args"]
            if not isinstance(args_node, (YSeq, YMap)):
                raise self.fail(
                    f"'args' must be a list (positional arguments) or a mapping (one object "
                    f"argument), got {_describe(args_node)}",
                    args_node.pos,
                    step,
                )
            return self.value(args_node, "args", sites, step)

        def task_queue() -> str | None:
            if "task_queue" not in node.items:
                return None
            return self.attempt(lambda: self.static_string(node.items["task_queue"], "'task_queue'", step))

        def retry() -> Retry | None:
            if "retry" not in node.items:
                return None
            return self.attempt(lambda: self.retry(node.items["retry"], step))

        if kind_key == "activity":
            return ActivityCall(
                activity=self.static_string(value, what, step),
                args=args(),
                task_queue=task_queue(),
                retry=retry(),
                start_to_close=duration("start_to_close"),
                schedule_to_close=duration("schedule_to_close"),
                schedule_to_start=duration("schedule_to_start"),
                heartbeat=duration("heartbeat"),
            )
        if kind_key == "workflow":
            workflow_id = None
            if "workflow_id" in node.items:
                workflow_id = self.scalar(node.items["workflow_id"], "'workflow_id'", (str,), step)
                self.value(node.items["workflow_id"], "workflow_id", sites, step)
            return ChildWorkflowCall(
                workflow=self.static_string(value, what, step),
                args=args(),
                task_queue=task_queue(),
                workflow_id=workflow_id,
                execution_timeout=duration("execution_timeout"),
            )
        if kind_key == "sleep":
            return Sleep(seconds=self.duration(value, "'sleep'", step))
        if kind_key == "wait_for_signal":
            return WaitForSignal(signal=self.static_string(value, what, step), timeout=duration("timeout"))
        if kind_key == "set":
            values = self.mapping(value, "'set'", step)
            return SetValues(values=self.value(values, "set", sites, step))
        message = self.scalar(value, "'fail' (the failure message)", (str,), step)
        self.value(value, "fail", sites, step)
        return Fail(message=message)

    def retry(self, node: YNode, step: str) -> Retry:
        retry = self.mapping(node, "'retry'", step)
        self.check_keys(retry, RETRY_KEYS, "'retry'", step)
        values: dict[str, Any] = {}
        items = retry.items
        if "maximum_attempts" in items:
            attempts = self.scalar(items["maximum_attempts"], "'maximum_attempts'", (int,), step)
            if attempts < 0:
                raise self.fail("'maximum_attempts' must be >= 0 (0 = unlimited)", items["maximum_attempts"].pos, step)
            values["maximum_attempts"] = attempts
        for key in ("initial_interval", "maximum_interval"):
            if key in items:
                values[key] = self.duration(items[key], f"{key!r}", step)
        if "backoff_coefficient" in items:
            coefficient = self.scalar(items["backoff_coefficient"], "'backoff_coefficient'", (int, float), step)
            if coefficient < 1:
                raise self.fail("'backoff_coefficient' must be >= 1", items["backoff_coefficient"].pos, step)
            values["backoff_coefficient"] = float(coefficient)
        if "non_retryable_error_types" in items:
            types_node = items["non_retryable_error_types"]
            if not isinstance(types_node, YSeq):
                raise self.fail("'non_retryable_error_types' must be a list of error type names", types_node.pos, step)
            values["non_retryable_error_types"] = tuple(
                self.static_string(item, "an error type name", step) for item in types_node.items
            )
        return Retry(**values)

    def depends_on(self, node: YMap, step: str) -> tuple[str, ...]:
        if "depends_on" not in node.items:
            return ()
        deps = node.items["depends_on"]
        if isinstance(deps, YScalar) and isinstance(deps.value, str):
            deps = YSeq([deps], deps.pos)
        if not isinstance(deps, YSeq):
            raise self.fail(f"'depends_on' must be a list of step ids, got {_describe(deps)}", deps.pos, step)
        ids = [str(self.scalar(item, "a 'depends_on' entry", (str,), step)) for item in deps.items]
        for index, dep in enumerate(ids):
            if dep in ids[:index]:
                raise self.fail(f"'depends_on' lists {dep!r} twice", deps.items[index].pos, step)
        return tuple(ids)

    def trigger_rule(self, node: YNode, step: str) -> str:
        rule = self.scalar(node, "'trigger_rule'", (str,), step)
        if rule not in TRIGGER_RULES:
            raise self.fail(
                f"unknown trigger_rule {rule!r}{_suggest(rule, TRIGGER_RULES)}; use one of "
                f"{', '.join(TRIGGER_RULES)}",
                node.pos,
                step,
            )
        return str(rule)

    def then(self, node: YNode, step: str) -> str:
        then = self.scalar(node, "'then'", (str,), step)
        if then not in ("fail", "continue"):
            raise self.fail(f"'then' must be 'fail' or 'continue', got {then!r}", node.pos, step)
        return str(then)

    def max_parallel(self, node: YMap, step: str) -> int:
        if "for_each" not in node.items:
            raise self.fail("'max_parallel' needs 'for_each'", node.where("max_parallel"), step)
        value = self.scalar(node.items["max_parallel"], "'max_parallel'", (int,), step)
        if value < 1:
            raise self.fail("'max_parallel' must be at least 1", node.items["max_parallel"].pos, step)
        return int(value)

    def on_failure(self, node: YNode, step: str) -> OnFailure:
        if isinstance(node, YScalar):
            if node.value in ("fail", "continue"):
                return OnFailure(action=node.value)
            raise self.fail(
                f"'on_failure' must be 'fail', 'continue' or a step mapping (activity, workflow, ...), "
                f"got {node.value!r}",
                node.pos,
                step,
            )
        handler_map = self.mapping(node, "'on_failure'", step)
        handler = self.body(handler_map, HANDLER_KEYS, f"{step}_on_failure", "'on_failure'", for_step=step)
        then: Any = "fail"
        if "then" in handler_map.items:
            then = self.then(handler_map.items["then"], step)
        return OnFailure(action="handle", handler=handler, then=then)


_TYPE_WORDS = {str: "a string", int: "an integer", float: "a number", bool: "true or false"}


def _describe(node: YNode) -> str:
    if isinstance(node, YMap):
        return "a mapping"
    if isinstance(node, YSeq):
        return "a list"
    value = node.value
    if value is None:
        return "nothing (null)"
    return f"{json_type(value)} {value!r}"


def _expression_pos(node: YScalar, offset: int) -> Pos:
    return node.text_pos.shifted(offset) if node.text_pos is not None else node.pos


def build_dag(root: YNode, file: str) -> WorkflowDag:
    """Build the AST of a parsed document.

    Raises:
        DslError: the first shape error (``.errors`` lists them all).
    """
    builder = _Builder(file)
    try:
        dag = builder.document(root)
    except _Invalid:
        dag = None
    if builder.errors:
        raise DslError.collect(builder.errors)
    assert dag is not None
    return dag
