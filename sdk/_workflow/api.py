"""The functions workflow code calls (re-exported by ``spindle.workflow``).

Each finds the running :class:`~spindle._workflow.instance.WorkflowInstance` through the
running event loop and raises :class:`~spindle.exceptions.WorkflowContextError` when
called outside a workflow.
"""

from __future__ import annotations

import asyncio
import builtins
import collections
import random as _random
import typing
import weakref
import uuid as _uuid

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, NoReturn, TypeVar, cast

from spindle.api import messages_pb2 as pb
from spindle.exceptions import TimeoutError, WorkflowContextError
from spindle._interceptors.worker import StartActivityInput, StartChildWorkflowInput
from spindle.common._retry_policy import RetryPolicy
from spindle._workflow.statemachines.activity import ActivityCancellationType, ActivityHandle
from spindle._workflow.statemachines.child_workflow import ChildWorkflowHandle
from spindle._workflow.context import instance as _instance, maybe_instance as _maybe_instance
from spindle._workflow.defn import WorkflowDefinition, handler_name
from spindle._workflow.logger import logger
from spindle._workflow.info import WorkflowInfo, current_update_info
from spindle._workflow.run import ContinueAsNewError
from spindle._workflow.runtime import DEFAULT_VERSION

if typing.TYPE_CHECKING:
    from spindle._workflow.instance import WorkflowInstance

__all__ = [
    "DEFAULT_VERSION", "in_workflow", "info", "now", "random", "uuid4", "sleep", "wait_condition",
    "wait_for_signal", "set_signal_handler", "all_handlers_finished", "current_update_info",
    "execute_activity", "start_activity", "execute_activity_method", "start_activity_method",
    "execute_local_activity", "start_local_activity", "execute_local_activity_method", "start_local_activity_method",
    "execute_child_workflow", "start_child_workflow", "side_effect", "record_marker", "get_version", "patched",
    "deprecate_patch", "continue_as_new", "upsert_search_attributes", "get_external_workflow_handle",
    "ExternalWorkflowHandle", "logger",
]

T = TypeVar("T")


def _seconds(value: float | timedelta | None, what: str) -> float | None:
    if value is None:
        return None
    secs = value.total_seconds() if isinstance(value, timedelta) else float(value)
    if secs < 0:
        raise ValueError(f"{what} must not be negative")
    return secs


def _ms(d: timedelta | None) -> int:
    return 0 if d is None else int(d.total_seconds() * 1000)


# ---------------------------------------------------------------------------- reading


def in_workflow() -> bool:
    """Whether the caller runs inside workflow code (on a workflow event loop)."""
    return _maybe_instance() is not None


def info() -> WorkflowInfo:
    """Facts about the current run.

    Raises:
        WorkflowContextError: called outside a workflow.
    """
    return _instance("info").runtime.workflow_info


def now() -> datetime:
    """Workflow time as an aware UTC datetime: the start of the current workflow task.

    Deterministic: replay sees the same value. Raises WorkflowContextError outside a workflow.
    """
    return _instance("now").runtime.now()


def random() -> _random.Random:
    """The run's ``random.Random``, seeded from the run id (the same sequence on replay).

    Raises:
        WorkflowContextError: called outside a workflow.
    """
    return _instance("random").runtime.deterministic_random()


def uuid4() -> _uuid.UUID:
    """A deterministic version-4 UUID drawn from :func:`random`.

    Raises:
        WorkflowContextError: called outside a workflow.
    """
    return _instance("uuid4").runtime.uuid4()


# ---------------------------------------------------------------------------- waiting


async def sleep(duration: float | timedelta) -> None:
    """Sleep for ``duration`` (seconds or timedelta) of workflow time with a durable timer.

    Raises:
        WorkflowContextError: outside a workflow or in a query/validator.
        ValueError: negative duration.
    """
    _instance("sleep").runtime.require_commands_allowed("workflow.sleep")
    await asyncio.sleep(_seconds(duration, "sleep duration") or 0)


async def wait_condition(fn: Callable[[], bool], *, timeout: float | timedelta | None = None) -> None:
    """Wait until ``fn()`` is true (checked whenever the workflow's coroutines block).

    Raises:
        TimeoutError: (``spindle.exceptions.TimeoutError``, a builtin ``TimeoutError``) when
            ``timeout`` elapses first (a durable timer).
        WorkflowContextError: outside a workflow or in a query/validator.
    """
    runtime = _instance("wait_condition").runtime
    runtime.require_commands_allowed("workflow.wait_condition")
    if fn():
        return
    fut: asyncio.Future[None] = runtime.create_waiter()
    runtime.conditions.append((fn, fut))
    secs = _seconds(timeout, "timeout")
    if secs is None:
        await fut
        return
    try:
        await asyncio.wait_for(fut, secs)
    except builtins.TimeoutError:
        raise TimeoutError(f"wait_condition timed out after {secs:g}s") from None


async def wait_for_signal(name: str, timeout: float | timedelta | None = None, *,
                          type_hint: Any = None) -> Any:
    """Wait for the next signal ``name`` that has no handler and return its payload.

    Signals that arrived before the call are buffered and consumed in order. The value
    is the signal's single argument (``None`` for none, a tuple for several), decoded
    with ``type_hint`` when given.

    Returns:
        The payload, or ``None`` when ``timeout`` elapses first.

    Raises:
        WorkflowContextError: outside a workflow or in a query/validator.
    """
    inst = _instance("wait_for_signal")
    runtime, handlers = inst.runtime, inst.handlers
    runtime.require_commands_allowed("workflow.wait_for_signal")
    buffered = handlers.signal_buffer.get(name)
    if buffered:
        payloads = buffered.popleft()
        handlers.signal_buffer_headers.pop(id(payloads), None)
    else:
        fut: asyncio.Future[pb.Payloads] = runtime.create_waiter()
        waiters = handlers.signal_waiters.setdefault(name, collections.deque())
        waiters.append(fut)
        secs = _seconds(timeout, "timeout")
        try:
            payloads = await (asyncio.wait_for(fut, secs) if secs is not None else fut)
        except builtins.TimeoutError:
            return None
        finally:
            if fut in waiters:
                waiters.remove(fut)
    values = runtime.converter.from_payloads(payloads, [type_hint] if type_hint is not None else None)
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


def set_signal_handler(name: str, handler: Callable[..., Any] | None) -> None:
    """Handle signal ``name`` with ``handler`` (``None`` removes it); buffered signals go to it now.

    Raises:
        WorkflowContextError: called outside a workflow.
    """
    _instance("set_signal_handler").handlers.set_signal_handler(name, handler)


def all_handlers_finished() -> bool:
    """Whether no signal or update handler of this workflow is still running.

    Async handlers run as tasks of their own and may still be waiting (on an
    activity, a timer) when the run method is ready to return or continue as new,
    which would cut them short (an update's caller would get no result). Wait for
    them first: ``await workflow.wait_condition(workflow.all_handlers_finished)``.
    Synchronous handlers finish as they are delivered and never count.

    Raises:
        WorkflowContextError: called outside a workflow.
    """
    return _instance("all_handlers_finished").handlers.all_handlers_finished()


# ---------------------------------------------------------------------------- activities


_ACTIVITY_TYPES: "weakref.WeakKeyDictionary[Any, tuple[str, Any]]" = weakref.WeakKeyDictionary()


def _activity_type(activity: Any) -> tuple[str, Any]:
    if isinstance(activity, str):
        return activity, None
    try:
        return _ACTIVITY_TYPES[activity]  # resolving type hints is costly; an activity's never change
    except (KeyError, TypeError):
        pass
    result = _resolve_activity_type(activity)
    try:
        _ACTIVITY_TYPES[activity] = result
    except TypeError:
        pass
    return result


def _resolve_activity_type(activity: Any) -> tuple[str, Any]:
    d = getattr(activity, "__spindle_activity_definition__", None)
    name = getattr(d, "name", None) or getattr(activity, "__name__", None)
    if not name:
        raise TypeError(f"expected an activity function or type name, got {activity!r}")
    try:
        hint = typing.get_type_hints(activity).get("return")
    except Exception:
        hint = None
    return str(name), hint


def _arguments(api: str, positional: tuple[Any, ...], args: Sequence[Any] | None) -> list[Any]:
    """The call's arguments, given positionally or as ``args=[...]`` (Temporal's form), not both."""
    if args is None:
        return list(positional)
    if isinstance(args, (str, bytes)) or not isinstance(args, Sequence):
        raise TypeError(f"workflow.{api}(): args must be a list or tuple of arguments, got {type(args).__name__}")
    if positional and args:
        raise ValueError(f"workflow.{api}(): give the arguments positionally or as args=[...], not both")
    return list(args)


def _schedule_activity(
    api: str, activity: Callable[..., Any] | str, arguments: list[Any], *,
    start_to_close_timeout: timedelta | None, schedule_to_close_timeout: timedelta | None,
    schedule_to_start_timeout: timedelta | None, heartbeat_timeout: timedelta | None,
    retry_policy: RetryPolicy | None, task_queue: str | None, activity_id: str | None, result_type: Any,
    cancellation_type: ActivityCancellationType,
) -> ActivityHandle[Any]:
    inst = _instance(api)
    if start_to_close_timeout is None and schedule_to_close_timeout is None:
        raise ValueError(f"{api} needs start_to_close_timeout or schedule_to_close_timeout (or both)")
    if not isinstance(cancellation_type, ActivityCancellationType):
        raise TypeError(f"{api}: cancellation_type must be a workflow.ActivityCancellationType, "
                        f"got {cancellation_type!r}")
    name, hint = _activity_type(activity)
    request = StartActivityInput(
        activity=name, args=arguments, headers={}, activity_id=activity_id, task_queue=task_queue,
        start_to_close_timeout=start_to_close_timeout, schedule_to_close_timeout=schedule_to_close_timeout,
        schedule_to_start_timeout=schedule_to_start_timeout, heartbeat_timeout=heartbeat_timeout,
        retry_policy=retry_policy, cancellation_type=cancellation_type,
        result_type=result_type if result_type is not None else hint)
    return cast(ActivityHandle[Any], inst.outbound.start_activity(request))


def start_activity(
    activity: Callable[..., Any] | str,
    *arg_values: Any,
    args: Sequence[Any] | None = None,
    start_to_close_timeout: timedelta | None = None,
    schedule_to_close_timeout: timedelta | None = None,
    schedule_to_start_timeout: timedelta | None = None,
    heartbeat_timeout: timedelta | None = None,
    retry_policy: RetryPolicy | None = None,
    task_queue: str | None = None,
    activity_id: str | None = None,
    result_type: Any = None,
    cancellation_type: ActivityCancellationType = ActivityCancellationType.TRY_CANCEL,
) -> ActivityHandle[Any]:
    """Schedule an activity and return its awaitable, cancellable handle.

    ``activity`` is an ``@activity.defn`` function, a method of an activity class
    (``MyActivities.fetch``, see :func:`start_activity_method`) or a type name. Its
    arguments come positionally after it or as ``args=[...]`` (Temporal's form for
    several arguments). Activity ids are ``"1"``, ``"2"``, ... in scheduling order
    unless ``activity_id`` is given. The result is decoded by the activity's return
    hint (or ``result_type``). ``task_queue`` defaults to the workflow's.
    ``cancellation_type`` says what cancelling the handle does (see
    :class:`ActivityCancellationType`; TRY_CANCEL by default).

    Raises:
        ValueError: neither ``start_to_close_timeout`` nor ``schedule_to_close_timeout``
            is set, or arguments were given both positionally and as ``args``.
        TypeError: ``args`` is not a list or tuple, or ``cancellation_type`` is not an
            :class:`ActivityCancellationType`.
        WorkflowContextError: outside a workflow or in a query/validator.
    """
    return _schedule_activity(
        "start_activity", activity, _arguments("start_activity", arg_values, args),
        start_to_close_timeout=start_to_close_timeout, schedule_to_close_timeout=schedule_to_close_timeout,
        schedule_to_start_timeout=schedule_to_start_timeout, heartbeat_timeout=heartbeat_timeout,
        retry_policy=retry_policy, task_queue=task_queue, activity_id=activity_id, result_type=result_type,
        cancellation_type=cancellation_type)


async def execute_activity(activity: Callable[..., Any] | str, *arg_values: Any, **options: Any) -> Any:
    """Schedule an activity and wait for its result (arguments and options as :func:`start_activity`).

    Raises:
        ActivityError: the activity failed for good; ``.cause`` says why.
        ValueError, TypeError, WorkflowContextError: as :func:`start_activity`.
    """
    return await start_activity(activity, *arg_values, **options)


def start_activity_method(activity: Callable[..., Any], *arg_values: Any, **options: Any) -> ActivityHandle[Any]:
    """Schedule an activity that is a method of a class: ``start_activity_method(MyActivities.fetch, ...)``.

    The worker registers the bound method of an instance it built
    (``Worker(activities=[my_activities.fetch])``, so the activity can use the
    instance's clients and settings); the workflow names the method on the class.
    Same arguments, options and errors as :func:`start_activity` (which accepts a
    method too; this name is the one Temporal code uses).
    """
    return start_activity(activity, *arg_values, **options)


async def execute_activity_method(activity: Callable[..., Any], *arg_values: Any, **options: Any) -> Any:
    """Run an activity method and wait for its result (see :func:`start_activity_method`)."""
    return await start_activity(activity, *arg_values, **options)


def start_local_activity(
    activity: Callable[..., Any] | str,
    *arg_values: Any,
    args: Sequence[Any] | None = None,
    start_to_close_timeout: timedelta | None = None,
    schedule_to_close_timeout: timedelta | None = None,
    schedule_to_start_timeout: timedelta | None = None,
    retry_policy: RetryPolicy | None = None,
    local_retry_threshold: timedelta | None = None,
    cancellation_type: ActivityCancellationType = ActivityCancellationType.TRY_CANCEL,
    activity_id: str | None = None,
    result_type: Any = None,
    summary: str | None = None,
) -> ActivityHandle[Any]:
    """Start a "local" activity: in Spindle, a regular activity on the workflow's own task queue.

    Temporal runs a local activity inside the worker that runs the workflow and
    records only its result (a marker); Spindle schedules it like
    :func:`start_activity` with ``task_queue`` left to the workflow's, so a worker
    that registers both the workflow and the activity (as Temporal requires for
    local activities) runs it. It is durable: scheduled, started and completed
    events are in history, each retry is a server-side retry with a durable backoff
    timer, the timeouts are enforced by the server, and the handle is awaitable and
    cancellable like any activity's. The price is a round trip through the server per
    call instead of none.

    Options as in ``temporalio``: ``start_to_close_timeout``,
    ``schedule_to_close_timeout``, ``schedule_to_start_timeout``, ``retry_policy``,
    ``cancellation_type``, ``activity_id``, ``result_type`` and the arguments
    (positional or ``args=[...]``) mean what they mean for :func:`start_activity`. Accepted and ignored:
    ``local_retry_threshold`` (there is no local retry loop: every retry goes
    through the server, as if the threshold were zero) and ``summary`` (Spindle has
    no UI summary).

    Raises:
        ValueError: neither ``start_to_close_timeout`` nor ``schedule_to_close_timeout``
            is set, arguments given both ways, or a negative ``local_retry_threshold``.
        TypeError: ``args`` is not a list or tuple, or a bad ``cancellation_type``.
        WorkflowContextError: outside a workflow or in a query/validator.
    """
    if local_retry_threshold is not None and local_retry_threshold < timedelta(0):
        raise ValueError("start_local_activity: local_retry_threshold must not be negative")
    return _schedule_activity(
        "start_local_activity", activity, _arguments("start_local_activity", arg_values, args),
        start_to_close_timeout=start_to_close_timeout, schedule_to_close_timeout=schedule_to_close_timeout,
        schedule_to_start_timeout=schedule_to_start_timeout, heartbeat_timeout=None, retry_policy=retry_policy,
        task_queue=None, activity_id=activity_id, result_type=result_type, cancellation_type=cancellation_type)


async def execute_local_activity(activity: Callable[..., Any] | str, *arg_values: Any, **options: Any) -> Any:
    """Run a local activity and wait for its result (see :func:`start_local_activity`).

    Raises:
        ActivityError: the activity failed for good; ``.cause`` says why.
        ValueError, TypeError, WorkflowContextError: as :func:`start_local_activity`.
    """
    return await start_local_activity(activity, *arg_values, **options)


def start_local_activity_method(activity: Callable[..., Any], *arg_values: Any, **options: Any
                                ) -> ActivityHandle[Any]:
    """:func:`start_local_activity` for an activity method (``MyActivities.fetch``)."""
    return start_local_activity(activity, *arg_values, **options)


async def execute_local_activity_method(activity: Callable[..., Any], *arg_values: Any, **options: Any) -> Any:
    """:func:`execute_local_activity` for an activity method (``MyActivities.fetch``)."""
    return await start_local_activity(activity, *arg_values, **options)


# ---------------------------------------------------------------------------- child workflows


async def start_child_workflow(
    workflow: Any,
    *arg_values: Any,
    args: Sequence[Any] | None = None,
    id: str | None = None,
    task_queue: str | None = None,
    parent_close_policy: Any = None,
    execution_timeout: timedelta | None = None,
    run_timeout: timedelta | None = None,
    id_reuse_policy: Any = None,
    memo: Mapping[str, Any] | None = None,
    search_attributes: Mapping[str, Any] | None = None,
    result_type: Any = None,
) -> ChildWorkflowHandle[Any]:
    """Start a child workflow and return its handle once it has started.

    ``workflow`` is a ``@workflow.defn`` target or a type name; its arguments come
    positionally after it or as ``args=[...]``. The default id is
    ``"<parent id>/<parent run id>/child-<n>"``.

    Raises:
        ChildWorkflowError: the child could not start (e.g. the id is in use).
        ValueError: arguments given both positionally and as ``args``.
        TypeError: ``args`` is not a list or tuple.
        WorkflowContextError: outside a workflow or in a query/validator.
    """
    inst = _instance("start_child_workflow")
    arguments = _arguments("start_child_workflow", arg_values, args)
    if isinstance(workflow, str):
        name, hint = workflow, None
    else:
        d = WorkflowDefinition.from_target(workflow)
        name, hint = d.name, d.return_type
    request = StartChildWorkflowInput(
        workflow=name, args=arguments, headers={}, id=id, task_queue=task_queue,
        parent_close_policy=parent_close_policy, execution_timeout=execution_timeout, run_timeout=run_timeout,
        id_reuse_policy=id_reuse_policy, memo=memo, search_attributes=search_attributes,
        result_type=result_type if result_type is not None else hint)
    return cast(ChildWorkflowHandle[Any], await inst.outbound.start_child_workflow(request))


async def execute_child_workflow(workflow: Any, *arg_values: Any, **options: Any) -> Any:
    """Start a child workflow and wait for its result (arguments and options as :func:`start_child_workflow`).

    Raises:
        ChildWorkflowError: the child failed, was cancelled, terminated or timed out.
        ValueError, TypeError, WorkflowContextError: as :func:`start_child_workflow`.
    """
    handle = await start_child_workflow(workflow, *arg_values, **options)
    return await handle


# ---------------------------------------------------------------------------- external workflows


class ExternalWorkflowHandle:
    """Another workflow execution this workflow can signal or cancel."""

    def __init__(self, workflow_id: str, run_id: str | None, namespace: str = "") -> None:
        self.workflow_id = workflow_id
        self.run_id = run_id
        self.namespace = namespace

    async def signal(self, signal: Any, *args: Any) -> None:
        """Send signal ``signal`` (name or decorated method) with ``args``.

        Raises:
            ApplicationError: the server could not deliver it (``type`` is the cause,
                e.g. ``EXTERNAL_WORKFLOW_EXECUTION_NOT_FOUND``).
            WorkflowContextError: outside a workflow or in a query/validator.
        """
        inst = _instance("get_external_workflow_handle(...).signal")
        await inst.runtime.signal_external(self.workflow_id, self.run_id, handler_name(signal), args,
                                   namespace=self.namespace).future

    async def cancel(self) -> None:
        """Request the cancellation of that execution.

        Raises:
            ApplicationError: the server could not deliver the request.
            WorkflowContextError: outside a workflow or in a query/validator.
        """
        inst = _instance("get_external_workflow_handle(...).cancel")
        await inst.runtime.cancel_external(self.workflow_id, self.run_id, namespace=self.namespace).future


def get_external_workflow_handle(workflow_id: str, run_id: str | None = None) -> ExternalWorkflowHandle:
    """A handle to signal or cancel another execution (the latest run when ``run_id`` is None).

    Raises:
        WorkflowContextError: called outside a workflow.
    """
    _instance("get_external_workflow_handle")
    return ExternalWorkflowHandle(workflow_id, run_id)


# ---------------------------------------------------------------------------- markers and versioning


def side_effect(fn: Callable[[], T], *, type_hint: Any = None) -> T:
    """Run ``fn`` once, record its value in history, and return the recorded value on replay.

    Raises:
        NonDeterminismError: replaying and the history has no value recorded here.
        WorkflowContextError: outside a workflow or in a query/validator.
    """
    hint = type_hint
    if hint is None:
        try:
            hint = typing.get_type_hints(fn).get("return")
        except Exception:
            hint = None
    return typing.cast(T, _instance("side_effect").runtime.side_effect(fn, hint))


def record_marker(name: str, details: Mapping[str, Any] | None = None) -> None:
    """Record a marker named ``name`` in history, with ``details`` (name -> JSON-able value).

    A plain (non-async) call for leaving an exact trace that tools read from
    history (the YAML interpreter records a ``DslStep`` marker as steps start
    and end; the widgets colour steps by them). The marker is written with the
    workflow task's other commands (it costs one event, no extra round trip).
    On replay it must be recorded again at the same point: a marker of another
    name there, or a missing one, is a ``NonDeterminismError``; the details are
    not compared (they are what the first execution saw). Guard new markers in
    existing code with :func:`patched` so old histories still replay. In the
    history each detail is one payload: ``attributes["details"][key]``.

    Raises:
        ValueError: an empty name, a name the SDK uses itself (``Version``,
            ``SideEffect``), or a detail key that is not a non-empty string.
        WorkflowContextError: outside a workflow or in a query/validator.
    """
    _instance("record_marker").runtime.record_marker(name, details or {})


def get_version(change_id: str, min_supported: int, max_supported: int) -> int:
    """The version of ``change_id`` this run follows; recorded once per run (marker "Version").

    New runs get ``max_supported``; a history without the marker replays as
    :data:`DEFAULT_VERSION` (1).

    Raises:
        NonDeterminismError: the recorded (or default) version is outside
            ``[min_supported, max_supported]``; the message names ``change_id``.
        WorkflowContextError: outside a workflow or in a query/validator.
    """
    return _instance("get_version").runtime.get_version(change_id, min_supported, max_supported)


def patched(change_id: str) -> bool:
    """Whether this run takes the patched code path for ``change_id``.

    True for new runs (a marker is recorded) and for histories that recorded the patch;
    False when replaying a history from before the patch.

    Raises:
        WorkflowContextError: outside a workflow or in a query/validator.
    """
    return _instance("patched").runtime.get_version(change_id, DEFAULT_VERSION, DEFAULT_VERSION + 1) > DEFAULT_VERSION


def deprecate_patch(change_id: str) -> None:
    """Mark ``change_id`` as always applied (old code removed); accepts histories with or without its marker.

    Raises:
        WorkflowContextError: outside a workflow or in a query/validator.
    """
    _instance("deprecate_patch").runtime.deprecate_patch(change_id)


def upsert_search_attributes(attributes: Mapping[str, Any]) -> None:
    """Set (or replace) search attributes of this run; ``info().search_attributes`` reflects them.

    Raises:
        WorkflowContextError: outside a workflow or in a query/validator.
    """
    _instance("upsert_search_attributes").runtime.upsert_search_attributes(attributes)


def continue_as_new(*args: Any, task_queue: str | None = None, run_timeout: timedelta | None = None,
                    workflow: Any = None) -> NoReturn:
    """End this run and start a new one of the same (or ``workflow``'s) type with ``args``.

    Never returns: raises an internal ``BaseException`` that the runtime turns into
    CONTINUE_AS_NEW when it leaves the run method.

    Raises:
        WorkflowContextError: outside a workflow or in a query/validator.
    """
    runtime = _instance("continue_as_new").runtime
    runtime.require_commands_allowed("workflow.continue_as_new")
    wf_type = "" if workflow is None else (workflow if isinstance(workflow, str)
                                           else WorkflowDefinition.from_target(workflow).name)
    raise ContinueAsNewError(pb.ContinueAsNewWorkflowExecutionCommandAttributes(
        workflow_type=wf_type, task_queue=task_queue or "", input=runtime.converter.to_payloads(list(args)),
        run_timeout_ms=_ms(run_timeout)))
