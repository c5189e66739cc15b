"""The queries every workflow answers without declaring them, as temporalio workers do.

``__stack_trace`` (the text of each pending task's stack, blank-line separated),
``__enhanced_stack_trace`` (the same as temporalio's ``EnhancedStackTrace`` JSON shape:
``sdk``, ``sources`` by file and ``stacks`` of locations) and
``__temporal_workflow_metadata`` (the workflow's type and its query, signal and update
definitions). They read the run's loop and definition only: no command, no history, so
answering one never changes what a replay does. A handler the workflow declares under
one of these names wins.
"""

from __future__ import annotations

import asyncio
import linecache
import sys
import traceback

from collections.abc import Callable
from typing import Any

from spindle._workflow.defn import WorkflowDefinition
from spindle._workflow.loop import WorkflowEventLoop

__all__ = ["BUILTIN_QUERIES", "enhanced_stack_trace", "stack_trace", "workflow_metadata"]

_SDK_NAME = "spindle-python"


def _pending(loop: WorkflowEventLoop) -> list[asyncio.Task[Any]]:
    return [t for t in list(loop.tasks) if not t.done()]


def _frames(task: asyncio.Task[Any]) -> list[Any]:
    """The task's frames, outermost first, following each coroutine into what it awaits."""
    frames = []
    coro: Any = task.get_coro()
    while coro is not None:
        frame = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
        if frame is None:
            break
        frames.append(frame)
        coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)
    return frames


def stack_trace(loop: WorkflowEventLoop, defn: WorkflowDefinition) -> str:
    """The stack of each pending task of the run (each awaited coroutine in turn), separated by blank lines."""
    stacks = []
    for task in _pending(loop):
        summary = traceback.StackSummary.extract((f, f.f_lineno) for f in _frames(task))
        stacks.append(f"Stack for {task!r} (most recent call last):\n" + "".join(summary.format()))
    return "\n\n".join(stacks)


def enhanced_stack_trace(loop: WorkflowEventLoop, defn: WorkflowDefinition) -> dict[str, Any]:
    """temporalio's ``EnhancedStackTrace`` JSON: ``{"sdk", "sources", "stacks"}`` for the pending tasks."""
    version = getattr(sys.modules.get("spindle"), "__version__", "")  # the package is loaded: its child is
    sources: dict[str, dict[str, Any]] = {}
    stacks: list[dict[str, Any]] = []
    for task in _pending(loop):
        locations = []
        for frame in _frames(task):
            path = frame.f_code.co_filename
            if path not in sources:
                sources[path] = {"content": "".join(linecache.getlines(path)), "lineOffset": 0}
            locations.append({"filePath": path, "line": frame.f_lineno or 0, "column": 0,
                              "functionName": frame.f_code.co_name, "internalCode": False})
        stacks.append({"locations": locations})
    return {"sdk": {"name": _SDK_NAME, "version": version}, "sources": sources, "stacks": stacks}


def workflow_metadata(loop: WorkflowEventLoop, defn: WorkflowDefinition) -> dict[str, Any]:
    """temporalio's ``WorkflowMetadata`` JSON: the type and its query, signal and update definitions."""
    def names(d: Any) -> list[dict[str, str]]:
        return [{"name": n, "description": ""} for n in sorted(d)]

    queries = sorted({*defn.queries, *BUILTIN_QUERIES})
    return {"definition": {"type": defn.name,
                           "queryDefinitions": [{"name": n, "description": ""} for n in queries],
                           "signalDefinitions": names(defn.signals),
                           "updateDefinitions": names(defn.updates)},
            "currentDetails": ""}


#: Built-in query name -> its answer, from the run's loop and definition.
BUILTIN_QUERIES: dict[str, Callable[[WorkflowEventLoop, WorkflowDefinition], Any]] = {
    "__stack_trace": stack_trace,
    "__enhanced_stack_trace": enhanced_stack_trace,
    "__temporal_workflow_metadata": workflow_metadata,
}
