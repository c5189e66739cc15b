"""Decisions workflow code records in history: ``workflow.side_effect``, ``record_marker``,
``get_version``/``patched``/``deprecate_patch``, ``upsert_search_attributes``, ``continue_as_new``.

Re-exported by ``spindle.workflow``. Each finds the running :class:`~spindle._workflow.instance.WorkflowInstance` through the
running event loop and raises :class:`~spindle.exceptions.WorkflowContextError` when
called outside a workflow.
"""

from __future__ import annotations

import typing

from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any, NoReturn, TypeVar

from spindle._workflow.context import instance as _instance
from spindle._workflow.defn import WorkflowDefinition
from spindle._workflow.run import ContinueAsNewError
from spindle._workflow.runtime import DEFAULT_VERSION
from spindle.api import messages_pb2 as pb

__all__ = ["side_effect", "record_marker", "get_version", "patched", "deprecate_patch", "upsert_search_attributes",
           "continue_as_new"]

T = TypeVar("T")


def _ms(d: timedelta | None) -> int:
    return 0 if d is None else int(d.total_seconds() * 1000)



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
