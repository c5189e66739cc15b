"""Kinds of transfer and timer tasks, and their compact JSON encoding.

Transfer tasks are the transactional outbox: written in the same transaction as the
events that caused them, processed after commit, deleted once done (re-processing
after a crash is harmless: every handler checks the execution's state first).
Timer tasks are keyed by fire time; a timer whose subject has moved on is dropped.
"""

from __future__ import annotations

import json

from dataclasses import dataclass, field
from typing import Any

# transfer kinds
T_WORKFLOW_TASK = "wt"
T_ACTIVITY_TASK = "at"
T_VISIBILITY = "vis"
T_CLOSE = "close"
T_START_CHILD = "child"
T_SIGNAL_EXTERNAL = "sig"
T_CANCEL_EXTERNAL = "cancel"

# timer kinds
TM_USER_TIMER = "timer"
TM_ACTIVITY_TIMEOUT = "atimeout"  # sub: SCHEDULE_TO_START, SCHEDULE_TO_CLOSE, START_TO_CLOSE, HEARTBEAT
TM_ACTIVITY_RETRY = "aretry"
TM_WORKFLOW_TASK_TIMEOUT = "wttimeout"
TM_WORKFLOW_TASK_BACKOFF = "wtbackoff"  # first task after a start delay, or a retried failing task
TM_WORKFLOW_RUN_TIMEOUT = "runtimeout"
TM_RETENTION = "retention"
TM_SCHEDULE = "sched"  # a schedule's next action (workflow_id = the schedule id, run_id "")


@dataclass
class Task:
    kind: str
    namespace_id: str
    workflow_id: str
    run_id: str
    event_id: int = 0  # scheduled / initiated / started event id
    attempt: int = 0
    sub: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    task_id: int = 0
    fire_time_ms: int = 0

    def encode(self) -> str:
        return json.dumps(
            [self.kind, self.namespace_id, self.workflow_id, self.run_id, self.event_id, self.attempt, self.sub, self.extra],
            separators=(",", ":"),
        )

    @classmethod
    def decode(cls, data: str, *, task_id: int = 0, fire_time_ms: int = 0) -> "Task":
        k, ns, wid, rid, eid, att, sub, extra = json.loads(data)
        return cls(k, ns, wid, rid, eid, att, sub, extra, task_id, fire_time_ms)
