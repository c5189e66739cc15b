"""The interpreter workflow: one ``@workflow.defn`` per YAML ``name``, running its DAG.

The workflow's single argument is ``{"dag": <compiled DAG JSON>, "definition":
"sha256:...", "inputs": {...}}`` (what ``DslWorkflow.start_input`` builds, and
what ``client.start_workflow(defn, inputs)`` sends), so the DAG is recorded in
the execution's input in history and editing the YAML never changes a running
execution. Started with the bare inputs instead (by a start by type name, a
``workflow:`` step of a parent, or an older client), the interpreter records the
DAG it was loaded with in a side-effect marker in its first workflow task, which
pins it the same way: replays read the marker, not the file.

A DAG that arrives in a start input is only run if it is the definition this
worker was given: the first workflow task compares its hash with the loaded
definition's and records the verdict as a ``Version`` marker
(``workflow.patched("dsl-definition/<hash>")``, or ``"dsl-definition-refused"``);
a DAG this worker does not know fails the execution (``DslUnknownDefinition``,
non-retryable) before anything of it is evaluated. Later tasks and replays,
possibly on a worker with a newer version of the file, read the verdict from
history instead of checking again, so running executions keep the DAG they
started with. Executions whose first task completed before the check existed
have no verdict and replay as before.
"""

from __future__ import annotations

import builtins

from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any

from spindle import workflow
from spindle.common._retry_policy import RetryPolicy
from spindle.dsl._errors import DslError
from spindle.dsl._expressions import ExpressionError
from spindle.dsl._model import (
    FORMAT,
    ActivityCall,
    ChildWorkflowCall,
    Retry,
    Sleep,
    WaitForSignal,
    WorkflowDag,
    dag_from_json,
    definition_hash,
)
from spindle.dsl._scheduler import STARTED, DagFailed, DagRun, StepError, StepObserver
from spindle.dsl._validate import check_inputs
from spindle.exceptions import ApplicationError, FailureError

__all__ = [
    "DEFAULT_START_TO_CLOSE",
    "DEFINITION_ACCEPTED",
    "DEFINITION_REFUSED",
    "INPUT_ERROR",
    "STEP_FAILED",
    "STEP_MARKER",
    "STEP_MARKERS_PATCH",
    "UNKNOWN_DEFINITION",
    "SdkExecutor",
    "definition_verdict",
    "interpret",
    "is_start_input",
    "make_definition",
    "step_marker_recorder",
]

#: An activity step with neither start_to_close nor schedule_to_close gets this.
DEFAULT_START_TO_CLOSE = timedelta(minutes=10)
#: ``ApplicationError.type`` of a run started with inputs that do not match.
INPUT_ERROR = "DslInputError"
#: ``ApplicationError.type`` of a run failed by an unhandled step failure.
STEP_FAILED = "DslStepFailed"
#: ``ApplicationError.type`` of a run whose outputs could not be evaluated.
OUTPUT_ERROR = "DslOutputError"
#: Name of the marker each step records as it starts and ends (see ``step_marker_recorder``).
STEP_MARKER = "DslStep"
#: The ``workflow.patched`` id guarding step markers (runs from before them replay without).
STEP_MARKERS_PATCH = "dsl-step-markers"
#: ``ApplicationError.type`` of a run whose start input holds a DAG this worker was not given.
UNKNOWN_DEFINITION = "DslUnknownDefinition"
#: ``workflow.patched`` id (prefix; the DAG's hash follows) recording that a run's DAG was
#: checked against the worker's definition and accepted.
DEFINITION_ACCEPTED = "dsl-definition/"
#: ``workflow.patched`` id recording that a run's DAG was refused (the run failed).
DEFINITION_REFUSED = "dsl-definition-refused"
#: Error texts in step markers are cut to this many characters.
_MARKER_TEXT = 500


def _delta(seconds: float | None) -> timedelta | None:
    return None if seconds is None else timedelta(seconds=seconds)


def _retry_policy(retry: Retry | None) -> RetryPolicy | None:
    if retry is None:
        return None
    values: dict[str, Any] = {}
    if retry.maximum_attempts is not None:
        values["maximum_attempts"] = retry.maximum_attempts
    if retry.initial_interval is not None:
        values["initial_interval"] = timedelta(seconds=retry.initial_interval)
    if retry.backoff_coefficient is not None:
        values["backoff_coefficient"] = retry.backoff_coefficient
    if retry.maximum_interval is not None:
        values["maximum_interval"] = timedelta(seconds=retry.maximum_interval)
    if retry.non_retryable_error_types:
        values["non_retryable_error_types"] = list(retry.non_retryable_error_types)
    return RetryPolicy(**values)


def _describe_seconds(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


class SdkExecutor:
    """Runs DAG steps with the workflow APIs (activities, children, timers, signals)."""

    def __init__(self, dag: WorkflowDag) -> None:
        self.dag = dag

    async def run_activity(self, call: ActivityCall, args: list[Any], *, activity_id: str) -> Any:
        """``workflow.execute_activity`` by name, with the step's options."""
        start_to_close = _delta(call.start_to_close)
        if start_to_close is None and call.schedule_to_close is None:
            start_to_close = DEFAULT_START_TO_CLOSE
        return await workflow.execute_activity(
            call.activity,
            *args,
            task_queue=call.task_queue or self.dag.task_queue,
            start_to_close_timeout=start_to_close,
            schedule_to_close_timeout=_delta(call.schedule_to_close),
            schedule_to_start_timeout=_delta(call.schedule_to_start),
            heartbeat_timeout=_delta(call.heartbeat),
            retry_policy=_retry_policy(call.retry),
            activity_id=activity_id,
        )

    async def run_child(self, call: ChildWorkflowCall, args: list[Any], *, workflow_id: str) -> Any:
        """``workflow.execute_child_workflow`` by type name."""
        options: dict[str, Any] = {"id": workflow_id}
        task_queue = call.task_queue or self.dag.task_queue
        if task_queue:
            options["task_queue"] = task_queue
        if call.retry is not None:  # only in a DAG built before load refused it; never silently dropped
            raise StepError("'retry' is not supported on a workflow step (a child workflow has no retry "
                            "policy); retry the activities inside the child instead")
        if call.execution_timeout is not None:
            options["execution_timeout"] = _delta(call.execution_timeout)
        return await workflow.execute_child_workflow(call.workflow, *args, **options)

    async def sleep(self, seconds: float) -> None:
        """A durable timer."""
        await workflow.sleep(timedelta(seconds=seconds))

    async def wait_for_signal(self, name: str, timeout: float | None) -> Any:
        """The next signal's payload; a timeout fails the step.

        ``workflow.wait_for_signal`` returns ``None`` on timeout, so a ``None``
        after the whole timeout has elapsed counts as a timeout.
        """
        if timeout is None:
            return await workflow.wait_for_signal(name)
        started = workflow.now()
        payload = await workflow.wait_for_signal(name, timeout=timedelta(seconds=timeout))
        if payload is None and (workflow.now() - started) >= timedelta(seconds=timeout):
            raise StepError(f"timed out after {_describe_seconds(timeout)} waiting for signal {name!r}")
        return payload

    def info(self) -> Mapping[str, Any]:
        """``workflow.*`` for expressions."""
        info = workflow.info()
        return {
            "id": info.workflow_id,
            "run_id": info.run_id,
            "type": info.workflow_type,
            "task_queue": info.task_queue,
            "namespace": info.namespace,
            "attempt": info.attempt,
            "now": workflow.now().isoformat(),
        }

    def is_step_failure(self, error: BaseException) -> bool:
        """Activity, child, timeout and DSL errors fail a step; anything else is a bug."""
        return isinstance(error, (FailureError, StepError, ExpressionError, builtins.TimeoutError))

    def describe(self, error: BaseException) -> tuple[str, str]:
        """The error chain as one line, and the innermost error's type name."""
        messages: list[str] = []
        error_type = type(error).__name__
        current: BaseException | None = error
        while current is not None and len(messages) < 5:
            text = getattr(current, "message", None) or str(current)
            if text and not any(text in earlier for earlier in messages):  # causes often repeat
                messages.append(text)
            error_type = getattr(current, "type", None) or type(current).__name__
            current = getattr(current, "cause", None) or current.__cause__
        return ": ".join(messages) or error_type, str(error_type)


def step_marker_recorder(dag: WorkflowDag) -> StepObserver:
    """A step observer that records a ``DslStep`` marker per step outcome.

    Every step records exactly one marker when it ends: ``completed``,
    ``failed`` (with the error, after any ``on_failure`` handler) or ``skipped``
    (with the reason, ``when`` or ``trigger_rule``). A step also records
    ``started`` when it begins, unless a command of its own already says so
    with its step id (an activity's id is the step id) or it ends at once
    (``set``, ``fail``): so ``workflow:``, ``sleep:`` and ``wait_for_signal:``
    steps record two markers, the others one.
    """
    announce = {step.id for step in dag.steps if isinstance(step.kind, (ChildWorkflowCall, Sleep, WaitForSignal))}

    def record(step_id: str, status: str, details: Mapping[str, Any]) -> None:
        if status == STARTED and step_id not in announce:
            return
        fields: dict[str, Any] = {"step": step_id, "status": status}
        for key, value in details.items():
            fields[key] = value[:_MARKER_TEXT] if isinstance(value, str) else value
        workflow.record_marker(STEP_MARKER, fields)

    return record


def is_start_input(arg: Any) -> bool:
    """True if ``arg`` is ``{"dag": <compiled DAG>, "inputs": ...}`` (``"definition"`` optional)."""
    return (
        isinstance(arg, Mapping)
        and set(arg) in ({"dag", "inputs"}, {"dag", "inputs", "definition"})
        and isinstance(arg["dag"], Mapping)
        and arg["dag"].get("format") == FORMAT
    )


def definition_verdict(arg: Mapping[str, Any], name: str, loaded: Mapping[str, Any], loaded_hash: str
                       ) -> dict[str, Any]:
    """Whether the DAG of start input ``arg`` is the loaded definition: ``{"accepted", "definition", ...}``.

    ``definition`` is the hash of the DAG received (``None`` if it cannot be
    hashed); a rejection has ``reason``, the message the execution fails with.
    """
    try:
        received = definition_hash(arg["dag"])
    except ValueError as error:
        received = None
        problem = f"the DAG in the start input cannot be hashed ({error})"
    else:
        claimed = arg.get("definition")
        if claimed is not None and claimed != received:
            problem = f"the start input says definition {claimed!r} but its DAG hashes to {received}"
        elif received == loaded_hash:
            return {"accepted": True, "definition": received}
        else:
            problem = f"the DAG in the start input ({received}) is not the definition this worker runs"
    version = loaded.get("version")
    known = f"{name}" + (f" version {version}" if version is not None else "") + f", {loaded_hash}"
    if loaded.get("file"):
        known += f", loaded from {loaded['file']}"
    reason = (
        f"YAML workflow {name!r}: {problem} ({known}); a worker runs only the YAML workflows it was "
        "given: start it with the DslWorkflow (client.start_workflow(wf, inputs)) or by type name "
        "with the bare inputs"
    )
    return {"accepted": False, "definition": received, "expected": loaded_hash, "reason": reason}


def _check_definition(arg: Mapping[str, Any], loaded: Mapping[str, Any], loaded_hash: str) -> None:
    """Run only a start input's DAG this worker was given; record the verdict in history.

    A new run checks the DAG's hash against the loaded definition and records
    the verdict as a ``Version`` marker: ``dsl-definition/<hash>`` (accepted)
    or ``dsl-definition-refused`` (then the run fails). A replay reads the
    marker instead of checking again, so a worker with another version of the
    file replays and finishes the run on the DAG it started with; a history
    with neither marker was recorded before the check existed and replays as it
    ran.

    Raises:
        ApplicationError: type ``DslUnknownDefinition``, non-retryable: the DAG
            is not the loaded definition (or was refused when first run).
    """
    try:
        received: str | None = definition_hash(arg["dag"])
    except ValueError:
        received = None
    if workflow.unsafe.is_replaying():
        if received is not None and workflow.patched(DEFINITION_ACCEPTED + received):
            return
        if not workflow.patched(DEFINITION_REFUSED):
            return  # recorded before the check existed
        verdict = definition_verdict(arg, str(loaded.get("name")), loaded, loaded_hash)
    else:
        verdict = definition_verdict(arg, str(loaded.get("name")), loaded, loaded_hash)
        if verdict["accepted"]:
            workflow.patched(DEFINITION_ACCEPTED + str(received))
            return
        workflow.patched(DEFINITION_REFUSED)
    raise ApplicationError(
        str(verdict.get("reason") or "the DAG was refused when this run started"),
        {"definition": verdict.get("definition"), "expected": verdict.get("expected")},
        type=UNKNOWN_DEFINITION, non_retryable=True,
    )


async def interpret(arg: Any, loaded: Mapping[str, Any], loaded_hash: str | None = None) -> dict[str, Any]:
    """Run the DAG an execution was started with; return its outputs.

    ``loaded`` is the DAG of the definition this worker registered (and
    ``loaded_hash`` its ``definition_hash``): used (through a side-effect
    marker) when ``arg`` holds bare inputs, and the only DAG accepted from a
    start input of a new execution.

    Raises:
        ApplicationError: a start input whose DAG is not the loaded definition
            (type ``DslUnknownDefinition``), wrong inputs (``DslInputError``), a
            failed step (``DslStepFailed``) or outputs that could not be evaluated
            (``DslOutputError``); all are non-retryable.
    """
    if is_start_input(arg):
        dag_json: Mapping[str, Any] = arg["dag"]
        given = arg["inputs"]
        _check_definition(arg, loaded, loaded_hash if loaded_hash is not None else definition_hash(loaded))
    else:
        dag_json = workflow.side_effect(lambda: dict(loaded))
        given = arg
    dag = dag_from_json(dag_json)
    # Runs started before step markers existed replay without them (patched is False there).
    observer = step_marker_recorder(dag) if workflow.patched(STEP_MARKERS_PATCH) else None
    try:
        inputs = check_inputs(dag, given)
    except DslError as error:
        raise ApplicationError(str(error), type=INPUT_ERROR, non_retryable=True) from None
    try:
        return await DagRun(dag, inputs, SdkExecutor(dag), observer).run()
    except DagFailed as failed:
        cause = failed.cause if isinstance(failed.cause, BaseException) else None
        raise ApplicationError(
            str(failed), {"step": failed.step, "compensated": failed.compensated},
            type=STEP_FAILED, non_retryable=True, cause=cause,
        ) from None
    except ExpressionError as error:
        raise ApplicationError(f"outputs: {error}", type=OUTPUT_ERROR, non_retryable=True) from None


def make_definition(name: str, file: str | None, dag_json: Mapping[str, Any], definition: str,
                    start_args: Callable[[tuple[Any, ...]], tuple[Any, ...]]) -> Any:
    """A ``@workflow.defn(name=name)`` function interpreting the DAG ``dag_json``.

    ``file`` names the YAML document in the function's docstring (``None``: loaded from
    text); ``definition`` is the DAG's ``definition_hash``, the only DAG the function
    accepts from a start input of a new execution. ``start_args`` becomes its
    ``__spindle_start_args__``, so that ``client.start_workflow(definition, inputs)``
    sends the DAG with the inputs too.
    """
    loaded = dag_json

    async def run(arg: Any = None) -> dict[str, Any]:
        return await interpret(arg, loaded, definition)

    run.__name__ = run.__qualname__ = f"dsl_{name}".replace(".", "_").replace("-", "_")
    run.__doc__ = f"YAML workflow {name!r} ({file or 'text'})."
    # client.start_workflow(wf.definition, inputs) pins the DAG too.
    run.__spindle_start_args__ = start_args  # type: ignore[attr-defined]
    return workflow.defn(name=name)(run)
