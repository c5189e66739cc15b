"""Task tokens: what a worker hands back to complete a task, and workflow-task start nonces.

A token names the execution, the task (scheduled event id), the attempt and, for
workflow tasks, the start nonce. The server accepts a completion only when all of
them still match, so duplicate or late completions change nothing.
"""

from __future__ import annotations

import itertools
import json
import uuid
from dataclasses import dataclass

from spindle.controlplane.errors import InvalidArgument

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


def decode_token(raw: bytes, kind: str) -> TaskToken:
    """The token of a task of ``kind``; InvalidArgument for a malformed token or one of another kind."""
    try:
        tok = TaskToken.decode(raw)
    except BadTokenError as e:
        raise InvalidArgument(str(e)) from e
    if tok.kind != kind:
        raise InvalidArgument("task_token: this token belongs to another kind of task")
    return tok


class StartNonces:
    """Workflow-task start nonces, unique per engine instance.

    A restarted or new owner never accepts an answer to a start it did not make, and
    knows which starts were not its own (``issued_here``).
    """

    def __init__(self) -> None:
        self._prefix = uuid.uuid4().hex[:8]
        self._next = itertools.count(1)

    def new(self) -> str:
        """A new nonce (its first 8 characters name this engine instance)."""
        return f"{self._prefix}{next(self._next):x}"

    def issued_here(self, nonce: str) -> bool:
        """Whether this engine instance made the start that ``nonce`` names."""
        return nonce.startswith(self._prefix)


__all__ = ["ACTIVITY", "BadTokenError", "QUERY", "StartNonces", "TaskToken", "WORKFLOW", "decode_token"]
