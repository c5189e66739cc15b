"""The functions workflow code calls (re-exported by ``spindle.workflow``).

Each finds the running :class:`~spindle._workflow_instance.WorkflowInstance` through the
running event loop and raises :class:`~spindle.exceptions.WorkflowContextError` when
called outside a workflow.
"""

from __future__ import annotations

import asyncio
import builtins
import collections
import logging
import random as _random
import typing
import weakref
import uuid as _uuid

from collections.abc import Callable, Mapping, MutableMapping
from datetime import datetime, timedelta
from typing import Any, NoReturn, TypeVar, cast

from spindle.controlplane.api import messages_pb2 as pb
from spindle.exceptions import TimeoutError, WorkflowContextError
from spindle._retry_policy import RetryPolicy
from spindle._statemachines.activity import ActivityHandle
from spindle._statemachines.child_workflow import ChildWorkflowHandle
from spindle._workflow_defn import WorkflowDefinition, handler_name
from spindle._workflow_info import WorkflowInfo
from spindle._workflow_loop import WorkflowEventLoop
from spindle._workflow_runtime import DEFAULT_VERSION, ContinueAsNewError

if typing.TYPE_CHECKING:
    from spindle._workflow_instance import WorkflowInstance

__all__ = [
    "DEFAULT_VERSION", "in_workflow", "info", "now", "random", "uuid4", "sleep", "wait_condition",
    "wait_for_signal", "set_signal_handler", "execute_activity", "start_activity", "execute_child_workflow",
    "start_child_workflow", "side_effect", "record_marker", "get_version", "patched", "deprecate_patch", "continue_as_new",
    "upsert_search_attributes", "get_external_workflow_handle", "ExternalWorkflowHandle", "logger",
]

T = TypeVar("T")


def _maybe_instance() -> WorkflowInstance | None:
    loop = asyncio.events._get_running_loop()
    if isinstance(loop, WorkflowEventLoop):
        return loop.instance
    return None


def _instance(api: str) -> WorkflowInstance:
    inst = _maybe_instance()
    if inst is None:
        raise WorkflowContextError(
            f"workflow.{api}() can only be called from workflow code (a @workflow.defn run method, signal, "
            "query or update handler running on a worker)")
    return inst


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
    return _instance("info").workflow_info


def now() -> datetime:
    """Workflow time as an aware UTC datetime: the start of the current workflow task.

    Deterministic: replay sees the same value. Raises WorkflowContextError outside a workflow.
    """
    return _instance("now").now()


def random() -> _random.Random:
    """The run's ``random.Random``, seeded from the run id (the same sequence on replay).

    Raises:
        WorkflowContextError: called outside a workflow.
    """
    return _instance("random").deterministic_random()


def uuid4() -> _uuid.UUID:
    """A deterministic version-4 UUID drawn from :func:`random`.

    Raises:
        WorkflowContextError: called outside a workflow.
    """
    return _instance("uuid4").uuid4()


# ---------------------------------------------------------------------------- waiting


async def sleep(duration: float | timedelta) -> None:
    """Sleep for ``duration`` (seconds or timedelta) of workflow time with a durable timer.

    Raises:
        WorkflowContextError: outside a workflow or in a query/validator.
        ValueError: negative duration.
    """
    inst = _instance("sleep")
    inst.require_commands_allowed("workflow.sleep")
    await asyncio.sleep(_seconds(duration, "sleep duration") or 0)


async def wait_condition(fn: Callable[[], bool], *, timeout: float | timedelta | None = None) -> None:
    """Wait until ``fn()`` is true (checked whenever the workflow's coroutines block).

    Raises:
        TimeoutError: (``spindle.exceptions.TimeoutError``, a builtin ``TimeoutError``) when
            ``timeout`` elapses first (a durable timer).
        WorkflowContextError: outside a workflow or in a query/validator.
    """
    inst = _instance("wait_condition")
    inst.require_commands_allowed("workflow.wait_condition")
    if fn():
        return
    fut: asyncio.Future[None] = inst.create_waiter()
    inst.conditions.append((fn, fut))
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
    inst.require_commands_allowed("workflow.wait_for_signal")
    buffered = inst.signal_buffer.get(name)
    if buffered:
        payloads = buffered.popleft()
    else:
        fut: asyncio.Future[pb.Payloads] = inst.create_waiter()
        waiters = inst.signal_waiters.setdefault(name, collections.deque())
        waiters.append(fut)
        secs = _seconds(timeout, "timeout")
        try:
            payloads = await (asyncio.wait_for(fut, secs) if secs is not None else fut)
        except builtins.TimeoutError:
            return None
        finally:
            if fut in waiters:
                waiters.remove(fut)
    values = inst._converter.from_payloads(payloads, [type_hint] if type_hint is not None else None)
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


def set_signal_handler(name: str, handler: Callable[..., Any] | None) -> None:
    """Handle signal ``name`` with ``handler`` (``None`` removes it); buffered signals go to it now.

    Raises:
        WorkflowContextError: called outside a workflow.
    """
    _instance("set_signal_handler").set_signal_handler(name, handler)


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


def start_activity(
    activity: Callable[..., Any] | str,
    *args: Any,
    start_to_close_timeout: timedelta | None = None,
    schedule_to_close_timeout: timedelta | None = None,
    schedule_to_start_timeout: timedelta | None = None,
    heartbeat_timeout: timedelta | None = None,
    retry_policy: RetryPolicy | None = None,
    task_queue: str | None = None,
    activity_id: str | None = None,
    result_type: Any = None,
) -> ActivityHandle[Any]:
    """Schedule an activity and return its awaitable, cancellable handle.

    Activity ids are ``"1"``, ``"2"``, ... in scheduling order unless ``activity_id``
    is given. The result is decoded by the activity's return hint (or ``result_type``).

    Raises:
        ValueError: neither ``start_to_close_timeout`` nor ``schedule_to_close_timeout`` is set.
        WorkflowContextError: outside a workflow or in a query/validator.
    """
    inst = _instance("start_activity")
    if start_to_close_timeout is None and schedule_to_close_timeout is None:
        raise ValueError("start_activity needs start_to_close_timeout or schedule_to_close_timeout (or both)")
    name, hint = _activity_type(activity)
    attrs = pb.ScheduleActivityTaskCommandAttributes(
        activity_id=activity_id or "", activity_type=name, task_queue=task_queue or "",
        input=inst._converter.to_payloads(list(args)),
        start_to_close_timeout_ms=_ms(start_to_close_timeout),
        schedule_to_close_timeout_ms=_ms(schedule_to_close_timeout),
        schedule_to_start_timeout_ms=_ms(schedule_to_start_timeout),
        heartbeat_timeout_ms=_ms(heartbeat_timeout),
    )
    if retry_policy is not None:
        attrs.retry_policy.CopyFrom(retry_policy.to_proto())
    return inst.schedule_activity(attrs, result_type if result_type is not None else hint).handle


async def execute_activity(activity: Callable[..., Any] | str, *args: Any, **options: Any) -> Any:
    """Schedule an activity and wait for its result (options as :func:`start_activity`).

    Raises:
        ActivityError: the activity failed for good; ``.cause`` says why.
        ValueError, WorkflowContextError: as :func:`start_activity`.
    """
    return await start_activity(activity, *args, **options)


# ---------------------------------------------------------------------------- child workflows


async def start_child_workflow(
    workflow: Any,
    *args: Any,
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

    ``workflow`` is a ``@workflow.defn`` target or a type name. The default id is
    ``"<parent id>/<parent run id>/child-<n>"``.

    Raises:
        ChildWorkflowError: the child could not start (e.g. the id is in use).
        WorkflowContextError: outside a workflow or in a query/validator.
    """
    inst = _instance("start_child_workflow")
    if isinstance(workflow, str):
        name, hint = workflow, None
    else:
        d = WorkflowDefinition.from_target(workflow)
        name, hint = d.name, d.return_type
    conv = inst._converter
    attrs = pb.StartChildWorkflowExecutionCommandAttributes(
        workflow_id=id or "", workflow_type=name, task_queue=task_queue or "",
        input=conv.to_payloads(list(args)), execution_timeout_ms=_ms(execution_timeout),
        run_timeout_ms=_ms(run_timeout), parent_close_policy=cast(Any, int(parent_close_policy or 0)),
        workflow_id_reuse_policy=cast(Any, int(id_reuse_policy or 0)),
    )
    for k, v in (memo or {}).items():
        attrs.memo.fields[k].CopyFrom(conv.to_payload(v))
    for k, v in (search_attributes or {}).items():
        attrs.search_attributes.indexed_fields[k].CopyFrom(conv.to_payload(v))
    machine = inst.start_child(attrs, result_type if result_type is not None else hint)
    try:
        await asyncio.shield(machine.started)
    except asyncio.CancelledError:
        machine.request_cancel()
        raise
    return machine.handle


async def execute_child_workflow(workflow: Any, *args: Any, **options: Any) -> Any:
    """Start a child workflow and wait for its result (options as :func:`start_child_workflow`).

    Raises:
        ChildWorkflowError: the child failed, was cancelled, terminated or timed out.
    """
    handle = await start_child_workflow(workflow, *args, **options)
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
        await inst.signal_external(self.workflow_id, self.run_id, handler_name(signal), args,
                                   namespace=self.namespace).future

    async def cancel(self) -> None:
        """Request the cancellation of that execution.

        Raises:
            ApplicationError: the server could not deliver the request.
            WorkflowContextError: outside a workflow or in a query/validator.
        """
        inst = _instance("get_external_workflow_handle(...).cancel")
        await inst.cancel_external(self.workflow_id, self.run_id, namespace=self.namespace).future


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
    return typing.cast(T, _instance("side_effect").side_effect(fn, hint))


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
    _instance("record_marker").record_marker(name, details or {})


def get_version(change_id: str, min_supported: int, max_supported: int) -> int:
    """The version of ``change_id`` this run follows; recorded once per run (marker "Version").

    New runs get ``max_supported``; a history without the marker replays as
    :data:`DEFAULT_VERSION` (1).

    Raises:
        NonDeterminismError: the recorded (or default) version is outside
            ``[min_supported, max_supported]``; the message names ``change_id``.
        WorkflowContextError: outside a workflow or in a query/validator.
    """
    return _instance("get_version").get_version(change_id, min_supported, max_supported)


def patched(change_id: str) -> bool:
    """Whether this run takes the patched code path for ``change_id``.

    True for new runs (a marker is recorded) and for histories that recorded the patch;
    False when replaying a history from before the patch.

    Raises:
        WorkflowContextError: outside a workflow or in a query/validator.
    """
    return _instance("patched").get_version(change_id, DEFAULT_VERSION, DEFAULT_VERSION + 1) > DEFAULT_VERSION


def deprecate_patch(change_id: str) -> None:
    """Mark ``change_id`` as always applied (old code removed); accepts histories with or without its marker.

    Raises:
        WorkflowContextError: outside a workflow or in a query/validator.
    """
    _instance("deprecate_patch").deprecate_patch(change_id)


def upsert_search_attributes(attributes: Mapping[str, Any]) -> None:
    """Set (or replace) search attributes of this run; ``info().search_attributes`` reflects them.

    Raises:
        WorkflowContextError: outside a workflow or in a query/validator.
    """
    _instance("upsert_search_attributes").upsert_search_attributes(attributes)


def continue_as_new(*args: Any, task_queue: str | None = None, run_timeout: timedelta | None = None,
                    workflow: Any = None) -> NoReturn:
    """End this run and start a new one of the same (or ``workflow``'s) type with ``args``.

    Never returns: raises an internal ``BaseException`` that the runtime turns into
    CONTINUE_AS_NEW when it leaves the run method.

    Raises:
        WorkflowContextError: outside a workflow or in a query/validator.
    """
    inst = _instance("continue_as_new")
    inst.require_commands_allowed("workflow.continue_as_new")
    wf_type = "" if workflow is None else (workflow if isinstance(workflow, str)
                                           else WorkflowDefinition.from_target(workflow).name)
    raise ContinueAsNewError(pb.ContinueAsNewWorkflowExecutionCommandAttributes(
        workflow_type=wf_type, task_queue=task_queue or "", input=inst._converter.to_payloads(list(args)),
        run_timeout_ms=_ms(run_timeout)))


# ---------------------------------------------------------------------------- logging


class _ReplaySafeLogger(logging.LoggerAdapter):
    """Silent while replaying; adds ``workflow_id``, ``run_id`` and ``workflow_type`` to records."""

    def isEnabledFor(self, level: int) -> bool:
        inst = _maybe_instance()
        if inst is not None and inst.is_replaying:
            return False
        return self.logger.isEnabledFor(level)

    def process(self, msg: Any, kwargs: MutableMapping[str, Any]) -> tuple[Any, MutableMapping[str, Any]]:
        inst = _maybe_instance()
        if inst is not None and inst._info is not None:
            i = inst._info
            extra = {"workflow_id": i.workflow_id, "run_id": i.run_id, "workflow_type": i.workflow_type}
            kwargs["extra"] = {**extra, **(kwargs.get("extra") or {})}
            msg = f"{msg} ({i.workflow_type} {i.workflow_id}/{i.run_id})"
        return msg, kwargs


logger: logging.LoggerAdapter = _ReplaySafeLogger(logging.getLogger("spindle.workflow"), {})

