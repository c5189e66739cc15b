"""The nodes and edges of a run's causal graph: what a node holds, its kinds and statuses.

Node ids (``graph.nodes[node_id]["node"]`` is a :class:`GraphNode`):

- ``start`` and ``close``: the run's first and closing events;
- ``wft:<scheduled id>``: a workflow task (a decision point of the workflow code);
- ``activity:<scheduled id>``: an activity with all its attempts (retries included);
- ``timer:<started id>``, ``signal:<id>``, ``update:<accepted id>``,
  ``marker:<id>`` (Version / SideEffect / DslStep / ``workflow.record_marker``), ``child:<initiated id>``,
  ``external_signal:<id>``, ``external_cancel:<id>``, ``cancel_request:<id>``,
  ``search_attributes:<id>``.

Edges carry ``kind``: ``schedules`` (a completed workflow task -> the commands it
issued), ``triggers`` (an event that woke the workflow -> the workflow task that
first saw it), ``next`` (a workflow task nothing in history triggered, e.g. one for
an update, -> from the previous workflow task), ``closes``, ``cancels`` and
``completes`` (a workflow task that completed an update accepted earlier).

The graph is built from a history by ``spindle.widgets._graph_model.HistoryGraphBuilder``.
"""

from __future__ import annotations

import dataclasses
import datetime

from collections.abc import Mapping
from typing import Any

__all__ = ["FINAL_STATUSES", "KINDS", "STATUSES", "Attempt", "GraphNode"]

#: Node kinds, in legend order.
KINDS: tuple[str, ...] = (
    "workflow_start", "workflow_task", "activity", "timer", "signal", "update", "marker", "child",
    "external_signal", "external_cancel", "cancel_request", "search_attributes", "workflow_close",
)
#: Node statuses, in legend order.
STATUSES: tuple[str, ...] = (
    "scheduled", "running", "retrying", "completed", "fired", "received", "recorded", "failed",
    "timed_out", "cancel_requested", "canceled", "terminated", "continued_as_new",
)
FINAL_STATUSES = frozenset({"completed", "fired", "received", "recorded", "failed", "timed_out", "canceled",
                            "terminated", "continued_as_new"})


@dataclasses.dataclass
class Attempt:
    """One attempt of an activity: when it ran and how it ended."""

    number: int
    started_event_id: int | None = None
    started_time: datetime.datetime | None = None
    end_event_id: int | None = None
    end_time: datetime.datetime | None = None
    outcome: str = "running"
    failure: Mapping[str, Any] | None = None
    retry_state: str | None = None
    next_backoff_ms: int | None = None


@dataclasses.dataclass
class GraphNode:
    """One node of the history graph (see the module docstring for the kinds)."""

    id: str
    kind: str
    label: str
    status: str
    first_event_id: int
    start_time: datetime.datetime
    end_time: datetime.datetime | None = None
    #: Event id at which the node entered the causal order (workflow tasks: started).
    order_key: int = 0
    event_ids: list[int] = dataclasses.field(default_factory=list)
    attempts: list[Attempt] = dataclasses.field(default_factory=list)
    input: list[Any] | None = None
    result: list[Any] | None = None
    failure: Mapping[str, Any] | None = None
    details: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: ``(workflow_id, run_id)`` of a child workflow node.
    child: tuple[str, str] | None = None

    @property
    def attempt_count(self) -> int:
        """How many attempts the activity made: the highest attempt number seen.

        Histories written since only an activity's final attempt is recorded carry the
        count on ``ActivityTaskStarted.attempt``; older ones have one Started/Failed pair
        per attempt. Both give the same number.
        """
        return max((a.number for a in self.attempts), default=0)

    @property
    def retries(self) -> int:
        """How many times the activity was retried (attempts - 1)."""
        return max(0, self.attempt_count - 1)

    @property
    def final(self) -> bool:
        """True once the node can no longer change status."""
        return self.status in FINAL_STATUSES
