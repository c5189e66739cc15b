"""``spindle.testing.Replayer`` is ``spindle.worker.Replayer`` (where temporalio has it): see :mod:`spindle.worker._replayer`.

``ReplayResult`` and ``ReplayReport``, the names this package used first, are
``WorkflowReplayResult`` and ``WorkflowReplayResults``: the same classes, with the
attributes of both (``error``/``replay_failure``, ``results``/``replay_failures``).
"""

from __future__ import annotations

from spindle.worker._replayer import (
    HistorySource,
    Replayer,
    UnknownWorkflowTypeError,
    WorkflowReplayResult,
    WorkflowReplayResults,
    load_history,
)

__all__ = ["Replayer", "ReplayResult", "ReplayReport", "HistorySource", "UnknownWorkflowTypeError",
           "WorkflowReplayResult", "WorkflowReplayResults", "load_history"]

ReplayResult = WorkflowReplayResult
"""The outcome of replaying one history (the same class as :class:`WorkflowReplayResult`)."""

ReplayReport = WorkflowReplayResults
"""What :meth:`Replayer.replay_workflows` returns (the same class as :class:`WorkflowReplayResults`)."""
