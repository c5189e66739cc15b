"""Runs a validated DAG against an :class:`Executor`: the interpreter's logic.

One asyncio task per step awaits its upstream steps' completion events (as
Cadence's ``dag_as_workflow`` does), checks the trigger rule and ``when``, then runs
the step. Every step records an outcome (completed, failed, skipped) so trigger
rules can decide what runs next. A failure that is not handled cancels the steps
still running, runs the workflow's compensations in reverse order of completion,
and raises :class:`DagFailed`.

Nothing here touches the SDK: the executor does the side effects, so the logic can
be unit-tested with a fake executor on a plain event loop, and it is deterministic
on the workflow event loop (tasks are created and recorded in document order).
"""

from __future__ import annotations

import asyncio

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from spindle.dsl._expressions import Scope, render
from spindle.dsl._model import (
    ActivityCall,
    ChildWorkflowCall,
    Fail,
    SetValues,
    Sleep,
    Step,
    StepKind,
    WaitForSignal,
    WorkflowDag,
)

__all__ = [
    "COMPLETED",
    "FAILED",
    "SKIPPED",
    "STARTED",
    "StepObserver",
    "DagFailed",
    "DagRun",
    "Executor",
    "StepError",
    "StepOutcome",
    "trigger_allows",
]

COMPLETED = "completed"
FAILED = "failed"
SKIPPED = "skipped"
#: What a :data:`StepObserver` hears when a step begins its body (after ``when``).
STARTED = "started"

#: ``observer(step_id, status, details)``: called (synchronously, in a
#: deterministic order) when a step starts (:data:`STARTED`) and when it ends
#: (:data:`COMPLETED`, :data:`FAILED` after any ``on_failure`` handler, or
#: :data:`SKIPPED` with ``details["reason"]`` ``"when"`` or ``"trigger_rule"``).
#: A failure's details carry ``error`` (the message). Steps cancelled because
#: the run failed, and steps that never became ready, are not reported.
StepObserver = Callable[[str, str, Mapping[str, Any]], None]

T = TypeVar("T")


class StepError(Exception):
    """A step failed for a reason of the DSL itself (``fail:``, a bad ``for_each``, ...)."""


@dataclass
class StepOutcome:
    """How a step ended: its status, result (``None`` unless completed) and error text."""

    status: str
    result: Any = None
    error: str | None = None
    error_type: str | None = None

    def as_scope(self, step_id: str) -> Scope:
        """What ``steps.<id>`` shows to expressions."""
        return Scope(
            {"result": self.result, "status": self.status, "error": self.error}, f"steps.{step_id}"
        )


class DagFailed(Exception):
    """A step failed and nothing handled it: the workflow fails.

    ``step`` is the failed step, ``reason`` the error text, ``compensation_errors``
    the errors of compensations that failed in turn (they do not stop the others).
    """

    def __init__(
        self,
        step: str,
        reason: str,
        *,
        cause: BaseException | None = None,
        compensated: Sequence[str] = (),
        compensation_errors: Sequence[str] = (),
    ) -> None:
        message = f"step {step!r} failed: {reason}"
        if compensated:
            message += f" (compensated: {', '.join(compensated)})"
        if compensation_errors:
            message += "; compensation errors: " + "; ".join(compensation_errors)
        super().__init__(message)
        self.step = step
        self.reason = reason
        self.cause = cause
        self.compensated = list(compensated)
        self.compensation_errors = list(compensation_errors)


class Executor(Protocol):
    """The side effects a DAG run needs; the runtime implements them with the SDK."""

    async def run_activity(self, call: ActivityCall, args: list[Any], *, activity_id: str) -> Any:
        """Run an activity to completion and return its result."""
        ...

    async def run_child(self, call: ChildWorkflowCall, args: list[Any], *, workflow_id: str) -> Any:
        """Run a child workflow to completion and return its result."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait on a durable timer."""
        ...

    async def wait_for_signal(self, name: str, timeout: float | None) -> Any:
        """Return the payload of the next signal ``name``; raise on timeout."""
        ...

    def info(self) -> Mapping[str, Any]:
        """What ``workflow`` shows to expressions (id, run_id, type, now, ...)."""
        ...

    def is_step_failure(self, error: BaseException) -> bool:
        """True if ``error`` fails the step (rather than being a bug or the runtime's)."""
        ...

    def describe(self, error: BaseException) -> tuple[str, str]:
        """A step failure's message and type name, for ``steps.<id>.error`` and history."""
        ...


def trigger_allows(rule: str, statuses: Sequence[str]) -> bool:
    """Whether a step with trigger rule ``rule`` runs, given its upstream statuses."""
    if not statuses:
        return True
    if rule == "none_skipped":
        return SKIPPED not in statuses
    if rule == "all_success":
        return all(status == COMPLETED for status in statuses)
    if rule == "all_done":
        return True
    if rule == "one_success":
        return COMPLETED in statuses
    if rule == "one_failed":
        return FAILED in statuses
    if rule == "none_failed":
        return FAILED not in statuses
    raise ValueError(f"unknown trigger rule {rule!r}")


async def all_or_cancel(awaitables: Sequence[Awaitable[T]]) -> list[T]:
    """Like ``asyncio.gather`` but the first error cancels the others, then is raised.

    Results are in the order of ``awaitables``. Cancelling the caller cancels them all.
    """
    loop = asyncio.get_running_loop()
    results: list[Any] = [None] * len(awaitables)
    if not awaitables:
        return results
    settled: asyncio.Future[BaseException | None] = loop.create_future()
    remaining = len(awaitables)

    async def one(index: int, awaitable: Awaitable[T]) -> None:
        nonlocal remaining
        try:
            results[index] = await awaitable
        except (asyncio.CancelledError, GeneratorExit):
            raise
        except BaseException as error:  # noqa: BLE001 - handed to the caller below
            if not settled.done():
                settled.set_result(error)
        finally:
            remaining -= 1
            if remaining == 0 and not settled.done():
                settled.set_result(None)

    tasks = [loop.create_task(one(index, item)) for index, item in enumerate(awaitables)]
    try:
        error = await settled
    except GeneratorExit:  # the coroutine is being closed (eviction): no awaiting now
        for task in tasks:
            task.cancel()
        raise
    except BaseException:
        await _cancel_all(tasks)
        raise
    if error is not None:
        await _cancel_all(tasks)
        raise error
    return results


async def _cancel_all(tasks: Sequence[asyncio.Task[Any]]) -> None:
    for task in tasks:
        if not task.done():
            task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


class _Fatal(Exception):
    """Internal: a step failure that fails the whole run."""

    def __init__(self, step: str, reason: str, cause: BaseException | None) -> None:
        super().__init__(reason)
        self.step = step
        self.reason = reason
        self.cause = cause


class DagRun:
    """One execution of a DAG. Call :meth:`run` once."""

    def __init__(self, dag: WorkflowDag, inputs: Mapping[str, Any], executor: Executor,
                 observer: StepObserver | None = None) -> None:
        self.dag = dag
        self.inputs = dict(inputs)
        self.executor = executor
        self.observer = observer
        self.outcomes: dict[str, StepOutcome] = {}
        #: Step ids in the order they completed (what compensation reverses).
        self.completion_order: list[str] = []
        self._done: dict[str, asyncio.Event] = {}
        #: Set when a failure fails the run: no new step may start after that.
        self._aborted = False

    # -- expression context -------------------------------------------------

    def context(self, **extra: Any) -> dict[str, Any]:
        """The names expressions see: inputs, steps, workflow, plus ``extra``."""
        steps = {step_id: outcome.as_scope(step_id) for step_id, outcome in self.outcomes.items()}
        return {
            "inputs": Scope(self.inputs, "inputs"),
            "steps": Scope(steps, "steps"),
            "workflow": Scope(dict(self.executor.info()), "workflow"),
            **extra,
        }

    # -- the run ------------------------------------------------------------------

    async def run(self) -> dict[str, Any]:
        """Run every step and return the declared outputs.

        Raises:
            DagFailed: a step failed with ``on_failure: fail`` (after compensation).
            ExpressionError: an output expression failed.
        """
        self._done = {step.id: asyncio.Event() for step in self.dag.steps}
        try:
            await all_or_cancel([self._run_step(step) for step in self.dag.steps])
        except _Fatal as fatal:
            compensated, errors = await self._compensate()
            raise DagFailed(
                fatal.step,
                fatal.reason,
                cause=fatal.cause,
                compensated=compensated,
                compensation_errors=errors,
            ) from fatal.cause
        context = self.context()
        return {name: render(value, context) for name, value in self.dag.outputs.items()}

    async def _run_step(self, step: Step) -> None:
        try:
            for dep in step.depends_on:
                await self._done[dep].wait()
            if self._aborted:
                return
            statuses = [self.outcomes[dep].status for dep in step.depends_on]
            if not trigger_allows(step.trigger_rule, statuses):
                self.outcomes[step.id] = StepOutcome(SKIPPED)
                self._observe(step.id, SKIPPED, reason="trigger_rule")
                return
            await self._attempt(step)
        finally:
            self._done[step.id].set()

    def _observe(self, step_id: str, status: str, **details: Any) -> None:
        if self.observer is not None:
            self.observer(step_id, status, details)

    async def _attempt(self, step: Step) -> None:
        try:
            context = self.context()
            if step.when is not None and not render(step.when, context):
                self.outcomes[step.id] = StepOutcome(SKIPPED)
                self._observe(step.id, SKIPPED, reason="when")
                return
            self._observe(step.id, STARTED)
            if step.for_each is not None:
                result: Any = await self._fan_out(step, context)
            else:
                result = await self._execute(step.kind, context, step.id)
        except asyncio.CancelledError:
            raise
        except Exception as error:
            if not self.executor.is_step_failure(error):
                raise
            await self._failed(step, error)
            return
        self.outcomes[step.id] = StepOutcome(COMPLETED, result)
        self.completion_order.append(step.id)
        self._observe(step.id, COMPLETED)

    async def _fan_out(self, step: Step, context: dict[str, Any]) -> list[Any]:
        items = render(step.for_each, context)
        if not isinstance(items, list):
            shown = repr(items)
            shown = shown if len(shown) <= 80 else shown[:77] + "..."
            raise StepError(
                f"for_each must evaluate to a list, got {type(items).__name__} {shown}"
            )
        limit = asyncio.Semaphore(step.max_parallel) if step.max_parallel else None

        async def one(index: int, item: Any) -> Any:
            item_context = {**context, "item": item, "index": index}
            if limit is None:
                return await self._execute(step.kind, item_context, f"{step.id}[{index}]")
            async with limit:
                return await self._execute(step.kind, item_context, f"{step.id}[{index}]")

        return await all_or_cancel([one(index, item) for index, item in enumerate(items)])

    async def _execute(self, kind: StepKind, context: dict[str, Any], key: str) -> Any:
        """Run one step body (or one for_each item); ``key`` names it in history."""
        if isinstance(kind, ActivityCall):
            return await self.executor.run_activity(
                kind, _positional(render(kind.args, context)), activity_id=key
            )
        if isinstance(kind, ChildWorkflowCall):
            workflow_id = render(kind.workflow_id, context) if kind.workflow_id else None
            if not workflow_id:
                workflow_id = f"{self.executor.info().get('id', self.dag.name)}/{key}"
            return await self.executor.run_child(
                kind, _positional(render(kind.args, context)), workflow_id=str(workflow_id)
            )
        if isinstance(kind, Sleep):
            await self.executor.sleep(kind.seconds)
            return None
        if isinstance(kind, WaitForSignal):
            return await self.executor.wait_for_signal(kind.signal, kind.timeout)
        if isinstance(kind, SetValues):
            return render(kind.values, context)
        if isinstance(kind, Fail):
            raise StepError(str(render(kind.message, context)))
        raise TypeError(f"unknown step kind {kind!r}")

    async def _failed(self, step: Step, error: Exception) -> None:
        message, error_type = self.executor.describe(error)
        outcome = StepOutcome(FAILED, None, message, error_type)
        self.outcomes[step.id] = outcome
        policy = step.on_failure
        if policy.action == "continue":
            self._observe(step.id, FAILED, error=message)
            return
        if policy.action == "handle" and policy.handler is not None:
            handler_context = self.context(error=Scope({"message": message, "type": error_type}, "error"))
            try:
                outcome.result = await self._execute(
                    policy.handler.kind, handler_context, f"{step.id}.on_failure"
                )
            except asyncio.CancelledError:
                raise
            except Exception as handler_error:
                if not self.executor.is_step_failure(handler_error):
                    raise
                handler_message, _ = self.executor.describe(handler_error)
                self._aborted = True
                self._observe(step.id, FAILED, error=message, handler_error=handler_message)
                raise _Fatal(
                    step.id, f"{message}; then its on_failure handler failed: {handler_message}", handler_error
                ) from handler_error
            if policy.then == "continue":
                self._observe(step.id, FAILED, error=message, handled=True)
                return
        self._aborted = True
        self._observe(step.id, FAILED, error=message)
        raise _Fatal(step.id, message, error)

    async def _compensate(self) -> tuple[list[str], list[str]]:
        """Run compensations of completed steps, latest completion first."""
        by_step = {comp.step: comp for comp in self.dag.compensate}
        done: list[str] = []
        errors: list[str] = []
        for step_id in reversed(self.completion_order):
            comp = by_step.get(step_id)
            if comp is None:
                continue
            try:
                await self._execute(comp.body.kind, self.context(), f"compensate.{step_id}")
                done.append(step_id)
            except asyncio.CancelledError:
                raise
            except Exception as error:
                if not self.executor.is_step_failure(error):
                    raise
                errors.append(f"{step_id}: {self.executor.describe(error)[0]}")
        return done, errors


def _positional(args: Any) -> list[Any]:
    """``args`` as positional arguments: a list as is, a mapping as one object argument."""
    if args is None:
        return []
    if isinstance(args, list):
        return args
    return [args]
