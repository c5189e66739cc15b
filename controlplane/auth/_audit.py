"""The audit log: one structured line per admin action or denial, on the logger ``spindle.audit``.

Audited actions are the RPCs whose rule says ``audit`` (``_rpc_policy.py``): namespaces
(create, update, delete, search attributes), API keys (create, revoke), ending or repairing
runs (terminate, cancel, reset, changing a run's options), schedules (create, update,
patch with trigger and backfill, delete) and worker-deployment routing (current and
ramping version). Each call writes one line, allowed or refused, at INFO level, as JSON::

    {"action": "TerminateWorkflowExecution", "outcome": "ok", "principal": "key:0f3c... (ops)",
     "target": "workflow/orders/order-17", "details": {"reason": "stuck", "workflow_execution": {...},
     "omitted": ["details"]}}

``outcome`` is ``ok`` or the status the caller got (``INVALID_ARGUMENT: ...``). ``details``
are the request's fields without any payload (inputs, details, memo, headers, search
attributes: see :func:`request_details`); ``omitted`` names the payload fields that were
set. The record also carries the same fields as ``record.audit`` (a dict) for structured
log handlers. The servers set the logger to INFO at start, so audit lines are written
whatever ``log_level`` says; route them elsewhere with ordinary ``logging`` configuration.

Denials (UNAUTHENTICATED, PERMISSION_DENIED) of any RPC are audited too, aggregated so that
a flood cannot flood the log (:class:`DenialAudit`): the first denial of a principal (or,
without valid credentials, of an address) in a window is written at once; the next ones are
counted and written as one summary line when the window closes.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time

from collections.abc import Callable
from typing import Any

from google.protobuf.json_format import MessageToDict
from google.protobuf.message import Message

from ._principal import Principal

log = logging.getLogger("spindle.audit")

#: Longest ``details`` written (JSON characters); longer ones are cut and say so.
MAX_DETAILS = 4000
#: Seconds of a denial window (the first denial is written at once, the rest summed up at its end).
DENIAL_WINDOW = 60.0
#: Principals and addresses whose denials are counted each on its own; the rest share one count.
MAX_TRACKED_DENIERS = 1000
#: The name the denials beyond ``MAX_TRACKED_DENIERS`` are counted under.
OVERFLOW = "other principals and addresses"

#: Message types that carry user data (payloads): never written to the audit log.
_PAYLOAD_TYPES = frozenset({"spindle.v1.Payload", "spindle.v1.Payloads", "spindle.v1.Memo", "spindle.v1.Header",
                            "spindle.v1.SearchAttributes"})


def enable() -> None:
    """Make sure audit lines are emitted (INFO) even when the server logs only warnings."""
    if log.level == logging.NOTSET or log.level > logging.INFO:
        log.setLevel(logging.INFO)


def _strip_payloads(msg: Message, prefix: str, omitted: list[str]) -> None:
    """Clear every payload-typed field of ``msg`` (recursively, in place), naming each in ``omitted``."""
    for field, value in msg.ListFields():
        mt = field.message_type
        if mt is None:
            continue
        path = f"{prefix}{field.name}"
        if mt.GetOptions().map_entry:
            vt = mt.fields_by_name["value"].message_type
            if vt is None:
                continue
            if vt.full_name in _PAYLOAD_TYPES:
                msg.ClearField(field.name)
                omitted.append(path)
            else:
                for k in value:
                    _strip_payloads(value[k], f"{path}.{k}.", omitted)
        elif mt.full_name in _PAYLOAD_TYPES:
            msg.ClearField(field.name)
            omitted.append(path)
        elif field.is_repeated:
            for i, item in enumerate(value):
                _strip_payloads(item, f"{path}[{i}].", omitted)
        else:
            _strip_payloads(value, f"{path}.", omitted)


def request_details(request: Message) -> dict[str, Any]:
    """The request's fields as a JSON-able dict, without payloads; ``omitted`` lists the payload fields that were set."""
    clean = type(request)()
    clean.CopyFrom(request)
    omitted: list[str] = []
    _strip_payloads(clean, "", omitted)
    details = MessageToDict(clean, preserving_proto_field_name=True)
    if omitted:
        details["omitted"] = omitted
    text = json.dumps(details, sort_keys=True)
    if len(text) > MAX_DETAILS:
        return {"truncated": text[:MAX_DETAILS]}
    return details


def _write(entry: dict[str, Any]) -> None:
    log.info(json.dumps(entry, sort_keys=True, default=str), extra={"audit": entry})


def record(principal: Principal | None, action: str, target: str, outcome: str,
           details: dict[str, Any] | None = None) -> None:
    """Write one audit line."""
    _write({"principal": str(principal) if principal is not None else "unauthenticated", "action": action,
            "target": target, "outcome": outcome, "details": details or {}})


class _Window:
    __slots__ = ("actions", "address", "count", "who")

    def __init__(self, who: str, address: str) -> None:
        self.who = who
        self.address = address
        self.count = 0
        self.actions: dict[str, int] = {}


class DenialAudit:
    """Writes denials (UNAUTHENTICATED, PERMISSION_DENIED) to the audit log, at most about two lines per denier per window.

    The first denial of a denier (a principal; without valid credentials, the caller's
    address) in a window of ``window`` seconds is written at once with its action, target
    and outcome. Later ones in the window are counted (per action) and written as one line
    ``N more denials of WHO in the last W s`` when the window closes (a timer on the running
    event loop; without one, at the denier's next denial after the window). At most
    ``max_tracked`` deniers are counted each on its own; the others share one count under
    :data:`OVERFLOW`, so memory stays bounded whatever a flood does. A denial costs a dict
    lookup and an add once its window's first line is written.
    """

    def __init__(self, window: float | None = None, max_tracked: int = MAX_TRACKED_DENIERS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.window = DENIAL_WINDOW if window is None else window
        self.max_tracked = max_tracked
        self._clock = clock
        self._open: dict[str, tuple[float, _Window]] = {}

    def tracked(self) -> int:
        """Deniers with an open window."""
        return len(self._open)

    def denied(self, key: str, who: str, action: str, target: str, outcome: str,
               details: Callable[[], dict[str, Any]] | None = None, address: str = "") -> None:
        """One denial of ``action`` on ``target`` for denier ``key`` (written as ``who``), with ``outcome``.

        ``details`` (called only when the line is written) gives the request's fields;
        ``address`` is the caller's, written for a caller without valid credentials.
        """
        now = self._clock()
        slot = self._open.get(key)
        if slot is None and len(self._open) >= self.max_tracked:
            key, who, address = OVERFLOW, OVERFLOW, ""
            slot = self._open.get(key)
        if slot is not None and now - slot[0] >= self.window:
            self._close(key, slot[1])
            slot = None
        if slot is not None:
            w = slot[1]
            w.count += 1
            w.actions[action] = w.actions.get(action, 0) + 1
            return
        w = _Window(who, address)
        self._open[key] = (now, w)
        entry = {"principal": who, "action": action, "target": target, "outcome": outcome,
                 "details": details() if details is not None else {}}
        if address:
            entry["address"] = address
        _write(entry)
        try:
            asyncio.get_running_loop().call_later(self.window, self._expire, key, w)
        except RuntimeError:  # no event loop: closed at the next denial after the window
            pass

    def _expire(self, key: str, w: _Window) -> None:
        slot = self._open.get(key)
        if slot is not None and slot[1] is w:
            self._close(key, w)

    def _close(self, key: str, w: _Window) -> None:
        del self._open[key]
        if w.count:
            who = f"{w.who} ({w.address})" if w.address else w.who
            entry = {"principal": w.who, "action": "denials", "target": "",
                     "outcome": f"{w.count} more denials of {who} in the last {self.window:g} s",
                     "details": {"count": w.count, "actions": dict(sorted(w.actions.items()))}}
            if w.address:
                entry["address"] = w.address
            _write(entry)

    def flush(self) -> None:
        """Write the summary of every open window now (at shutdown)."""
        for key, (_, w) in list(self._open.items()):
            self._close(key, w)


__all__ = ["DENIAL_WINDOW", "DenialAudit", "MAX_DETAILS", "MAX_TRACKED_DENIERS", "OVERFLOW", "enable", "record",
           "request_details"]
