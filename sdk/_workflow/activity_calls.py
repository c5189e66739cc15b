"""Activities from workflow code: ``workflow.start_activity``, ``execute_activity`` and their
``_method`` and ``local`` forms.

Re-exported by ``spindle.workflow``. Each finds the running :class:`~spindle._workflow.instance.WorkflowInstance` through the
running event loop and raises :class:`~spindle.exceptions.WorkflowContextError` when
called outside a workflow.
"""

from __future__ import annotations

import typing
import weakref

from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any, cast

from spindle._interceptors.worker import StartActivityInput
from spindle._workflow.context import instance as _instance
from spindle._workflow.statemachines.activity import ActivityCancellationType, ActivityHandle
from spindle.common._retry_policy import RetryPolicy

__all__ = [
    "execute_activity", "start_activity", "execute_activity_method", "start_activity_method",
    "execute_local_activity", "start_local_activity", "execute_local_activity_method", "start_local_activity_method",
    "call_arguments",
]


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


def call_arguments(api: str, positional: tuple[Any, ...], args: Sequence[Any] | None) -> list[Any]:
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
        "start_activity", activity, call_arguments("start_activity", arg_values, args),
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
        "start_local_activity", activity, call_arguments("start_local_activity", arg_values, args),
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
