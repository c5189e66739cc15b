"""Located YAML tree -> typed AST.

The document is first checked against the language's definition (``_language.DOCUMENT``:
keys, types, required keys, enums, patterns, limits, and the syntax of every expression),
which records every problem with its position; a document without problems is then
turned into the typed AST here, which checks nothing more. Checks that need the whole
document (references, cycles, what expressions read) are in ``_validate.py``.
"""

from __future__ import annotations

from typing import Any

from spindle.dsl._durations import parse_duration
from spindle.dsl._errors import DslError
from spindle.dsl._language import COMPENSATION, DOCUMENT, HANDLER, INPUT, STEP
from spindle.dsl._model import (
    ActivityCall,
    ChildWorkflowCall,
    Compensation,
    Fail,
    InputSpec,
    OnFailure,
    Retry,
    ScheduleBlock,
    SetValues,
    Sleep,
    Source,
    Step,
    StepKind,
    WaitForSignal,
    WorkflowDag,
)
from spindle.dsl._parser import YMap, YNode, YScalar, YSeq, plain
from spindle.dsl._shape_maps import Body, DefaultOfType
from spindle.dsl._shapes import At, Ctx

__all__ = ["build_dag", "structure_errors"]


def build_dag(root: YNode, file: str) -> WorkflowDag:
    """Check a parsed document and build its AST.

    Raises:
        DslError: the first problem by position (``.errors`` lists them all).
    """
    ctx = Ctx(file)
    ctx.check(DOCUMENT, root, At("the document"))
    schedule = None
    if isinstance(root, YMap):
        inputs = root.items.get("inputs")
        declared = () if inputs is None else _inputs(inputs) if ctx.ok(inputs) else None
        block = root.items.get("schedule")
        if isinstance(block, YMap):
            from spindle.dsl._schedule_block import build_schedule_block

            schedule = build_schedule_block(ctx, block, declared)
    if ctx.errors:
        raise DslError.collect(ctx.errors)
    assert isinstance(root, YMap)
    return _document(root, ctx, schedule)


def structure_errors(root: YNode, file: str) -> list[DslError]:
    """The problems of a document's structure alone: what ``schema.json`` says, no more.

    Leaves out what a JSON Schema cannot check: expressions (their syntax, what they read),
    references between steps, cycles, and a schedule's cron expressions and time zone.
    """
    ctx = Ctx(file, expressions=False)
    ctx.check(DOCUMENT, root, At("the document"))
    return ctx.errors


def _get(items: dict[str, YNode], key: str, default: Any = None) -> Any:
    """The plain value of ``key``, or ``default`` when it is absent."""
    node = items.get(key)
    return default if node is None else plain(node)


def _seconds(items: dict[str, YNode], key: str) -> float | None:
    return parse_duration(items[key].value) if key in items else None  # type: ignore[union-attr]


def _map(node: YNode) -> YMap:
    assert isinstance(node, YMap)
    return node


def _inputs(node: YNode) -> tuple[InputSpec, ...]:
    specs = []
    for name, spec_node in _map(node).items.items():
        items = _map(INPUT.expand(spec_node)).items
        type_name = _get(items, "type")
        specs.append(InputSpec(
            name=name,
            type=type_name,
            required=_get(items, "required", False),
            default=DefaultOfType.loaded(_get(items, "default"), type_name),
            has_default="default" in items,
            description=_get(items, "description"),
        ))
    return tuple(specs)


def _document(top: YMap, ctx: Ctx, schedule: ScheduleBlock | None) -> WorkflowDag:
    items = top.items
    inputs = items.get("inputs")
    input_pos = {f"inputs.{name}": inputs.where(name) for name in inputs.items} if isinstance(inputs, YMap) else {}
    steps = [_map(node) for node in _get_nodes(items, "steps")]
    return WorkflowDag(
        name=_get(items, "name"),
        version=_get(items, "version"),
        description=_get(items, "description"),
        task_queue=_get(items, "task_queue"),
        inputs=_inputs(inputs) if inputs is not None else (),
        steps=tuple(_body(step, _get(step.items, "id"), STEP, ctx) for step in steps),
        outputs=_get(items, "outputs", {}),
        compensate=tuple(_compensation(_map(node), ctx) for node in _get_nodes(items, "compensate")),
        schedule=schedule,
        file=ctx.file,
        source=Source(top.pos, {**top.key_pos, **input_pos}, tuple(ctx.sites[id(top)])),
    )


def _get_nodes(items: dict[str, YNode], key: str) -> list[YNode]:
    node = items.get(key)
    return node.items if isinstance(node, YSeq) else []


def _compensation(node: YMap, ctx: Ctx) -> Compensation:
    target = _get(node.items, "step")
    step_id = _get(node.items, "id", f"compensate_{target}")
    return Compensation(step=target, body=_body(node, step_id, COMPENSATION, ctx))


def _body(node: YMap, step_id: str, shape: Body, ctx: Ctx) -> Step:
    """A step, an ``on_failure`` handler or a compensation (the keys ``shape`` refuses are absent)."""
    items = node.items
    key_pos = dict(node.key_pos)
    deps = items.get("depends_on")
    depends_on = _get(items, "depends_on", [])
    if isinstance(deps, YSeq):
        key_pos.update({f"depends_on[{i}]": item.pos for i, item in enumerate(deps.items)})
    elif deps is not None:  # one id
        depends_on = [depends_on]
        key_pos["depends_on[0]"] = deps.pos
    on_failure = OnFailure()
    failure = items.get("on_failure")
    if isinstance(failure, YScalar):
        on_failure = OnFailure(action=failure.value)
    elif isinstance(failure, YMap):
        handler_id = _get(failure.items, "id", f"{step_id}_on_failure")
        on_failure = OnFailure(action="handle", handler=_body(failure, handler_id, HANDLER, ctx),
                               then=_get(failure.items, "then", "fail"))
    max_parallel = _get(items, "max_parallel")
    return Step(
        id=step_id,
        kind=_kind(items, shape.kind_of(node)),
        depends_on=tuple(depends_on),
        when=_get(items, "when"),
        trigger_rule=_get(items, "trigger_rule", "none_skipped"),
        for_each=_get(items, "for_each"),
        max_parallel=int(max_parallel) if max_parallel is not None else None,
        on_failure=on_failure,
        description=_get(items, "description"),
        source=Source(node.pos, key_pos, tuple(ctx.sites[id(node)])),
    )


def _kind(items: dict[str, YNode], kind_key: str) -> StepKind:
    value = _get(items, kind_key)
    if kind_key == "activity":
        return ActivityCall(
            activity=value,
            args=_get(items, "args"),
            task_queue=_get(items, "task_queue"),
            retry=_retry(_map(items["retry"]).items) if "retry" in items else None,
            start_to_close=_seconds(items, "start_to_close"),
            schedule_to_close=_seconds(items, "schedule_to_close"),
            schedule_to_start=_seconds(items, "schedule_to_start"),
            heartbeat=_seconds(items, "heartbeat"),
        )
    if kind_key == "workflow":
        return ChildWorkflowCall(
            workflow=value,
            args=_get(items, "args"),
            task_queue=_get(items, "task_queue"),
            workflow_id=_get(items, "workflow_id"),
            execution_timeout=_seconds(items, "execution_timeout"),
        )
    if kind_key == "sleep":
        return Sleep(seconds=parse_duration(value))
    if kind_key == "wait_for_signal":
        return WaitForSignal(signal=value, timeout=_seconds(items, "timeout"))
    if kind_key == "set":
        return SetValues(values=value)
    return Fail(message=value)


def _retry(items: dict[str, YNode]) -> Retry:
    attempts = _get(items, "maximum_attempts")
    coefficient = _get(items, "backoff_coefficient")
    return Retry(
        maximum_attempts=int(attempts) if attempts is not None else None,
        initial_interval=_seconds(items, "initial_interval"),
        backoff_coefficient=float(coefficient) if coefficient is not None else None,
        maximum_interval=_seconds(items, "maximum_interval"),
        non_retryable_error_types=tuple(_get(items, "non_retryable_error_types", ())),
    )
