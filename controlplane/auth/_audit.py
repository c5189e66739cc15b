"""The audit log: one structured line per admin action, on the logger ``spindle.audit``.

Admin actions are the RPCs whose rule says ``audit`` (``_rpc_policy.py``): creating,
updating (retention, search attributes, archival) and deleting namespaces, adding
search attributes, creating and revoking API keys. Each call writes one line, allowed
or refused, at INFO level, as JSON::

    {"action": "UpdateNamespace", "outcome": "ok", "principal": "key:0f3c... (ops)",
     "target": "namespace/orders", "details": {"name": "orders", "update_mask": ["archival_uri"], ...}}

``outcome`` is ``ok`` or the status the caller got (``PERMISSION_DENIED: ...``,
``UNAUTHENTICATED: ...``, ``INVALID_ARGUMENT: ...``). The record also carries the same
fields as ``record.audit`` (a dict) for structured log handlers. The servers set the
logger to INFO at start, so audit lines are written whatever ``log_level`` says; route
them elsewhere with ordinary ``logging`` configuration.
"""

from __future__ import annotations

import json
import logging

from typing import Any

from google.protobuf.json_format import MessageToDict
from google.protobuf.message import Message

from ._principal import Principal

log = logging.getLogger("spindle.audit")

#: Longest ``details`` written (JSON characters); longer ones are cut and say so.
MAX_DETAILS = 4000


def enable() -> None:
    """Make sure audit lines are emitted (INFO) even when the server logs only warnings."""
    if log.level == logging.NOTSET or log.level > logging.INFO:
        log.setLevel(logging.INFO)


def request_details(request: Message) -> dict[str, Any]:
    """The request's fields as a JSON-able dict (admin requests carry no payloads or secrets)."""
    details = MessageToDict(request, preserving_proto_field_name=True)
    text = json.dumps(details, sort_keys=True)
    if len(text) > MAX_DETAILS:
        return {"truncated": text[:MAX_DETAILS]}
    return details


def record(principal: Principal | None, action: str, target: str, outcome: str,
           details: dict[str, Any] | None = None) -> None:
    """Write one audit line."""
    entry = {"principal": str(principal) if principal is not None else "unauthenticated", "action": action,
             "target": target, "outcome": outcome, "details": details or {}}
    log.info(json.dumps(entry, sort_keys=True, default=str), extra={"audit": entry})


__all__ = ["MAX_DETAILS", "enable", "record", "request_details"]
