"""Task tokens: what a worker hands back to complete a task.

A token names the execution, the task (scheduled event id), the attempt and, for
workflow tasks, the start nonce. The server accepts a completion only when all of
them still match, so duplicate or late completions change nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

WORKFLOW = "w"
ACTIVITY = "a"
QUERY = "q"


class BadTokenError(ValueError):
    """The task token is not one this server issued."""


@dataclass(frozen=True)
class TaskToken:
    kind: str
    namespace_id: str
    workflow_id: str
    run_id: str
    scheduled_event_id: int
    attempt: int
    nonce: str = ""

    def encode(self) -> bytes:
        return json.dumps(
            [self.kind, self.namespace_id, self.workflow_id, self.run_id, self.scheduled_event_id, self.attempt, self.nonce],
            separators=(",", ":"),
        ).encode()

    @classmethod
    def decode(cls, raw: bytes) -> "TaskToken":
        try:
            k, ns, wid, rid, sid, att, nonce = json.loads(raw)
            if k not in (WORKFLOW, ACTIVITY, QUERY):
                raise ValueError(k)
            return cls(str(k), str(ns), str(wid), str(rid), int(sid), int(att), str(nonce))
        except Exception as e:  # noqa: BLE001 - any malformed token is the same error
            raise BadTokenError("task_token: malformed task token") from e
