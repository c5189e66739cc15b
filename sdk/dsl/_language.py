"""The YAML workflow language, defined once: its keys, their types, what is required, enums, patterns, limits.

``_build.py`` checks every document against ``DOCUMENT`` (with precise messages at
``FILE:LINE:COLUMN``), and ``_schema.py`` writes the same definition out as
``schema.json`` for editors, so the two cannot disagree. What a JSON Schema cannot
say is checked by hand: which steps ``depends_on`` and ``compensate`` name, cycles,
duplicate step ids and what each expression reads (``_validate.py``), the syntax of
expressions (``_expressions.py``), and a ``schedule:`` block's cron expressions, time
zone, interval arithmetic and inputs (``_schedule_block.py``).
"""

from __future__ import annotations

from spindle.dsl._model import INPUT_TYPES, TRIGGER_RULES
from spindle.dsl._shape_maps import AnyOf, Body, DefaultOfType, Field, Kind, Map, NotBoth, Requires
from spindle.dsl._shapes import (
    Boolean,
    Duration,
    Either,
    Enum,
    Integer,
    Interval,
    ListOf,
    LiteralOrExpression,
    Number,
    Pattern,
    Text,
    Value,
)

__all__ = ["CHILD_RETRY_ERROR", "COMPENSATION", "DOCUMENT", "HANDLER", "INPUT", "INTERVAL", "KINDS", "OVERLAP_NAMES", "RETRY",
           "SCHEDULE", "STEP"]

IDENTIFIER = Pattern(r"[A-Za-z_][A-Za-z0-9_]*", "be an identifier (letters, digits, '_'; not starting with a digit)")
TYPE_NAME = Pattern(r"[A-Za-z_][A-Za-z0-9_.\-]*",
                    "start with a letter or '_' and hold only letters, digits, '_', '.' and '-'")

#: Why ``retry`` is refused on a ``workflow:`` step.
CHILD_RETRY_ERROR = (
    "'retry' does not apply to a workflow step: a child workflow has no retry policy; give the "
    "activities inside the child their own 'retry'"
)
#: ``schedule.overlap``: ``spindle.client.ScheduleOverlapPolicy``'s names, lower case.
OVERLAP_NAMES = ("skip", "buffer_one", "buffer_all", "cancel_other", "terminate_other", "allow_all")

DURATION = Duration(name="duration", description=(
    "A duration: a number followed by ms, s, m, h or d (500ms, 90s, 5m, 2h, 14d, 1h30m); more than zero."))
VALUE = Value(name="value", description=(
    "Any value; strings may hold ${{ ... }} expressions (a string that is exactly one expression becomes its value)."))
NAME = Text(mode="plain", name="name", description="A name: literal text (no ${{ }}), not blank.")
DESCRIPTION = Field(Text(), "Free text.")
TASK_QUEUE = Field(NAME, "Where it runs (default: the document's task_queue).")

RETRY = Map(name="retry", description="Retry policy; unset keys take RetryPolicy's defaults.", fields={
    "maximum_attempts": Field(Integer(minimum=0, note=" (0 = unlimited)"), "0 = unlimited."),
    "initial_interval": Field(DURATION),
    "backoff_coefficient": Field(Number(minimum=1)),
    "maximum_interval": Field(DURATION),
    "non_retryable_error_types": Field(ListOf(NAME, of="error type names", item_what="an error type name")),
})

ARGS = Either((ListOf(VALUE), Map(values=VALUE)), "a list (positional arguments) or a mapping (one object argument)",
              name="args", description="A list (positional arguments) or a mapping (sent as one object argument).")

KINDS: dict[str, Kind] = {
    "activity": Kind(Field(NAME, "Run the activity registered under this name."), {
        "args": Field(ARGS),
        "task_queue": TASK_QUEUE,
        "retry": Field(RETRY),
        "start_to_close": Field(DURATION, "Limit of one attempt (10m when schedule_to_close is not set either)."),
        "schedule_to_close": Field(DURATION, "Limit of all attempts together."),
        "schedule_to_start": Field(DURATION, "How long a task may wait for a worker."),
        "heartbeat": Field(DURATION, "Maximum time between heartbeats."),
    }),
    "workflow": Kind(Field(NAME, "Run this workflow type (Python or YAML) as a child workflow."), {
        "args": Field(ARGS),
        "task_queue": TASK_QUEUE,
        "workflow_id": Field(Text(mode="template"),
                             "Child workflow id (default: <parent id>/<step id>); may hold expressions."),
        "execution_timeout": Field(DURATION, "Limit of the child's whole execution."),
    }, refused={"retry": CHILD_RETRY_ERROR}),
    "sleep": Kind(Field(DURATION, "Wait on a durable timer.")),
    "wait_for_signal": Kind(Field(NAME, "Wait for this signal; its payload is the result."), {
        "timeout": Field(DURATION, "Fail the step if no signal arrives in time."),
    }),
    "set": Kind(Field(Map(values=VALUE), "Compute values; the result is the evaluated mapping.")),
    "fail": Kind(Field(Text(mode="template"), "Fail the step with this message (may interpolate expressions).",
                       what="'fail' (the failure message)")),
}

STEP_ID = Text(pattern=IDENTIFIER, naming="step id", why=" so that expressions can say steps.<id>", name="step_id",
               description="Step id; expressions read it as steps.<id>.")
#: The keys only a step (not a handler or a compensation) has, besides on_failure.
STEP_OPTIONS: dict[str, Field] = {
    "depends_on": Field(ListOf(Text(), of="step ids", one="a step id", item_what="a 'depends_on' entry", unique=True, single=True,
                               name="depends_on"), "Steps that must finish first."),
    "when": Field(LiteralOrExpression(Boolean(), "true/false", name="when"),
                  "Run only if true; else the step is skipped."),
    "trigger_rule": Field(Enum(TRIGGER_RULES, "unknown trigger_rule {value}{suggest}; use one of {choices}",
                               name="trigger_rule"),
                          "When the step runs, given how its upstream steps ended.", default="none_skipped"),
    "for_each": Field(LiteralOrExpression(ListOf(VALUE), "a list", name="for_each"),
                      "Run once per item (item, index); the result is the list of results."),
    "max_parallel": Field(Integer(minimum=1), "How many items of for_each run at once (default: all)."),
}

HANDLER = Body(KINDS, {
    "id": Field(STEP_ID),
    "description": DESCRIPTION,
    "then": Field(Enum(("fail", "continue")), "After the handler ran: fail the workflow or continue.",
                  default="fail"),
}, called="'on_failure'", not_here=(*STEP_OPTIONS, "on_failure"), name="handler")

STEP = Body(KINDS, {
    "id": Field(STEP_ID, required=True),
    "description": DESCRIPTION,
    **STEP_OPTIONS,
    "on_failure": Field(Either((Enum(("fail", "continue")), HANDLER),
                               "'fail', 'continue' or a step mapping (activity, workflow, ...)", show="repr"),
                        "What a failure of the step does: fail the workflow, continue, or run a handler.",
                        default="fail"),
}, called="a step", label="id", rules=(Requires("max_parallel", "for_each"),), name="step")

COMPENSATION = Body(KINDS, {
    "step": Field(NAME, "The step this compensation undoes.", required=True,
                  missing="{what} needs 'step: ID' (the step it undoes)", what="'{key}' of {owner}"),
    "id": Field(STEP_ID),
    "description": DESCRIPTION,
}, called="a 'compensate' entry", label="step", not_here=(*STEP_OPTIONS, "on_failure"), name="compensation")

INPUT = Map(name="input", shorthand="type", fields={
    "type": Field(Enum(INPUT_TYPES, "{owner} has unknown type {value}{suggest}; use one of {choices}"),
                  required=True, missing=f"{{what}} has no 'type' (one of {', '.join(INPUT_TYPES)})",
                  what="the type of {owner}"),
    "required": Field(Boolean(), "Starting without it fails.", what="'required' of {owner}", default=False),
    "default": Field(Value(template=False), "Used when the input is not given; must be of the input's type."),
    "description": DESCRIPTION,
}, rules=(DefaultOfType(INPUT_TYPES), NotBoth("required", "default", "{what} is required and has a default: "
                                              "drop one of them")))

INTERVAL = Interval(help=" (an interval is EVERY or EVERY/PHASE, e.g. 1h or 1h/15m)", name="interval")
SCHEDULE = Map(field_what="'schedule.{key}'", rules=(
    AnyOf(("cron", "interval"), "{what} needs 'cron' or 'interval' (or both)"),), fields={
    "id": Field(NAME, "The schedule id (default: the workflow's name)."),
    "cron": Field(ListOf(Text(), of="cron expressions", one="a cron expression", item_what="{what}", min_items=1, single=True),
                  "Five-field cron expressions or @daily-style aliases, read in time_zone."),
    "interval": Field(ListOf(INTERVAL, of="intervals", one="an interval", item_what="{what}", min_items=1, single=True),
                      "EVERY or EVERY/PHASE, e.g. 1h or 1h/15m (every hour at :15)."),
    "time_zone": Field(Text(), "IANA time zone of the cron expressions (default UTC)."),
    "inputs": Field(Map(values=Value(template=False)), "The inputs of every scheduled run."),
    "overlap": Field(Enum(OVERLAP_NAMES, "{what}: unknown policy {value}{suggest}; use one of {choices}"),
                     "What happens when a run is due while the previous one still runs.", default="skip"),
    "jitter": Field(DURATION, "Start each run up to this much later, at random."),
}, description="When `spindle dsl schedule` starts this workflow (not part of the compiled DAG).")

DOCUMENT = Map(called="the workflow header", own_sites=True, fields={
    "name": Field(Text(mode="plain", pattern=TYPE_NAME), "The workflow type name.", required=True,
                  missing="missing 'name' (the workflow type name)"),
    "version": Field(Either((Number(), Text()), "a number or a string"), "Informational; recorded in the compiled DAG."),
    "description": DESCRIPTION,
    "task_queue": Field(NAME, "Default task queue of activity and child workflow steps."),
    "inputs": Field(Map(keys=Text(pattern=IDENTIFIER, naming="input name"), values=INPUT, value_what="input {key!r}"),
                    "The workflow's inputs, by name."),
    "outputs": Field(Map(values=VALUE, name_sites=True), "The workflow's result: a mapping of values and expressions."),
    "steps": Field(ListOf(STEP, item_what="step #{n}", min_items=1,
                          empty="{what} is empty: a workflow needs at least one step"),
                   "The DAG.", required=True, missing="missing 'steps' (a list of steps)"),
    "compensate": Field(ListOf(COMPENSATION, item_what="a 'compensate' entry"),
                        "Run on failure, for completed steps, in reverse order of completion."),
    "schedule": Field(SCHEDULE),
}, description="A DAG of steps that Spindle runs as a durable workflow (see sdk/dsl/README.md).")
