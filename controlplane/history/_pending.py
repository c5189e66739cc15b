"""What a run has pending: its workflow task, activities, timers, children, updates and queries.

The parts of ``MutableState`` (``_mutable_state``) that one history event creates and a
later one closes. Fields marked "in memory only" are not in the history: they are lost
with the process and rebuilt conservatively (see ``ExecutionCache.load``).
"""

from __future__ import annotations

import asyncio
import uuid

from dataclasses import dataclass, field
from typing import Any

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc


@dataclass
class WorkflowTaskInfo:
    scheduled_event_id: int
    attempt: int
    task_queue: str
    timeout_ms: int
    scheduled_time_ms: int
    # in memory only
    started: bool = False
    started_event_id: int = 0
    started_time_ms: int = 0
    nonce: str = ""
    identity: str = ""
    sticky: bool = False
    dispatched: bool = False
    #: The identity of the poller whose start of the previous attempt timed out: this attempt goes
    #: to another poller when one is there (``matching`` module docstring).
    avoid_identity: str = ""
    delivered_updates: list[str] = field(default_factory=list)
    timeout_timer: Any = None  # its durable timeout timer Task (id known once committed)
    started_event: pb.HistoryEvent | None = None


@dataclass
class ActivityInfo:
    scheduled_event_id: int
    activity_id: str
    activity_type: str
    task_queue: str
    input: pb.Payloads
    header: pb.Header
    schedule_to_close_ms: int
    schedule_to_start_ms: int
    start_to_close_ms: int
    heartbeat_ms: int
    retry_policy: pb.RetryPolicy
    scheduled_time_ms: int
    attempt: int = 1
    attempt_scheduled_time_ms: int = 0
    last_failure: pb.Failure | None = None
    last_worker_identity: str = ""  # the worker that ran the previous attempt
    cancel_requested: bool = False
    cancel_requested_event_id: int = 0
    # in memory only
    started: bool = False
    started_time_ms: int = 0
    identity: str = ""
    last_heartbeat_ms: int = 0
    heartbeat_details: pb.Payloads | None = None
    timers: dict[str, Any] = field(default_factory=dict)  # timeout kind -> its timer Task
    dispatched: bool = False
    closed: bool = False  # its outcome is buffered behind a running workflow task

    @property
    def schedule_to_close_deadline_ms(self) -> int:
        return self.scheduled_time_ms + self.schedule_to_close_ms if self.schedule_to_close_ms else 0


@dataclass
class TimerInfo:
    timer_id: str
    started_event_id: int
    fire_time_ms: int
    task: Any = None  # its timer Task, when known


@dataclass
class ChildInfo:
    initiated_event_id: int
    namespace: str
    workflow_id: str
    workflow_type: str
    parent_close_policy: int
    run_id: str = ""
    started_event_id: int = 0


@dataclass
class PendingUpdate:
    request: pb.UpdateRequest
    future: "asyncio.Future[svc.UpdateWorkflowExecutionResponse]"
    delivered: bool = False



class PendingQuery:
    """A query waiting for a worker's answer (in memory only: a query does not survive a restart)."""

    def __init__(self, query: pb.WorkflowQuery) -> None:
        self.id = uuid.uuid4().hex
        self.query = query
        self.future: asyncio.Future[svc.RespondQueryTaskCompletedRequest] = asyncio.get_running_loop().create_future()


__all__ = ["ActivityInfo", "ChildInfo", "PendingQuery", "PendingUpdate", "TimerInfo", "WorkflowTaskInfo"]
