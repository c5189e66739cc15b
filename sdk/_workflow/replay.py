"""Replay a recorded history through workflow code and report non-determinism."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from spindle._workflow.instance import WorkflowInstance
from spindle.api import messages_pb2 as pb

__all__ = ["replay"]


def replay(
    defn: Any,
    events: Sequence[pb.HistoryEvent],
    *,
    converter: Any = None,
    namespace: str = "default",
    workflow_id: str = "",
    run_id: str = "",
    interceptors: Sequence[Any] = (),
) -> None:
    """Feed a whole recorded history through a fresh instance of ``defn``.

    Every completed workflow task is re-run and its commands must match the command
    events recorded after it, in order; commands produced beyond the recorded ones
    (before the next task or at the end of the history) are a mismatch too. A final
    ``WorkflowTaskStarted`` without outcome is run but its commands are not checked.
    Pass the original ``run_id`` when the workflow uses ``workflow.random()`` or
    ``workflow.uuid4()`` (they are seeded from it). ``interceptors`` (worker
    interceptors) wrap the run as a worker's would, with ``workflow.unsafe.is_replaying()`` true.

    Raises:
        NonDeterminismError: the code does not reproduce the history; the message names
            the event id, the recorded event and the command produced (or "no command").
        ValueError: the history does not start with WorkflowExecutionStarted.
        Exception: an error raised by the workflow code itself.
    """
    events = list(events)
    if not events or events[0].event_type != pb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
        raise ValueError("a history must start with a WorkflowExecutionStarted event")
    started = events[0].workflow_execution_started_event_attributes
    inst = WorkflowInstance(defn, converter=converter, namespace=namespace, workflow_id=workflow_id,
                            run_id=run_id, task_queue=started.task_queue, interceptors=interceptors)
    try:
        inst.replay(events)
    finally:
        inst.close()
